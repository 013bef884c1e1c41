//! Regression tests of core bugs found while writing the other tests (both fixed): each
//! asserts the behaviour the spec asks for.

mod common;

use common::{body, legacy, post, send};
use serde_json::json;

/// The protocol-version rule: `initialize` "negotiates from `params.protocolVersion` alone" and "carries no
/// header requirement"; a notification without the envelope gets `202` whatever the
/// header says. The core reads `MCP-Protocol-Version` through `mirror::text` before era
/// detection and refuses a value with obs-text (legal HTTP, RFC 9110 §5.5) or a repeated
/// header with `400`/`-32020`, even for these two, which never use the header.
#[test]
fn initialize_and_notifications_ignore_a_malformed_version_header() {
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "c", "version": "1" } } });
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    for value in [&b"2025-06-18\xc3\xa9"[..], b"\xff"] {
        let mut r = post(&init, &[]);
        r.headers
            .push(("MCP-Protocol-Version".into(), value.to_vec()));
        let resp = send(&r);
        assert_eq!(resp.status.as_u16(), 200, "initialize: {}", body(&resp));
        assert_eq!(body(&resp)["result"]["protocolVersion"], "2025-06-18");
        r.body = serde_json::to_vec(&note).unwrap();
        assert_eq!(send(&r).status.as_u16(), 202, "notification");
    }
}

/// RFC 3986 `pct-encoded = "%" HEXDIG HEXDIG`. Both percent decoders (resource templates
/// in `registry.rs`, REST paths in `rest.rs`) use `u8::from_str_radix`, which accepts a
/// leading `+`: `%+5` decodes to the control byte U+0005 instead of being refused.
#[test]
fn percent_decoding_refuses_a_signed_escape() {
    let uri = "kobana://test/charges/%+5";
    let resp = send(&legacy(1, "resources/read", json!({ "uri": uri })));
    assert_eq!(
        body(&resp)["error"]["code"],
        -32002,
        "`%+5` is not an escape: the URI matches no resource, got {}",
        body(&resp)
    );
    let mut r = post(&json!({}), &[]);
    r.method = "GET".into();
    r.target = "/v1/charges/%+5".into();
    r.body.clear();
    let resp = send(&r);
    assert_ne!(
        body(&resp)["id"],
        "\u{5}",
        "REST path variable decoded from `%+5`"
    );
}
