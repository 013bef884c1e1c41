//! CORS for browser clients: which origins may read answers is the Origin
//! `Origin` rule ([`crate::origin::allowed`]), unchanged; this module only says so
//! to the browser. A preflight from an allowed origin gets `204` with the methods and
//! the request headers it may send; every answer to an allowed origin names it in
//! `Access-Control-Allow-Origin` and exposes the headers a client needs
//! (`WWW-Authenticate` to find the authorization server, `MCP-Protocol-Version`).
//! Credentials (cookies) are never allowed cross-origin: tokens travel in
//! `Authorization`.

use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, VARY,
};
use http::{HeaderValue, StatusCode};

use crate::request::Request;
use crate::response::Response;

/// Headers a cross-origin answer lets the client read.
pub const EXPOSED: &str = "WWW-Authenticate, MCP-Protocol-Version, Mcp-Session-Id, X-Request-Id, Retry-After, RateLimit, RateLimit-Policy";

/// Request headers a browser client may send (besides the `Mcp-*` family, allowed by
/// prefix since mirrored parameter headers are named by the tools).
const ALLOWED: [&str; 5] = [
    "authorization",
    "content-type",
    "accept",
    "last-event-id",
    "x-request-id",
];

/// The answer to a preflight from an allowed origin: `204`, the methods, and those of
/// the requested headers that are allowed (`Mcp-*`, `MCP-Protocol-Version`,
/// `Authorization`, `Content-Type`, `Accept`, `Last-Event-ID`, `X-Request-Id`).
pub fn preflight(req: &Request<'_>) -> Response {
    let mut r = Response::empty(StatusCode::NO_CONTENT);
    r.headers.push((
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST, OPTIONS"),
    ));
    let asked = req
        .header_values("access-control-request-headers")
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|h| !h.is_empty())
        .filter(|h| {
            let l = h.to_ascii_lowercase();
            l.starts_with("mcp-") || ALLOWED.contains(&l.as_str())
        })
        .collect::<Vec<_>>()
        .join(", ");
    if !asked.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&asked) {
            r.headers.push((ACCESS_CONTROL_ALLOW_HEADERS, v));
        }
    }
    r.headers
        .push((ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600")));
    r
}

/// Names `origin` on an answer to it, exposes [`EXPOSED`], and says the answer varies
/// by `Origin`.
pub fn decorate(r: &mut Response, origin: &str) {
    let Ok(v) = HeaderValue::from_str(origin) else {
        return;
    };
    r.headers.push((ACCESS_CONTROL_ALLOW_ORIGIN, v));
    r.headers.push((
        ACCESS_CONTROL_EXPOSE_HEADERS,
        HeaderValue::from_static(EXPOSED),
    ));
    r.headers.push((VARY, HeaderValue::from_static("Origin")));
}
