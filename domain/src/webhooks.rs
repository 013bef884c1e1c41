//! Webhooks (domain.md §1 webhook and webhook_delivery, tools #58–#67) and the event
//! fan-out every change goes through.
//!
//! ## Fan-out
//! [`fan_out`] runs inside [`Op::event`], in the transaction of the change: for every
//! active webhook whose `events` filter matches the event code (`*`, a group such as
//! `charge.*`, or an exact code) it writes one `pending` [`WebhookDelivery`] carrying
//! the exact body that will be POSTed. Only the published event catalogue
//! ([`crate::mcp::event_catalog`]) is delivered; internal audit codes
//! (`debtor.created`, `webhook.updated`, ...) stay in the audit trail, and
//! `webhook.ping` goes only to the webhook being tested.
//!
//! ## Delivery (the worker)
//! [`tick`] runs for every organization: **claim** due `pending` deliveries (each takes
//! one unit of the organization's outbound budget, spec §12, and is leased for
//! [`CLAIM_MS`] so a crashed worker's work is picked up again), **post** them through the
//! [`WebhookDriver`] outside any transaction, **finish** them: a 2xx answer is
//! `delivered`; anything else is retried after 1 min, 5 min, 30 min, 2 h, 6 h, 12 h and
//! 24 h ([`RETRY_SCHEDULE_SECS`]) and then `failed`. A failed delivery goes back to
//! `pending` with `dunning_webhook_deliveries_resend` (a fresh schedule).
//! [`deliver`] does the same three phases on one [`Op`] (tests, tools).
//!
//! ## Signature
//! Every request carries
//! `X-Kobana-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>[,v1=<hex>]`: the HMAC is
//! computed with the webhook's secret (the whole `whsec_…` string as key) over
//! `"<t>." + raw body`, Stripe-style. During a rotation's grace period the header has
//! two `v1` values, the new secret's first; a receiver accepts the request when any
//! `v1` matches ([`verify`]) and should refuse a `t` too far from its clock.
//! Other headers: `X-Kobana-Event` (code), `X-Kobana-Event-Id`, `X-Kobana-Delivery-Id`
//! (the same on every retry: receivers deduplicate on it; delivery is at least once).
//!
//! The secret must sign, so it is stored (not hashed); it is returned only by
//! `dunning_webhooks_create` and `dunning_webhooks_rotate_secret`, never by a read, and
//! never written to the audit trail.
//!
//! ## Drivers
//! [`RecordingDriver`] (the default) records requests and answers 200: nothing leaves
//! the machine. [`HttpDriver`] posts for real with a small blocking HTTP/1.1 client on
//! [`TcpStream`] (timeouts, `Connection: close`, ≤ 4 KB of the answer kept, names
//! resolved within the connect timeout by [`crate::resolve`], every non-global address
//! refused by [`crate::global_ip::is_global`] unless private addresses are allowed);
//! `https` needs a [`TlsConnector`] supplied by the
//! binary. The binary picks one with [`install_driver`] (used by
//! `dunning_webhooks_test`) and passes it to [`tick`].

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use dunning_core::{Audience, Output, Principal, Scope, ToolCall, UnixTime};
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::Domain;
use crate::error::DomainError;
use crate::op::{Op, created, list, ok};
use crate::org::Organization;
use crate::outbound::Budget;
use crate::rules::calendar;
use crate::schema as s;
use crate::spec::{ToolSpec, tool};
use crate::store::{self, Cond, Kind, Order, Query, find, load, must, save};

/// Retry delays after the 1st, 2nd, ... failed attempt; after the last, `failed`.
pub const RETRY_SCHEDULE_SECS: [u64; 7] = [60, 300, 1800, 7200, 21_600, 43_200, 86_400];
/// How long a claimed delivery belongs to the worker that claimed it.
pub const CLAIM_MS: u64 = 2 * 60 * 1000;
/// Most deliveries attempted per organization and tick.
pub const BATCH: u32 = 100;
/// Most bytes of a receiver's answer kept on the delivery.
pub const RESPONSE_BODY_MAX: usize = 4096;
/// Most webhooks per organization.
pub const MAX_WEBHOOKS: u64 = 20;
/// Longest rotation grace period.
pub const MAX_GRACE_SECONDS: i64 = 86_400;
/// The signature header.
pub const SIGNATURE_HEADER: &str = "X-Kobana-Signature";

// ---------------------------------------------------------------------------
// Model
// ---------------------------------------------------------------------------

/// A webhook subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Webhook {
    /// UUID.
    pub id: String,
    /// Where deliveries are POSTed (`https`, or `http` to localhost for development).
    pub url: String,
    /// What it is for.
    pub description: Option<String>,
    /// Event filters: `*`, `group.*` or exact codes.
    pub events: Vec<String>,
    /// Inactive webhooks get no deliveries.
    pub active: bool,
    /// Whether the TLS certificate is verified.
    pub ssl_verification: bool,
    /// The signing secret (never returned after create/rotate).
    pub secret: String,
    /// Last four characters of the secret.
    pub secret_last4: String,
    /// Last rotation.
    pub secret_rotated_at: Option<String>,
    /// The secret before the last rotation, still signing during the grace period.
    pub previous_secret: Option<String>,
    /// End of the grace period.
    pub previous_secret_expires_at: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl Webhook {
    /// What the API shows: everything but the secrets.
    pub fn public(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("secret");
            m.remove("previous_secret");
        }
        v
    }

    /// The secrets that sign at `now`: the current one, then the previous one while its
    /// grace period lasts.
    pub fn signing_secrets(&self, now: UnixTime) -> Vec<&str> {
        let mut out = vec![self.secret.as_str()];
        if let (Some(old), Some(until)) = (&self.previous_secret, &self.previous_secret_expires_at)
        {
            if millis(until).is_some_and(|u| u > now.as_millis()) {
                out.push(old);
            }
        }
        out
    }
}

/// One event to one webhook, with its attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WebhookDelivery {
    /// UUID (`delivery_id`), sent as `X-Kobana-Delivery-Id`.
    pub id: String,
    /// The webhook.
    pub webhook_id: String,
    /// The event delivered.
    pub event_id: String,
    /// Its code.
    pub event_code: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    /// Attempts made, in total.
    pub attempts: u32,
    /// Attempts made since the delivery was created or last resent.
    pub round_attempts: u32,
    /// HTTP status of the last attempt.
    pub response_code: Option<u16>,
    /// Start of the last answer (≤ 4 KB).
    pub response_body: Option<String>,
    /// Duration of the last attempt.
    pub duration_ms: Option<u64>,
    /// Why the last attempt failed (network error, non-2xx).
    pub error: Option<String>,
    /// First attempt.
    pub first_try_at: Option<String>,
    /// Last attempt.
    pub last_attempt_at: Option<String>,
    /// When the next attempt is due (pending only).
    pub next_retry_at: Option<String>,
    /// When a 2xx answer came.
    pub delivered_at: Option<String>,
    /// When the retry schedule was exhausted.
    pub failed_at: Option<String>,
    /// When last resent.
    pub resent_at: Option<String>,
    /// The exact body POSTed (what the signature covers).
    pub payload: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl WebhookDelivery {
    /// The list view: without the payload.
    fn summary(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("payload");
        }
        v
    }
}

fn millis(ts: &str) -> Option<u64> {
    calendar::parse_timestamp(ts).and_then(|t| u64::try_from(t.timestamp_millis()).ok())
}

fn stamp(now: UnixTime) -> String {
    calendar::timestamp(now)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------
// Event filters
// ---------------------------------------------------------------------------

fn catalog_codes() -> &'static HashSet<String> {
    static CODES: OnceLock<HashSet<String>> = OnceLock::new();
    CODES.get_or_init(|| {
        crate::mcp::event_catalog()
            .get("events")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.get("code").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    })
}

fn groups() -> HashSet<&'static str> {
    catalog_codes()
        .iter()
        .filter_map(|c| c.split_once('.').map(|(g, _)| g))
        .collect()
}

/// Whether an event code is in the published catalogue.
pub fn is_catalog_code(code: &str) -> bool {
    catalog_codes().contains(code)
}

/// Whether `filters` (`*`, `group.*`, exact codes) select `code`.
pub fn filter_matches(filters: &[String], code: &str) -> bool {
    filters.iter().any(|f| {
        f == "*"
            || f == code
            || f.strip_suffix(".*").is_some_and(|group| {
                code.strip_prefix(group)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
    })
}

/// Validates an `events` argument against the catalogue; errors name `events[i]`.
fn parse_events(v: &Value) -> Result<Vec<String>, DomainError> {
    let items = v
        .as_array()
        .ok_or_else(|| DomainError::field("events", "must be an array of event codes"))?;
    if items.is_empty() {
        return Err(DomainError::field(
            "events",
            "must list at least one event code, `*` or a group such as charge.*",
        ));
    }
    let groups = groups();
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("events[{i}]");
        let code = item
            .as_str()
            .ok_or_else(|| DomainError::field(&field, "must be a string"))?;
        let valid = code == "*"
            || is_catalog_code(code)
            || code.strip_suffix(".*").is_some_and(|g| groups.contains(g));
        if !valid {
            return Err(DomainError::field(
                &field,
                format!(
                    "{code} is not an event code; see kobana://dunning/events/catalog (wildcards: *, charge.*, ...)"
                ),
            ));
        }
        if !out.iter().any(|c| c == code) {
            out.push(code.to_owned());
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// URLs
// ---------------------------------------------------------------------------

/// A parsed webhook URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `https`.
    pub tls: bool,
    /// Host name or IP (IPv6 without brackets), lower case.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    /// The `Host` header value.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Whether the host is the local machine (`http` allowed for development).
    pub fn is_local(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }
}

/// Parses an absolute `http`/`https` URL (no credentials, no fragment).
pub fn parse_url(raw: &str) -> Result<Target, String> {
    if raw.len() > 2048 {
        return Err("must be at most 2048 characters".into());
    }
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("must not contain spaces or control characters".into());
    }
    let lower = raw.to_ascii_lowercase();
    let (tls, rest) = if lower.starts_with("https://") {
        (true, &raw[8..])
    } else if lower.starts_with("http://") {
        (false, &raw[7..])
    } else {
        return Err("must be an absolute https:// URL".into());
    };
    if rest.contains('#') {
        return Err("must not have a fragment (#...)".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err("must not carry credentials (user:password@)".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let close = v6.find(']').ok_or("has an unterminated IPv6 address")?;
        let host = &v6[..close];
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("has an invalid IPv6 address".into());
        }
        let after = &v6[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err("has an invalid host".into()),
        };
        (host.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("must put an IPv6 address in brackets".into());
            }
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    let mut host = host.to_ascii_lowercase();
    // `example.com.` is `example.com`: one spelling, one lookup, one filter, one `Host`.
    if !host.contains(':') && host.ends_with('.') {
        host.pop();
    }
    if host.is_empty() {
        return Err("must name a host".into());
    }
    if !host.contains(':') && host.split('.').any(str::is_empty) {
        return Err("has an empty label in its host".into());
    }
    if !host.contains(':')
        && !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
    {
        return Err("has an invalid host".into());
    }
    let port = match port {
        None => {
            if tls {
                443
            } else {
                80
            }
        }
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("has an invalid port")?,
    };
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    Ok(Target {
        tls,
        host,
        port,
        path,
    })
}

fn check_url(raw: &str) -> Result<String, DomainError> {
    let t = parse_url(raw).map_err(|why| DomainError::field("url", why))?;
    if !t.tls && !t.is_local() {
        return Err(DomainError::field(
            "url",
            "must use https (http is accepted only for localhost or 127.0.0.1, for development)",
        ));
    }
    Ok(raw.to_owned())
}

// ---------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, t: u64, body: &str) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body.as_bytes());
    m
}

/// Hex HMAC-SHA256 of `"<t>." + body` under `secret`.
pub fn sign(secret: &str, t: u64, body: &str) -> String {
    hex(&mac(secret, t, body).finalize().into_bytes())
}

/// The `X-Kobana-Signature` value: `t=<t>,v1=<hex>` with one `v1` per secret.
pub fn signature_header(secrets: &[&str], t: u64, body: &str) -> String {
    let mut h = format!("t={t}");
    for s in secrets {
        h.push_str(",v1=");
        h.push_str(&sign(s, t, body));
    }
    h
}

/// What a receiver does: whether some `v1` of `header` is the HMAC of `body` under
/// `secret` (constant-time comparison). Returns the signed `t` when it is.
pub fn verify(header: &str, secret: &str, body: &str) -> Option<u64> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<u64>().ok(),
            Some(("v1", v)) => sigs.push(v),
            _ => {}
        }
    }
    let t = t?;
    sigs.iter()
        .any(|sig| {
            let Some(bytes) = unhex(sig) else {
                return false;
            };
            mac(secret, t, body).verify_slice(&bytes).is_ok()
        })
        .then_some(t)
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn new_secret(op: &mut Op<'_>) -> String {
    let mut os = [0u8; 32];
    // The OS generator is the source; the operation's entropy is mixed in so a failing
    // generator never yields a fixed secret.
    let _ = getrandom::fill(&mut os);
    let mut h = Sha256::new();
    h.update(os);
    h.update(op.new_id().as_bytes());
    h.update(op.now.as_millis().to_be_bytes());
    format!("whsec_{}", hex(&h.finalize()))
}

fn last4(secret: &str) -> String {
    secret
        .get(secret.len().saturating_sub(4)..)
        .unwrap_or_default()
        .to_owned()
}

// ---------------------------------------------------------------------------
// Drivers
// ---------------------------------------------------------------------------

/// One POST to a receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRequest {
    /// Delivery id.
    pub delivery_id: String,
    /// Webhook id.
    pub webhook_id: String,
    /// Event code.
    pub event_code: String,
    /// Target URL.
    pub url: String,
    /// Verify the TLS certificate.
    pub ssl_verification: bool,
    /// Headers besides `Host`, `Content-Length` and `Connection`.
    pub headers: Vec<(String, String)>,
    /// The raw JSON body (what the signature covers).
    pub body: String,
}

impl WebhookRequest {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What came back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookResponse {
    /// HTTP status, when an answer was read.
    pub status: Option<u16>,
    /// Start of the answer's body (≤ 4 KB).
    pub body: String,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// A network or protocol failure.
    pub error: Option<String>,
}

impl WebhookResponse {
    /// Whether the receiver took it (2xx).
    pub fn is_success(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Posts webhook deliveries. Called outside any store transaction by [`tick`].
pub trait WebhookDriver: Send + Sync {
    /// Performs one attempt.
    fn post(&self, request: &WebhookRequest) -> WebhookResponse;
}

/// The default driver: keeps every request in memory and answers with a fixed status
/// (200 unless told otherwise); nothing leaves the machine.
#[derive(Debug)]
pub struct RecordingDriver {
    requests: Mutex<Vec<WebhookRequest>>,
    answer: Mutex<(u16, String)>,
}

impl Default for RecordingDriver {
    fn default() -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            answer: Mutex::new((200, "recorded".into())),
        }
    }
}

impl RecordingDriver {
    /// A recorder answering 200.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<WebhookRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Answers the following requests with `status` and `body`.
    pub fn respond_with(&self, status: u16, body: &str) {
        *self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (status, body.to_owned());
    }
}

impl WebhookDriver for RecordingDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let (status, body) = self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        WebhookResponse {
            status: Some(status),
            body,
            duration_ms: 0,
            error: None,
        }
    }
}

static DRIVER: RwLock<Option<Arc<dyn WebhookDriver>>> = RwLock::new(None);

/// The process-wide recorder used while no driver is installed.
pub fn default_recorder() -> Arc<RecordingDriver> {
    static REC: OnceLock<Arc<RecordingDriver>> = OnceLock::new();
    REC.get_or_init(|| Arc::new(RecordingDriver::new())).clone()
}

/// Chooses the driver `dunning_webhooks_test` attempts through (the binary installs
/// [`HttpDriver`] when configured; the default is [`default_recorder`]).
pub fn install_driver(driver: Arc<dyn WebhookDriver>) {
    *DRIVER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(driver);
}

/// The installed driver.
pub fn installed_driver() -> Arc<dyn WebhookDriver> {
    DRIVER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| default_recorder() as Arc<dyn WebhookDriver>)
}

/// A byte stream (plain TCP or TLS).
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// Wraps a connected socket in TLS (supplied by the binary, e.g. with rustls).
pub trait TlsConnector: Send + Sync {
    /// Runs the handshake for `host`; `verify` is the webhook's `ssl_verification`.
    fn connect(&self, host: &str, tcp: TcpStream, verify: bool)
    -> std::io::Result<Box<dyn Stream>>;
}

/// Posts for real: a small blocking HTTP/1.1 client (one request per connection).
#[derive(Clone)]
pub struct HttpDriver {
    connect_timeout: Duration,
    timeout: Duration,
    allow_private: bool,
    tls: Option<Arc<dyn TlsConnector>>,
}

impl std::fmt::Debug for HttpDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDriver")
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("allow_private", &self.allow_private)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Default for HttpDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpDriver {
    /// 3 s to connect, 10 s for the whole exchange, public addresses only, no TLS.
    pub fn new() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            allow_private: false,
            tls: None,
        }
    }

    /// Sets the timeouts.
    pub fn timeouts(mut self, connect: Duration, total: Duration) -> Self {
        self.connect_timeout = connect;
        self.timeout = total;
        self
    }

    /// Allows loopback and private addresses (development, tests). Off by default: a
    /// webhook URL must not reach the server's own network.
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Enables `https` through `tls`.
    pub fn with_tls(mut self, tls: Arc<dyn TlsConnector>) -> Self {
        self.tls = Some(tls);
        self
    }

    fn exchange(&self, req: &WebhookRequest, started: Instant) -> Result<(u16, String), String> {
        let target = parse_url(&req.url)?;
        if target.tls && self.tls.is_none() {
            return Err("tls_unavailable: this server has no TLS connector for https".into());
        }
        // Within the connect timeout; then only the addresses that passed the filter
        // are connected to (no second lookup a rebinding DNS could answer otherwise).
        let addrs = crate::resolve::resolve(&target.host, target.port, self.connect_timeout)?;
        let allowed: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| self.allow_private || crate::global_ip::is_global(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err("address_not_allowed: the host resolves to no public address".into());
        }
        let mut tcp = None;
        let mut last = String::new();
        for a in &allowed {
            match TcpStream::connect_timeout(a, self.connect_timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = format!("connect: {e}"),
            }
        }
        let tcp = tcp.ok_or(last)?;
        let left = |started: Instant| {
            self.timeout
                .checked_sub(started.elapsed())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| "timeout".to_owned())
        };
        tcp.set_write_timeout(Some(left(started)?))
            .map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(left(started)?))
            .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let mut stream: Box<dyn Stream> = match (&self.tls, target.tls) {
            (Some(tls), true) => tls
                .connect(&target.host, tcp, req.ssl_verification)
                .map_err(|e| format!("tls: {e}"))?,
            _ => Box::new(tcp),
        };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            target.path,
            target.host_header(),
            req.body.len()
        );
        for (k, v) in &req.headers {
            if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
                return Err(format!("invalid header {k}"));
            }
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(req.body.as_bytes()))
            .and_then(|()| stream.flush())
            .map_err(|e| format!("write: {e}"))?;
        read_response(&mut *stream, started, self.timeout)
    }
}

/// Reads a status line, headers (≤ 16 KB) and at most [`RESPONSE_BODY_MAX`] bytes of
/// body, then stops.
fn read_response(
    stream: &mut dyn Stream,
    started: Instant,
    timeout: Duration,
) -> Result<(u16, String), String> {
    const HEAD_MAX: usize = 16 * 1024;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut head_end = None;
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    loop {
        if started.elapsed() >= timeout {
            if head_end.is_some() {
                break;
            }
            return Err("timeout".into());
        }
        if let Some(end) = head_end {
            let body_len = buf.len() - end;
            if body_len >= RESPONSE_BODY_MAX || content_length.is_some_and(|n| body_len >= n) {
                break;
            }
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A timeout or reset after the status line: keep what came.
            Err(_) if head_end.is_some() => break,
            Err(e) => return Err(format!("read: {e}")),
        };
        buf.extend_from_slice(&chunk[..n]);
        if head_end.is_none() {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                head_end = Some(p + 4);
                let head = String::from_utf8_lossy(&buf[..p]).to_ascii_lowercase();
                for line in head.split("\r\n").skip(1) {
                    if let Some((k, v)) = line.split_once(':') {
                        match k.trim() {
                            "content-length" => content_length = v.trim().parse().ok(),
                            "transfer-encoding" => chunked = v.contains("chunked"),
                            _ => {}
                        }
                    }
                }
            } else if buf.len() > HEAD_MAX {
                return Err("response headers too large".into());
            }
        }
    }
    let end = head_end.ok_or("no HTTP response")?;
    let status_line = String::from_utf8_lossy(&buf[..end]);
    let status_line = status_line.lines().next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x response: {status_line}"));
    }
    let status = parts
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| format!("bad status line: {status_line}"))?;
    let mut body = buf[end..].to_vec();
    if chunked {
        body = dechunk(&body);
    }
    if let Some(n) = content_length {
        body.truncate(n);
    }
    Ok((status, truncate_body(&body)))
}

/// Best-effort decoding of the chunks read so far.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(p) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_line = String::from_utf8_lossy(&raw[..p]);
        let Ok(size) = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
        else {
            break;
        };
        if size == 0 {
            break;
        }
        raw = &raw[p + 2..];
        let take = size.min(raw.len());
        out.extend_from_slice(&raw[..take]);
        if take < size || raw.len() < size + 2 {
            break;
        }
        raw = &raw[size + 2..];
    }
    out
}

/// At most [`RESPONSE_BODY_MAX`] bytes, cut on a character boundary, as text.
fn truncate_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(RESPONSE_BODY_MAX)]).into_owned();
    if text.len() <= RESPONSE_BODY_MAX {
        return text;
    }
    let mut cut = RESPONSE_BODY_MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_owned()
}

impl WebhookDriver for HttpDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        let started = Instant::now();
        let result = self.exchange(request, started);
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok((status, body)) => WebhookResponse {
                status: Some(status),
                body,
                duration_ms,
                error: None,
            },
            Err(e) => WebhookResponse {
                status: None,
                body: String::new(),
                duration_ms,
                error: Some(e),
            },
        }
    }
}

// ---------------------------------------------------------------------------
// Fan-out and the delivery worker
// ---------------------------------------------------------------------------

/// Queues a `pending` delivery for every active webhook whose filter matches the event
/// (published catalogue codes only; `webhook.ping` goes only through the test tool).
pub fn fan_out(op: &mut Op<'_>, event: &Value) -> Result<(), DomainError> {
    let Some(code) = event.get("code").and_then(Value::as_str) else {
        return Ok(());
    };
    if !is_catalog_code(code) || code.starts_with("webhook.") {
        return Ok(());
    }
    let q = Query::all().with(Cond::Eq("active", json!(true)));
    let hooks: Vec<Webhook> = find(op.tx, Kind::Webhook, op.org, &q)?;
    let hooks: Vec<Webhook> = hooks
        .into_iter()
        .filter(|h| filter_matches(&h.events, code))
        .collect();
    if hooks.is_empty() {
        return Ok(());
    }
    let body = payload(event);
    for h in hooks {
        enqueue(op, &h.id, event, &body)?;
    }
    Ok(())
}

/// The body POSTed for an event (the audit fields stay home).
fn payload(event: &Value) -> String {
    let pick = |k: &str| event.get(k).cloned().unwrap_or(Value::Null);
    let v = json!({
        "id": pick("id"),
        "code": pick("code"),
        "resource_type": pick("resource_type"),
        "resource_id": pick("resource_id"),
        "occurred_at": pick("occurred_at"),
        "data": pick("data"),
        "changes": pick("changes"),
    });
    serde_json::to_string(&v).unwrap_or_default()
}

fn enqueue(
    op: &mut Op<'_>,
    webhook_id: &str,
    event: &Value,
    body: &str,
) -> Result<WebhookDelivery, DomainError> {
    let at = op.timestamp();
    let d = WebhookDelivery {
        id: op.new_id(),
        webhook_id: webhook_id.to_owned(),
        event_id: event
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        event_code: event
            .get("code")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        status: "pending".into(),
        attempts: 0,
        round_attempts: 0,
        response_code: None,
        response_body: None,
        duration_ms: None,
        error: None,
        first_try_at: None,
        last_attempt_at: None,
        next_retry_at: Some(at.clone()),
        delivered_at: None,
        failed_at: None,
        resent_at: None,
        payload: body.to_owned(),
        created_at: at.clone(),
        updated_at: at,
    };
    save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
    Ok(d)
}

/// A delivery claimed for one attempt.
#[derive(Clone, Debug)]
pub struct Claimed {
    /// Delivery id.
    pub delivery_id: String,
    /// Its attempt count when claimed (a stale finish is ignored).
    pub attempts: u32,
    /// What to post.
    pub request: WebhookRequest,
}

/// Leases a pending delivery and builds its signed request.
fn claim_one(
    op: &mut Op<'_>,
    d: &mut WebhookDelivery,
    hook: &Webhook,
) -> Result<Claimed, DomainError> {
    d.next_retry_at = Some(stamp(op.now.plus_millis(CLAIM_MS)));
    d.updated_at = op.timestamp();
    save(op.tx, Kind::WebhookDelivery, op.org, d)?;
    Ok(Claimed {
        delivery_id: d.id.clone(),
        attempts: d.attempts,
        request: request_for(d, hook, op.now),
    })
}

/// The signed request of a delivery attempt at `now`.
fn request_for(d: &WebhookDelivery, hook: &Webhook, now: UnixTime) -> WebhookRequest {
    let t = now.as_millis() / 1000;
    let headers = vec![
        ("Content-Type".into(), "application/json".into()),
        ("User-Agent".into(), "kobana-dunning-webhooks/1".into()),
        ("X-Kobana-Event".into(), d.event_code.clone()),
        ("X-Kobana-Event-Id".into(), d.event_id.clone()),
        ("X-Kobana-Delivery-Id".into(), d.id.clone()),
        (
            SIGNATURE_HEADER.into(),
            signature_header(&hook.signing_secrets(now), t, &d.payload),
        ),
    ];
    WebhookRequest {
        delivery_id: d.id.clone(),
        webhook_id: hook.id.clone(),
        event_code: d.event_code.clone(),
        url: hook.url.clone(),
        ssl_verification: hook.ssl_verification,
        headers,
        body: d.payload.clone(),
    }
}

/// Claims the due `pending` deliveries of the organization (at most `limit`), taking one
/// unit of outbound budget each; stops at the limit. Deliveries of inactive or deleted
/// webhooks are failed without an attempt.
pub fn claim(op: &mut Op<'_>, limit: u32) -> Result<Vec<Claimed>, DomainError> {
    let now = op.timestamp();
    let q = Query {
        conds: vec![
            Cond::Eq("status", json!("pending")),
            Cond::Le("next_retry_at", json!(now)),
        ],
        sort: ("next_retry_at", Order::Asc),
        limit: Some(limit),
        offset: 0,
    };
    let due: Vec<WebhookDelivery> = find(op.tx, Kind::WebhookDelivery, op.org, &q)?;
    let mut hooks: HashMap<String, Option<Webhook>> = HashMap::new();
    let mut out = Vec::new();
    for mut d in due {
        if !hooks.contains_key(&d.webhook_id) {
            let h = load::<Webhook>(op.tx, Kind::Webhook, op.org, &d.webhook_id)?;
            hooks.insert(d.webhook_id.clone(), h);
        }
        let hook = match hooks.get(&d.webhook_id).cloned().flatten() {
            Some(h) if h.active => h,
            _ => {
                let before = d.clone();
                d.status = "failed".into();
                d.error = Some("webhook_inactive: the webhook is inactive or deleted".into());
                d.failed_at = Some(now.clone());
                d.next_retry_at = None;
                d.updated_at = now.clone();
                save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
                let changes = crate::ops::debtors::diff(&before.summary(), &d.summary());
                op.event(
                    "webhook_delivery.failed",
                    "webhook_delivery",
                    &d.id,
                    &d.summary(),
                    changes,
                )?;
                continue;
            }
        };
        // Background work: leaves one unit for a person (an honest retry_after_ms).
        if (op.outbound)
            .take_leaving(op.org, Budget::Webhooks, 1, 1, op.now, op.dry_run)
            .is_err()
        {
            break;
        }
        out.push(claim_one(op, &mut d, &hook)?);
    }
    Ok(out)
}

/// Records the outcome of attempts; returns how many were recorded.
pub fn finish(
    op: &mut Op<'_>,
    results: Vec<(Claimed, WebhookResponse)>,
) -> Result<u32, DomainError> {
    let mut n = 0;
    for (c, r) in results {
        let Some(mut d) =
            load::<WebhookDelivery>(op.tx, Kind::WebhookDelivery, op.org, &c.delivery_id)?
        else {
            continue;
        };
        if d.status != "pending" || d.attempts != c.attempts {
            continue;
        }
        record(op, &mut d, &r)?;
        n += 1;
    }
    Ok(n)
}

fn record(
    op: &mut Op<'_>,
    d: &mut WebhookDelivery,
    r: &WebhookResponse,
) -> Result<(), DomainError> {
    let now = op.timestamp();
    let before = d.summary();
    d.attempts += 1;
    d.round_attempts += 1;
    d.first_try_at.get_or_insert_with(|| now.clone());
    d.last_attempt_at = Some(now.clone());
    d.response_code = r.status;
    d.response_body = Some(truncate_body(r.body.as_bytes()));
    d.duration_ms = Some(r.duration_ms);
    d.updated_at = now.clone();
    let mut final_code = None;
    if r.is_success() {
        d.status = "delivered".into();
        d.delivered_at = Some(now.clone());
        d.next_retry_at = None;
        d.error = None;
        final_code = Some("webhook_delivery.delivered");
    } else {
        d.error = Some(match (&r.error, r.status) {
            (Some(e), _) => e.clone(),
            (None, Some(s)) => format!("http_{s}: the receiver did not answer 2xx"),
            (None, None) => "no answer".into(),
        });
        let round = usize::try_from(d.round_attempts).unwrap_or(usize::MAX);
        match RETRY_SCHEDULE_SECS.get(round - 1) {
            Some(delay) => d.next_retry_at = Some(stamp(op.now.plus_millis(delay * 1000))),
            None => {
                d.status = "failed".into();
                d.failed_at = Some(now);
                d.next_retry_at = None;
                final_code = Some("webhook_delivery.failed");
            }
        }
    }
    save(op.tx, Kind::WebhookDelivery, op.org, &*d)?;
    if let Some(code) = final_code {
        let after = d.summary();
        let changes = crate::ops::debtors::diff(&before, &after);
        op.event(code, "webhook_delivery", &d.id, &after, changes)?;
    }
    Ok(())
}

/// The worker tick on one [`Op`]: claims due deliveries, posts them through `driver`
/// and records the outcomes in the same transaction. Returns the attempts made.
/// (The binary's loop uses [`tick`], which posts outside any transaction.)
pub fn deliver(op: &mut Op<'_>, driver: &dyn WebhookDriver) -> Result<u32, DomainError> {
    let claimed = claim(op, BATCH)?;
    if op.dry_run {
        return Ok(0);
    }
    let results: Vec<(Claimed, WebhookResponse)> = claimed
        .into_iter()
        .map(|c| {
            let r = driver.post(&c.request);
            (c, r)
        })
        .collect();
    finish(op, results)
}

/// What one [`tick`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TickReport {
    /// Organizations visited.
    pub organizations: u32,
    /// Attempts made.
    pub attempts: u32,
}

/// The worker tick for every organization: claim (one transaction), post through
/// `driver` (no transaction held), record (another transaction).
pub fn tick(
    domain: &Domain,
    now: UnixTime,
    driver: &dyn WebhookDriver,
) -> Result<TickReport, DomainError> {
    let orgs = store::read(domain.store(), |tx| Ok(tx.organizations()?))?;
    let mut report = TickReport::default();
    for org in orgs {
        report.organizations += 1;
        let claimed = with_system_op(domain, &org, now, None, |op| claim(op, BATCH))?;
        if claimed.is_empty() {
            continue;
        }
        let results: Vec<(Claimed, WebhookResponse)> = claimed
            .into_iter()
            .map(|c| {
                let r = driver.post(&c.request);
                (c, r)
            })
            .collect();
        report.attempts += with_system_op(domain, &org, now, None, |op| finish(op, results))?;
    }
    Ok(report)
}

/// The actor of the workers' events.
pub const ACTOR: &str = "system:webhooks";

static CALLS: AtomicU64 = AtomicU64::new(0);

/// Runs `f` on an [`Op`] of the workers in a write transaction of `org`; `entropy`
/// fixes the ids (demo seeding), else they are random.
pub fn with_system_op<R>(
    domain: &Domain,
    org: &str,
    now: UnixTime,
    entropy: Option<[u8; 32]>,
    f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    let principal = Principal {
        subject: ACTOR.into(),
        organization: org.to_owned(),
        scope: Some(Scope::Admin),
        scopes: Vec::new(),
        permissions: Default::default(),
        expires_at: now.plus_millis(3_600_000),
        audience: Audience::Api,
    };
    let seed = entropy.unwrap_or_else(|| {
        let random = std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish();
        let mut h = Sha256::new();
        h.update(org.as_bytes());
        h.update(now.as_millis().to_be_bytes());
        h.update(CALLS.fetch_add(1, Ordering::Relaxed).to_be_bytes());
        h.update(random.to_be_bytes());
        h.finalize().into()
    });
    let args = Map::new();
    store::write(domain.store(), |tx| {
        let settings = load::<Organization>(tx, Kind::Organization, org, org)?
            .map(|o| o.settings)
            .unwrap_or_default();
        let mut op = Op::new(
            tx,
            org,
            &principal,
            now,
            &args,
            "worker",
            seed,
            settings,
            domain.outbound(),
        );
        f(&mut op)
    })
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

const SIGNATURE_DOC: &str = "Every delivery is a POST of the event as JSON ({id, code, resource_type, resource_id, occurred_at, data, changes}) with headers X-Kobana-Event, X-Kobana-Event-Id, X-Kobana-Delivery-Id (the same on retries: deduplicate on it) and X-Kobana-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>], where each v1 is HMAC-SHA256 keyed with the webhook secret (the whole whsec_... string) over \"<t>.\" followed by the raw body; accept the request when any v1 matches and t is recent.";

fn webhook_output() -> Value {
    s::entity_output(&["id", "url", "events", "active", "secret_last4"])
}

fn delivery_output() -> Value {
    s::entity_output(&["id", "webhook_id", "event_code", "status", "attempts"])
}

fn events_schema() -> Value {
    json!({
        "type": "array",
        "minItems": 1,
        "maxItems": 50,
        "items": { "type": "string", "minLength": 1, "maxLength": 100 },
        "description": "Event codes to receive: `*` (everything), a group such as `charge.*`, or exact codes from kobana://dunning/events/catalog",
    })
}

/// The tools of the webhooks group (#58–#67), in catalogue order.
pub fn tools() -> Vec<ToolSpec> {
    let create_desc = format!(
        "Subscribes a URL (https; http only for localhost/127.0.0.1 during development) to events. The reply carries the full signing `secret`, shown only this once (later reads show `secret_last4`). {SIGNATURE_DOC}"
    );
    let rotate_desc = format!(
        "Replaces the signing secret and returns the new `secret` (shown only in this reply). With `grace_period_seconds` (0–86400, default 0) the old secret keeps signing until the grace ends: during it X-Kobana-Signature carries two signatures, `t=<unix>,v1=<hex, new secret>,v1=<hex, old secret>`, so receivers can switch without losing deliveries. {SIGNATURE_DOC}"
    );
    vec![
        tool("dunning_webhooks_list", "List webhooks", "GET", "/v1/webhooks")
            .describe("Lists the organization's webhooks (never their secrets). Filter: `active`.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .arg("active", s::boolean("Only active (true) or inactive (false) webhooks"))
            .list(&["created_at"])
            .output(s::list_output(webhook_output()))
            .run(list_webhooks),
        tool("dunning_webhooks_get", "Get a webhook", "GET", "/v1/webhooks/{id}")
            .describe("One webhook: URL, event filters, active flag, `secret_last4` and rotation dates (never the secret).")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .output(webhook_output())
            .run(get_webhook),
        tool("dunning_webhooks_create", "Create a webhook", "POST", "/v1/webhooks")
            .describe(&create_desc)
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("url", s::text("Receiver URL: https://..., or http://localhost / http://127.0.0.1 for development", 8, 2048))
            .req("events", events_schema())
            .arg("description", s::text("What this webhook is for", 1, 500))
            .arg("active", s::boolean("Deliver events (default true)"))
            .arg("ssl_verification", s::boolean("Verify the receiver's TLS certificate (default true)"))
            .output(s::entity_output(&["id", "url", "events", "active", "secret", "secret_last4"]))
            .run(create_webhook),
        tool("dunning_webhooks_update", "Update a webhook", "PATCH", "/v1/webhooks/{id}")
            .describe("Changes the given fields of a webhook (URL, events, description, active, ssl_verification); fields not sent are kept. Deactivating stops new deliveries. The secret is changed only by dunning_webhooks_rotate_secret.")
            .idempotent()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("url", s::text("Receiver URL (https; http only for localhost)", 8, 2048))
            .arg("events", events_schema())
            .arg("description", s::text("What this webhook is for", 1, 500))
            .arg("active", s::boolean("Deliver events"))
            .arg("ssl_verification", s::boolean("Verify the receiver's TLS certificate"))
            .output(webhook_output())
            .run(update_webhook),
        tool("dunning_webhooks_delete", "Delete a webhook", "DELETE", "/v1/webhooks/{id}")
            .describe("Deletes a webhook and its delivery records; pending deliveries are dropped.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .confirm(describe_delete)
            .run(delete_webhook),
        tool("dunning_webhooks_test", "Test a webhook", "POST", "/v1/webhooks/{id}/test")
            .describe("Sends a test delivery now (default event webhook.ping; any catalogue code gives a sample event with data {\"test\": true}) and returns the delivery with the receiver's answer. A failed test is retried like any delivery. Uses the organization's outbound budget (RATE_LIMITED with retry_after_ms when exhausted). The webhook must be active.")
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("event_code", s::text("Event code of the test (default webhook.ping)", 1, 100))
            .output(delivery_output())
            .confirm(describe_test)
            .run(test_webhook)
            .then(post_test),
        tool("dunning_webhooks_rotate_secret", "Rotate a webhook secret", "POST", "/v1/webhooks/{id}/rotate-secret")
            .describe(&rotate_desc)
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("grace_period_seconds", s::integer("How long the old secret keeps signing, 0 to 86400 seconds (default 0: immediately replaced)", 0, MAX_GRACE_SECONDS))
            .output(s::entity_output(&["id", "secret", "secret_last4", "secret_rotated_at"]))
            .confirm(describe_rotate)
            .run(rotate_secret),
        tool("dunning_webhook_deliveries_list", "List webhook deliveries", "GET", "/v1/webhooks/{id}/deliveries")
            .describe("Deliveries of one webhook, newest first, with attempts, last response code and body, and the next retry. Filters: status (pending, delivered, failed; comma-separated), event_code (exact or group.*), from/to on creation time.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .arg("status", s::csv_of("Delivery status", &["pending", "delivered", "failed"]))
            .arg("event_code", s::text("Event code, exact or a group such as charge.*", 1, 100))
            .arg("from", s::string("Created at or after (date YYYY-MM-DD or RFC 3339)"))
            .arg("to", s::string("Created at or before (date YYYY-MM-DD, inclusive, or RFC 3339)"))
            .list(&["created_at"])
            .output(s::list_output(delivery_output()))
            .run(list_deliveries),
        tool("dunning_webhook_deliveries_get", "Get a webhook delivery", "GET", "/v1/webhooks/{id}/deliveries/{delivery_id}")
            .describe("One delivery of a webhook with the exact payload sent, attempts, last response (code, body ≤ 4 KB, duration) and retry dates.")
            .read()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .req("delivery_id", s::id("Delivery id"))
            .output(delivery_output())
            .run(get_delivery),
        tool("dunning_webhook_deliveries_resend", "Resend a webhook delivery", "POST", "/v1/webhooks/{id}/deliveries/{delivery_id}/resend")
            .describe("Puts a failed delivery back to pending with a fresh retry schedule; the worker attempts it within seconds with the same X-Kobana-Delivery-Id. Only failed deliveries can be resent.")
            .destructive()
            .access(Scope::Admin, Some("webhooks.manage"))
            .req("id", s::id("Webhook id"))
            .req("delivery_id", s::id("Delivery id"))
            .output(delivery_output())
            .confirm(describe_resend)
            .run(resend_delivery),
    ]
}

fn load_hook(op: &mut Op<'_>, id: &str) -> Result<Webhook, DomainError> {
    must(op.tx, Kind::Webhook, op.org, id)
}

fn load_delivery(op: &mut Op<'_>) -> Result<(Webhook, WebhookDelivery), DomainError> {
    let (hook_id, delivery_id) = (op.str("id")?, op.str("delivery_id")?);
    let hook = load_hook(op, hook_id)?;
    let d: WebhookDelivery = must(op.tx, Kind::WebhookDelivery, op.org, delivery_id)?;
    if d.webhook_id != hook.id {
        return Err(DomainError::not_found("webhook delivery", delivery_id));
    }
    Ok((hook, d))
}

const HOOK_SORTS: &[(&str, &str, Order)] = &[("created_at", "created_at", Order::Desc)];

fn list_webhooks(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    if let Some(a) = op.opt_bool("active") {
        conds.push(Cond::Eq("active", json!(a)));
    }
    let page = op.page();
    let total = op.tx.count(Kind::Webhook, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(HOOK_SORTS),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let items: Vec<Webhook> = find(op.tx, Kind::Webhook, op.org, &q)?;
    Ok(list(
        items.iter().map(Webhook::public).collect(),
        page,
        total,
    ))
}

fn get_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    Ok(ok(load_hook(op, id)?.public()))
}

fn text_arg(op: &Op<'_>, k: &str) -> Option<String> {
    op.opt_str(k).map(str::to_owned)
}

fn create_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["url", "events", "description", "active", "ssl_verification"])?;
    let url = check_url(op.str("url")?)?;
    let events = parse_events(op.args.get("events").unwrap_or(&Value::Null))?;
    if op.tx.count(Kind::Webhook, op.org, &[])? >= MAX_WEBHOOKS {
        return Err(DomainError::Conflict(format!(
            "the organization already has {MAX_WEBHOOKS} webhooks; delete one first"
        )));
    }
    let secret = new_secret(op);
    let now = op.timestamp();
    let w = Webhook {
        id: op.new_id(),
        url,
        description: text_arg(op, "description"),
        events,
        active: op.opt_bool("active").unwrap_or(true),
        ssl_verification: op.opt_bool("ssl_verification").unwrap_or(true),
        secret_last4: last4(&secret),
        secret,
        secret_rotated_at: None,
        previous_secret: None,
        previous_secret_expires_at: None,
        created_at: now.clone(),
        updated_at: now,
    };
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let public = w.public();
    op.event("webhook.created", "webhook", &w.id, &public, Value::Null)?;
    let mut reply = public;
    reply["secret"] = json!(w.secret);
    Ok(created(reply))
}

fn update_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&[
        "id",
        "url",
        "events",
        "description",
        "active",
        "ssl_verification",
    ])?;
    let id = op.str("id")?;
    let before = load_hook(op, id)?;
    let mut w = before.clone();
    if let Some(u) = op.opt_str("url") {
        w.url = check_url(u)?;
    }
    if let Some(e) = op.args.get("events") {
        w.events = parse_events(e)?;
    }
    if op.args.contains_key("description") {
        w.description = text_arg(op, "description");
    }
    if let Some(a) = op.opt_bool("active") {
        w.active = a;
    }
    if let Some(v) = op.opt_bool("ssl_verification") {
        w.ssl_verification = v;
    }
    if w == before {
        return Ok(ok(w.public()));
    }
    w.updated_at = op.timestamp();
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let changes = crate::ops::debtors::diff(&before.public(), &w.public());
    op.event("webhook.updated", "webhook", id, &w.public(), changes)?;
    Ok(ok(w.public()))
}

fn describe_delete(op: &mut Op<'_>) -> Result<String, DomainError> {
    let id = op.str("id")?;
    let w = load_hook(op, id)?;
    let n = op.tx.count(
        Kind::WebhookDelivery,
        op.org,
        &[Cond::Eq("webhook_id", json!(id))],
    )?;
    Ok(format!(
        "Delete the webhook to {} and its {n} delivery record(s)? Pending deliveries will not be sent.",
        w.url
    ))
}

fn delete_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id"])?;
    let id = op.str("id")?;
    let w = load_hook(op, id)?;
    let q = Query::all().with(Cond::Eq("webhook_id", json!(id)));
    for d in op.tx.find(Kind::WebhookDelivery, op.org, &q)? {
        if let Some(did) = d.get("id").and_then(Value::as_str) {
            op.tx.delete(Kind::WebhookDelivery, op.org, did)?;
        }
    }
    op.tx.delete(Kind::Webhook, op.org, id)?;
    op.event("webhook.deleted", "webhook", id, &w.public(), Value::Null)?;
    Ok(Output::NoContent)
}

fn test_code(op: &Op<'_>) -> Result<String, DomainError> {
    let code = op.opt_str("event_code").unwrap_or("webhook.ping");
    if !is_catalog_code(code) {
        return Err(DomainError::field(
            "event_code",
            format!("{code} is not an event code of kobana://dunning/events/catalog"),
        ));
    }
    Ok(code.to_owned())
}

fn describe_test(op: &mut Op<'_>) -> Result<String, DomainError> {
    let id = op.str("id")?;
    let w = load_hook(op, id)?;
    let code = test_code(op)?;
    Ok(format!("Send a test {code} delivery to {} now?", w.url))
}

fn test_webhook(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "event_code"])?;
    let id = op.str("id")?;
    let w = load_hook(op, id)?;
    let code = test_code(op)?;
    if !w.active {
        return Err(DomainError::Conflict(format!(
            "webhook {id} is inactive; activate it (dunning_webhooks_update active=true) before testing"
        )));
    }
    if let Err(retry_after_ms) = (op.outbound).take(op.org, Budget::Webhooks, 1, op.now, op.dry_run)
    {
        return Err(DomainError::RateLimited { retry_after_ms });
    }
    // The audit event is not fanned out (a test must not cause deliveries of its own);
    // the test payload is an event of the requested code with the same id.
    let tested = op.store_event(
        "webhook.tested",
        "webhook",
        id,
        &json!({ "event_code": code }),
        Value::Null,
    )?;
    let event = json!({
        "id": tested["id"],
        "code": code,
        "resource_type": "webhook",
        "resource_id": id,
        "occurred_at": tested["occurred_at"],
        "data": { "test": true, "webhook_id": id },
        "changes": Value::Null,
    });
    let mut d = enqueue(op, id, &event, &payload(&event))?;
    if !op.dry_run {
        // Claimed now, posted by [`post_test`] once this transaction has committed: the
        // store's writer is never held while a receiver takes its time.
        claim_one(op, &mut d, &w)?;
    }
    Ok(created(delivery_view(&d)))
}

/// A delivery as the test and resend tools answer it: with its payload.
fn delivery_view(d: &WebhookDelivery) -> Value {
    let mut out = serde_json::to_value(d).unwrap_or(Value::Null);
    out["payload"] = json!(d.payload);
    out
}

/// After `dunning_webhooks_test` committed: posts the claimed delivery (outside any
/// transaction), then records the answer and returns the delivery as it now stands.
fn post_test(domain: &Domain, call: &ToolCall<'_>, out: Output) -> Result<Output, DomainError> {
    let Output::Json { body, .. } = &out else {
        return Ok(out);
    };
    let (Some(did), Some(wid)) = (
        body.get("id").and_then(Value::as_str),
        body.get("webhook_id").and_then(Value::as_str),
    ) else {
        return Ok(out);
    };
    let claimed = body.get("attempts").and_then(Value::as_u64);
    let org = &call.ctx.principal.organization;
    let now = call.ctx.now;
    let request = store::read(domain.store(), |tx| {
        let d: WebhookDelivery = must(tx, Kind::WebhookDelivery, org, did)?;
        let hook: Webhook = must(tx, Kind::Webhook, org, wid)?;
        Ok(request_for(&d, &hook, now))
    })?;
    let response = installed_driver().post(&request);
    // Ids made here must not repeat those of the committed transaction, which drew from
    // the same entropy: derive a second seed from it.
    let entropy: [u8; 32] = Sha256::new()
        .chain_update(call.ctx.entropy)
        .chain_update(b"after commit")
        .finalize()
        .into();
    let call = ToolCall {
        ctx: dunning_core::Ctx {
            entropy: &entropy,
            ..call.ctx
        },
        ..*call
    };
    store::write(domain.store(), |tx| {
        domain.op_run(tx, &call, false, |op| {
            let mut d: WebhookDelivery = must(op.tx, Kind::WebhookDelivery, op.org, did)?;
            // Recorded only while the claim is ours (as [`finish`] does): a delivery is
            // attempted and recorded by exactly one worker.
            if d.status == "pending" && Some(u64::from(d.attempts)) == claimed {
                record(op, &mut d, &response)?;
            }
            Ok(created(delivery_view(&d)))
        })
    })
}

fn grace(op: &Op<'_>) -> Result<i64, DomainError> {
    let g = match op.args.get("grace_period_seconds") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().ok_or_else(|| {
            DomainError::field("grace_period_seconds", "must be an integer from 0 to 86400")
        })?,
    };
    if !(0..=MAX_GRACE_SECONDS).contains(&g) {
        return Err(DomainError::field(
            "grace_period_seconds",
            "must be from 0 to 86400",
        ));
    }
    Ok(g)
}

fn describe_rotate(op: &mut Op<'_>) -> Result<String, DomainError> {
    let id = op.str("id")?;
    let w = load_hook(op, id)?;
    let g = grace(op)?;
    Ok(if g == 0 {
        format!(
            "Rotate the signing secret of the webhook to {}? The current secret (…{}) stops signing immediately.",
            w.url, w.secret_last4
        )
    } else {
        format!(
            "Rotate the signing secret of the webhook to {}? The current secret (…{}) keeps signing for {g} seconds.",
            w.url, w.secret_last4
        )
    })
}

fn rotate_secret(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "grace_period_seconds"])?;
    let id = op.str("id")?;
    let g = grace(op)?;
    let before = load_hook(op, id)?;
    let mut w = before.clone();
    let secret = new_secret(op);
    let now = op.timestamp();
    if g > 0 {
        w.previous_secret = Some(before.secret.clone());
        w.previous_secret_expires_at = Some(stamp(
            op.now
                .plus_millis(u64::try_from(g).unwrap_or_default() * 1000),
        ));
    } else {
        w.previous_secret = None;
        w.previous_secret_expires_at = None;
    }
    w.secret_last4 = last4(&secret);
    w.secret = secret;
    w.secret_rotated_at = Some(now.clone());
    w.updated_at = now;
    save(op.tx, Kind::Webhook, op.org, &w)?;
    let changes = crate::ops::debtors::diff(&before.public(), &w.public());
    op.event(
        "webhook.secret_rotated",
        "webhook",
        id,
        &w.public(),
        changes,
    )?;
    let mut reply = w.public();
    reply["secret"] = json!(w.secret);
    Ok(ok(reply))
}

/// A `from`/`to` bound as a timestamp in the organization's offset.
fn time_bound(op: &Op<'_>, k: &str, end: bool) -> Result<Option<String>, DomainError> {
    let Some(raw) = op.opt_str(k) else {
        return Ok(None);
    };
    if let Some(d) = calendar::parse_date(raw) {
        let t = if end { "23:59:59" } else { "00:00:00" };
        return Ok(Some(format!("{}T{t}-03:00", d.format("%Y-%m-%d"))));
    }
    let t = chrono::DateTime::parse_from_rfc3339(raw)
        .map_err(|_| DomainError::field(k, "must be a date YYYY-MM-DD or an RFC 3339 timestamp"))?;
    Ok(Some(
        t.with_timezone(&calendar::offset())
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string(),
    ))
}

const DELIVERY_SORTS: &[(&str, &str, Order)] = &[("created_at", "created_at", Order::Desc)];

fn list_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let id = op.str("id")?;
    load_hook(op, id)?;
    let mut conds = vec![Cond::Eq("webhook_id", json!(id))];
    if let Some(st) = op.csv("status") {
        let known = ["pending", "delivered", "failed"];
        if let Some(bad) = st
            .iter()
            .find(|v| !known.contains(&v.as_str().unwrap_or("")))
        {
            return Err(DomainError::field(
                "status",
                format!("{bad} is not one of pending, delivered, failed"),
            ));
        }
        conds.push(Cond::In("status", st));
    }
    if let Some(code) = op.opt_str("event_code") {
        if code == "*" {
        } else if let Some(group) = code.strip_suffix(".*") {
            conds.push(Cond::Ge("event_code", json!(format!("{group}."))));
            conds.push(Cond::Le("event_code", json!(format!("{group}.\u{10FFFF}"))));
        } else {
            conds.push(Cond::Eq("event_code", json!(code)));
        }
    }
    let from = time_bound(op, "from", false)?;
    let to = time_bound(op, "to", true)?;
    if let (Some(f), Some(t)) = (&from, &to) {
        if f > t {
            return Err(DomainError::field("to", "must not be before from"));
        }
    }
    if let Some(f) = from {
        conds.push(Cond::Ge("created_at", json!(f)));
    }
    if let Some(t) = to {
        conds.push(Cond::Le("created_at", json!(t)));
    }
    let page = op.page();
    let total = op.tx.count(Kind::WebhookDelivery, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(DELIVERY_SORTS),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let items: Vec<WebhookDelivery> = find(op.tx, Kind::WebhookDelivery, op.org, &q)?;
    Ok(list(
        items.iter().map(WebhookDelivery::summary).collect(),
        page,
        total,
    ))
}

fn get_delivery(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (_, d) = load_delivery(op)?;
    Ok(ok(d))
}

fn describe_resend(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (w, d) = load_delivery(op)?;
    Ok(format!(
        "Resend delivery {} ({}, {} attempt(s) so far) to {}?",
        d.id, d.event_code, d.attempts, w.url
    ))
}

fn resend_delivery(op: &mut Op<'_>) -> Result<Output, DomainError> {
    op.only(&["id", "delivery_id"])?;
    let (w, mut d) = load_delivery(op)?;
    if d.status != "failed" {
        return Err(DomainError::transition(
            "webhook delivery",
            &d.id,
            &d.status,
            "pending",
        ));
    }
    if !w.active {
        return Err(DomainError::Conflict(format!(
            "webhook {} is inactive; activate it before resending its deliveries",
            w.id
        )));
    }
    let before = d.summary();
    let now = op.timestamp();
    d.status = "pending".into();
    d.round_attempts = 0;
    d.failed_at = None;
    d.next_retry_at = Some(now.clone());
    d.resent_at = Some(now.clone());
    d.updated_at = now;
    save(op.tx, Kind::WebhookDelivery, op.org, &d)?;
    let changes = crate::ops::debtors::diff(&before, &d.summary());
    op.event(
        "webhook_delivery.resent",
        "webhook_delivery",
        &d.id,
        &d.summary(),
        changes,
    )?;
    Ok(ok(d))
}
