//! What a method produces ([`Reply`]) and how it becomes the HTTP answer: the era-2026
//! decoration of results ([`Server::decorate`] on a tree, [`write_decoration`] on the
//! bytes of the answers written whole), the version header, and the event stream of a
//! result that comes after progress notifications.

use http::header::{CONTENT_ENCODING, VARY, WWW_AUTHENTICATE};
use http::{HeaderValue, StatusCode};
use serde_json::Value;

use crate::dispatch::Dispatch;
use crate::era::{self, Version};
use crate::error::ProtocolError;
use crate::jsonrpc;
use crate::request::Request;
use crate::response::{RequestLog, Response};
use crate::server::{Rpc, Server, set_header, with_version};

/// What a method produces.
pub(crate) enum Reply {
    /// A result object (era decoration is added by the server).
    Result(Value),
    /// A result already serialized in full (`server/discover`).
    Body(Vec<u8>),
    /// A `tools/list` answer, maybe kept and then maybe sent in gzip.
    List(crate::tool_lists::Listed),
    /// A tool's result, written straight to the answer (era decoration included).
    Tool(crate::tool_result::ToolResult),
    /// A protocol error.
    Error(ProtocolError),
    /// Notifications, then a result (era decoration is added by the server): an SSE body
    /// when the client accepts `text/event-stream`, else the result alone as JSON.
    Stream {
        /// Complete JSON-RPC notifications, sent first.
        notifications: Vec<Value>,
        /// The result object.
        result: Value,
    },
}

impl Reply {
    /// The result object of a result, written or not (a tool's is built as a tree);
    /// anything else as it is.
    pub(crate) fn into_result(self) -> Result<Value, Self> {
        match self {
            Self::Result(result) => Ok(result),
            Self::Tool(tool) => Ok(tool.into_value()),
            other => Err(other),
        }
    }
}

impl<D: Dispatch> Server<D> {
    /// The answer to `rpc` (of JSON-RPC `id`) that produced `reply`.
    pub(crate) fn answer(
        &self,
        req: &Request<'_>,
        rpc: &Rpc<'_>,
        id: &Value,
        reply: Reply,
        log: &mut RequestLog,
    ) -> Response {
        let (version, modern, method) = (rpc.version, rpc.modern(), rpc.msg.method.as_str());
        match reply {
            Reply::Body(body) => with_version(Response::json(StatusCode::OK, body), version),
            Reply::List(listed) => {
                let (body, gzipped) = listed.into_body(crate::gzip::accepted(req));
                let mut r = Response::json(StatusCode::OK, body);
                if gzipped {
                    r.headers
                        .push((CONTENT_ENCODING, HeaderValue::from_static("gzip")));
                }
                // Either way the answer depends on the request's Accept-Encoding.
                r.headers
                    .push((VARY, HeaderValue::from_static("accept-encoding")));
                with_version(r, version)
            }
            Reply::Tool(result) => {
                let body = result.answer(id, modern.then(|| self.server_info()));
                with_version(Response::json(StatusCode::OK, body), version)
            }
            Reply::Result(mut result) => {
                if modern {
                    self.decorate(method, &mut result);
                }
                // `initialize` settles the version in use: that is what goes back (and is
                // logged, in place of the one detected).
                let version = match result.get("protocolVersion").and_then(Value::as_str) {
                    Some(v) if method == "initialize" => Version::parse(v).unwrap_or(version),
                    _ => version,
                };
                log.version = Some(version);
                let body = jsonrpc::success(id, &result);
                with_version(Response::json(StatusCode::OK, body), version)
            }
            Reply::Stream {
                notifications,
                mut result,
            } => {
                if modern {
                    self.decorate(method, &mut result);
                }
                let body = jsonrpc::success(id, &result);
                let resp = if accepts_event_stream(req) {
                    event_stream(&notifications, &body)
                } else {
                    Response::json(StatusCode::OK, body)
                };
                with_version(resp, version)
            }
            Reply::Error(ProtocolError::InsufficientScope { scope }) => {
                let mut r = self.refuse(
                    ProtocolError::InsufficientScope { scope },
                    Some(id),
                    Some(version),
                    log,
                );
                let challenge = format!(
                    "Bearer error=\"insufficient_scope\", scope=\"{scope}\", resource_metadata=\"{}\"",
                    self.config.resource_metadata_url()
                );
                set_header(&mut r, WWW_AUTHENTICATE, &challenge);
                r
            }
            Reply::Error(e) => self.refuse(e, Some(id), Some(version), log),
        }
    }

    /// Adds the era-2026 fields to a result: `resultType`, `serverInfo`, and the
    /// caching hints on discovery, listings and reads.
    pub(crate) fn decorate(&self, method: &str, result: &mut Value) {
        let Value::Object(obj) = result else { return };
        obj.entry("resultType")
            .or_insert_with(|| Value::from("complete"));
        let complete = obj.get("resultType").and_then(Value::as_str) == Some("complete");
        if complete && cacheable(method) {
            obj.insert("ttlMs".into(), Value::from(0));
            obj.insert("cacheScope".into(), Value::from("private"));
        }
        let meta = obj
            .entry("_meta")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Value::Object(m) = meta {
            m.insert(era::META_SERVER_INFO.into(), self.server_info().clone());
        }
    }
}

/// Appends, as members of a result object being written, what [`Server::decorate`] adds
/// to a complete result of `method` that has no `resultType` or `_meta` of its own: the
/// same bytes, for the answers written whole (`tool_lists.rs`, `tool_result.rs`).
pub(crate) fn write_decoration(out: &mut Vec<u8>, method: &str, server_info: &Value) {
    out.extend_from_slice(br#","resultType":"complete""#);
    if cacheable(method) {
        out.extend_from_slice(br#","ttlMs":0,"cacheScope":"private""#);
    }
    out.extend_from_slice(br#","_meta":{""#);
    out.extend_from_slice(era::META_SERVER_INFO.as_bytes());
    out.extend_from_slice(b"\":");
    jsonrpc::write_json(out, server_info);
    out.push(b'}');
}

/// Methods whose complete results carry `ttlMs` and `cacheScope`.
fn cacheable(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "resources/read"
            | "prompts/list"
    )
}

/// Whether an `Accept` header lists `text/event-stream`.
fn accepts_event_stream(req: &Request<'_>) -> bool {
    req.header_values("accept").any(|v| {
        std::str::from_utf8(v).is_ok_and(|v| {
            v.split(',').any(|t| {
                t.split(';')
                    .next()
                    .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream"))
            })
        })
    })
}

/// A complete `text/event-stream` body: one `message` event per notification, then the
/// response (the stream ends with it, as Streamable HTTP requires).
fn event_stream(notifications: &[Value], response: &[u8]) -> Response {
    let mut body = Vec::with_capacity(response.len() + 256 * notifications.len());
    for n in notifications {
        body.extend_from_slice(b"event: message\ndata: ");
        jsonrpc::write_json(&mut body, n);
        body.extend_from_slice(b"\n\n");
    }
    body.extend_from_slice(b"event: message\ndata: ");
    body.extend_from_slice(response);
    body.extend_from_slice(b"\n\n");
    let mut r = Response::empty(StatusCode::OK);
    r.headers.push((
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    ));
    r.body = body;
    r
}
