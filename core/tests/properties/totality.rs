//! `Server::handle` and the fuzz targets answer anything, with a documented status.

use super::*;

// ---------------------------------------------------------------------------------------
// Totality
// ---------------------------------------------------------------------------------------

const HEADER_NAMES: &[&str] = &[
    "Authorization",
    "Content-Type",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Mcp-Param-Region",
    "Mcp-Param-Count",
    "Mcp-Param-Urgent",
    "Mcp-Param-Zone",
    "Mcp-Param-Target-Id",
    "Origin",
    "X-Idempotency-Key",
    "Mcp-Session-Id",
];

const HEADER_VALUES: &[&str] = &[
    "Bearer tok",
    "Bearer reader",
    "Bearer ",
    "bearer  tok",
    "Basic dG9rOg==",
    "application/json",
    "application/json; charset=utf-8",
    "application/json; charset=latin1",
    "text/plain",
    "2026-07-28",
    "2025-06-18",
    "2025-03-26",
    "1999-01-01",
    "tools/call",
    "tools/list",
    "mirror_echo",
    "charges_cancel",
    "=?base64?SGVsbG8=?=",
    "=?base64?SGVsbG8?=",
    "=?base64?/w==?=",
    "http://localhost:3000",
    "https://evil.example",
    "null",
    "42",
    "42.0",
    "-0",
    "true",
];

fn header() -> impl Strategy<Value = (String, Vec<u8>)> {
    (
        prop_oneof![
            4 => select(HEADER_NAMES).prop_map(str::to_owned),
            1 => "[!-~]{0,16}",
            1 => any::<String>(),
        ],
        prop_oneof![
            3 => select(HEADER_VALUES).prop_map(|v| v.as_bytes().to_vec()),
            1 => tricky_string().prop_map(String::into_bytes),
            1 => prop::collection::vec(any::<u8>(), 0..32),
        ],
    )
}

fn arb_request() -> impl Strategy<Value = RawRequest> {
    (
        prop_oneof![
            4 => select(&["POST", "GET", "HEAD", "DELETE", "PATCH", "OPTIONS"][..])
                .prop_map(str::to_owned),
            1 => any::<String>(),
        ],
        prop_oneof![
            3 => select(
                &[
                    "/",
                    "/?x=1",
                    "/v1",
                    "/v1/echo",
                    "/v1/charges",
                    "/v1/charges?status=open&page=2&tags=a,b",
                    "/v1/charges?page=x&%zz",
                    "/v1/charges/C-1",
                    "/v1/charges/missing",
                    "/v1/charges/C%201/cancel",
                    "/v1/charges/%ff/cancel",
                    "/v1/secrets",
                    "/healthz",
                    "/readyz",
                    "/metrics",
                    "/.well-known/oauth-protected-resource",
                    "/nope",
                    "",
                ][..]
            )
            .prop_map(str::to_owned),
            1 => "/v1/[a-z%0-9/?=&+,]{0,30}",
            1 => any::<String>(),
        ],
        any::<bool>(),
        prop::collection::vec(header(), 0..8),
        prop_oneof![
            3 => rpc_ish().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            1 => arb_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
            1 => prop::collection::vec(any::<u8>(), 0..128),
        ],
    )
        .prop_map(|(method, target, base, mut headers, body)| {
            if base {
                headers.insert(0, ("Authorization".into(), b"Bearer tok".to_vec()));
                headers.insert(1, ("Content-Type".into(), b"application/json".to_vec()));
            }
            RawRequest {
                method,
                target,
                headers,
                body,
            }
        })
}

/// A POST to the MCP endpoint that passes the gate and often mirrors its own body,
/// so the random part reaches era detection, mirrored headers and the methods.
fn deep_request() -> impl Strategy<Value = RawRequest> {
    (
        rpc_ish(),
        // `Some("")`: the envelope's own version, when there is one.
        prop::option::of(select(
            &[
                "",
                "",
                "",
                "2026-07-28",
                "2025-06-18",
                "2025-03-26",
                "2025-11-25",
            ][..],
        )),
        0..4u8,
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(header(), 1..3)],
        any::<bool>(),
    )
        .prop_map(|(body, version, mirrors, extra, reader)| {
            let token = if reader {
                "Bearer reader"
            } else {
                "Bearer tok"
            };
            let mut headers = vec![
                ("Authorization".to_owned(), token.as_bytes().to_vec()),
                ("Content-Type".to_owned(), b"application/json".to_vec()),
            ];
            let envelope = body
                .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
                .and_then(Value::as_str);
            if let Some(v) = version.map(|v| {
                if v.is_empty() {
                    envelope.unwrap_or(v)
                } else {
                    v
                }
            }) {
                headers.push(("MCP-Protocol-Version".into(), v.as_bytes().to_vec()));
            }
            let text = |v: &Value| match v {
                Value::String(s) => mirror::encode(s).into_owned(),
                other => other.to_string(),
            };
            if mirrors & 1 == 1 {
                let m = body.get("method").map(text).unwrap_or_default();
                headers.push(("Mcp-Method".into(), m.into_bytes()));
            }
            if mirrors & 2 == 2 {
                let p = body.get("params");
                let n = p
                    .and_then(|p| p.get("name").or_else(|| p.get("uri")))
                    .map(text)
                    .unwrap_or_default();
                headers.push(("Mcp-Name".into(), n.into_bytes()));
            }
            headers.extend(extra);
            RawRequest {
                method: "POST".into(),
                target: "/".into(),
                headers,
                body: serde_json::to_vec(&body).unwrap(),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any request to the MCP endpoint that gets past the gate: documented status, no 500.
    #[test]
    fn handle_is_total_past_the_gate(req in deep_request()) {
        let resp = send(&req);
        prop_assert_ne!(resp.status.as_u16(), 500, "{:?}\n{}", req, body(&resp));
    }

    /// Any request gets an answer with a documented status, never a panic nor a 500.
    #[test]
    fn handle_is_total(req in arb_request()) {
        let resp = send(&req);
        let status = resp.status.as_u16();
        prop_assert!(documented(req.path(), status), "{status}");
        prop_assert_ne!(status, 500, "a 500 from a domain that never fails: {:?}\n{}", req, body(&resp));
    }

    /// Any bytes through the fuzz target's splitter: same invariants.
    #[test]
    fn fuzz_target_is_total(data in prop::collection::vec(any::<u8>(), 0..256)) {
        fuzzing::handle(&data);
        let req = RawRequest::split(&data);
        prop_assert!(!req.method.is_empty());
    }

    /// Any bytes through the `rest_handle` target: a `/v1` request every time, with a
    /// documented REST status and the shared error shapes (the target asserts them).
    #[test]
    fn rest_target_is_total(
        sel in prop::collection::vec(any::<u8>(), 3),
        target in select(vec!["/charges", "/charges/C-1", "/charges/C%201/cancel", "/echo", "/secrets", "", "/x"]),
        query in "[a-z=&%0-9,]{0,12}",
        data in prop::collection::vec(any::<u8>(), 0..128),
    ) {
        let mut input = sel;
        input.extend_from_slice(format!("{target}?{query}\n\n").as_bytes());
        input.extend_from_slice(&data);
        fuzzing::rest_handle(&input);
        prop_assert!(fuzzing::rest::build(&input).target.starts_with("/v1"));
    }

    /// Any bytes through the `jwt_verify` target, in every mode: nothing verifies.
    #[test]
    fn jwt_target_is_total(mode in 0u8..4, data in prop::collection::vec(any::<u8>(), 0..256)) {
        let mut input = vec![mode];
        input.extend_from_slice(&data);
        fuzzing::jwt_verify(&input);
        prop_assert_eq!(fuzzing::jwt::check(&String::from_utf8_lossy(&data)), 0);
    }
}
