//! Diagnostics, end to end on the binary over a real socket: a refusal's log
//! line says why, and so does its `WWW-Authenticate`.

mod common;

use std::time::{Duration, Instant};

use common::{Srv, V2025};
use serde_json::{Value, json};

/// Waits (at most 5 s) for a log line that `matches`, and returns it.
fn log_line(srv: &Srv, matches: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let log = srv.log();
        if let Some(l) = log.lines().find(|l| matches(l)) {
            return l.to_owned();
        }
        assert!(Instant::now() < deadline, "no such line in: {log}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_401_log_line_and_challenge_say_why() {
    let srv = Srv::start(&[], None);
    let expired = srv.mint(&[
        "--org",
        "demo",
        "--person",
        "ana@demo.example",
        "--ttl",
        "-600",
    ]);
    let r = srv.rpc(Some(&expired), V2025, "ping", json!({}));
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap_or_default().to_owned();
    assert!(
        challenge.contains(r#"error="invalid_token""#),
        "{challenge}"
    );
    assert!(
        challenge.contains(r#"error_description="token expired"#),
        "{challenge}"
    );
    let line = log_line(&srv, |l| l.contains("status=401") && l.contains("expired"));
    assert!(line.contains("rpc_code=-31401"), "{line}");
    assert!(line.contains(r#"reason="token expired"#), "{line}");
    assert!(!line.contains(&expired), "never the token: {line}");

    // A token for the REST API on the MCP endpoint: the audience.
    let api = srv.mint_api("demo", "ana@demo.example");
    let r = srv.rpc(Some(&api), V2025, "ping", json!({}));
    assert_eq!(r.status, 401);
    log_line(&srv, |l| {
        l.contains("status=401") && l.contains(r#"reason="wrong audience"#)
    });

    // No token at all.
    let r = srv.rpc(None, V2025, "ping", json!({}));
    assert_eq!(r.status, 401);
    log_line(&srv, |l| {
        l.contains("status=401") && l.contains(r#"reason="no token"#)
    });
}

#[test]
fn the_json_log_line_has_a_reason_field() {
    let srv = Srv::start(&["--log-format", "json"], None);
    let r = srv.request(
        "POST",
        "/",
        &[
            ("Content-Type", "application/json"),
            ("Authorization", "Bearer not-a-jwt"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(r.status, 401);
    let line = log_line(&srv, |l| l.contains("\"status\":401"));
    let v: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(
        v["reason"], "malformed token: not a well-formed JWT",
        "{line}"
    );
    assert_eq!(v["rpc_code"], -31401);
}

#[test]
fn the_response_and_the_log_line_name_the_same_request_id() {
    let srv = Srv::start(&[], None);
    let r = srv.request(
        "GET",
        "/healthz",
        &[("X-Request-Id", "ignored-by-default")],
        b"",
    );
    assert_eq!(r.status, 200);
    let id = r.header("x-request-id").expect("an id").to_owned();
    assert_eq!(id.len(), 16, "the adapter's own: {id}");
    log_line(&srv, |l| l.contains(&format!("request_id=\"{id}\"")));
    assert!(!srv.log().contains("ignored-by-default"));
}

#[test]
fn a_trusted_proxys_request_id_is_echoed_and_logged() {
    let srv = Srv::start(&[], Some("trust_request_id = true\n"));
    let r = srv.request(
        "POST",
        "/",
        &[
            ("Content-Type", "application/json"),
            ("X-Request-Id", "edge-4f2c9a"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_eq!(r.status, 401);
    assert_eq!(r.header("x-request-id"), Some("edge-4f2c9a"));
    let line = log_line(&srv, |l| l.contains("status=401"));
    assert!(line.contains(r#"request_id="edge-4f2c9a""#), "{line}");
}

/// Whether the startup's debug line ("effective settings") was logged.
fn debug_logged(srv: &Srv) -> bool {
    // It is logged before the port opens: by now it is there or it never will be.
    srv.log().contains("effective settings")
}

#[test]
fn debug_lines_appear_only_when_asked() {
    let quiet = Srv::start(&[], None);
    assert!(!debug_logged(&quiet), "default info: {}", quiet.log());
    assert!(quiet.log().contains("INFO"), "{}", quiet.log());

    let flag = Srv::start(&["--log-level", "debug"], None);
    assert!(debug_logged(&flag), "{}", flag.log());

    let env = Srv::start_env(&[], None, &[("RUST_LOG", "debug")]);
    assert!(debug_logged(&env), "{}", env.log());

    // The flag wins over RUST_LOG; RUST_LOG over the file.
    let both = Srv::start_env(&["--log-level", "info"], None, &[("RUST_LOG", "debug")]);
    assert!(!debug_logged(&both), "{}", both.log());
    let file = Srv::start_env(
        &[],
        Some("log_level = \"debug\"\n"),
        &[("RUST_LOG", "warn")],
    );
    assert!(!debug_logged(&file), "{}", file.log());
    let file = Srv::start(&[], Some("log_level = \"debug\"\n"));
    assert!(debug_logged(&file), "{}", file.log());
}

#[test]
fn the_text_banner_is_on_stderr_and_stdout_stays_empty() {
    let srv = Srv::start(&[], None);
    assert!(srv.banner.contains("Ready:"), "{}", srv.banner);
    assert!(srv.banner.contains("Development token"), "{}", srv.banner);
    assert!(srv.log().contains(&srv.token), "text mode shows the token");
    let r = srv.rpc(Some(&srv.token), V2025, "ping", json!({}));
    assert_eq!(r.status, 200);
    assert!(srv.stdout.lock().unwrap().is_empty());
}

#[test]
fn the_json_banner_is_one_event_without_the_token() {
    let srv = Srv::start(&["--log-format", "json"], None);
    let event: Value = serde_json::from_str(&srv.banner).unwrap();
    assert_eq!(event["message"], "ready");
    assert_eq!(event["level"], "INFO");
    assert_eq!(event["mcp_endpoint"], format!("{}/", srv.url));
    assert_eq!(event["dev_key"], true);
    assert!(event.get("dev_token").is_none(), "{event}");
    assert!(
        event["mint_a_token"]
            .as_str()
            .unwrap()
            .contains("--print-token")
    );
    assert!(srv.token.is_empty());
    // No token anywhere: a JWT starts with base64url of `{"`, `eyJ`.
    assert!(!srv.log().contains("eyJ"), "{}", srv.log());
    assert!(srv.stdout.lock().unwrap().is_empty());
    // Every stderr line is JSON: no text banner mixed in.
    for line in srv.log().lines() {
        assert!(serde_json::from_str::<Value>(line).is_ok(), "{line}");
    }
}

#[test]
fn print_token_puts_a_working_token_in_the_json_event() {
    let srv = Srv::start(&["--log-format", "json", "--print-token"], None);
    let event: Value = serde_json::from_str(&srv.banner).unwrap();
    assert_eq!(event["dev_token"], srv.token.as_str());
    assert_eq!(srv.token.split('.').count(), 3);
    let r = srv.rpc(Some(&srv.token), V2025, "ping", json!({}));
    assert_eq!(r.status, 200);
}

#[test]
fn a_trusted_development_key_off_loopback_is_warned_about_once() {
    let open = Srv::start_on("0.0.0.0:0", &[], None);
    let warnings: Vec<_> = open
        .log()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("development key"))
        .map(str::to_owned)
        .collect();
    assert_eq!(warnings.len(), 1, "{}", open.log());
    assert!(warnings[0].contains("dev_key = false"), "{}", warnings[0]);

    let local = Srv::start(&[], None);
    assert!(!local.log().contains("non-loopback"), "{}", local.log());
}
