//! The response value the core returns: status, headers, body, and what to log about it.
//!
//! The codec adds the framing headers (`Content-Length`, `Date`, `Connection`); everything
//! else a client sees comes from here, so every adapter sends the same bytes.

use std::borrow::Cow;

use http::{HeaderName, HeaderValue, StatusCode};

use crate::auth::AuthError;
use crate::era::Version;

/// What the adapter logs and counts for one request. Never holds tokens or argument values.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestLog {
    /// JSON-RPC method (or `GET /v1/...` route for REST), when one was read; the HTTP
    /// method and path of a fixed endpoint ([`RequestLog::at`]).
    pub method: Option<String>,
    /// Tool (or prompt/resource template) name, when the method names one.
    pub tool: Option<String>,
    /// Protocol version in use, when one was determined.
    pub version: Option<Version>,
    /// JSON-RPC error code, when the answer is a protocol error.
    pub rpc_code: Option<i32>,
    /// Tool error code (`NOT_FOUND`, ...), when the answer is an `isError` result.
    pub tool_error: Option<&'static str>,
    /// Organization of the caller, once authenticated.
    pub organization: Option<String>,
    /// Why the request was refused or failed, for the operator: which
    /// authentication check failed, which limit was hit, the dispatcher's error text of an
    /// internal error. `None` for a success (and for tool errors whose message may hold
    /// argument values). The server's own words only, never text the client wrote.
    pub reason: Option<Cow<'static, str>>,
    /// The request id the response carries in `X-Request-Id`, when it is not the
    /// adapter's [`crate::Env::request_id`] (a trusted proxy's id): log this one.
    pub request_id: Option<String>,
    /// Which endpoint the path named (`None`: none, a `404`). Lets the adapter label
    /// probes, well-known documents and refusals that never got as far as reading a
    /// method.
    pub endpoint: Option<Endpoint>,
    /// The authentication check that failed, for a `401`: a closed set (metrics label it
    /// with [`AuthError::kind`]), where [`RequestLog::reason`] is the sentence for people.
    pub auth_error: Option<AuthError>,
}

impl RequestLog {
    /// The log of a request routed to `endpoint`. A fixed endpoint (the well-known
    /// documents, the probes, `/metrics`, the authorization server's paths) is named by
    /// the request's HTTP method and its path, set here once, before any refusal: its
    /// path is one of the few routing accepts, and the adapter bounds the method. The
    /// MCP endpoint and the REST API name their JSON-RPC method or route themselves,
    /// once read.
    pub fn at(endpoint: Option<Endpoint>, req: &crate::Request<'_>) -> Self {
        let method = match endpoint {
            None | Some(Endpoint::Mcp | Endpoint::Rest) => None,
            Some(_) => Some(format!("{} {}", req.method, req.path())),
        };
        Self {
            endpoint,
            method,
            ..Self::default()
        }
    }
}

/// Where a path leads (step 2 of the processing order). One byte in [`RequestLog`], which every
/// [`Response`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Endpoint {
    /// The MCP endpoint (`mcp_path`).
    Mcp,
    /// The REST API under `/v1`.
    Rest,
    /// The protected-resource metadata under `/.well-known/`.
    WellKnown,
    /// `/healthz`.
    Health,
    /// `/readyz`.
    Ready,
    /// `/metrics` (only when a renderer is set).
    Metrics,
    /// The embedded authorization server's paths (only when one is configured).
    OAuth(crate::oauth::Route),
    /// The binary's open routes ([`crate::Callbacks`]: provider callbacks, unsubscribe).
    Callback,
}

impl Endpoint {
    /// A short, stable name (`mcp`, `rest`, `well_known`, `health`, `ready`, `metrics`,
    /// `oauth`, `callback`): a metrics label value.
    pub fn label(self) -> &'static str {
        match self {
            Self::Mcp => "mcp",
            Self::Rest => "rest",
            Self::WellKnown => "well_known",
            Self::Health => "health",
            Self::Ready => "ready",
            Self::Metrics => "metrics",
            Self::OAuth(_) => "oauth",
            Self::Callback => "callback",
        }
    }
}

/// One HTTP response. `#[must_use]`: dropping it would leave a client hanging.
#[must_use]
#[derive(Clone, Debug)]
pub struct Response {
    /// HTTP status.
    pub status: StatusCode,
    /// Header fields, in the order they are sent (framing headers excluded).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Body bytes (already serialized).
    pub body: Vec<u8>,
    /// Side-channel for the adapter's log line and metrics.
    pub log: RequestLog,
}

impl Response {
    /// An empty response with the given status.
    pub fn empty(status: StatusCode) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            log: RequestLog::default(),
        }
    }

    /// A JSON response (`Content-Type: application/json`).
    pub fn json(status: StatusCode, body: Vec<u8>) -> Self {
        let mut r = Self::empty(status);
        r.headers.push((
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
        r.body = body;
        r
    }

    /// Appends a header whose value is known to be valid.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// The first value of header `name`, if present.
    pub fn header(&self, name: &str) -> Option<&HeaderValue> {
        self.headers
            .iter()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}
