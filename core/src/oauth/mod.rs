//! The embedded development authorization server (OAuth 2.1 with PKCE, RFC 8414
//! metadata, RFC 7591 registration, RFC 8707 resources, RFC 9207 `iss`), served on the
//! development default so that a client knowing only the URL can sign in as a demo
//! person.
//!
//! Sans-IO like the rest of the core: [`AuthorizationServer::handle`] is a function of
//! the request, the [`Env`] (clock and entropy), the signing key and the sealing keys;
//! what must outlive a request (registered clients, codes, refresh tokens, their
//! families) goes through the [`Backend`] trait, which the domain's store implements,
//! and so do the people who may sign in.
//!
//! ```text
//! POST /register ─► client (public, token_endpoint_auth_method none)
//! GET  /authorize ─► checks (client, redirect URI, response_type, PKCE S256, resource,
//!                    scope) ─► consent page, sealed request + CSRF cookie
//! POST /authorize ─► seal + cookie ─► approve: code (60 s, single use) ─► 302 redirect
//! POST /token     ─► authorization_code (client, redirect URI, verifier, resource)
//!                 └► refresh_token (rotation; a reused one revokes its family)
//!                 ─► RFC 9068 access token (EdDSA, ~1 h) + refresh token
//! ```
//!
//! Errors: [`OAuthError`], mapped to RFC 6749 codes and statuses in one place
//! ([`OAuthError::wire`]).

pub mod cimd;
mod error;
pub mod form;
mod grants;
pub mod page;
pub mod pkce;
pub mod redirect;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use http::header::{CONTENT_TYPE, LOCATION};
use http::{HeaderName, HeaderValue, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

pub use error::{OAuthError, limited};
use form::{Params, Pending};

use crate::config::Keys;
use crate::env::{Env, UnixTime};
use crate::request::Request;
use crate::response::Response;

/// Longest body of any request to the authorization server (checked from the head by
/// the server, before the body is read).
pub const MAX_BODY: usize = 16 * 1024;
/// Longest registration document read.
const MAX_REGISTRATION: usize = MAX_BODY;
/// Longest `state` carried (it travels in the sealed form and the redirect).
const MAX_STATE: usize = 1024;
/// Most redirect URIs one client registers.
const MAX_REDIRECT_URIS: usize = 10;
/// Name of the CSRF cookie.
pub const CSRF_COOKIE: &str = "kd_authorize";

/// A person who may sign in on the consent page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    /// Organization id (the token's `org`).
    pub organization: String,
    /// Organization display name.
    pub organization_name: String,
    /// Login (the token's `sub`).
    pub login: String,
    /// Display name.
    pub name: String,
    /// Role in the organization.
    pub role: String,
    /// Scopes the role allows.
    pub scopes: Vec<String>,
}

/// What the backend keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GrantKind {
    /// A registered client, by client id.
    Client,
    /// An authorization code, by SHA-256 of the code.
    Code,
    /// A refresh token, by SHA-256 of the token.
    Refresh,
    /// A refresh-token family, by family id (revocation).
    Family,
}

impl GrantKind {
    /// Stable name (the store's `kind` column).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Code => "code",
            Self::Refresh => "refresh",
            Self::Family => "family",
        }
    }
}

/// Persistence and people, lent by the adapter. Called synchronously; may block.
pub trait Backend: Send + Sync {
    /// Everyone who may sign in, in display order.
    fn people(&self) -> Result<Vec<Person>, String>;
    /// Stores `doc` under `(kind, id)`, replacing any; `expires`: when the store may
    /// forget it (`None`: never).
    fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: &Value,
        expires: Option<UnixTime>,
    ) -> Result<(), String>;
    /// The document under `(kind, id)`.
    fn get(&self, kind: GrantKind, id: &str) -> Result<Option<Value>, String>;
    /// Atomically: reads the document, and when `f` returns a new one, replaces it
    /// (keeping its expiry). Returns the document as it was before.
    fn update(
        &self,
        kind: GrantKind,
        id: &str,
        f: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Result<Option<Value>, String>;
    /// The Client ID Metadata Document at `url` (an `https` client id, already checked
    /// by [`cimd::url_ok`]), fetched under the adapter's rules (addresses, size, time,
    /// cache). Its content is checked by the core. The default fetches nothing.
    fn client_metadata(&self, url: &str) -> Result<Value, String> {
        let _ = url;
        Err("client metadata documents are not fetched".into())
    }
}

/// Settings of the authorization server.
#[derive(Clone, Debug)]
pub struct AsConfig {
    /// Issuer (no trailing slash); endpoints are below it.
    pub issuer: String,
    /// Title shown on the page.
    pub title: String,
    /// The MCP resource identifier (a token's `aud`).
    pub resource: String,
    /// Another resource tokens may be asked for (the REST API).
    pub api_resource: Option<String>,
    /// Every scope, weakest first.
    pub scopes: Vec<String>,
    /// Access-token lifetime.
    pub access_ttl_secs: u64,
    /// Authorization-code lifetime.
    pub code_ttl_secs: u64,
    /// Refresh-token lifetime.
    pub refresh_ttl_secs: u64,
    /// How long the consent page may be submitted.
    pub page_ttl_secs: u64,
    /// Whether an `https` client id is a Client ID Metadata Document to fetch
    /// ([`Backend::client_metadata`]); advertised as
    /// `client_id_metadata_document_supported`.
    pub client_metadata_documents: bool,
}

impl AsConfig {
    /// Defaults around an issuer and a resource: 1 h tokens, 60 s codes, 30-day refresh
    /// tokens, 10-minute pages.
    pub fn new(issuer: &str, resource: &str, scopes: Vec<String>) -> Self {
        Self {
            issuer: issuer.trim_end_matches('/').to_owned(),
            title: "this server".into(),
            resource: resource.to_owned(),
            api_resource: None,
            scopes,
            access_ttl_secs: 3600,
            code_ttl_secs: 60,
            refresh_ttl_secs: 30 * 24 * 3600,
            page_ttl_secs: 600,
            client_metadata_documents: false,
        }
    }
}

/// The paths the authorization server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/.well-known/oauth-authorization-server` (RFC 8414).
    Metadata,
    /// `/.well-known/openid-configuration`.
    OpenId,
    /// `/.well-known/jwks.json`.
    Jwks,
    /// `/authorize`.
    Authorize,
    /// `/token`.
    Token,
    /// `/register`.
    Register,
}

impl Route {
    /// The route of `path`, if any.
    pub fn of(path: &str) -> Option<Self> {
        Some(match path {
            "/.well-known/oauth-authorization-server" => Self::Metadata,
            "/.well-known/openid-configuration" => Self::OpenId,
            "/.well-known/jwks.json" => Self::Jwks,
            "/authorize" => Self::Authorize,
            "/token" => Self::Token,
            "/register" => Self::Register,
            _ => return None,
        })
    }

    /// Methods served (`Allow`).
    pub fn allow(self) -> &'static str {
        match self {
            Self::Metadata | Self::OpenId | Self::Jwks => "GET, HEAD",
            Self::Authorize => "GET, POST",
            Self::Token | Self::Register => "POST",
        }
    }

    /// Whether `method` is served.
    pub fn serves(self, method: &str) -> bool {
        self.allow().split(", ").any(|m| m == method)
    }

    /// Whether requests to it count against the per-address limit
    /// ([`crate::RateLimit::check_peer`]): the endpoints that write to the store or mint
    /// something. The metadata documents and the JWKS are fixed answers, fetched several
    /// times by every client, and are not counted.
    pub fn limited(self) -> bool {
        matches!(self, Self::Authorize | Self::Token | Self::Register)
    }
}

/// The authorization server.
pub struct AuthorizationServer {
    config: AsConfig,
    kid: String,
    seed: Zeroizing<[u8; 32]>,
    keys: Keys,
    backend: Box<dyn Backend>,
}

impl std::fmt::Debug for AuthorizationServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationServer")
            .field("issuer", &self.config.issuer)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl AuthorizationServer {
    /// A server signing with the Ed25519 `seed` (key id `kid`), sealing its forms with
    /// `keys`, keeping its grants in `backend`.
    pub fn new(
        config: AsConfig,
        kid: &str,
        seed: Zeroizing<[u8; 32]>,
        keys: Keys,
        backend: impl Backend + 'static,
    ) -> Self {
        Self {
            config,
            kid: kid.to_owned(),
            seed,
            keys,
            backend: Box::new(backend),
        }
    }

    /// The settings.
    pub fn config(&self) -> &AsConfig {
        &self.config
    }

    /// Answers a request on `route` (the method is known to be served).
    pub fn handle(&self, route: Route, req: &Request<'_>, env: &Env) -> Response {
        match route {
            Route::Metadata => json_ok(&self.metadata(false)),
            Route::OpenId => json_ok(&self.metadata(true)),
            Route::Jwks => json_ok(&json!({
                "keys": [crate::jwt::ed25519_jwk(&self.kid, &crate::jwt::ed25519_public(&self.seed))]
            })),
            Route::Authorize if req.method == "POST" => self.submit(req, env),
            Route::Authorize => self.authorize(req, env),
            Route::Token => match self.token(req, env) {
                Ok(body) => json_ok(&body).with_header(
                    HeaderName::from_static("pragma"),
                    HeaderValue::from_static("no-cache"),
                ),
                Err(e) => json_error(&e),
            },
            Route::Register => match self.register(req, env) {
                Ok(body) => Response::json(
                    StatusCode::CREATED,
                    serde_json::to_vec(&body).unwrap_or_default(),
                ),
                Err(e) => json_error(&e),
            },
        }
    }

    /// The RFC 8414 document (with the OpenID discovery fields when `openid`).
    pub fn metadata(&self, openid: bool) -> Value {
        let i = &self.config.issuer;
        let mut doc = json!({
            "issuer": i,
            "authorization_endpoint": format!("{i}/authorize"),
            "token_endpoint": format!("{i}/token"),
            "registration_endpoint": format!("{i}/register"),
            "jwks_uri": format!("{i}/.well-known/jwks.json"),
            "scopes_supported": self.config.scopes,
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
        });
        if self.config.client_metadata_documents {
            doc["client_id_metadata_document_supported"] = json!(true);
        }
        if openid {
            doc["subject_types_supported"] = json!(["public"]);
            doc["id_token_signing_alg_values_supported"] = json!(["EdDSA"]);
        }
        doc
    }

    // ---- registration (RFC 7591) ----

    fn register(&self, req: &Request<'_>, env: &Env) -> Result<Value, OAuthError> {
        if !is_json(req) {
            return Err(OAuthError::InvalidClientMetadata(
                "the registration must be application/json",
            ));
        }
        if req.body.len() > MAX_REGISTRATION {
            return Err(OAuthError::InvalidClientMetadata(
                "the registration document is too large",
            ));
        }
        let doc: Value = serde_json::from_slice(req.body)
            .map_err(|_| OAuthError::InvalidClientMetadata("the body is not JSON"))?;
        let obj = doc.as_object().ok_or(OAuthError::InvalidClientMetadata(
            "the body is not a JSON object",
        ))?;
        let uris = obj
            .get("redirect_uris")
            .and_then(Value::as_array)
            .filter(|a| !a.is_empty() && a.len() <= MAX_REDIRECT_URIS)
            .ok_or(OAuthError::InvalidRedirectUri(
                "redirect_uris must list 1 to 10 URIs",
            ))?;
        let mut redirect_uris = Vec::with_capacity(uris.len());
        for u in uris {
            let u = u.as_str().filter(|u| redirect::registrable(u)).ok_or(
                OAuthError::InvalidRedirectUri(
                    "a redirect URI must be https, or http on a loopback address, without fragment",
                ),
            )?;
            redirect_uris.push(u.to_owned());
        }
        let strings = |name: &str, default: &[&str], allowed: &[&str]| match obj.get(name) {
            None | Some(Value::Null) => Ok(default.iter().map(|s| (*s).to_owned()).collect()),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| match v.as_str() {
                    Some(s) if allowed.contains(&s) => Ok(s.to_owned()),
                    _ => Err(()),
                })
                .collect::<Result<Vec<String>, ()>>(),
            Some(_) => Err(()),
        };
        let grant_types = strings(
            "grant_types",
            &["authorization_code", "refresh_token"],
            &["authorization_code", "refresh_token"],
        )
        .map_err(|()| {
            OAuthError::InvalidClientMetadata(
                "grant_types may only be authorization_code and refresh_token",
            )
        })?;
        let response_types = strings("response_types", &["code"], &["code"])
            .map_err(|()| OAuthError::InvalidClientMetadata("response_types may only be code"))?;
        let name = match obj.get("client_name") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.chars().count() <= 200 => Some(s.clone()),
            Some(_) => {
                return Err(OAuthError::InvalidClientMetadata(
                    "client_name must be a string of at most 200 characters",
                ));
            }
        };
        let client_id = format!("kd-{}", hex(&derive(env, b"client-id")[..16]));
        let issued = env.now.as_secs();
        let mut out = json!({
            "client_id": client_id,
            "client_id_issued_at": issued,
            "redirect_uris": redirect_uris,
            "grant_types": grant_types,
            "response_types": response_types,
            // Public clients only (RFC 7591 §2 lets the server replace what was asked).
            "token_endpoint_auth_method": "none",
        });
        if let Some(n) = name {
            out["client_name"] = Value::String(n);
        }
        self.backend
            .put(GrantKind::Client, &client_id, &out, None)
            .map_err(|_| OAuthError::ServerError("the client could not be stored"))?;
        Ok(out)
    }

    /// A registered client, or a client whose id is the URL of its metadata document.
    fn client(&self, id: &str) -> Result<Option<Value>, OAuthError> {
        if id.starts_with("https://") && self.config.client_metadata_documents {
            if !cimd::url_ok(id) {
                return Err(OAuthError::InvalidClient(
                    "a client id URL must be https with a path, without fragment, credentials or dot segments",
                ));
            }
            let doc = self.backend.client_metadata(id).map_err(|_| {
                OAuthError::InvalidClient("the client's metadata document could not be fetched")
            })?;
            return cimd::client(id, &doc).map(Some);
        }
        self.backend
            .get(GrantKind::Client, id)
            .map_err(|_| OAuthError::ServerError("the store failed"))
    }

    // ---- /authorize ----

    /// Checks an authorization request. `Err`: the answer, either an error page (the
    /// client or redirect URI cannot be trusted, RFC 6749 §4.1.2.1) or an error sent
    /// back to the redirect URI.
    fn check(&self, p: &Params, env: &Env) -> Result<(Pending, String), Box<Response>> {
        let page = |m: &str| Err(Box::new(html(StatusCode::BAD_REQUEST, page::error(m))));
        let Some(client_id) = p.get("client_id") else {
            return page("client_id is missing.");
        };
        let client = match self.client(client_id) {
            Ok(Some(c)) => c,
            Ok(None) => return page("This client is not registered."),
            Err(e) => return page(e.description()),
        };
        let registered: Vec<&str> = client["redirect_uris"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let redirect_uri = match p.get("redirect_uri") {
            Some(r) if registered.iter().any(|g| redirect::matches(g, r)) => r.to_owned(),
            Some(_) => return page("The redirect URI is not registered for this client."),
            None if registered.len() == 1 => registered[0].to_owned(),
            None => return page("redirect_uri is missing."),
        };
        let state = p.get("state").map(str::to_owned);
        if state.as_ref().is_some_and(|s| s.len() > MAX_STATE) {
            return page("state is too long.");
        }
        let back = |e: OAuthError| {
            Err(Box::new(self.redirect_error(
                &redirect_uri,
                state.as_deref(),
                &e,
            )))
        };
        if p.get("response_type") != Some("code") {
            return back(OAuthError::UnsupportedResponseType(
                "response_type must be code",
            ));
        }
        if let Err(e) =
            pkce::check_challenge(p.get("code_challenge"), p.get("code_challenge_method"))
        {
            return back(e);
        }
        let resource = match self.resource(p.get("resource")) {
            Ok(r) => r,
            Err(e) => return back(e),
        };
        let scopes = match self.scopes(p.get("scope")) {
            Ok(s) => s,
            Err(e) => return back(e),
        };
        let name = client["client_name"]
            .as_str()
            .unwrap_or(client_id)
            .to_owned();
        Ok((
            Pending {
                client_id: client_id.to_owned(),
                redirect_uri,
                challenge: p.get("code_challenge").unwrap_or_default().to_owned(),
                state,
                scopes,
                resource,
                expires_at: env
                    .now
                    .plus_millis(self.config.page_ttl_secs * 1000)
                    .as_millis(),
                nonce: hex(&derive(env, b"csrf")[..16]),
            },
            name,
        ))
    }

    /// The resource a request names (required; RFC 8707), canonical.
    fn resource(&self, asked: Option<&str>) -> Result<String, OAuthError> {
        let asked = asked.ok_or(OAuthError::InvalidTarget("resource is required (RFC 8707)"))?;
        let same = |r: &str| asked.trim_end_matches('/') == r.trim_end_matches('/');
        if same(&self.config.resource) {
            return Ok(self.config.resource.clone());
        }
        match &self.config.api_resource {
            Some(api) if same(api) => Ok(api.clone()),
            _ => Err(OAuthError::InvalidTarget("resource is not this server")),
        }
    }

    /// The scopes asked (all of them when none is named).
    fn scopes(&self, asked: Option<&str>) -> Result<Vec<String>, OAuthError> {
        let Some(asked) = asked else {
            return Ok(self.config.scopes.clone());
        };
        let mut out = Vec::new();
        for s in asked.split(' ').filter(|s| !s.is_empty()) {
            if !self.config.scopes.iter().any(|k| k == s) {
                return Err(OAuthError::InvalidScope("a scope asked is unknown"));
            }
            if !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        }
        if out.is_empty() {
            return Ok(self.config.scopes.clone());
        }
        Ok(out)
    }

    fn authorize(&self, req: &Request<'_>, env: &Env) -> Response {
        let params = match Params::parse(req.query().unwrap_or_default()) {
            Ok(p) => p,
            Err(e) => return html(StatusCode::BAD_REQUEST, page::error(e.description())),
        };
        let (pending, name) = match self.check(&params, env) {
            Ok(x) => x,
            Err(r) => return *r,
        };
        let Ok(people) = self.backend.people() else {
            return html(
                StatusCode::INTERNAL_SERVER_ERROR,
                page::error("The store failed."),
            );
        };
        let Some(sealed) = form::seal(&self.keys, &pending) else {
            return html(
                StatusCode::INTERNAL_SERVER_ERROR,
                page::error("No sealing key is configured."),
            );
        };
        let body = page::consent(&page::Consent {
            server: &self.config.title,
            client: &name,
            redirect_uri: &pending.redirect_uri,
            scopes: &pending.scopes,
            people: &people,
            sealed: &sealed,
        });
        let cookie = format!(
            "{CSRF_COOKIE}={}; Path=/authorize; Max-Age={}; HttpOnly; SameSite=Strict",
            pending.nonce, self.config.page_ttl_secs
        );
        let mut r = html(StatusCode::OK, body);
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers.push((http::header::SET_COOKIE, v));
        }
        r
    }

    /// The consent form: CSRF checks, then approve (code) or deny.
    fn submit(&self, req: &Request<'_>, env: &Env) -> Response {
        let refuse = |m: &str| html(StatusCode::BAD_REQUEST, page::error(m));
        if !is_form(req) {
            return refuse("The form must be application/x-www-form-urlencoded.");
        }
        let Ok(body) = std::str::from_utf8(req.body) else {
            return refuse("The form is not UTF-8.");
        };
        let params = match Params::parse(body) {
            Ok(p) => p,
            Err(e) => return refuse(e.description()),
        };
        let Some(pending) = params
            .get("request")
            .and_then(|s| form::open(&self.keys, s))
        else {
            return refuse("The form is invalid (CSRF check failed): start the sign-in again.");
        };
        if cookie(req, CSRF_COOKIE).as_deref() != Some(pending.nonce.as_str()) {
            return refuse(
                "The form does not come from this browser's sign-in (CSRF check failed): start again.",
            );
        }
        if env.now.as_millis() >= pending.expires_at {
            return refuse("The sign-in page expired: start again.");
        }
        let state = pending.state.as_deref();
        let back = |e: OAuthError| self.redirect_error(&pending.redirect_uri, state, &e);
        match params.get("decision") {
            Some("approve") => {}
            Some("deny") => return back(OAuthError::AccessDenied("the person denied access")),
            _ => return refuse("Choose approve or deny."),
        }
        let Some((org, login)) = params.get("person").and_then(|p| p.split_once('|')) else {
            return refuse("Choose a person.");
        };
        let Ok(people) = self.backend.people() else {
            return back(OAuthError::ServerError("the store failed"));
        };
        let Some(person) = people
            .iter()
            .find(|p| p.organization == org && p.login == login)
        else {
            return refuse("No such person.");
        };
        let granted: Vec<String> = pending
            .scopes
            .iter()
            .filter(|s| person.scopes.contains(s))
            .cloned()
            .collect();
        if granted.is_empty() {
            return back(OAuthError::InvalidScope(
                "the person's role allows none of the scopes asked",
            ));
        }
        let code = URL_SAFE_NO_PAD.encode(derive(env, b"code"));
        let family = hex(&derive(env, b"family")[..16]);
        let expires = env.now.plus_millis(self.config.code_ttl_secs * 1000);
        let doc = json!({
            "client_id": pending.client_id,
            "redirect_uri": pending.redirect_uri,
            "challenge": pending.challenge,
            "scope": granted.join(" "),
            "resource": pending.resource,
            "sub": person.login,
            "org": person.organization,
            "family": family,
            "exp": expires.as_millis(),
            "used": false,
        });
        if self
            .backend
            .put(GrantKind::Code, &digest(&code), &doc, Some(expires))
            .is_err()
        {
            return back(OAuthError::ServerError("the store failed"));
        }
        let mut query = format!("code={}", form::encode(&code));
        if let Some(s) = state {
            query.push_str(&format!("&state={}", form::encode(s)));
        }
        query.push_str(&format!("&iss={}", form::encode(&self.config.issuer)));
        found(&pending.redirect_uri, &query)
    }

    fn redirect_error(&self, uri: &str, state: Option<&str>, e: &OAuthError) -> Response {
        let mut query = format!(
            "error={}&error_description={}",
            e.code(),
            form::encode(e.description())
        );
        if let Some(s) = state {
            query.push_str(&format!("&state={}", form::encode(s)));
        }
        query.push_str(&format!("&iss={}", form::encode(&self.config.issuer)));
        found(uri, &query)
    }
}

/// 32 bytes for `label` from the request's entropy (one request may need several
/// independent values).
fn derive(env: &Env, label: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(label);
    h.update([0]);
    h.update(env.entropy);
    h.finalize().into()
}

/// How a secret is stored: hex SHA-256 (a leaked table yields no usable code or token).
fn digest(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn json_ok(v: &Value) -> Response {
    Response::json(StatusCode::OK, serde_json::to_vec(v).unwrap_or_default())
}

fn json_error(e: &OAuthError) -> Response {
    let (code, status) = e.wire();
    let mut r = Response::json(
        status,
        serde_json::to_vec(&json!({ "error": code, "error_description": e.description() }))
            .unwrap_or_default(),
    );
    r.log.reason = Some(std::borrow::Cow::Borrowed(e.description()));
    r
}

/// An HTML page with the headers that keep it out of frames and caches.
fn html(status: StatusCode, body: String) -> Response {
    let mut r = Response::empty(status);
    r.headers.push((
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    ));
    r.headers.push((
        HeaderName::from_static("x-frame-options"),
        HeaderValue::from_static("DENY"),
    ));
    r.headers.push((
        HeaderName::from_static("content-security-policy"),
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ));
    r.headers.push((
        HeaderName::from_static("referrer-policy"),
        // `same-origin`, not `no-referrer`: a browser then names the page's origin on
        // the form's POST (with `no-referrer` it sends `Origin: null`), and the page's
        // URL still never leaves in a `Referer` to another site.
        HeaderValue::from_static("same-origin"),
    ));
    r.headers.push((
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    ));
    r.body = body.into_bytes();
    r
}

/// `302` to `uri` with `query` appended.
fn found(uri: &str, query: &str) -> Response {
    let sep = if uri.contains('?') { '&' } else { '?' };
    let location = format!("{uri}{sep}{query}");
    let mut r = Response::empty(StatusCode::FOUND);
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers.push((LOCATION, v));
    }
    r.headers.push((
        HeaderName::from_static("referrer-policy"),
        HeaderValue::from_static("no-referrer"),
    ));
    r
}

fn content_type(req: &Request<'_>) -> Option<String> {
    let v = req.single_header("content-type").ok()??;
    let v = std::str::from_utf8(v).ok()?;
    Some(v.split(';').next()?.trim().to_ascii_lowercase())
}

fn is_form(req: &Request<'_>) -> bool {
    content_type(req).as_deref() == Some("application/x-www-form-urlencoded")
}

fn is_json(req: &Request<'_>) -> bool {
    content_type(req).as_deref() == Some("application/json")
}

/// The value of cookie `name`.
fn cookie(req: &Request<'_>, name: &str) -> Option<String> {
    req.header_values("cookie")
        .filter_map(|v| std::str::from_utf8(v).ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}
