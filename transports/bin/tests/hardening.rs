//! Hardening of issue 10 (domain and core items), end to end over real sockets: the
//! built binary on loopback, as a client sees it.

mod common;

use common::{Srv, V2026};
use serde_json::json;

/// Item 10: a token whose `exp` is 2^63-1 is refused (`401`), one within the default
/// 24 h lifetime is served, and `[auth] max_token_lifetime_secs` narrows the maximum.
#[test]
fn token_lifetime_is_bounded() {
    let srv = Srv::start(&[], None);
    let ana = ["--org", "demo", "--person", "ana@demo.example"];
    let forever = srv.mint(&[&ana[..], &["--ttl", &i64::MAX.to_string()]].concat());
    let r = srv.call(&forever, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let day = srv.mint(&[&ana[..], &["--ttl", "86400"]].concat());
    let r = srv.call(&day, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    drop(srv);

    let srv = Srv::start(&[], Some("[auth]\nmax_token_lifetime_secs = 600\n"));
    let hour = srv.mint(&[&ana[..], &["--ttl", "3600"]].concat());
    let r = srv.call(&hour, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let short = srv.mint(&[&ana[..], &["--ttl", "600"]].concat());
    let r = srv.call(&short, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
}
