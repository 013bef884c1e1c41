//! [`Server`]: the one entry point, and the processing order (docs/decisions.md) as one
//! straight line.
//!
//! ```text
//! route → method (405) → Origin (403) → authentication (401) → limits (429/503)
//!       → Content-Type (415) → body size (413) → JSON-RPC (-32700/-32600)
//!       → era (-32020/-32022/-32602) → mirrored headers (-32020)
//!       → notification (202) | method dispatch
//! ```
//! Each step returns early with a [`ProtocolError`]; [`Server::refuse`] renders it, using
//! the one mapping of [`ProtocolError::wire`]. [`Server::check_head`] runs the steps the
//! head alone decides (route, method, Origin, authentication, load) before an adapter
//! reads a body, with the same refusals.

use http::header::{ALLOW, CACHE_CONTROL, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::{Value, json};
use std::borrow::Cow;

use crate::auth::{self, AuthError, Authenticate};
use crate::config::{Config, Keys};
use crate::cors;
use crate::dispatch::Dispatch;
use crate::env::{Env, Load};
use crate::era::{self, Detected, Signals, Version};
use crate::error::ProtocolError;
use crate::jsonrpc::{self, Message};
use crate::limit::{RateLimit, Unlimited};
use crate::mirror;
use crate::oauth::{self, AuthorizationServer};
use crate::principal::{Audience, Principal};
use crate::registry::{ConfigError, Registry};
use crate::request::Request;
use crate::response::{Endpoint, RequestLog, Response};

/// Renders Prometheus text for `/metrics`; the state lives with the adapter.
pub trait Metrics: Send + Sync {
    /// The current exposition text.
    fn render(&self) -> String;
}

/// The MCP server: configuration, keys, compiled catalog and the hooks it calls.
///
/// `Send + Sync`: one `Arc<Server<D>>` serves every adapter thread. Holds no per-request
/// or per-connection state.
pub struct Server<D> {
    pub(crate) config: Config,
    pub(crate) keys: Keys,
    pub(crate) registry: Registry,
    pub(crate) dispatch: D,
    pub(crate) auth: Box<dyn Authenticate>,
    pub(crate) limiter: Box<dyn RateLimit>,
    metrics: Option<Box<dyn Metrics>>,
    pub(crate) oauth: Option<AuthorizationServer>,
    pub(crate) callbacks: Option<Box<dyn crate::Callbacks>>,
    server_info: Value,
    pub(crate) tool_lists: crate::tool_lists::ToolLists,
    /// The `server/discover` answer after its `id` (`methods.rs`), written once.
    pub(crate) discovered: std::sync::OnceLock<Box<[u8]>>,
}

/// One MCP request past the checks of steps 1–10 of the processing order: what methods work with.
pub(crate) struct Rpc<'a> {
    pub(crate) env: &'a Env,
    pub(crate) msg: &'a Message,
    pub(crate) version: Version,
    pub(crate) detected: &'a Detected,
    pub(crate) principal: &'a Principal,
}

impl Rpc<'_> {
    /// Whether this request is in era 2026.
    pub(crate) fn modern(&self) -> bool {
        self.version == Version::V2026_07_28
    }

    pub(crate) fn params(&self) -> Option<&serde_json::Map<String, Value>> {
        self.msg.params.as_ref()
    }
}

impl<D: Dispatch> Server<D> {
    /// Builds a server. Fails when the domain's catalog is invalid (bad schema, bad
    /// `x-mcp-header` annotation, duplicate names): a startup error naming the culprit.
    pub fn new(
        config: Config,
        keys: Keys,
        dispatch: D,
        auth: impl Authenticate + 'static,
    ) -> Result<Self, ConfigError> {
        let registry = Registry::new(dispatch.catalog())?;
        let tool_lists = crate::tool_lists::ToolLists::new(&registry);
        let server_info = json!({
            "name": config.server_name,
            "title": config.server_title,
            "version": config.server_version,
        });
        Ok(Self {
            config,
            keys,
            registry,
            dispatch,
            auth: Box::new(auth),
            limiter: Box::new(Unlimited),
            metrics: None,
            oauth: None,
            callbacks: None,
            server_info,
            tool_lists,
            discovered: std::sync::OnceLock::new(),
        })
    }

    /// Uses `limiter` for step 6 of the processing order.
    pub fn with_limiter(mut self, limiter: impl RateLimit + 'static) -> Self {
        self.limiter = Box::new(limiter);
        self
    }

    /// Serves `/metrics` from `metrics`.
    pub fn with_metrics(mut self, metrics: impl Metrics + 'static) -> Self {
        self.metrics = Some(Box::new(metrics));
        self
    }

    /// Serves the embedded authorization server (its metadata, `/authorize`, `/token`,
    /// `/register`). Without it those paths are `404`.
    pub fn with_authorization_server(mut self, server: AuthorizationServer) -> Self {
        self.oauth = Some(server);
        self
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The domain.
    pub fn dispatch(&self) -> &D {
        &self.dispatch
    }

    /// Whether [`Server::handle`] may wait on something other than the CPU (the
    /// dispatcher's or the authenticator's word): async adapters run it off the reactor
    /// when it may.
    pub fn may_block(&self) -> bool {
        self.dispatch.may_block() || self.auth.may_block()
    }

    /// Whether `tools/list` answers are kept per permission set (`tool_lists.rs`): false
    /// only for a catalogue with more distinct requirements than the kept masks hold.
    pub fn keeps_tool_lists(&self) -> bool {
        self.tool_lists.keeps()
    }

    /// `serverInfo` (name, title, version).
    pub fn server_info(&self) -> &Value {
        &self.server_info
    }

    /// Answers one request. Total: any input gives a response, never a panic.
    ///
    /// Every response carries `X-Request-Id`: [`Env::request_id`], or the request's own
    /// when [`Config::trust_request_id`] says so and it is valid.
    pub fn handle(&self, req: &Request<'_>, env: &Env) -> Response {
        let (env, incoming) = self.request_env(req, env);
        let env = &*env;
        let endpoint = self.route(req.path());
        let mut log = RequestLog::at(endpoint, req);
        let cors = endpoint.and_then(|r| self.cors_origin(req, r));
        let mut resp = match endpoint {
            _ if cors.is_some() && is_preflight(req) => cors::preflight(req),
            None => close_if_body(req, Response::empty(StatusCode::NOT_FOUND)),
            Some(Endpoint::Mcp) => self.mcp(req, env, &mut log),
            Some(Endpoint::Rest) => self.rest(req, env, &mut log),
            Some(Endpoint::WellKnown) => self.well_known(req),
            Some(Endpoint::Health) => Self::probe(req, true),
            Some(Endpoint::Ready) => Self::probe(req, self.dispatch.ready()),
            Some(Endpoint::Metrics) => self.metrics(req),
            Some(Endpoint::OAuth(r)) => self.oauth(r, req, env, &mut log),
            Some(Endpoint::Callback) => self.callback(req, env, &mut log),
        };
        if let Some(origin) = cors {
            cors::decorate(&mut resp, origin);
        }
        finish(&mut resp, log, env, incoming);
        resp
    }

    /// The authorization server's answer on `route`.
    fn oauth(
        &self,
        route: oauth::Route,
        req: &Request<'_>,
        env: &Env,
        log: &mut RequestLog,
    ) -> Response {
        let Some(server) = &self.oauth else {
            return close_if_body(req, Response::empty(StatusCode::NOT_FOUND));
        };
        if !route.serves(req.method) {
            let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
            set_header(&mut r, ALLOW, route.allow());
            return close_if_body(req, r);
        }
        if let Some(refusal) = open_body_refusal(req, oauth::MAX_BODY) {
            return close_if_body(req, refusal);
        }
        // Counted once, on the complete request (never in `check_head`), like step 6.
        if let Some(peer) = env.peer.filter(|_| route.limited())
            && let Err(l) = self.limiter.check_peer(peer, env.now)
        {
            let mut r = oauth::limited(route, &l);
            log.reason = r.log.reason.take();
            return r;
        }
        // The consent form is only ever submitted from this server's own page: a
        // browser names the page's origin, so a foreign `Origin` is a cross-site
        // submission (refused besides by the CSRF cookie, which such a request lacks).
        if route == oauth::Route::Authorize
            && req.method == "POST"
            && self.check_origin(req).is_err()
        {
            log.reason = Some("consent form submitted from a foreign Origin".into());
            return close_if_body(req, Response::empty(StatusCode::FORBIDDEN));
        }
        let mut r = server.handle(route, req, env);
        log.reason = r.log.reason.take();
        r
    }

    /// The request's `Origin` when it may read the answer (CORS): one
    /// `Origin` header that the Origin rule allows, on the MCP endpoint, the REST API,
    /// the well-known documents or the authorization server. Anything else gets no CORS
    /// header (and the MCP endpoint still refuses a foreign `Origin` with `403`).
    fn cors_origin<'r>(&self, req: &Request<'r>, route: Endpoint) -> Option<&'r str> {
        if !matches!(
            route,
            Endpoint::Mcp | Endpoint::Rest | Endpoint::WellKnown | Endpoint::OAuth(_)
        ) {
            return None;
        }
        let origin = std::str::from_utf8(req.single_header("origin").ok()??).ok()?;
        crate::origin::allowed(origin.trim(), &self.config).then_some(origin.trim())
    }

    /// The request's `X-Request-Id`, when trusted and valid: one header, 1 to
    /// [`MAX_REQUEST_ID`] bytes of visible ASCII. Anything else is ignored.
    /// The request's environment: `env`, or a copy carrying the request's own id when
    /// [`Config::trust_request_id`] takes it (the flag says which).
    fn request_env<'e>(&self, req: &Request<'_>, env: &'e Env) -> (Cow<'e, Env>, bool) {
        match self.incoming_request_id(req) {
            Some(id) => {
                let own = Env {
                    request_id: id.to_owned(),
                    ..env.clone()
                };
                (Cow::Owned(own), true)
            }
            None => (Cow::Borrowed(env), false),
        }
    }

    fn incoming_request_id<'r>(&self, req: &Request<'r>) -> Option<&'r str> {
        if !self.config.trust_request_id {
            return None;
        }
        let id = req.single_header("x-request-id").ok()??;
        let ok =
            !id.is_empty() && id.len() <= MAX_REQUEST_ID && id.iter().all(u8::is_ascii_graphic);
        if ok {
            std::str::from_utf8(id).ok()
        } else {
            None
        }
    }

    /// Decides from a request head alone, before any byte of its body is read, the
    /// refusals of steps 2–6 of the processing order that do not depend on the body, in that order: path
    /// (404), method (405), `Origin` (403), authentication (401), load (503). `None`: the
    /// head passes; read the body, then [`Server::handle`] the complete request (which
    /// runs every step again, the rate limit included).
    ///
    /// `req.body` is ignored (a head has none yet). A refusal is exactly what
    /// [`Server::handle`] answers the complete request with (`id: null` in the JSON-RPC
    /// error, as there), so whether an adapter asked it first does not show on the wire. Like
    /// `handle`, it may block when [`Server::may_block`] (authentication).
    pub fn check_head(&self, req: &Request<'_>, env: &Env) -> Option<Response> {
        let head = Request { body: &[], ..*req };
        let req = &head;
        let (env, incoming) = self.request_env(req, env);
        let env = &*env;
        let endpoint = self.route(req.path());
        let mut log = RequestLog::at(endpoint, req);
        let cors = endpoint.and_then(|r| self.cors_origin(req, r));
        let mut resp = match endpoint {
            _ if cors.is_some() && is_preflight(req) => cors::preflight(req),
            None => Response::empty(StatusCode::NOT_FOUND),
            Some(Endpoint::Mcp) => {
                let header_version = mirror::text(req, "mcp-protocol-version").ok().flatten();
                let echo = header_version.and_then(Version::parse);
                let e = self.admit(req, env, Audience::Mcp, true).err()?;
                self.refuse(e, None, echo, &mut log)
            }
            Some(Endpoint::Rest) => self.rest_head(req, env, &mut log)?,
            Some(Endpoint::WellKnown | Endpoint::Health | Endpoint::Ready | Endpoint::Metrics) => {
                if req.method == "GET" || req.method == "HEAD" {
                    return None;
                }
                let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
                set_header(&mut r, ALLOW, "GET, HEAD");
                r
            }
            Some(Endpoint::OAuth(r)) => {
                if self.oauth.is_none() {
                    Response::empty(StatusCode::NOT_FOUND)
                } else if r.serves(req.method) {
                    open_body_refusal(req, oauth::MAX_BODY)?
                } else {
                    let mut resp = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
                    set_header(&mut resp, ALLOW, r.allow());
                    resp
                }
            }
            Some(Endpoint::Callback) => Self::callback_head(req)?,
        };
        if let Some(origin) = cors {
            cors::decorate(&mut resp, origin);
        }
        finish(&mut resp, log, env, incoming);
        Some(resp)
    }

    pub(crate) fn route(&self, path: &str) -> Option<Endpoint> {
        let mcp = self.config.mcp_path.as_str();
        const PRM: &str = "/.well-known/oauth-protected-resource";
        Some(match path {
            p if p == mcp => Endpoint::Mcp,
            "/healthz" => Endpoint::Health,
            "/readyz" => Endpoint::Ready,
            // Only with a renderer: an adapter that serves its metrics elsewhere (a
            // separate listener) keeps them off this one, and it answers `404`.
            "/metrics" if self.metrics.is_some() => Endpoint::Metrics,
            PRM => Endpoint::WellKnown,
            p if mcp != "/" && p.strip_prefix(PRM) == Some(mcp) => Endpoint::WellKnown,
            p if p == "/v1" || p.starts_with("/v1/") => Endpoint::Rest,
            p if self.is_callback(p) => Endpoint::Callback,
            p if self.oauth.is_some() => Endpoint::OAuth(oauth::Route::of(p)?),
            _ => return None,
        })
    }

    /// The MCP endpoint: steps 3–11 of the processing order.
    fn mcp(&self, req: &Request<'_>, env: &Env, log: &mut RequestLog) -> Response {
        let header_version = mirror::text(req, "mcp-protocol-version").ok().flatten();
        // Until an era is determined, echo the request's version when we speak it.
        let echo = header_version.and_then(Version::parse);
        let principal = match self.gate(req, env, Audience::Mcp, true) {
            Ok(p) => p,
            Err(e) => {
                // A refusal the head alone decides carries `id: null` whether or not the
                // body was read: an adapter gives it before reading any body byte
                // (`check_head`), and the same request must get the same bytes.
                if decided_by_head(&e) {
                    return close_if_body(req, self.refuse(e, None, echo, log));
                }
                let id = if e.bodyless() {
                    None
                } else {
                    jsonrpc::peek_id(req.body)
                };
                return self.refuse(e, id.as_ref(), echo, log);
            }
        };
        log.organization = Some(principal.organization.clone());
        if req.body.len() > self.config.max_body {
            return self.too_large(log);
        }
        let msg = match jsonrpc::parse(req.body) {
            Ok(m) => m,
            Err(refusal) => {
                let (e, id) = *refusal;
                return self.refuse(e, id.as_ref(), echo, log);
            }
        };
        log.method = Some(msg.method.clone());
        let id = msg.id.as_ref();
        // `initialize` and envelope-less notifications never use the header, so a
        // malformed one (obs-text, repeated) cannot refuse them; everywhere else it is a
        // mirror error.
        let ignores_header = |msg: &Message| {
            (msg.method == "initialize" || msg.is_notification())
                && msg
                    .meta()
                    .is_none_or(|m| !m.contains_key(era::META_PROTOCOL_VERSION))
        };
        let header_version = match mirror::text(req, "mcp-protocol-version") {
            Ok(v) => v,
            Err(_) if ignores_header(&msg) => None,
            Err(e) => return self.refuse(e, id, None, log),
        };
        let signals = Signals {
            header: header_version,
            meta: msg.meta(),
            method: &msg.method,
            notification: msg.is_notification(),
        };
        let detected = match era::detect(signals) {
            Ok(d) => d,
            Err(e) => return self.refuse(e, id, era::refusal_version(signals), log),
        };
        let version = detected.version;
        log.version = Some(version);
        let modern = version == Version::V2026_07_28;

        if msg.is_notification() {
            if let Err(e) = mirror::check_notification(req, &msg.method) {
                return self.refuse(e, None, Some(version), log);
            }
            return with_version(Response::empty(StatusCode::ACCEPTED), version);
        }
        let id = id.unwrap_or(&Value::Null);
        if modern {
            let params = msg.params.as_ref();
            let (bindings, args) = match (msg.method.as_str(), params) {
                ("tools/call", Some(p)) => {
                    let tool = p
                        .get("name")
                        .and_then(Value::as_str)
                        .and_then(|n| self.registry.tool(n));
                    (
                        tool.map_or(&[][..], |t| t.bindings.as_slice()),
                        p.get("arguments"),
                    )
                }
                _ => (&[][..], None),
            };
            if let Err(e) = mirror::check_request(req, &msg.method, params, bindings, args) {
                return self.refuse(e, Some(id), Some(version), log);
            }
        }
        let rpc = Rpc {
            env,
            msg: &msg,
            version,
            detected: &detected,
            principal: &principal,
        };
        let reply = self.method(&rpc, log);
        self.answer(req, &rpc, id, reply, log)
    }

    /// steps 3–7 of the processing order for both surfaces: method, Origin, authentication, limits,
    /// Content-Type. `post_only`: the MCP endpoint serves POST alone.
    pub(crate) fn gate(
        &self,
        req: &Request<'_>,
        env: &Env,
        audience: Audience,
        post_only: bool,
    ) -> Result<Principal, ProtocolError> {
        let principal = self.admit(req, env, audience, post_only)?;
        // A request run again after a round of reads ahead was counted by its first run.
        let counted = env.ahead.as_ref().is_some_and(|a| a.rounds() > 0);
        if !counted {
            self.limiter
                .check(&principal, env.now)
                .map_err(|l| ProtocolError::RateLimited {
                    retry_after_ms: l.retry_after_ms,
                    policy: l.policy,
                    state: l.state,
                })?;
        }
        if req.method == "POST" || req.method == "PATCH" || !req.body.is_empty() {
            check_content_type(req)?;
        }
        Ok(principal)
    }

    /// The steps of [`Server::gate`] that the head alone decides, in order: method (405),
    /// Origin (403), authentication (401), load (503). [`Server::check_head`] runs these
    /// and no more: the rate limiter (429) counts a request once, when it is complete, and
    /// Content-Type (415) comes after it in the processing order.
    pub(crate) fn admit(
        &self,
        req: &Request<'_>,
        env: &Env,
        audience: Audience,
        post_only: bool,
    ) -> Result<Principal, ProtocolError> {
        if post_only && req.method != "POST" {
            return Err(ProtocolError::MethodNotAllowed { allow: "POST" });
        }
        self.check_origin(req)?;
        let values: Vec<&[u8]> = req.header_values("authorization").collect();
        let token = auth::bearer(&values)
            .map_err(|()| ProtocolError::Unauthorized(AuthError::NotBearer))?
            .ok_or(ProtocolError::Unauthorized(AuthError::NoToken))?;
        let principal = self
            .auth
            .authenticate(token, audience, env.now)
            .map_err(ProtocolError::Unauthorized)?;
        if env.load != Load::Normal {
            return Err(ProtocolError::Unavailable {
                draining: env.load == Load::Draining,
            });
        }
        Ok(principal)
    }

    fn check_origin(&self, req: &Request<'_>) -> Result<(), ProtocolError> {
        let Ok(origin) = req.single_header("origin") else {
            return Err(ProtocolError::OriginNotAllowed);
        };
        let Some(origin) = origin else { return Ok(()) };
        let origin = std::str::from_utf8(origin)
            .map_err(|_| ProtocolError::OriginNotAllowed)?
            .trim();
        if crate::origin::allowed(origin, &self.config) {
            Ok(())
        } else {
            Err(ProtocolError::OriginNotAllowed)
        }
    }

    /// Renders a protocol error: status and code from the one mapping, plus the headers
    /// each refusal needs.
    pub(crate) fn refuse(
        &self,
        err: ProtocolError,
        id: Option<&Value>,
        version: Option<Version>,
        log: &mut RequestLog,
    ) -> Response {
        let (status, code) = err.wire(version.map(Version::era));
        log.rpc_code = Some(code.0);
        log.reason = Some(err.reason());
        if let ProtocolError::Unauthorized(why) = &err {
            log.auth_error = Some(*why);
        }
        if let ProtocolError::BodyTooLarge { .. } = err {
            return self.too_large(log);
        }
        let mut r = if err.bodyless() {
            Response::empty(status)
        } else {
            let message = err.to_string();
            Response::json(status, jsonrpc::error(id, code.0, &message, err.data()))
        };
        match &err {
            ProtocolError::MethodNotAllowed { allow } => {
                set_header(&mut r, ALLOW, allow);
            }
            ProtocolError::Unauthorized(why) => {
                let mut challenge = format!(
                    "Bearer resource_metadata=\"{}\"",
                    self.config.resource_metadata_url()
                );
                // RFC 6750 §3.1: a request without credentials gets no error information.
                if why.token_sent() {
                    challenge.push_str(", error=\"invalid_token\", error_description=\"");
                    push_quotable(&mut challenge, &why.to_string());
                    challenge.push('"');
                }
                set_header(&mut r, WWW_AUTHENTICATE, &challenge);
            }
            ProtocolError::RateLimited {
                retry_after_ms,
                policy,
                state,
            } => {
                let secs = retry_after_ms.div_ceil(1000).max(1);
                set_header(&mut r, RETRY_AFTER, &secs.to_string());
                set_header(&mut r, HeaderName::from_static("ratelimit-policy"), policy);
                set_header(&mut r, HeaderName::from_static("ratelimit"), state);
            }
            ProtocolError::Unavailable { .. } => set_header(&mut r, RETRY_AFTER, "1"),
            _ => {}
        }
        match version {
            Some(v) => with_version(r, v),
            None => r,
        }
    }

    fn too_large(&self, log: &mut RequestLog) -> Response {
        let limit = self.config.max_body;
        log.rpc_code = Some(crate::error::ErrorCode::INVALID_REQUEST.0);
        log.reason = Some(ProtocolError::BodyTooLarge { limit }.reason());
        let body = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{{\"code\":-32600,\"message\":\"Request body too large (limit {} bytes)\"}}}}",
            self.config.max_body
        );
        Response::json(StatusCode::PAYLOAD_TOO_LARGE, body.into_bytes())
    }

    fn well_known(&self, req: &Request<'_>) -> Response {
        if req.method != "GET" && req.method != "HEAD" {
            let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
            set_header(&mut r, ALLOW, "GET, HEAD");
            return close_if_body(req, r);
        }
        let body = json!({
            "resource": self.config.resource(),
            "authorization_servers": self.config.authorization_servers,
            "scopes_supported": self.registry.scopes.all(),
            "bearer_methods_supported": ["header"],
            "resource_name": self.config.server_title,
        });
        Response::json(
            StatusCode::OK,
            serde_json::to_vec(&body).unwrap_or_default(),
        )
    }

    fn probe(req: &Request<'_>, ok: bool) -> Response {
        if req.method != "GET" && req.method != "HEAD" {
            let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
            set_header(&mut r, ALLOW, "GET, HEAD");
            return close_if_body(req, r);
        }
        let (status, body) = if ok {
            (StatusCode::OK, br#"{"status":"ok"}"#.to_vec())
        } else {
            (
                StatusCode::SERVICE_UNAVAILABLE,
                br#"{"status":"unavailable"}"#.to_vec(),
            )
        };
        Response::json(status, body)
    }

    fn metrics(&self, req: &Request<'_>) -> Response {
        if req.method != "GET" && req.method != "HEAD" {
            let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
            set_header(&mut r, ALLOW, "GET, HEAD");
            return close_if_body(req, r);
        }
        let text = self
            .metrics
            .as_ref()
            .map(|m| m.render())
            .unwrap_or_default();
        let mut r = Response::empty(StatusCode::OK);
        set_header(
            &mut r,
            http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        );
        r.body = text.into_bytes();
        r
    }
}

/// The endpoints that take requests from anyone (no token yet: the authorization
/// server's, the providers' callbacks) bound their bodies before any byte is read: a
/// `POST` must declare its length (`411` otherwise, chunked included) and at most `max`
/// bytes (`413`). A token-less request never buys more than that.
pub(crate) fn open_body_refusal(req: &Request<'_>, max: usize) -> Option<Response> {
    if req.method != "POST" {
        return None;
    }
    let declared = req
        .single_header("content-length")
        .ok()
        .flatten()
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        None => Some(Response::empty(StatusCode::LENGTH_REQUIRED)),
        Some(n) if n > max as u64 => Some(Response::empty(StatusCode::PAYLOAD_TOO_LARGE)),
        Some(_) => None,
    }
}

/// A CORS preflight: `OPTIONS` with `Access-Control-Request-Method`.
fn is_preflight(req: &Request<'_>) -> bool {
    req.method == "OPTIONS" && req.single_header("access-control-request-method") != Ok(None)
}

/// Longest `X-Request-Id` taken from a request (bytes).
pub const MAX_REQUEST_ID: usize = 128;

/// What every response gets last: `Cache-Control: no-store`, `X-Request-Id`, the log.
fn finish(resp: &mut Response, mut log: RequestLog, env: &Env, incoming: bool) {
    resp.headers
        .push((CACHE_CONTROL, HeaderValue::from_static("no-store")));
    // The adapter's id is hex and a trusted one was checked: both are header text.
    if let Ok(v) = HeaderValue::from_str(&env.request_id) {
        resp.headers
            .push((HeaderName::from_static("x-request-id"), v));
    }
    if incoming {
        log.request_id = Some(env.request_id.clone());
    }
    resp.log = log;
}

/// A refusal [`Server::check_head`] gives from the head closes the connection when the
/// request has a body (the body is never read). The same refusal given by
/// [`Server::handle`] to a request whose body was read anyway (it arrived with its head)
/// closes too, so that the wire bytes do not depend on how the request was segmented.
pub(crate) fn close_if_body(req: &Request<'_>, r: Response) -> Response {
    if req.body.is_empty() {
        r
    } else {
        r.with_header(http::header::CONNECTION, HeaderValue::from_static("close"))
    }
}

/// Refusals of steps 3–6 of the processing order that [`Server::check_head`] can give from the head alone.
pub(crate) fn decided_by_head(e: &ProtocolError) -> bool {
    matches!(
        e,
        ProtocolError::MethodNotAllowed { .. }
            | ProtocolError::OriginNotAllowed
            | ProtocolError::Unauthorized(_)
            | ProtocolError::Unavailable { .. }
    )
}

/// `application/json`, optionally with `charset=utf-8`; anything else is `415`.
fn check_content_type(req: &Request<'_>) -> Result<(), ProtocolError> {
    let value = req
        .single_header("content-type")
        .map_err(|()| ProtocolError::UnsupportedMediaType)?
        .ok_or(ProtocolError::UnsupportedMediaType)?;
    let value = std::str::from_utf8(value).map_err(|_| ProtocolError::UnsupportedMediaType)?;
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim();
    if !essence.eq_ignore_ascii_case("application/json") {
        return Err(ProtocolError::UnsupportedMediaType);
    }
    for param in parts {
        let (k, v) = param.split_once('=').unwrap_or((param, ""));
        if k.trim().eq_ignore_ascii_case("charset") {
            let v = v.trim().trim_matches('"');
            if !v.eq_ignore_ascii_case("utf-8") {
                return Err(ProtocolError::UnsupportedMediaType);
            }
        }
    }
    Ok(())
}

pub(crate) fn with_version(mut r: Response, v: Version) -> Response {
    r.headers.push((
        HeaderName::from_static("mcp-protocol-version"),
        HeaderValue::from_static(v.as_str()),
    ));
    r
}

/// Appends `text` as the inside of an RFC 6750 quoted `error_description`: only
/// `%x20-21 / %x23-5B / %x5D-7E` may appear, so `"` becomes `'`, `\` becomes `/`, and
/// anything else outside printable ASCII is left out.
pub(crate) fn push_quotable(out: &mut String, text: &str) {
    out.extend(text.chars().filter_map(|c| match c {
        '"' => Some('\''),
        '\\' => Some('/'),
        ' '..='~' => Some(c),
        _ => None,
    }));
}

/// Sets a header whose value we built; values that cannot be header text are dropped.
pub(crate) fn set_header(r: &mut Response, name: HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        r.headers.push((name, v));
    }
}
