//! The domain seen from the core: one synchronous trait, and the values that cross it.
//!
//! MCP `tools/call` and the `/v1` REST routes both end in [`Dispatch::call_tool`]: one
//! implementation per operation, two surfaces. Tool errors ([`ToolError`]) have one shape
//! and one code table for both surfaces; [`ToolErrorCode::rest_status`] is the
//! only mapping to HTTP.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::body::Body;
use crate::catalog::{Catalog, TemplateDef, ToolDef};
use crate::env::UnixTime;
pub use crate::mrtr::{InputRequired, Progress, PromptReply, Round, ToolReply};
use crate::principal::Principal;

/// Per-call context every domain operation receives.
#[derive(Clone, Copy, Debug)]
pub struct Ctx<'a> {
    /// The authenticated caller.
    pub principal: &'a Principal,
    /// Wall-clock time of the request.
    pub now: UnixTime,
    /// Request id (for error bodies and audit).
    pub request_id: &'a str,
    /// Fresh entropy for ids the operation creates.
    pub entropy: &'a [u8; 32],
    /// The request's reads ahead ([`crate::ahead`]): `Some` only for a read-only call
    /// an async adapter runs on its reactor, with an `Ahead` this dispatcher made.
    pub ahead: Option<&'a dyn crate::Ahead>,
}

/// One tool invocation, arguments already validated against `inputSchema`.
#[derive(Clone, Copy, Debug)]
pub struct ToolCall<'a> {
    /// The tool definition.
    pub tool: &'a ToolDef,
    /// The flat argument object (path, query and body side by side).
    pub args: &'a serde_json::Map<String, Value>,
    /// Caller, time, entropy.
    pub ctx: Ctx<'a>,
    /// For a confirmed destructive call: the confirmation nonce, to be used as the
    /// idempotency key so a replayed confirmation never executes twice.
    pub confirmation_key: Option<&'a str>,
}

/// A file an operation produced (PDF, CSV). Tools describe it; REST and resources serve it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// MIME type.
    pub content_type: String,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// `/v1` path that serves the same bytes.
    pub download_path: String,
}

/// What an operation returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// A JSON body with its REST status (200, 201, 202).
    Json {
        /// REST status.
        status: u16,
        /// The body (the tool result's `structuredContent`).
        body: Body,
    },
    /// REST `204`; as a tool result, `{"status": 204}`.
    NoContent,
    /// A binary document; as a tool result, its descriptor.
    File(File),
}

impl Output {
    /// A `200` JSON body.
    pub fn ok(body: Value) -> Self {
        Self::Json {
            status: 200,
            body: Body::Tree(body),
        }
    }

    /// What a tool returns for this output, without copying a JSON body.
    pub fn into_tool_body(self) -> Body {
        match self {
            Self::Json { body, .. } => body,
            other => Body::Tree(other.tool_value()),
        }
    }

    /// The value a tool returns for this output (a text body parsed).
    pub fn tool_value(&self) -> Value {
        match self {
            Self::Json { body, .. } => body.clone().into_value(),
            Self::NoContent => json!({ "status": 204 }),
            Self::File(f) => json!({
                "content_type": f.content_type,
                "byte_size": f.bytes.len(),
                "download_path": f.download_path,
                "note": "Binary payload. Read it as an MCP resource when one is listed for it, or fetch this path from the public API host with a token issued for the API.",
            }),
        }
    }
}

/// Tool error codes: one table for REST and MCP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorCode {
    /// Schema or business validation; names every offending field.
    Validation,
    /// No such id in the caller's organization.
    NotFound,
    /// Invalid state transition.
    Conflict,
    /// The person's dashboard permission does not allow it.
    Forbidden,
    /// An `idempotency_key` reused with different arguments.
    IdempotencyConflict,
    /// Destructive tool and the caller cannot confirm.
    ConfirmationRequired,
    /// The user declined or cancelled the confirmation.
    ConfirmationDeclined,
    /// The thing exists but is not available in its present state; the code, chosen by
    /// the dispatcher, says why (e.g. a settlement letter of a charge not yet settled).
    /// The core keeps no product words: it only carries the code and maps it to `422`.
    Unavailable(&'static str),
    /// A per-tool outbound limit.
    RateLimited,
    /// A bug in the operation: the [`ToolError::message`] is logged as the request's
    /// reason (a store error, say); the client gets a generic message.
    Internal,
}

impl ToolErrorCode {
    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Validation => "VALIDATION_ERROR",
            Self::NotFound => "NOT_FOUND",
            Self::Conflict => "CONFLICT",
            Self::Forbidden => "FORBIDDEN",
            Self::IdempotencyConflict => "IDEMPOTENCY_CONFLICT",
            Self::ConfirmationRequired => "CONFIRMATION_REQUIRED",
            Self::ConfirmationDeclined => "CONFIRMATION_DECLINED",
            Self::Unavailable(code) => code,
            Self::RateLimited => "RATE_LIMITED",
            Self::Internal => "INTERNAL_ERROR",
        }
    }

    /// THE mapping to the REST status.
    pub const fn rest_status(self) -> u16 {
        match self {
            Self::Validation | Self::Unavailable(_) => 422,
            Self::NotFound => 404,
            Self::Conflict | Self::IdempotencyConflict | Self::ConfirmationDeclined => 409,
            Self::Forbidden => 403,
            Self::ConfirmationRequired => 428,
            Self::RateLimited => 429,
            Self::Internal => 500,
        }
    }
}

/// One offending field of a validation error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldIssue {
    /// Argument name (dotted path for nested fields).
    pub field: String,
    /// What is wrong with it.
    pub issue: String,
}

/// An error the caller can act on: an `isError` result in MCP, an error body in REST.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError {
    /// The code.
    pub code: ToolErrorCode,
    /// Human-readable message.
    pub message: String,
    /// Offending fields (validation errors).
    pub details: Vec<FieldIssue>,
    /// When to retry (`RATE_LIMITED`).
    pub retry_after_ms: Option<u64>,
}

impl ToolError {
    /// An error with a code and message.
    pub fn new(code: ToolErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after_ms: None,
        }
    }

    /// A `VALIDATION_ERROR` naming the given fields.
    pub fn validation(message: impl Into<String>, details: Vec<FieldIssue>) -> Self {
        Self {
            details,
            ..Self::new(ToolErrorCode::Validation, message)
        }
    }

    /// What the request log keeps of this error as its reason: the message of a
    /// permission refusal, of a per-tool rate limit and of an internal error (server text);
    /// `None` for the others, whose messages may quote argument values.
    pub fn reason(&self) -> Option<std::borrow::Cow<'static, str>> {
        let kind = match self.code {
            ToolErrorCode::Forbidden => "permission",
            ToolErrorCode::RateLimited => "per-tool rate limit",
            ToolErrorCode::Internal => "internal error",
            _ => return None,
        };
        Some(format!("{kind}: {}", self.message).into())
    }

    /// A `NOT_FOUND` for a kind of entity and an id.
    pub fn not_found(what: &str, id: &str) -> Self {
        Self::new(ToolErrorCode::NotFound, format!("{what} {id} not found"))
    }

    /// The error body shared by REST and MCP: `{"error":{code,message,details,request_id}}`.
    pub fn to_json(&self, request_id: &str) -> Value {
        let mut e = json!({
            "code": self.code.as_str(),
            "message": self.message,
        });
        if !self.details.is_empty() {
            e["details"] = self
                .details
                .iter()
                .map(|d| json!({ "field": d.field, "issue": d.issue }))
                .collect();
        }
        if let Some(ms) = self.retry_after_ms {
            e["retry_after_ms"] = json!(ms);
        }
        e["request_id"] = json!(request_id);
        json!({ "error": e })
    }
}

/// One item of a `resources/read` result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Contents {
    /// Text (JSON, markdown, CSV).
    Text {
        /// MIME type.
        mime_type: String,
        /// The text.
        text: String,
    },
    /// Binary (PDF), sent as base64 `blob`.
    Blob {
        /// MIME type.
        mime_type: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
}

/// Why a resource could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// Unknown URI or another organization's: `-32602` with `data.uri`.
    NotFound,
    /// Exists but not available yet (the code is the dispatcher's, e.g. `NOT_SETTLED`).
    Unavailable(&'static str),
    /// A bug: what went wrong (logged as the request's reason, never sent).
    Internal(String),
}

/// A `resources/read` request after URI matching.
#[derive(Clone, Copy, Debug)]
pub struct ResourceRead<'a> {
    /// The URI asked for.
    pub uri: &'a str,
    /// The template it matched, if not a fixed URI.
    pub template: Option<&'a TemplateDef>,
    /// Variables extracted by the template.
    pub vars: &'a BTreeMap<String, String>,
    /// Caller, time, entropy.
    pub ctx: Ctx<'a>,
}

/// What a completion refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionRef<'a> {
    /// A prompt argument.
    Prompt(&'a str),
    /// A template variable.
    Resource(&'a str),
}

/// What [`Dispatch::complete`] suggests: the first values and how many match in all
/// (`total` may exceed `values.len()` when the implementation stopped early).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The first matching values, best first.
    pub values: Vec<String>,
    /// How many values match in all.
    pub total: usize,
}

impl From<Vec<String>> for Completion {
    /// Every match: `total` is their number.
    fn from(values: Vec<String>) -> Self {
        Self {
            total: values.len(),
            values,
        }
    }
}

/// The domain: everything the core cannot answer by itself.
///
/// Implementations are `Send + Sync` and may block (SQLite); the tokio adapter calls the
/// core from a blocking thread.
pub trait Dispatch: Send + Sync {
    /// The definitions served. Called once, by `Server::new`.
    fn catalog(&self) -> Catalog;

    /// Whether a call may wait on something other than the CPU (a store, a network): an
    /// async adapter then runs requests off its reactor. `false` lets it run them inline,
    /// saving two thread switches per request; only a dispatcher that is pure computation
    /// may say so.
    fn may_block(&self) -> bool {
        true
    }

    /// Whether a read-only tool called now may wait. An answer of `false` is a promise
    /// that the read finds what it needs free at this instant (say, an idle SQLite reader
    /// connection), so an async adapter runs the call on its reactor instead of crossing
    /// to a blocking thread and back. The default: as [`Dispatch::may_block`].
    fn read_may_block(&self) -> bool {
        self.may_block()
    }

    /// A fresh [`crate::Ahead`] for one read-only call, when this dispatcher can answer
    /// such a call in rounds without blocking ([`crate::ahead`]). The default: `None`
    /// (the call runs as it is, where [`Dispatch::read_may_block`] says).
    fn ahead(&self) -> Option<std::sync::Arc<dyn crate::Ahead>> {
        None
    }

    /// Runs a tool (validated arguments). The same function serves the REST twin.
    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError>;

    /// For a destructive tool, before asking the user: everything that does not depend on
    /// consent (existence, state, business preconditions), and the message naming exactly
    /// what will happen ("Cancel charge CHG-123 of R$ 1.234,56 for Maria Silva?").
    /// The default asks "<tool title>?" and checks nothing.
    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        Ok(format!("{}?", call.tool.title))
    }

    /// The user declined (or cancelled) the confirmation of `call`, whose
    /// `confirmation_key` is the sealed state's nonce: remember it, so the same
    /// `requestState` re-sent with `accept` never executes. The core is pure and
    /// cannot remember anything; a dispatcher that executes destructive tools must.
    /// `Err` replaces the `CONFIRMATION_DECLINED` answer (e.g. the nonce was already
    /// accepted and executed). The default remembers nothing.
    fn decline(&self, call: &ToolCall<'_>) -> Result<(), ToolError> {
        let _ = call;
        Ok(())
    }

    /// Reads a resource (access already checked against its definition). The default
    /// has none.
    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        let _ = read;
        Err(ResourceError::NotFound)
    }

    /// Builds a prompt's messages (required arguments already checked).
    /// `Err` carries a message for a `-32602`; the default has no prompts.
    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        let _ = (args, ctx);
        Err(format!("Unknown prompt: {name}"))
    }

    /// Suggestions for a prompt argument or template variable: the first values (the core
    /// sends at most 100) and how many match in all. The default suggests nothing.
    fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Completion {
        let _ = (reference, argument, value, context, ctx);
        Completion::default()
    }

    /// Runs a tool that may take several rounds (era 2026 MRTR, see [`crate::mrtr`]), or
    /// return its own content blocks. The core calls this for every non-destructive MCP
    /// `tools/call` (destructive tools keep the core's confirmation); the default forwards
    /// to [`Dispatch::call_tool`], so implementing it is optional.
    fn call_tool_mrtr(
        &self,
        call: &ToolCall<'_>,
        round: &Round<'_>,
    ) -> Result<ToolReply, ToolError> {
        let _ = round;
        self.call_tool(call).map(ToolReply::Output)
    }

    /// Builds a prompt that may take several rounds (era 2026 MRTR, see [`crate::mrtr`]).
    /// The default forwards to [`Dispatch::get_prompt`]. `Err` carries a message for a
    /// `-32602`.
    fn get_prompt_mrtr(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
        round: &Round<'_>,
    ) -> Result<PromptReply, String> {
        let _ = round;
        self.get_prompt(name, args, ctx)
            .map(|(description, messages)| PromptReply::Messages {
                description,
                messages,
            })
    }

    /// Whether the store is reachable (`/readyz`).
    fn ready(&self) -> bool {
        true
    }
}
