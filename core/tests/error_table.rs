//! The error table pinned: every `ProtocolError` variant to (HTTP status, JSON-RPC code) in both
//! eras, every tool error code to its REST status, and a handful of the same rows seen
//! end to end through `Server::handle`.

mod common;

use common::{body, legacy, modern, post, rpc_code, send};
use dunning_core::{AuthError, Era, ProtocolError, ToolErrorCode};
use serde_json::json;

/// One variant of each kind (payloads do not change the mapping).
fn variants() -> Vec<(&'static str, ProtocolError)> {
    vec![
        ("Parse", ProtocolError::Parse),
        ("InvalidRequest", ProtocolError::InvalidRequest("x")),
        ("Batch", ProtocolError::Batch),
        (
            "BodyTooLarge",
            ProtocolError::BodyTooLarge { limit: 2_097_152 },
        ),
        ("MethodNotFound", ProtocolError::MethodNotFound("x".into())),
        ("Envelope", ProtocolError::Envelope("x".into())),
        (
            "InvalidParams",
            ProtocolError::InvalidParams {
                message: "x".into(),
                data: None,
            },
        ),
        (
            "ResourceNotFound",
            ProtocolError::ResourceNotFound {
                uri: "kobana://x".into(),
                reason: None,
            },
        ),
        ("HeaderMismatch", ProtocolError::HeaderMismatch("x".into())),
        (
            "MissingCapability",
            ProtocolError::MissingCapability {
                tool: "t".into(),
                required: Box::new(json!({ "elicitation": {} })),
            },
        ),
        (
            "UnsupportedVersion",
            ProtocolError::UnsupportedVersion {
                requested: "1999-01-01".into(),
            },
        ),
        ("Internal", ProtocolError::Internal("x".into())),
        (
            "Unauthorized",
            ProtocolError::Unauthorized(AuthError::Expired),
        ),
        ("OriginNotAllowed", ProtocolError::OriginNotAllowed),
        (
            "InsufficientScope",
            ProtocolError::InsufficientScope {
                scope: "dunning.admin",
            },
        ),
        ("UnsupportedMediaType", ProtocolError::UnsupportedMediaType),
        (
            "RateLimited",
            ProtocolError::RateLimited {
                retry_after_ms: 1500,
                policy: "\"token\";q=1200;w=60".into(),
                state: "\"token\";r=0;t=2".into(),
            },
        ),
        (
            "Unavailable",
            ProtocolError::Unavailable { draining: false },
        ),
        ("PathNotFound", ProtocolError::PathNotFound),
        (
            "MethodNotAllowed",
            ProtocolError::MethodNotAllowed { allow: "POST" },
        ),
    ]
}

/// (HTTP status, JSON-RPC code).
type Wire = (u16, i32);

/// Variant name, its wire form in era 2026, its wire form in era 2025.
type Row = (&'static str, Wire, Wire);

/// (variant, era 2026 (status, code), era 2025 (status, code)), as the contract's error table says.
///
/// Where the table has "-" for era 2025 (envelope, mirrored headers: era-2026 only) the
/// mapping does not depend on the era, and the row pins that. `MissingCapability` is
/// never produced in era 2025 (the tool answers `isError` `CONFIRMATION_REQUIRED`).
/// `PathNotFound` and `MethodNotAllowed` are bodyless (`404`, `405`; the table's "may have an
/// empty body"); their codes only reach the log.
const TABLE: &[Row] = &[
    ("Parse", (400, -32700), (400, -32700)),
    ("InvalidRequest", (400, -32600), (400, -32600)),
    ("Batch", (400, -32600), (400, -32600)),
    ("BodyTooLarge", (413, -32600), (413, -32600)),
    ("MethodNotFound", (404, -32601), (200, -32601)),
    ("Envelope", (400, -32602), (400, -32602)),
    ("InvalidParams", (200, -32602), (200, -32602)),
    ("ResourceNotFound", (200, -32602), (200, -32002)),
    ("HeaderMismatch", (400, -32020), (400, -32020)),
    ("MissingCapability", (400, -32021), (400, -32021)),
    ("UnsupportedVersion", (400, -32022), (400, -32022)),
    ("Internal", (500, -32603), (500, -32603)),
    ("Unauthorized", (401, -31401), (401, -31401)),
    ("OriginNotAllowed", (403, -31403), (403, -31403)),
    ("InsufficientScope", (403, -31403), (403, -31403)),
    ("UnsupportedMediaType", (415, -31415), (415, -31415)),
    ("RateLimited", (429, -31429), (429, -31429)),
    ("Unavailable", (503, -31503), (503, -31503)),
    ("PathNotFound", (404, -32601), (404, -32601)),
    ("MethodNotAllowed", (405, -32600), (405, -32600)),
];

fn wire(e: &ProtocolError, era: Option<Era>) -> (u16, i32) {
    let (status, code) = e.wire(era);
    (status.as_u16(), code.0)
}

#[test]
fn every_variant_maps_as_section_11_says() {
    let variants = variants();
    assert_eq!(variants.len(), TABLE.len(), "one row per variant");
    for (name, err) in &variants {
        let (_, modern, legacy) = TABLE
            .iter()
            .find(|row| row.0 == *name)
            .unwrap_or_else(|| panic!("no row for {name}"));
        assert_eq!(wire(err, Some(Era::Modern)), *modern, "{name}, era 2026");
        assert_eq!(wire(err, Some(Era::Legacy)), *legacy, "{name}, era 2025");
    }
}

#[test]
fn without_an_era_the_legacy_row_applies() {
    // Refusals before era detection (401, 403, 415, 413, parse errors) have no era;
    // the only era-dependent rows must then fall back to the HTTP-200 legacy mapping.
    for (name, err) in &variants() {
        let (_, _, legacy) = TABLE.iter().find(|row| row.0 == *name).unwrap();
        assert_eq!(wire(err, None), *legacy, "{name}, no era");
    }
}

#[test]
fn no_code_in_the_legacy_implementation_range_but_32002() {
    for (name, err) in &variants() {
        for era in [Some(Era::Modern), Some(Era::Legacy), None] {
            let (_, code) = wire(err, era);
            let legacy_range = (-32019..=-32000).contains(&code);
            assert!(
                !legacy_range || (code == -32002 && era != Some(Era::Modern)),
                "{name} emits {code} in {era:?}"
            );
        }
    }
}

#[test]
fn only_path_and_method_refusals_are_bodyless() {
    for (name, err) in &variants() {
        let expected = matches!(*name, "PathNotFound" | "MethodNotAllowed");
        assert_eq!(err.bodyless(), expected, "{name}");
    }
}

#[test]
fn tool_error_codes_map_to_rest_statuses() {
    // The tool-error table, plus INTERNAL_ERROR (a bug: 500, never an isError).
    let table = [
        (ToolErrorCode::Validation, "VALIDATION_ERROR", 422),
        (ToolErrorCode::NotFound, "NOT_FOUND", 404),
        (ToolErrorCode::Conflict, "CONFLICT", 409),
        (ToolErrorCode::Forbidden, "FORBIDDEN", 403),
        (
            ToolErrorCode::IdempotencyConflict,
            "IDEMPOTENCY_CONFLICT",
            409,
        ),
        (
            ToolErrorCode::ConfirmationRequired,
            "CONFIRMATION_REQUIRED",
            428,
        ),
        (
            ToolErrorCode::ConfirmationDeclined,
            "CONFIRMATION_DECLINED",
            409,
        ),
        (
            ToolErrorCode::Unavailable("NOT_SETTLED"),
            "NOT_SETTLED",
            422,
        ),
        (ToolErrorCode::RateLimited, "RATE_LIMITED", 429),
        (ToolErrorCode::Internal, "INTERNAL_ERROR", 500),
    ];
    for (code, wire_name, status) in table {
        assert_eq!(code.as_str(), wire_name);
        assert_eq!(code.rest_status(), status, "{wire_name}");
    }
}

// ---------------------------------------------------------------------------------------
// The same rows, end to end
// ---------------------------------------------------------------------------------------

fn status_and_code(resp: &dunning_core::Response) -> (u16, Option<i64>) {
    (resp.status.as_u16(), rpc_code(resp))
}

#[test]
fn unknown_method_is_404_modern_and_200_legacy() {
    let m = send(&modern(1, "nope/nope", json!({}), None));
    assert_eq!(status_and_code(&m), (404, Some(-32601)));
    assert_eq!(
        m.header("mcp-protocol-version").unwrap().as_bytes(),
        b"2026-07-28"
    );
    let l = send(&legacy(1, "nope/nope", json!({})));
    assert_eq!(status_and_code(&l), (200, Some(-32601)));
    assert_eq!(
        l.header("mcp-protocol-version").unwrap().as_bytes(),
        b"2025-06-18"
    );
}

#[test]
fn unknown_resource_is_32602_modern_and_32002_legacy() {
    let uri = "kobana://test/nowhere";
    let m = send(&modern(
        2,
        "resources/read",
        json!({ "uri": uri }),
        Some(uri),
    ));
    assert_eq!(status_and_code(&m), (200, Some(-32602)));
    assert_eq!(body(&m)["error"]["data"]["uri"], uri);
    let l = send(&legacy(2, "resources/read", json!({ "uri": uri })));
    assert_eq!(status_and_code(&l), (200, Some(-32002)));
    let unpaid = "kobana://test/charges/unpaid/letter";
    let m = send(&modern(
        3,
        "resources/read",
        json!({ "uri": unpaid }),
        Some(unpaid),
    ));
    assert_eq!(status_and_code(&m), (200, Some(-32602)));
    assert_eq!(body(&m)["error"]["data"]["reason"], "NOT_SETTLED");
}

#[test]
fn envelope_and_version_refusals() {
    // 2026 header without the envelope.
    let r = post(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        &[("MCP-Protocol-Version", "2026-07-28")],
    );
    assert_eq!(status_and_code(&send(&r)), (400, Some(-32602)));
    // Envelope without clientCapabilities.
    let r = post(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": { "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } }),
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "tools/list"),
        ],
    );
    assert_eq!(status_and_code(&send(&r)), (400, Some(-32602)));
    // Unknown version in the header (not initialize).
    let r = post(
        &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        &[("MCP-Protocol-Version", "1999-01-01")],
    );
    let resp = send(&r);
    assert_eq!(status_and_code(&resp), (400, Some(-32022)));
    assert_eq!(
        body(&resp)["error"]["data"],
        json!({ "supported": ["2026-07-28", "2025-06-18", "2025-03-26"], "requested": "1999-01-01" })
    );
}

#[test]
fn header_mismatch_and_missing_capability() {
    let r = modern(1, "tools/list", json!({}), None);
    let mut bad = r.clone();
    bad.headers
        .retain(|(n, _)| !n.eq_ignore_ascii_case("mcp-method"));
    assert_eq!(status_and_code(&send(&bad)), (400, Some(-32020)));
    // A destructive tool, no elicitation declared.
    let mut r = modern(
        2,
        "tools/call",
        json!({ "name": "charges_cancel", "arguments": { "id": "C-1" } }),
        Some("charges_cancel"),
    );
    r.headers
        .push(("Mcp-Param-Target-Id".into(), b"C-1".to_vec()));
    let mut b: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    b["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    r.body = serde_json::to_vec(&b).unwrap();
    let resp = send(&r);
    assert_eq!(status_and_code(&resp), (400, Some(-32021)));
    assert_eq!(
        body(&resp)["error"]["data"]["requiredCapabilities"],
        json!({ "elicitation": {} })
    );
    assert!(
        body(&resp)["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("confirmation_required")
    );
}

#[test]
fn http_level_refusals() {
    let ok = json!({ "jsonrpc": "2.0", "id": 9, "method": "ping" });
    // 405 with Allow: POST.
    let mut r = post(&ok, &[]);
    r.method = "GET".into();
    let resp = send(&r);
    assert_eq!(resp.status.as_u16(), 405);
    assert_eq!(resp.header("allow").unwrap().as_bytes(), b"POST");
    // 403 foreign Origin.
    let resp = send(&post(&ok, &[("Origin", "https://evil.example")]));
    assert_eq!(status_and_code(&resp), (403, Some(-31403)));
    assert_eq!(body(&resp)["error"]["message"], "origin_not_allowed");
    // 401 without and with a bad token.
    let mut r = post(&ok, &[]);
    r.headers.retain(|(n, _)| n != "Authorization");
    let resp = send(&r);
    assert_eq!(status_and_code(&resp), (401, Some(-31401)));
    let challenge = resp.header("www-authenticate").unwrap().to_str().unwrap();
    assert!(
        challenge.starts_with("Bearer resource_metadata="),
        "{challenge}"
    );
    assert!(!challenge.contains("invalid_token"));
    r.headers
        .push(("Authorization".into(), b"Bearer wrong".to_vec()));
    let resp = send(&r);
    assert_eq!(status_and_code(&resp), (401, Some(-31401)));
    let challenge = resp.header("www-authenticate").unwrap().to_str().unwrap();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // 415.
    let mut r = post(&ok, &[]);
    r.headers[1].1 = b"text/plain".to_vec();
    assert_eq!(status_and_code(&send(&r)), (415, Some(-31415)));
    // 503 with Retry-After: 1.
    let r = post(&ok, &[]);
    let mut env = common::env();
    env.load = dunning_core::Load::Draining;
    let resp = r.with(|req| common::server().handle(req, &env));
    assert_eq!(status_and_code(&resp), (503, Some(-31503)));
    assert_eq!(resp.header("retry-after").unwrap().as_bytes(), b"1");
}

#[test]
fn insufficient_scope_is_a_403_challenge() {
    let mut r = modern(
        1,
        "tools/call",
        json!({ "name": "secrets_rotate", "arguments": {} }),
        Some("secrets_rotate"),
    );
    r.headers[0].1 = format!("Bearer {}", common::READ_TOKEN).into_bytes();
    let resp = send(&r);
    assert_eq!(status_and_code(&resp), (403, Some(-31403)));
    assert_eq!(body(&resp)["error"]["message"], "insufficient_scope");
    let challenge = resp.header("www-authenticate").unwrap().to_str().unwrap();
    assert!(challenge.contains("scope=\"dunning.admin\""), "{challenge}");
}

#[test]
fn framing_refusals() {
    let parse = send(&post(&json!(null), &[]));
    // `null` is JSON but not an object: -32600; broken JSON is -32700.
    assert_eq!(status_and_code(&parse), (400, Some(-32600)));
    let mut r = post(&json!({}), &[]);
    r.body = b"{\"jsonrpc\":".to_vec();
    assert_eq!(status_and_code(&send(&r)), (400, Some(-32700)));
    r.body = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.to_vec();
    assert_eq!(status_and_code(&send(&r)), (400, Some(-32600)));
    // Exactly the limit is accepted (as far as the size check goes); one more is 413.
    let limit = common::server().config().max_body;
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mut body_at_limit = ping.to_vec();
    body_at_limit.resize(limit, b' ');
    r.body = body_at_limit;
    assert_eq!(status_and_code(&send(&r)), (200, None));
    r.body.push(b' ');
    let resp = send(&r);
    assert_eq!(resp.status.as_u16(), 413);
    assert_eq!(
        resp.body,
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit 2097152 bytes)"}}"#
    );
}

#[test]
fn notifications_are_202_without_a_body() {
    let r = post(
        &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        &[("MCP-Protocol-Version", "2025-11-25")],
    );
    let resp = send(&r);
    assert_eq!(resp.status.as_u16(), 202);
    assert!(resp.body.is_empty());
}
