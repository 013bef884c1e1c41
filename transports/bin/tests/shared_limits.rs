//! Replicas limit a caller as one server (`[rate_limit] shared`): three `serve`
//! processes keep their GCRA buckets in the machine's Redis (127.0.0.1:6379, started by
//! the machine or `.ci/run`), and a burst spread over the three is refused past the
//! one budget, not three. Each process has its own data dir; the demo organization has
//! the same id in every one, so they share its bucket, as replicas on one database do.

mod common;

use common::{Srv, V2026};
use serde_json::json;

/// Requests the organization may send at once (at one more per minute: no refill
/// during the test).
const BURST: usize = 10;

fn config(prefix: &str) -> String {
    format!(
        "[rate_limit]\norg_per_minute = 1\norg_burst = {BURST}\n\
         token_per_minute = 600000\ntoken_burst = 100000\n\
         shared = \"redis://127.0.0.1:6379/\"\nshared_prefix = \"{prefix}\"\n"
    )
}

#[test]
fn a_burst_spread_over_three_replicas_is_limited_as_one() {
    // A prefix of this run's own: buckets of earlier runs (same injected clock) never
    // count here.
    let prefix = format!("test-{}-{}", std::process::id(), common::now_ms());
    let cfg = config(&prefix);
    let mut replicas: Vec<Srv> = (0..3).map(|_| Srv::start(&[], Some(&cfg))).collect();
    let mut passed = 0;
    let mut refused = Vec::new();
    for i in 0..3 * BURST {
        let r = &replicas[i % 3];
        let resp = r.call(&r.token, V2026, "dunning_me", json!({}));
        match resp.status {
            200 => passed += 1,
            429 => refused.push(resp),
            s => panic!("request {i}: {s} {}", resp.text()),
        }
    }
    assert_eq!(passed, BURST, "one budget for the three replicas");
    for r in &refused {
        assert!(
            r.header("RateLimit")
                .is_some_and(|v| v.starts_with("\"org\";r=0")),
            "{:?}",
            r.header("RateLimit")
        );
        assert!(r.header("Retry-After").is_some());
    }
    // Another organization's budget is its own.
    let acme = replicas[1].mint(&["--org", "acme", "--person", "carla@acme.example"]);
    let other = replicas[1].call(&acme, V2026, "dunning_me", json!({}));
    assert_eq!(other.status, 200, "{}", other.text());
    for r in &mut replicas {
        assert!(r.terminate().success());
    }
}

#[test]
fn a_replica_does_not_start_on_an_unreachable_redis() {
    let cfg = "[rate_limit]\nshared = \"redis://127.0.0.1:1/\"\n";
    let dir = common::seeded_dir("noredis");
    std::fs::write(dir.join("c.toml"), cfg).unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .arg("--config")
        .arg(dir.join("c.toml"))
        .args(common::pg::store_args(&dir))
        .output()
        .unwrap();
    common::discard(&dir);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a start-up failure, not a usage error: {out:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rate_limit.shared: cannot reach redis://127.0.0.1:1/"),
        "{err}"
    );
}
