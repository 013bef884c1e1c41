//! The per-address rate limit of the embedded authorization server's open endpoints
//! (`/register`, `/authorize`, `/token`; `[rate_limit] oauth_per_minute` /
//! `oauth_burst`), over real sockets against the real binary, on each of its three
//! transports (each stamps the connection's address on its requests its own way).
//!
//! Both sides are shown: a burst from one address is answered `429` with `Retry-After`
//! (RFC 6749-shaped JSON for the programs' endpoints, text for the person's page), and a
//! normal sign-in under the defaults passes untouched.

mod common;

use common::oauth::*;
use common::{Srv, V2026};
use serde_json::json;

/// At most `burst` at once and then one a minute: no refill during the test, however
/// slow the machine.
fn tight(burst: u32) -> String {
    format!("[rate_limit]\noauth_per_minute = 1\noauth_burst = {burst}\n")
}

fn registration() -> serde_json::Value {
    json!({ "redirect_uris": [REDIRECT], "client_name": "burst" })
}

#[test]
fn a_burst_from_one_address_is_refused_429_with_retry_after() {
    for transport in ["tokio", "blocking", "mio"] {
        let srv = Srv::start(&["--transport", transport], Some(&tight(6)));
        // A whole sign-in (register, page, approve, token: four requests) passes.
        let client = Client::register(&srv, &[REDIRECT]);
        let code = client.code("caio@demo.example");
        let t = client.redeem(&code);
        assert_eq!(t.status, 200, "{transport}: {}", t.text());
        let access = t.json()["access_token"].as_str().unwrap().to_owned();
        // Two more fit the burst of six; the next is refused.
        for _ in 0..2 {
            assert_eq!(register(&srv, &registration()).status, 201, "{transport}");
        }
        let r = register(&srv, &registration());
        assert_oauth_error(&r, 429, "temporarily_unavailable");
        let wait: u64 = r.header("retry-after").unwrap().parse().unwrap();
        assert!((1..=60).contains(&wait), "{transport}: Retry-After {wait}");
        assert_eq!(
            r.header("ratelimit-policy"),
            Some("\"address\";q=1;w=60"),
            "{transport}"
        );
        assert!(
            r.json()["error_description"]
                .as_str()
                .unwrap()
                .contains("retry in"),
            "{transport}: {}",
            r.text()
        );
        // `/token` answers in the same JSON shape; the page in words a person reads.
        let r = client.refresh("whatever");
        assert_oauth_error(&r, 429, "temporarily_unavailable");
        let page = client.authorize(&[]);
        assert_eq!(page.status, 429, "{transport}: {}", page.text());
        assert!(page.header("retry-after").is_some(), "{transport}");
        assert!(
            page.header("content-type")
                .unwrap()
                .starts_with("text/plain"),
            "{transport}"
        );
        assert!(page.text().contains("too many requests"), "{transport}");
        // The documents every client fetches are not counted, and the token already
        // issued still works: the MCP endpoint has its own buckets.
        for path in [
            "/.well-known/oauth-authorization-server",
            "/.well-known/oauth-protected-resource",
            "/.well-known/jwks.json",
        ] {
            let r = srv.request("GET", path, &[], b"");
            assert_eq!(r.status, 200, "{transport}: {path}");
        }
        let r = srv.rpc(Some(&access), V2026, "tools/list", json!({}));
        assert_eq!(r.status, 200, "{transport}: {}", r.text());
        assert!(
            srv.log().contains("too many requests from this address"),
            "{transport}: the refusal is logged with its reason"
        );
    }
}

/// The defaults (60 a minute, 30 at once) leave room for several people signing in at
/// once from one machine (a client that retries, the Inspector, an SDK, a browser),
/// and refresh, and still stop a loop.
#[test]
fn normal_sign_ins_pass_under_the_defaults_and_a_loop_does_not() {
    let srv = Srv::start(&[], None);
    // The bucket refills one a second from the first request on.
    let started = std::time::Instant::now();
    for login in [
        "ana@demo.example",
        "caio@demo.example",
        "bruno@demo.example",
    ] {
        let client = Client::register(&srv, &[REDIRECT]);
        let code = client.code(login);
        let t = client.redeem(&code);
        assert_eq!(t.status, 200, "{login}: {}", t.text());
        let refresh = t.json()["refresh_token"].as_str().unwrap().to_owned();
        let r = client.refresh(&refresh);
        assert_eq!(r.status, 200, "{login}: refresh: {}", r.text());
    }
    // 15 requests so far. A registration loop is stopped within the burst plus the
    // little the bucket refilled meanwhile.
    let mut passed = 0;
    let refused = loop {
        let r = register(&srv, &registration());
        if r.status != 201 {
            break r;
        }
        passed += 1;
        assert!(passed < 60, "no refusal after {passed} registrations");
    };
    assert_oauth_error(&refused, 429, "temporarily_unavailable");
    let refills = started.elapsed().as_secs() + 1;
    assert!(
        passed >= 15 && passed <= 15 + refills,
        "{passed} registrations passed in {refills} s"
    );
    assert_eq!(
        refused.header("ratelimit-policy"),
        Some("\"address\";q=60;w=60")
    );
}

#[test]
fn the_limit_is_configurable_and_validated() {
    let dir = common::seeded_dir("oauth-limit-zero");
    let path = dir.join("zero.toml");
    std::fs::write(&path, "[rate_limit]\noauth_burst = 0\n").unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .arg("--config")
        .arg(&path)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("rates and bursts must be positive"), "{err}");
    common::discard(&dir);
    // With the limiter off, nothing is counted.
    let srv = Srv::start(
        &[],
        Some("[rate_limit]\nenabled = false\noauth_burst = 1\n"),
    );
    for _ in 0..5 {
        assert_eq!(register(&srv, &registration()).status, 201);
    }
}
