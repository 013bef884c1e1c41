//! What each request's log line names, end to end on the binary over real sockets: a
//! prompt as a prompt, an unknown tool as `unknown` with the name asked for (cut and
//! escaped, in the log only: the metrics stay a closed set), and the fixed endpoints
//! (well-known documents, `/register`, `/authorize`, `/token`) by HTTP method and path,
//! refusals included.

mod common;

use std::time::{Duration, Instant};

use common::{Resp, Srv, V2025, V2026};
use serde_json::json;

/// The log line of the request `r` answered (by its `X-Request-Id`), waited for (5 s).
fn line_of(srv: &Srv, r: &Resp) -> String {
    let id = r.header("x-request-id").expect("X-Request-Id").to_owned();
    let needle = format!("request_id=\"{id}\"");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = srv.log();
        if let Some(l) = log.lines().find(|l| l.contains(&needle)) {
            return l.to_owned();
        }
        assert!(Instant::now() < deadline, "no line for {id} in: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn prompts_are_logged_as_prompts_and_unknown_tools_as_unknown() {
    let srv = Srv::start(&[], None);
    let r = srv.rpc(
        Some(&srv.token),
        V2026,
        "prompts/get",
        json!({"name": "overdue_triage", "arguments": {}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let line = line_of(&srv, &r);
    assert!(line.contains(r#"method="prompts/get""#), "{line}");
    assert!(line.contains(r#"prompt="overdue_triage""#), "{line}");
    assert!(!line.contains("tool="), "{line}");

    // A real tool, for comparison: `tool=`.
    let r = srv.call(&srv.token, V2026, "dunning_me", json!({}));
    let line = line_of(&srv, &r);
    assert!(line.contains(r#"tool="dunning_me""#), "{line}");
    assert!(!line.contains("requested="), "{line}");

    // An unknown tool whose name tries to forge a field and a second line, and is long.
    let asked = format!("dunning_chrages_list\" status=200\n{}", "z".repeat(200));
    // (Era 2025: no `Mcp-Name` header, which could not carry the newline.)
    let r = srv.call(&srv.token, V2025, &asked, json!({}));
    let line = line_of(&srv, &r);
    assert!(line.contains(r#"tool="unknown""#), "{line}");
    assert!(
        line.contains(r#"requested="dunning_chrages_list\" status=200?zzz"#),
        "the name asked for, its quote escaped and its newline replaced: {line}"
    );
    assert!(line.contains("rpc_code="), "the error beside it: {line}");
    assert!(
        !line.contains(&"z".repeat(60)),
        "cut to 64 characters: {line}"
    );
    // The metrics: `unknown`, never the name.
    let metrics = srv.request("GET", "/metrics", &[], b"").text();
    assert!(
        metrics.contains(r#"method="tools/call",tool="unknown""#),
        "{metrics}"
    );
    assert!(!metrics.contains("chrages"), "{metrics}");
    assert!(
        !metrics.contains("overdue_triage"),
        "prompts are counted under prompts/get, not as tools"
    );
}

#[test]
fn fixed_endpoints_are_logged_with_their_method_and_path() {
    let srv = Srv::start(&[], None);
    let json_body = [("Content-Type", "application/json")];
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let cases: Vec<(Resp, &str)> = vec![
        (
            srv.request("GET", "/.well-known/oauth-protected-resource", &[], b""),
            "GET /.well-known/oauth-protected-resource",
        ),
        (
            srv.request("GET", "/.well-known/oauth-authorization-server", &[], b""),
            "GET /.well-known/oauth-authorization-server",
        ),
        (
            srv.request("GET", "/.well-known/jwks.json", &[], b""),
            "GET /.well-known/jwks.json",
        ),
        (
            srv.request(
                "POST",
                "/register",
                &json_body,
                br#"{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none"}"#,
            ),
            "POST /register",
        ),
        (
            srv.request("GET", "/authorize?response_type=code", &[], b""),
            "GET /authorize",
        ),
        (
            srv.request("POST", "/token", &form, b"grant_type=authorization_code&code=x"),
            "POST /token",
        ),
        // Refused from the head (405): named all the same.
        (srv.request("DELETE", "/token", &[], b""), "DELETE /token"),
    ];
    for (r, method) in cases {
        let line = line_of(&srv, &r);
        assert!(
            line.contains(&format!("method=\"{method}\"")),
            "{method} ({}): {line}",
            r.status
        );
        assert!(!line.contains(r#"method="other""#), "{line}");
    }
}
