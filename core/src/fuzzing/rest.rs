//! Fuzz target `rest_handle`: requests to `/v1/...` through [`Server::handle`] of the
//! test server, built from a few selector bytes so most inputs reach the REST routes,
//! the authentication and the argument flattening instead of dying in the router.
//!
//! Input layout (anything is accepted; missing bytes read as 0):
//!
//! | byte | meaning |
//! |---|---|
//! | 0 | method: an index into [`METHODS`]; past its end, the method is the first word of the target line |
//! | 1 | `Authorization`: an index into [`AUTHORIZATIONS`] (past the end: none) |
//! | 2 | flags: see the `FLAG_*` constants |
//! | 3.. | `TARGET [METHOD]`, then `name: value` lines up to an empty line, then the body |
//!
//! The target is prefixed with `/v1` unless it already starts with it, so every input
//! goes to the REST surface (`/v1x` routes elsewhere: that is the router's business, and
//! [`super::check_response`] then holds the MCP set).
//!
//! Checks, besides "no panic": the status is in [`REST_STATUSES`] and is not `500` (the
//! test domain never fails, so a `500` is a core bug); `Cache-Control` is set; a JSON body
//! parses; an error status (`4xx`/`5xx`) with a body has one of the two error shapes of
//! `/v1` (docs/decisions.md, "Tools and REST"): the JSON-RPC error object of HTTP-level
//! refusals, or the tool error (`{"error":{"code","message","request_id",..}}`) whose
//! code maps to exactly this status.

use serde_json::Value;

use super::{REST_STATUSES, RawRequest, check_response, env, server};
use crate::dispatch::ToolErrorCode;

/// The methods byte 0 picks from.
pub const METHODS: [&str; 8] = [
    "GET", "POST", "DELETE", "HEAD", "PUT", "PATCH", "OPTIONS", "get",
];

/// `Authorization` values byte 1 picks from: every token the test server knows, a
/// wrong one, other schemes and malformed bearer headers.
pub const AUTHORIZATIONS: [&str; 14] = [
    "Bearer tok",
    "Bearer reader",
    "Bearer tok-limited",
    "Bearer tok-api",
    "Bearer tok-expired",
    "Bearer tok-noperm",
    "Bearer tok-acme",
    "Bearer nope",
    "bearer tok",
    "Bearer  tok",
    "Bearer",
    "Basic dG9rOnRvaw==",
    "Bearer tok, Bearer tok",
    "Bearer tok\u{0}",
];

/// `Content-Type: application/json` (else none, or the odd one of [`FLAG_ODD_TYPE`]).
pub const FLAG_JSON: u8 = 1;
/// `Content-Type: text/plain` (with [`FLAG_JSON`]: `application/json; charset=utf-8`).
pub const FLAG_ODD_TYPE: u8 = 2;
/// `X-Idempotency-Key: k-1`.
pub const FLAG_IDEMPOTENCY: u8 = 4;
/// `Origin: https://evil.example` (a cross-site browser request).
pub const FLAG_ORIGIN: u8 = 8;
/// `Accept: application/json`.
pub const FLAG_ACCEPT: u8 = 16;
/// A second `Authorization` header (`Bearer tok`).
pub const FLAG_TWO_AUTH: u8 = 32;

/// The shared error shape of `/v1` answers with an error status; `Err` says what broke.
pub fn error_shape(status: u16, body: &Value) -> Result<(), String> {
    let e = body
        .get("error")
        .and_then(Value::as_object)
        .ok_or("no \"error\" object")?;
    if !e.get("message").is_some_and(Value::is_string) {
        return Err("error.message is not a string".into());
    }
    match e.get("code") {
        // JSON-RPC error of an HTTP-level refusal (401, 403, 413, 415, 429, 503).
        Some(Value::Number(n)) if n.is_i64() => {
            if body.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
                return Err("a numeric error code without \"jsonrpc\":\"2.0\"".into());
            }
            Ok(())
        }
        // A tool error: the code's REST status is this status.
        Some(Value::String(code)) => {
            let Some(c) = TOOL_CODES.iter().find(|c| c.as_str() == code) else {
                return Err(format!("unknown tool error code {code:?}"));
            };
            if c.rest_status() != status {
                return Err(format!(
                    "{code} maps to {}, answered {status}",
                    c.rest_status()
                ));
            }
            if !e.get("request_id").is_some_and(Value::is_string) {
                return Err("a tool error without request_id".into());
            }
            if let Some(details) = e.get("details") {
                let ok = details.as_array().is_some_and(|d| {
                    d.iter()
                        .all(|i| i["field"].is_string() && i["issue"].is_string())
                });
                if !ok {
                    return Err("details is not a list of {field, issue}".into());
                }
            }
            Ok(())
        }
        _ => Err("error.code is neither an integer nor a string".into()),
    }
}

/// Every tool error code (the enum is `#[non_exhaustive]` for other crates only).
const TOOL_CODES: [ToolErrorCode; 10] = [
    ToolErrorCode::Validation,
    ToolErrorCode::NotFound,
    ToolErrorCode::Conflict,
    ToolErrorCode::Forbidden,
    ToolErrorCode::IdempotencyConflict,
    ToolErrorCode::ConfirmationRequired,
    ToolErrorCode::ConfirmationDeclined,
    ToolErrorCode::Unavailable("NOT_SETTLED"),
    ToolErrorCode::RateLimited,
    ToolErrorCode::Internal,
];

/// The request `data` describes (see the module docs): method, target, headers, body.
pub fn build(data: &[u8]) -> RawRequest {
    let byte = |i: usize| data.get(i).copied().unwrap_or(0);
    let (method_sel, auth_sel, flags) = (byte(0), byte(1), byte(2));
    let rest = data.get(3..).unwrap_or_default();
    let (first, after) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let first = first.strip_suffix(b"\r").unwrap_or(first);
    let mut words = first
        .split(|b| *b == b' ' || *b == b'\t')
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned());
    let target = words.next().unwrap_or_default();
    let method = METHODS
        .get(usize::from(method_sel))
        .map(|m| (*m).to_owned())
        .or_else(|| words.next())
        .unwrap_or_default();
    // The header lines and the body, split the way `core_handle` splits them.
    let raw = RawRequest::split(&[&b"- -\n"[..], after].concat());
    let target = if target.starts_with("/v1") {
        target
    } else if target.is_empty() {
        "/v1".to_owned()
    } else if target.starts_with('/') || target.starts_with('?') {
        format!("/v1{target}")
    } else {
        format!("/v1/{target}")
    };
    let mut headers = Vec::new();
    if let Some(a) = AUTHORIZATIONS.get(usize::from(auth_sel)) {
        headers.push(("Authorization".to_owned(), a.as_bytes().to_vec()));
    }
    let content_type: Option<&[u8]> = match (flags & FLAG_JSON != 0, flags & FLAG_ODD_TYPE != 0) {
        (true, false) => Some(b"application/json"),
        (true, true) => Some(b"application/json; charset=utf-8"),
        (false, true) => Some(b"text/plain"),
        (false, false) => None,
    };
    if let Some(ct) = content_type {
        headers.push(("Content-Type".to_owned(), ct.to_vec()));
    }
    let fixed: [(u8, &str, &[u8]); 4] = [
        (FLAG_IDEMPOTENCY, "X-Idempotency-Key", b"k-1"),
        (FLAG_ORIGIN, "Origin", b"https://evil.example"),
        (FLAG_ACCEPT, "Accept", b"application/json"),
        (FLAG_TWO_AUTH, "Authorization", b"Bearer tok"),
    ];
    for (flag, name, value) in fixed {
        if flags & flag != 0 {
            headers.push((name.to_owned(), value.to_vec()));
        }
    }
    headers.extend(raw.headers);
    RawRequest {
        method,
        target,
        headers,
        body: raw.body,
    }
}

/// Fuzz target `rest_handle` (see the module docs).
pub fn rest_handle(data: &[u8]) {
    let raw = build(data);
    let (method, target) = (&raw.method, &raw.target);
    let resp = raw.with(|req| server().handle(req, &env()));
    let path = raw.path();
    check_response(path, &resp);
    if !(path == "/v1" || path.starts_with("/v1/")) {
        return;
    }
    let status = resp.status.as_u16();
    assert!(
        REST_STATUSES.contains(&status) && status != 500,
        "undocumented status {status} for {method} {target}"
    );
    let json = resp
        .header("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status >= 400 && json && !resp.body.is_empty() {
        let v: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
        if let Err(why) = error_shape(status, &v) {
            panic!("{status} for {method} {target}: {why}: {v}");
        }
    }
}

/// Seeds for `rest_handle`: one valid request per route and the usual refusals.
pub fn seeds() -> Vec<(&'static str, Vec<u8>)> {
    // (name, method index, auth index, flags, target and the rest)
    let seed = |m: u8, a: u8, f: u8, rest: &str| {
        let mut v = vec![m, a, f];
        v.extend_from_slice(rest.as_bytes());
        v
    };
    let json = FLAG_JSON;
    vec![
        ("get_charge", seed(0, 0, 0, "/charges/C-1\n\n")),
        (
            "get_charge_expand",
            seed(0, 0, 0, "/charges/C%201?expand=true\n\n"),
        ),
        ("get_missing", seed(0, 0, 0, "/charges/missing\n\n")),
        ("head_charge", seed(3, 0, 0, "/charges/C-1\n\n")),
        (
            "list",
            seed(0, 1, 0, "/charges?status=open&page=2&tags=a,b\n\n"),
        ),
        ("list_bad_page", seed(0, 0, 0, "/charges?page=0&x=%zz\n\n")),
        ("list_unknown", seed(0, 0, 0, "/charges?stauts=open\n\n")),
        (
            "echo",
            seed(
                1,
                0,
                json,
                "/echo\n\n{\"region\":\"sp\",\"count\":3,\"target\":{\"zone\":\"z\"}}",
            ),
        ),
        ("echo_not_object", seed(1, 0, json, "/echo\n\n[1,2]")),
        ("echo_text", seed(1, 0, FLAG_ODD_TYPE, "/echo\n\n{}")),
        (
            "cancel",
            seed(
                1,
                0,
                json | FLAG_IDEMPOTENCY,
                "/charges/C-1/cancel\n\n{\"reason\":\"dup\"}",
            ),
        ),
        (
            "cancel_paid",
            seed(1, 0, json, "/charges/paid/cancel\n\n{}"),
        ),
        (
            "cancel_reader",
            seed(1, 1, json, "/charges/C-1/cancel\n\n{}"),
        ),
        (
            "cancel_noperm",
            seed(1, 5, json, "/charges/C-1/cancel\n\n{}"),
        ),
        ("rotate", seed(2, 0, 0, "/secrets\n\n")),
        ("rotate_reader", seed(2, 1, 0, "/secrets\n\n")),
        ("limited", seed(0, 2, 0, "/charges\n\n")),
        ("api_token", seed(0, 3, 0, "/charges\n\n")),
        ("expired", seed(0, 4, 0, "/charges\n\n")),
        ("no_token", seed(0, 255, 0, "/charges\n\n")),
        ("wrong_token", seed(0, 7, 0, "/charges\n\n")),
        ("two_tokens", seed(0, 0, FLAG_TWO_AUTH, "/charges\n\n")),
        ("origin", seed(1, 0, json | FLAG_ORIGIN, "/echo\n\n{}")),
        ("put", seed(4, 0, 0, "/charges\n\n")),
        ("root", seed(0, 0, 0, "\n\n")),
        ("no_route", seed(0, 0, 0, "/nothing/here\n\n")),
        (
            "raw_method",
            seed(255, 0, 0, "/charges GET\nAccept: */*\n\n"),
        ),
        (
            "header_lines",
            seed(
                1,
                0,
                json,
                "/echo\nX-Idempotency-Key: a\nX-Idempotency-Key: b\n\n{}",
            ),
        ),
    ]
}
