//! Webhook receiver addresses, the domain's part: a trailing dot
//! changes nothing in a parsed URL. The address policy itself (every non-global form
//! refused before any connection is made, the same receiver reached once private
//! addresses are allowed) is the HTTP driver's and is tested beside it, in the binary
//! (`transports/bin/src/webhook_http/tests.rs`).

use dunning_domain::ops::webhooks::parse_url;

#[test]
fn a_trailing_dot_is_the_same_host() {
    let a = parse_url("https://ERP.example.com./hook").unwrap();
    let b = parse_url("https://erp.example.com/hook").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.host_header(), "erp.example.com");
    for bad in [
        "https://./x",
        "https://a..b/x",
        "https://.a/x",
        "https://a../x",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}
