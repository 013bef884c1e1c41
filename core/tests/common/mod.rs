//! Shared by the core's integration tests: the test server and request builders.
//!
//! The domain itself ([`TestDomain`]: a tool with string, integer and boolean
//! `x-mcp-header` properties, a strict read tool, a destructive tool, a prompt, a
//! resource and templates; [`TestAuth`]: token `tok` accepted) lives in
//! `dunning_core::fuzzing`, so the fuzz targets and these tests drive the same server.
#![allow(dead_code, unreachable_pub)]

use dunning_core::Response;
#[allow(unused_imports)]
pub use dunning_core::fuzzing::{
    READ_TOKEN, RawRequest, TOKEN, TestAuth, TestDomain, check_response, env, server,
};
use serde_json::{Value, json};

/// The era-2026 `_meta` envelope with the given client capabilities.
pub fn envelope(caps: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": { "name": "tests", "version": "0" },
    })
}

/// A POST to `/` with a valid token and JSON content type, plus `extra` headers.
pub fn post(body: &Value, extra: &[(&str, &str)]) -> RawRequest {
    let mut headers = vec![
        (
            "Authorization".to_owned(),
            format!("Bearer {TOKEN}").into_bytes(),
        ),
        ("Content-Type".to_owned(), b"application/json".to_vec()),
    ];
    headers.extend(
        extra
            .iter()
            .map(|(n, v)| ((*n).to_owned(), v.as_bytes().to_vec())),
    );
    RawRequest {
        method: "POST".into(),
        target: "/".into(),
        headers,
        body: serde_json::to_vec(body).expect("a Value serializes"),
    }
}

/// An era-2026 request with every mirrored standard header right.
pub fn modern(id: u64, method: &str, mut params: Value, name: Option<&str>) -> RawRequest {
    params["_meta"] = envelope(json!({ "elicitation": {} }));
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let mut extra = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name {
        extra.push(("Mcp-Name", n));
    }
    post(&body, &extra)
}

/// An era-2026 `tools/call` of `tool` without arguments.
pub fn tool_call(tool: &str) -> RawRequest {
    modern(
        1,
        "tools/call",
        json!({ "name": tool, "arguments": {} }),
        Some(tool),
    )
}

/// An era-2025 request (`MCP-Protocol-Version: 2025-06-18`).
pub fn legacy(id: u64, method: &str, params: Value) -> RawRequest {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    post(&body, &[("MCP-Protocol-Version", "2025-06-18")])
}

/// Sends `req` to the shared test server; the invariants of every answer are checked.
pub fn send(req: &RawRequest) -> Response {
    let resp = req.with(|r| server().handle(r, &env()));
    check_response(req.path(), &resp);
    resp
}

/// The JSON body of a response (`Null` when empty or not JSON).
pub fn body(resp: &Response) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
}

/// `error.code` of a JSON-RPC error body, if it is one.
pub fn rpc_code(resp: &Response) -> Option<i64> {
    body(resp).pointer("/error/code").and_then(Value::as_i64)
}
