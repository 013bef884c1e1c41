//! Fuzz target bodies shared by `fuzz/` (cargo-fuzz) and `core/tests/fuzz_replay.rs`.
//!
//! Compiled only with the `fuzzing` feature and hidden from the docs: not an API.
//!
//! - [`handle`]: any bytes, read as a raw-ish HTTP request by a tolerant splitter, go
//!   through [`Server::handle`] of a fixed test server; the answer must have a documented
//!   status (and a JSON body that parses, when it says it is JSON).
//! - [`request_state`]: any bytes go through [`confirm::open`]; nothing the fuzzer makes
//!   may open, except a state this key really sealed.
//! - [`rest_handle`] ([`rest`]): selector bytes and raw-ish HTTP made into a `/v1`
//!   request; documented REST statuses only, and the shared error shapes.
//! - [`jwt_verify`] ([`jwt`]): bytes (raw, or JSON the harness signs) through
//!   [`crate::jwt::verify`]; nothing verifies unless the harness' own key signed it.
//!
//! The test domain ([`TestDomain`], [`TestAuth`]) is also what the core's own integration
//! tests drive: a tool with `x-mcp-header` properties of every allowed type (one nested),
//! a strict read tool, a destructive tool, a tool answering `204`, a resource, two
//! templates and a prompt, each with a REST twin where it makes sense.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Value, json};

use crate::auth::{AuthError, Authenticate};
use crate::catalog::{
    Annotations, Catalog, PromptArgument, PromptDef, ResourceDef, Route, TemplateDef, ToolDef,
};
use crate::config::{Config, Keys};
use crate::confirm;
use crate::dispatch::{
    CompletionRef, Contents, Ctx, Dispatch, Output, ResourceError, ResourceRead, ToolCall,
    ToolError, ToolErrorCode,
};
use crate::env::{Env, UnixTime};
use crate::limit::{Limited, RateLimit};
use crate::principal::{Access, Audience, Principal, Scope, ScopeNames};
use crate::request::{Header, Request};
use crate::response::Response;
use crate::server::Server;

pub mod jwt;
pub mod rest;

pub use jwt::jwt_verify;
pub use rest::rest_handle;

/// The wall clock every fuzz and test request sees (2027-01-15T08:00:00Z).
pub const NOW: UnixTime = UnixTime::from_secs(1_800_000_000);

/// The scope names of the test server (those of the product, so fixtures read alike).
pub const SCOPES: ScopeNames = ScopeNames {
    read: "dunning.read",
    write: "dunning.write",
    admin: "dunning.admin",
};

/// The token of a caller with every scope and permission.
pub const TOKEN: &str = "tok";
/// The token of a caller with `dunning.read` and no permissions.
pub const READ_TOKEN: &str = "reader";
/// The token of a caller that is always rate limited.
pub const LIMITED_TOKEN: &str = "tok-limited";
/// Secret of the `requestState` sealing key (`k1`).
pub const STATE_SECRET: &[u8] = b"fuzzing-request-state-key-32-bytes!";

/// Statuses the MCP endpoint, the probes and the well-known document may answer with
/// (the error table of `crate::error` and `crate::dispatch`). `500` is in the set because the tool error table has it; the test domain
/// never asks for it, so seeing one is a core bug.
pub const MCP_STATUSES: [u16; 13] = [
    200, 202, 204, 400, 401, 403, 404, 405, 413, 415, 429, 500, 503,
];

/// Statuses of `/v1` REST routes: [`MCP_STATUSES`], the REST tool-error statuses of
/// tool error table (`409`, `422`, `428`) and the `201` the domain may choose for a creation.
pub const REST_STATUSES: [u16; 17] = [
    200, 201, 202, 204, 400, 401, 403, 404, 405, 409, 413, 415, 422, 428, 429, 500, 503,
];

/// Whether `status` is documented for a request to `path`.
pub fn documented(path: &str, status: u16) -> bool {
    if path == "/v1" || path.starts_with("/v1/") {
        REST_STATUSES.contains(&status)
    } else {
        MCP_STATUSES.contains(&status)
    }
}

/// The domain of the fuzz and test server. Deterministic and stateless.
#[derive(Clone, Copy, Debug, Default)]
pub struct TestDomain;

/// Accepts [`TOKEN`] (admin, every permission) and [`READ_TOKEN`] (read only), and the
/// tokens of the conformance fixtures (`tok-owner`, `tok-admin`, `tok-reader`,
/// `tok-noperm`, `tok-acme`, `tok-limited`; `tok-api` for REST only, `tok-expired`
/// never), so the seed corpus made from the fixtures gets past authentication.
#[derive(Clone, Copy, Debug, Default)]
pub struct TestAuth;

/// Refuses [`LIMITED_TOKEN`]'s caller with a `429`, lets everyone else through.
#[derive(Clone, Copy, Debug, Default)]
pub struct TestLimiter;

impl RateLimit for TestLimiter {
    fn check(&self, principal: &Principal, _now: UnixTime) -> Result<(), Limited> {
        if principal.subject.starts_with(LIMITED_TOKEN) {
            return Err(Limited {
                retry_after_ms: 1500,
                policy: "\"token\";q=1200;w=60".into(),
                state: "\"token\";r=0;t=2".into(),
            });
        }
        Ok(())
    }
}

fn tool(
    name: &str,
    description: &str,
    input_schema: Value,
    annotations: Annotations,
    access: Access,
    route: Option<(&'static str, &str)>,
) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: name.replace('_', " "),
        description: description.into(),
        input_schema,
        output_schema: None,
        annotations,
        access,
        route: route.map(|(method, path)| Route {
            method,
            path: path.into(),
        }),
    }
}

/// The catalog of [`TestDomain`].
pub fn catalog() -> Catalog {
    let read_only = Annotations {
        read_only: true,
        idempotent: true,
        ..Annotations::default()
    };
    let destructive = Annotations {
        destructive: true,
        ..Annotations::default()
    };
    let mut get = tool(
        "charges_get",
        "Reads one charge.",
        json!({
            "type": "object",
            "properties": {
                "id": { "type": "string", "description": "Charge id." },
                "expand": { "type": "boolean" }
            },
            "required": ["id"],
            "additionalProperties": false
        }),
        read_only,
        Access::new(Scope::Read, "charges.view"),
        Some(("GET", "/v1/charges/{id}")),
    );
    get.output_schema = Some(json!({
        "type": "object",
        "properties": { "id": { "type": "string" }, "amount": { "type": "number" } }
    }));
    Catalog {
        tools: vec![
            tool(
                "mirror_echo",
                "Echoes its arguments; every annotated argument is mirrored in a header.",
                json!({
                    "type": "object",
                    "properties": {
                        "region": { "type": "string", "x-mcp-header": "Region" },
                        "count": { "type": "integer", "x-mcp-header": "Count" },
                        "urgent": { "type": "boolean", "x-mcp-header": "Urgent" },
                        "target": {
                            "type": "object",
                            "properties": {
                                "zone": { "type": "string", "x-mcp-header": "Zone" }
                            }
                        },
                        "note": { "type": "string" }
                    }
                }),
                Annotations::default(),
                Access {
                    scope: Scope::Write,
                    permission: None,
                },
                Some(("POST", "/v1/echo")),
            ),
            get,
            tool(
                "charges_list",
                "Lists charges.",
                json!({
                    "type": "object",
                    "properties": {
                        "status": { "type": "string", "enum": ["open", "paid", "canceled"] },
                        "page": { "type": "integer", "minimum": 1 },
                        "tags": { "type": "array", "items": { "type": "string" } }
                    },
                    "additionalProperties": false
                }),
                read_only,
                Access::read(),
                Some(("GET", "/v1/charges")),
            ),
            tool(
                "charges_cancel",
                "Cancels a charge.",
                json!({
                    "type": "object",
                    "properties": {
                        "id": { "type": "string", "x-mcp-header": "Target-Id" },
                        "reason": { "type": "string", "maxLength": 200 }
                    },
                    "required": ["id"]
                }),
                destructive,
                Access::new(Scope::Write, "charges.cancel"),
                Some(("POST", "/v1/charges/{id}/cancel")),
            ),
            tool(
                "secrets_rotate",
                "Rotates the webhook secret.",
                json!({ "type": "object", "properties": {} }),
                Annotations::default(),
                Access {
                    scope: Scope::Admin,
                    permission: None,
                },
                Some(("DELETE", "/v1/secrets")),
            ),
        ],
        resources: vec![ResourceDef {
            uri: "kobana://test/me".into(),
            name: "me".into(),
            title: "Me".into(),
            description: "Who the token is.".into(),
            mime_type: "application/json".into(),
            access: Access::read(),
        }],
        templates: vec![
            TemplateDef {
                uri_template: "kobana://test/charges/{id}".into(),
                name: "charge".into(),
                title: "Charge".into(),
                description: "One charge.".into(),
                mime_type: "application/json".into(),
                access: Access::read(),
            },
            TemplateDef {
                uri_template: "kobana://test/charges/{id}/letter".into(),
                name: "letter".into(),
                title: "Settlement letter".into(),
                description: "PDF, once paid.".into(),
                mime_type: "application/pdf".into(),
                access: Access::read(),
            },
        ],
        prompts: vec![PromptDef {
            name: "triage".into(),
            title: "Triage".into(),
            description: "Overdue triage.".into(),
            arguments: vec![
                PromptArgument {
                    name: "min_days".into(),
                    description: "Minimum days overdue.".into(),
                    required: true,
                },
                PromptArgument {
                    name: "ruler_id".into(),
                    description: "Ruler.".into(),
                    required: false,
                },
            ],
            access: Access::read(),
        }],
        scopes: SCOPES,
    }
}

fn arg<'a>(call: &'a ToolCall<'_>, name: &str) -> &'a str {
    call.args.get(name).and_then(Value::as_str).unwrap_or("")
}

impl Dispatch for TestDomain {
    fn catalog(&self) -> Catalog {
        catalog()
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        match call.tool.name.as_str() {
            "charges_get" => match arg(call, "id") {
                "missing" => Err(ToolError::not_found("charge", "missing")),
                "broken" => Err(ToolError::new(
                    ToolErrorCode::Internal,
                    "store: disk I/O error",
                )),
                id => Ok(Output::ok(json!({ "id": id, "amount": 1234.56 }))),
            },
            "charges_list" => Ok(Output::ok(json!({ "data": [], "meta": { "total": 0 } }))),
            "charges_cancel" => Ok(Output::ok(json!({
                "id": arg(call, "id"),
                "status": "canceled",
                "idempotency_key": call.confirmation_key,
            }))),
            "secrets_rotate" => Ok(Output::NoContent),
            _ => Ok(Output::Json {
                status: 201,
                body: json!({ "echo": call.args }).into(),
            }),
        }
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        match arg(call, "id") {
            "paid" => Err(ToolError::new(
                ToolErrorCode::Conflict,
                "charge paid is already paid",
            )),
            "missing" => Err(ToolError::not_found("charge", "missing")),
            id => Ok(format!(
                "Cancel charge {id} of R$ 1.234,56 for Maria Silva?"
            )),
        }
    }

    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        let id = read.vars.get("id").map_or("", String::as_str);
        match (read.template.map(|t| t.name.as_str()), id) {
            (_, "missing") => Err(ResourceError::NotFound),
            (Some("letter"), "unpaid") => Err(ResourceError::Unavailable("NOT_SETTLED")),
            (Some("letter"), _) => Ok(vec![Contents::Blob {
                mime_type: "application/pdf".into(),
                bytes: b"%PDF-1.4\n%%EOF\n".to_vec(),
            }]),
            _ => Ok(vec![Contents::Text {
                mime_type: "application/json".into(),
                text: json!({ "uri": read.uri, "id": id }).to_string(),
            }]),
        }
    }

    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        let days = args.get("min_days").map_or("", String::as_str);
        if days.parse::<u32>().is_err() {
            return Err(format!("min_days must be a whole number, got {days:?}"));
        }
        Ok((
            Some(format!("{name} of charges {days}+ days overdue")),
            vec![json!({
                "role": "user",
                "content": { "type": "text", "text": format!("List charges overdue by {days} days.") }
            })],
        ))
    }

    fn complete(
        &self,
        _reference: CompletionRef<'_>,
        _argument: &str,
        value: &str,
        _context: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
    ) -> crate::Completion {
        (0..150)
            .map(|i| format!("CHG-{i:03}"))
            .filter(|v| v.starts_with(value))
            .collect::<Vec<_>>()
            .into()
    }
}

impl Authenticate for TestAuth {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        const ALL: &[&str] = &["charges.view", "charges.cancel"];
        let (scope, permissions): (Scope, &[&str]) = match (token, audience) {
            ("tok-expired", _) => return Err(AuthError::Expired),
            ("tok-api", Audience::Api) => (Scope::Admin, ALL),
            ("tok-api", Audience::Mcp) => return Err(AuthError::Audience),
            (TOKEN | "tok-owner" | "tok-admin" | "tok-acme" | LIMITED_TOKEN, _) => {
                (Scope::Admin, ALL)
            }
            ("tok-noperm", _) => (Scope::Admin, &["charges.view"]),
            (READ_TOKEN | "tok-reader", _) => (Scope::Read, &[]),
            _ => return Err(AuthError::Signature),
        };
        let organization = if token == "tok-acme" { "acme" } else { "demo" };
        Ok(Principal {
            subject: format!("{token}@example.com"),
            organization: organization.into(),
            scope: Some(scope),
            scopes: Scope::ALL
                .into_iter()
                .filter(|s| *s <= scope)
                .map(|s| SCOPES.name(s).to_owned())
                .collect(),
            permissions: permissions
                .iter()
                .map(|p| (*p).to_owned())
                .collect::<BTreeSet<_>>()
                .into(),
            expires_at: now.plus_millis(3_600_000),
            audience,
        })
    }
}

/// The `requestState` keys of the test server.
pub fn keys() -> Keys {
    Keys::single(STATE_SECRET)
}

/// A fresh test server (default configuration, [`keys`], [`TestLimiter`]).
pub fn test_server() -> Server<TestDomain> {
    let config = Config {
        instructions: "Test server.".into(),
        ..Config::default()
    };
    match Server::new(config, keys(), TestDomain, TestAuth) {
        Ok(s) => s.with_limiter(TestLimiter),
        Err(e) => panic!("the test catalog is invalid: {e}"),
    }
}

/// The test server, built once.
pub fn server() -> &'static Server<TestDomain> {
    static SERVER: OnceLock<Server<TestDomain>> = OnceLock::new();
    SERVER.get_or_init(test_server)
}

/// The environment of every fuzz request.
pub fn env() -> Env {
    Env::fixed(NOW, 7)
}

/// An owned request, from which a borrowed [`Request`] is made on demand.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RawRequest {
    /// Request method.
    pub method: String,
    /// Request target.
    pub target: String,
    /// Header fields, in order.
    pub headers: Vec<(String, Vec<u8>)>,
    /// Body.
    pub body: Vec<u8>,
}

impl RawRequest {
    /// Splits raw-ish HTTP: the first line is `METHOD TARGET [anything]`, then
    /// `name: value` lines up to an empty line (a line without a colon is a name with
    /// an empty value), then the body. Lines end in `\n` or `\r\n`. Never fails.
    pub fn split(data: &[u8]) -> Self {
        let mut rest = data;
        let mut next_line = || -> Option<&[u8]> {
            if rest.is_empty() {
                return None;
            }
            let (line, after) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = after;
            Some(line.strip_suffix(b"\r").unwrap_or(line))
        };
        let first = next_line().unwrap_or_default();
        let mut words = first
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|w| !w.is_empty());
        let method = String::from_utf8_lossy(words.next().unwrap_or(b"POST")).into_owned();
        let target = String::from_utf8_lossy(words.next().unwrap_or(b"/")).into_owned();
        let mut headers = Vec::new();
        while let Some(line) = next_line() {
            if line.is_empty() {
                break;
            }
            let (name, value) = match line.iter().position(|&b| b == b':') {
                Some(i) => (&line[..i], &line[i + 1..]),
                None => (line, &line[line.len()..]),
            };
            headers.push((String::from_utf8_lossy(name).into_owned(), value.to_vec()));
        }
        Self {
            method,
            target,
            headers,
            body: rest.to_vec(),
        }
    }

    /// Runs `f` on the borrowed form of this request.
    pub fn with<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        let headers: Vec<Header<'_>> = self
            .headers
            .iter()
            .map(|(name, value)| Header { name, value })
            .collect();
        f(&Request {
            method: &self.method,
            target: &self.target,
            headers: &headers,
            body: &self.body,
        })
    }

    /// The path part of the target.
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }
}

/// Checks the invariants every answer keeps; panics (a fuzz finding) when one breaks.
pub fn check_response(path: &str, resp: &Response) {
    let status = resp.status.as_u16();
    assert!(
        documented(path, status),
        "undocumented status {status} for {path}"
    );
    assert!(
        resp.header("cache-control").is_some(),
        "no Cache-Control on {status}"
    );
    let json = resp
        .header("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if json && !resp.body.is_empty() {
        assert!(
            serde_json::from_slice::<Value>(&resp.body).is_ok(),
            "a JSON response that does not parse"
        );
    }
}

/// Fuzz target `core_handle`: one raw-ish request through the test server.
pub fn handle(data: &[u8]) {
    let req = RawRequest::split(data);
    let resp = req.with(|r| server().handle(r, &env()));
    check_response(req.path(), &resp);
}

/// Fuzz target `request_state_open`: arbitrary text as a sealed `requestState`.
///
/// Nothing but a state this key sealed may open, and then it re-seals to the same text.
pub fn request_state(data: &[u8]) {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    let keys = KEYS.get_or_init(keys);
    let text = String::from_utf8_lossy(data);
    if let Ok(claims) = confirm::open(keys, &text) {
        assert_eq!(
            confirm::seal(keys, &claims).as_deref(),
            Some(text.as_ref()),
            "a state opened that this key did not seal"
        );
    }
}

/// Turns one conformance fixture (`tests/conformance/**/*.http`) into the raw requests
/// of its steps, the way `tests/src/fixture.rs` builds them, without a previous
/// response: `{{prev:..}}` and `{{stepN:..}}` become `x`. Tolerant: never fails.
///
/// Steps are separated by `>>>` lines; leading `#` lines are comments or directives
/// (`#raw`: every byte comes from escapes and line breaks are dropped); head lines get
/// CRLF, escapes `\r \n \t \\ \xNN` are decoded, `Content-Length: auto` is filled in.
pub fn fixture_requests(text: &str) -> Vec<Vec<u8>> {
    let mut steps = vec![String::new()];
    for line in text.split_inclusive('\n') {
        if line.starts_with(">>>") {
            steps.push(String::new());
        } else if let Some(last) = steps.last_mut() {
            last.push_str(line);
        }
    }
    steps
        .iter()
        .map(|s| fixture_step(s))
        .filter(|r| !r.is_empty())
        .collect()
}

fn fixture_step(step: &str) -> Vec<u8> {
    let mut raw = false;
    let mut rest = step;
    loop {
        let (line, after) = rest.split_once('\n').unwrap_or((rest, ""));
        let line = line.trim_end_matches('\r');
        if line == "#raw" {
            raw = true;
        } else if !line.starts_with('#') && !line.trim().is_empty() {
            break;
        }
        if after.is_empty() {
            return Vec::new();
        }
        rest = after;
    }
    if raw {
        let joined: String = rest.lines().collect();
        return unescape(&substitute(&joined));
    }
    let (head, body) = rest
        .split_once("\n\n")
        .or_else(|| rest.split_once("\r\n\r\n"))
        .unwrap_or_else(|| (rest.trim_end_matches(['\r', '\n']), ""));
    let body = body.strip_suffix('\n').unwrap_or(body);
    let body = body.strip_suffix('\r').unwrap_or(body);
    let body = pad_to(substitute(body));
    let mut out = Vec::new();
    for line in head.lines() {
        let mut bytes = unescape(&substitute(line.trim_end_matches('\r')));
        if bytes.len() > 15
            && bytes[..15].eq_ignore_ascii_case(b"content-length:")
            && bytes[15..].trim_ascii() == b"auto"
        {
            bytes = format!("Content-Length: {}", body.len()).into_bytes();
        }
        out.extend_from_slice(&bytes);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body);
    out
}

/// `{{hex:..}}`, `{{pad:N}}` and `{{fill:N}}` resolved, `{{pad-to:N}}` kept, references made `x`.
fn substitute(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.extend_from_slice(&rest.as_bytes()[..start]);
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = &rest[start + 2..start + len];
        rest = &rest[start + len + 2..];
        let (op, arg) = inner.split_once(':').unwrap_or((inner, ""));
        match op {
            "pad-to" => out.extend_from_slice(format!("{{{{{inner}}}}}").as_bytes()),
            "pad" => out.resize(out.len() + arg.parse::<usize>().unwrap_or(0), b' '),
            "fill" => out.resize(out.len() + arg.parse::<usize>().unwrap_or(0), b'x'),
            "hex" => {
                let clean: Vec<u8> = arg.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
                out.extend(clean.chunks(2).filter_map(|p| {
                    std::str::from_utf8(p)
                        .ok()
                        .and_then(|s| u8::from_str_radix(s, 16).ok())
                }));
            }
            _ => out.push(b'x'),
        }
    }
    out.extend_from_slice(rest.as_bytes());
    out
}

/// `{{pad-to:N}}`: spaces in its place so the body is N bytes long (when it can be).
fn pad_to(body: Vec<u8>) -> Vec<u8> {
    const OPEN: &[u8] = b"{{pad-to:";
    let Some(start) = body.windows(OPEN.len()).position(|w| w == OPEN) else {
        return body;
    };
    let Some(end) = body[start..]
        .windows(2)
        .position(|w| w == b"}}")
        .map(|e| start + e)
    else {
        return body;
    };
    let n: usize = std::str::from_utf8(&body[start + OPEN.len()..end])
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let kept = body.len() - (end + 2 - start);
    let mut out = Vec::with_capacity(n.max(kept));
    out.extend_from_slice(&body[..start]);
    out.resize(start + n.saturating_sub(kept), b' ');
    out.extend_from_slice(&body[end + 2..]);
    out
}

/// `\r \n \t \\ \xNN`; any other backslash is kept as is.
fn unescape(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = match (bytes[i], bytes.get(i + 1)) {
            (b'\\', Some(b'r')) => Some((b'\r', 2)),
            (b'\\', Some(b'n')) => Some((b'\n', 2)),
            (b'\\', Some(b't')) => Some((b'\t', 2)),
            (b'\\', Some(b'\\')) => Some((b'\\', 2)),
            (b'\\', Some(b'x')) => bytes
                .get(i + 2..i + 4)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .map(|b| (b, 4)),
            _ => None,
        };
        match escaped {
            Some((b, n)) => {
                out.push(b);
                i += n;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}
