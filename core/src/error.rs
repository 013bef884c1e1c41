//! The core's one error enum and THE mapping from it to the wire.
//!
//! Every refusal the core can produce is a [`ProtocolError`]; [`ProtocolError::wire`] is
//! the only place that decides its HTTP status and JSON-RPC code. A table test pins
//! every row. Tool errors (`isError` results) are not protocol errors: see [`crate::dispatch`].

use std::borrow::Cow;

use http::StatusCode;
use serde_json::{Value, json};

use crate::auth::AuthError;
use crate::era::{Era, Version};

/// A JSON-RPC error code (newtype with the codes this server emits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// Body is not JSON.
    pub const PARSE_ERROR: Self = Self(-32700);
    /// Not a JSON-RPC 2.0 request or notification, a batch, or an oversized body.
    pub const INVALID_REQUEST: Self = Self(-32600);
    /// Unknown method.
    pub const METHOD_NOT_FOUND: Self = Self(-32601);
    /// Invalid params, envelope problems, unknown tool/prompt, bad `requestState`.
    pub const INVALID_PARAMS: Self = Self(-32602);
    /// A bug; logged with the request id.
    pub const INTERNAL_ERROR: Self = Self(-32603);
    /// Legacy (≤ 2025-11-25) resource not found; era 2025 only.
    pub const RESOURCE_NOT_FOUND_LEGACY: Self = Self(-32002);
    /// Mirrored header disagrees with the body, is missing or malformed.
    pub const HEADER_MISMATCH: Self = Self(-32020);
    /// The request needs a client capability it did not declare.
    pub const MISSING_CAPABILITY: Self = Self(-32021);
    /// Protocol version not served.
    pub const UNSUPPORTED_VERSION: Self = Self(-32022);
    /// HTTP 401 (application code outside the reserved range).
    pub const UNAUTHORIZED: Self = Self(-31401);
    /// HTTP 403: foreign `Origin` or insufficient scope.
    pub const FORBIDDEN: Self = Self(-31403);
    /// HTTP 415.
    pub const UNSUPPORTED_MEDIA_TYPE: Self = Self(-31415);
    /// HTTP 429.
    pub const RATE_LIMITED: Self = Self(-31429);
    /// HTTP 503.
    pub const UNAVAILABLE: Self = Self(-31503);
}

/// Everything the core refuses at the protocol level. Variants hold data, not prose.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// Body is not JSON (or not UTF-8, or nested too deep).
    #[error("Parse error")]
    Parse,
    /// Not a JSON-RPC 2.0 request or notification.
    #[error("Invalid request: {0}")]
    InvalidRequest(&'static str),
    /// A JSON array (batch) body; refused in every era.
    #[error("Invalid request: batches are not supported")]
    Batch,
    /// Body over the limit; the body text is fixed by the spec.
    #[error("Request body too large (limit {limit} bytes)")]
    BodyTooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
    /// Unknown method (or a method of the other era).
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    /// Era-2026 envelope problems: always HTTP 400.
    #[error("Invalid params: {0}")]
    Envelope(String),
    /// Invalid params inside a well-formed request: HTTP 200.
    #[error("{message}")]
    InvalidParams {
        /// Human-readable message.
        message: String,
        /// Optional `error.data`.
        data: Option<Box<Value>>,
    },
    /// `resources/read` of an unknown, other-org, or not-yet-available URI.
    #[error("Resource not found")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
        /// Why an existing resource is unavailable (e.g. `NOT_SETTLED`).
        reason: Option<&'static str>,
    },
    /// Mirrored header missing, malformed or disagreeing with the body.
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),
    /// Destructive tool without the `elicitation` capability (era 2026).
    #[error(
        "confirmation_required: {tool} changes data and needs the user's confirmation; declare the elicitation client capability"
    )]
    MissingCapability {
        /// The tool that needs it.
        tool: String,
        /// `error.data.requiredCapabilities`.
        required: Box<Value>,
    },
    /// A tool or prompt needs client capabilities the request did not declare (era 2026,
    /// generic MRTR: [`crate::mrtr`]).
    #[error("Missing required client capability")]
    MissingClientCapability {
        /// `error.data.requiredCapabilities` (a `ClientCapabilities` object).
        required: Box<Value>,
    },
    /// Protocol version not served (in header or envelope).
    #[error("Unsupported protocol version")]
    UnsupportedVersion {
        /// The version the request named.
        requested: String,
    },
    /// A bug. The message sent is generic; the detail (the dispatcher's error text, or
    /// what the core found wrong) goes to the log only, as the request's reason.
    #[error("Internal error")]
    Internal(Cow<'static, str>),
    /// No token, or a token that failed verification: why. A token sent adds
    /// `error="invalid_token"` and the reason as `error_description` to the challenge.
    #[error("Unauthorized")]
    Unauthorized(AuthError),
    /// `Origin` present and not allowed.
    #[error("origin_not_allowed")]
    OriginNotAllowed,
    /// The token's scopes do not cover the tool.
    #[error("insufficient_scope")]
    InsufficientScope {
        /// The scope needed (e.g. `dunning.admin`).
        scope: &'static str,
    },
    /// `Content-Type` is not `application/json`.
    #[error("Unsupported Media Type: Content-Type must be application/json")]
    UnsupportedMediaType,
    /// Per-token or per-organization rate limit exceeded.
    #[error("Rate limit exceeded")]
    RateLimited {
        /// When the caller may retry.
        retry_after_ms: u64,
        /// `RateLimit-Policy` header value.
        policy: String,
        /// `RateLimit` header value.
        state: String,
    },
    /// Overloaded or draining.
    #[error("Service unavailable")]
    Unavailable {
        /// Draining (shutting down) rather than overloaded.
        draining: bool,
    },
    /// A path the server does not serve.
    #[error("Not found")]
    PathNotFound,
    /// A method other than POST on the MCP endpoint (or unsupported on a REST path).
    #[error("Method not allowed")]
    MethodNotAllowed {
        /// The `Allow` header value.
        allow: &'static str,
    },
}

impl ProtocolError {
    /// THE mapping to (HTTP status, JSON-RPC code), by era where the era matters.
    ///
    /// `era` is `None` when no era was determined; such errors never depend on it.
    pub fn wire(&self, era: Option<Era>) -> (StatusCode, ErrorCode) {
        let modern = era == Some(Era::Modern);
        match self {
            Self::Parse => (StatusCode::BAD_REQUEST, ErrorCode::PARSE_ERROR),
            Self::InvalidRequest(_) | Self::Batch => {
                (StatusCode::BAD_REQUEST, ErrorCode::INVALID_REQUEST)
            }
            Self::BodyTooLarge { .. } => {
                (StatusCode::PAYLOAD_TOO_LARGE, ErrorCode::INVALID_REQUEST)
            }
            Self::MethodNotFound(_) if modern => {
                (StatusCode::NOT_FOUND, ErrorCode::METHOD_NOT_FOUND)
            }
            Self::MethodNotFound(_) => (StatusCode::OK, ErrorCode::METHOD_NOT_FOUND),
            Self::Envelope(_) => (StatusCode::BAD_REQUEST, ErrorCode::INVALID_PARAMS),
            Self::InvalidParams { .. } => (StatusCode::OK, ErrorCode::INVALID_PARAMS),
            Self::ResourceNotFound { .. } if modern => (StatusCode::OK, ErrorCode::INVALID_PARAMS),
            Self::ResourceNotFound { .. } => (StatusCode::OK, ErrorCode::RESOURCE_NOT_FOUND_LEGACY),
            Self::HeaderMismatch(_) => (StatusCode::BAD_REQUEST, ErrorCode::HEADER_MISMATCH),
            Self::MissingCapability { .. } | Self::MissingClientCapability { .. } => {
                (StatusCode::BAD_REQUEST, ErrorCode::MISSING_CAPABILITY)
            }
            Self::UnsupportedVersion { .. } => {
                (StatusCode::BAD_REQUEST, ErrorCode::UNSUPPORTED_VERSION)
            }
            Self::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::INTERNAL_ERROR),
            Self::Unauthorized { .. } => (StatusCode::UNAUTHORIZED, ErrorCode::UNAUTHORIZED),
            Self::OriginNotAllowed | Self::InsufficientScope { .. } => {
                (StatusCode::FORBIDDEN, ErrorCode::FORBIDDEN)
            }
            Self::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                ErrorCode::UNSUPPORTED_MEDIA_TYPE,
            ),
            Self::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, ErrorCode::RATE_LIMITED),
            Self::Unavailable { .. } => (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::UNAVAILABLE),
            Self::PathNotFound => (StatusCode::NOT_FOUND, ErrorCode::METHOD_NOT_FOUND),
            Self::MethodNotAllowed { .. } => {
                (StatusCode::METHOD_NOT_ALLOWED, ErrorCode::INVALID_REQUEST)
            }
        }
    }

    /// Why, for the operator: the request's logged reason ([`crate::RequestLog::reason`]),
    /// and for a `401` the challenge's `error_description`.
    ///
    /// Only the server's own words and numbers: nothing the client wrote (a method name,
    /// an `Origin`, a claim) gets into the log through here.
    pub fn reason(&self) -> Cow<'static, str> {
        match self {
            Self::Parse => "body is not valid JSON (or nested too deep)".into(),
            Self::InvalidRequest(why) => format!("not a JSON-RPC 2.0 request: {why}").into(),
            Self::Batch => "JSON-RPC batches are not supported".into(),
            Self::BodyTooLarge { limit } => {
                format!("body over the limit of {limit} bytes (limits.max_body_bytes)").into()
            }
            Self::MethodNotFound(_) => "unknown method (or a method of the other era)".into(),
            Self::Envelope(_) => "invalid era-2026 envelope (_meta)".into(),
            Self::InvalidParams { .. } => "invalid params".into(),
            Self::ResourceNotFound { reason: Some(r), .. } => {
                format!("resource not available: {r}").into()
            }
            Self::ResourceNotFound { reason: None, .. } => {
                "resource not found (unknown URI or another organization's)".into()
            }
            Self::HeaderMismatch(_) => {
                "mirrored Mcp-* header missing, malformed or disagreeing with the body".into()
            }
            Self::MissingCapability { .. } => {
                "destructive tool without the elicitation client capability".into()
            }
            Self::MissingClientCapability { .. } => {
                "the request lacks a required client capability".into()
            }
            Self::UnsupportedVersion { .. } => "protocol version not served".into(),
            Self::Internal(detail) => format!("internal error: {detail}").into(),
            Self::Unauthorized(why) => why.to_string().into(),
            Self::OriginNotAllowed => {
                "Origin not allowed (not the public URL, not in allowed_origins, not loopback while listening on loopback)".into()
            }
            Self::InsufficientScope { scope } => {
                format!("insufficient scope: the token lacks scope {scope}").into()
            }
            Self::UnsupportedMediaType => "Content-Type is not application/json".into(),
            Self::RateLimited {
                retry_after_ms,
                policy,
                ..
            } => format!(
                "rate limit exceeded (policy {policy}); retry after {retry_after_ms} ms"
            )
            .into(),
            Self::Unavailable { draining: true } => "draining: the server is shutting down".into(),
            Self::Unavailable { draining: false } => {
                "overloaded: over limits.max_in_flight or the body budget".into()
            }
            Self::PathNotFound => "path not served".into(),
            Self::MethodNotAllowed { allow } => {
                format!("HTTP method not allowed here (allowed: {allow})").into()
            }
        }
    }

    /// `error.data` of the JSON-RPC error object, if any.
    pub fn data(&self) -> Option<Value> {
        match self {
            Self::InvalidParams { data, .. } => data.as_deref().cloned(),
            Self::ResourceNotFound { uri, reason } => Some(match reason {
                Some(r) => json!({ "uri": uri, "reason": r }),
                None => json!({ "uri": uri }),
            }),
            Self::MissingCapability { required, .. }
            | Self::MissingClientCapability { required } => {
                Some(json!({ "requiredCapabilities": required }))
            }
            Self::UnsupportedVersion { requested } => Some(json!({
                "supported": Version::ALL.map(Version::as_str),
                "requested": requested,
            })),
            Self::RateLimited { retry_after_ms, .. } => {
                Some(json!({ "retry_after_ms": retry_after_ms }))
            }
            _ => None,
        }
    }

    /// Whether the HTTP answer carries no body (`404` for unserved paths, `405`).
    pub fn bodyless(&self) -> bool {
        matches!(self, Self::PathNotFound | Self::MethodNotAllowed { .. })
    }
}
