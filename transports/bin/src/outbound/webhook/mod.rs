//! The webhook HTTP driver: posts deliveries for real (`[webhooks] driver = "http"`).
//!
//! It left the domain (the domain opens no socket; it keeps the
//! [`WebhookDriver`] trait, the request and answer types and the recording driver) and
//! was rebuilt on `ureq` 3 with rustls, the client the binary already had for JWKS:
//!
//! * **the request as before**: `Host`, `Content-Length`, `Connection: close` and the
//!   delivery's headers, names spelled as given;
//! * **one request, one connection**: no pool, no proxy (a proxy
//!   would resolve the name itself, past the address policy), no redirects (a `3xx` is
//!   the receiver's answer, recorded like any other non-`2xx`);
//! * **timeouts** from `[webhooks]`: name resolution and connection (TLS handshake
//!   included) within `connect_timeout_secs`, each read and the whole attempt within
//!   `timeout_secs` (at most 60 s, half a delivery's claim);
//! * **≤ 4 KB of the answer** kept ([`RESPONSE_BODY_MAX`]), the rest never read; a
//!   timeout or reset in the body keeps what came;
//! * **addresses**: [`resolve::GlobalResolver`] resolves within the connect timeout and
//!   keeps only globally routable addresses ([`global_ip::is_global`]) unless
//!   `allow_private_addresses`; `ureq` connects to exactly those;
//! * **TLS**: Mozilla's roots (`webpki-roots`); a webhook with `ssl_verification:
//!   false` goes through a second agent whose TLS configuration does not verify the
//!   certificate (still encrypted).
//!
//! The URL handed to `ureq` is the one `dunning_domain::ops::webhooks::parse_url` reads
//! (scheme, canonical host without a trailing dot, port, path), so the `Host` header,
//! the TLS server name and the lookup all use one spelling.

use std::io::Read;
use std::time::{Duration, Instant};

use dunning_domain::ops::webhooks::{
    CLAIM_MS, RESPONSE_BODY_MAX, WebhookDriver, WebhookRequest, WebhookResponse, parse_url,
    truncate_body,
};
use ureq::Agent;
use ureq::config::AutoHeaderValue;
use ureq::tls::TlsConfig;
use ureq::unversioned::transport::DefaultConnector;

mod global_ip;
mod resolve;
#[cfg(test)]
mod tests;

use resolve::{GlobalResolver, Refused};

/// The longest attempt: half a delivery's claim, so that no other worker takes a
/// delivery while it is being posted (`[webhooks] timeout_secs` is checked against it).
const MAX_TIMEOUT: Duration = Duration::from_millis(CLAIM_MS / 2);

/// Largest response head read; a larger one fails the attempt.
const HEAD_MAX: usize = 16 * 1024;

/// A `ureq` agent under the webhook rules, for other outbound fetches of URLs a client
/// chose (Client ID Metadata Documents): the address policy of
/// [`GlobalResolver`] (unless `allow_private`), no proxy, no redirects, no pooled
/// connections, certificates verified, `connect` to resolve and connect, `total` for
/// the whole exchange.
pub(crate) fn guarded_agent(connect: Duration, total: Duration, allow_private: bool) -> Agent {
    let connect = connect.min(total);
    let resolver = GlobalResolver {
        timeout: connect,
        allow_private,
    };
    let config = Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .max_idle_connections(0)
        .max_idle_connections_per_host(0)
        .max_response_header_size(HEAD_MAX)
        .timeout_resolve(Some(connect))
        .timeout_connect(Some(connect))
        .timeout_per_read(Some(total))
        .timeout_global(Some(total))
        .build();
    Agent::with_parts(config, DefaultConnector::new(), resolver)
}

/// A `ureq` failure in words (the resolver's refusals as they are).
pub(crate) fn describe_error(e: ureq::Error) -> String {
    describe(e)
}

/// Posts for real: one `POST` per connection through `ureq`.
#[derive(Clone, Debug)]
pub(crate) struct HttpDriver {
    connect_timeout: Duration,
    timeout: Duration,
    allow_private: bool,
    tls: bool,
    /// Verifies certificates (the default).
    verifying: Agent,
    /// Does not (`ssl_verification: false`).
    unverified: Agent,
}

impl HttpDriver {
    /// 3 s to connect, 10 s for the whole exchange, public addresses only, no TLS.
    pub(crate) fn new() -> Self {
        Self::build(
            Duration::from_secs(3),
            Duration::from_secs(10),
            false,
            false,
        )
    }

    fn build(connect: Duration, total: Duration, allow_private: bool, tls: bool) -> Self {
        let timeout = total.min(MAX_TIMEOUT);
        let connect_timeout = connect.min(timeout);
        let resolver = GlobalResolver {
            timeout: connect_timeout,
            allow_private,
        };
        let agent = |verify: bool| {
            let config = Agent::config_builder()
                .proxy(None)
                .max_redirects(0)
                .http_status_as_error(false)
                .user_agent(AutoHeaderValue::None)
                .accept(AutoHeaderValue::None)
                .accept_encoding(AutoHeaderValue::None)
                .max_idle_connections(0)
                .max_idle_connections_per_host(0)
                .max_response_header_size(HEAD_MAX)
                .timeout_resolve(Some(connect_timeout))
                .timeout_connect(Some(connect_timeout))
                .timeout_per_read(Some(timeout))
                .timeout_global(Some(timeout))
                .tls_config(TlsConfig::builder().disable_verification(!verify).build())
                .build();
            Agent::with_parts(config, DefaultConnector::new(), resolver.clone())
        };
        Self {
            connect_timeout,
            timeout,
            allow_private,
            tls,
            verifying: agent(true),
            unverified: agent(false),
        }
    }

    /// Sets the timeouts (the total is capped at 60 s, the connect timeout at the total).
    pub(crate) fn timeouts(self, connect: Duration, total: Duration) -> Self {
        Self::build(connect, total, self.allow_private, self.tls)
    }

    /// Allows loopback and private addresses (development, tests). Off by default: a
    /// webhook URL must not reach the server's own network.
    pub(crate) fn allow_private_addresses(self, allow: bool) -> Self {
        Self::build(self.connect_timeout, self.timeout, allow, self.tls)
    }

    /// Enables `https` (rustls, Mozilla's roots).
    pub(crate) fn with_tls(self) -> Self {
        Self::build(self.connect_timeout, self.timeout, self.allow_private, true)
    }

    fn exchange(&self, req: &WebhookRequest) -> Result<(u16, String), String> {
        let target = parse_url(&req.url)?;
        if target.tls && !self.tls {
            return Err("tls_unavailable: this server has no TLS connector for https".into());
        }
        let scheme = if target.tls { "https" } else { "http" };
        let url = format!(
            "{scheme}://{}{}",
            target.host_header(),
            encode_path(&target.path)
        );
        let agent = if req.ssl_verification {
            &self.verifying
        } else {
            &self.unverified
        };
        // Header names go out spelled as given (`X-Kobana-Signature`, not lower case):
        // some receivers compare them case-sensitively.
        let mut call = agent
            .post(&url)
            .header_raw("Host", target.host_header().as_bytes())
            .header_raw("Content-Length", req.body.len().to_string().as_bytes())
            .header_raw("Connection", b"close");
        for (k, v) in &req.headers {
            if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
                return Err(format!("invalid header {k}"));
            }
            call = call.header_raw(k, v.as_bytes());
        }
        let mut response = call.send(req.body.as_bytes()).map_err(describe)?;
        let status = response.status().as_u16();
        let mut body = Vec::with_capacity(RESPONSE_BODY_MAX);
        // At most RESPONSE_BODY_MAX bytes are read; a timeout or reset after the status
        // line keeps what came (read_to_end appends what it read before the error).
        let _ = response
            .body_mut()
            .as_reader()
            .take(RESPONSE_BODY_MAX as u64)
            .read_to_end(&mut body);
        Ok((status, truncate_body(&body)))
    }
}

impl WebhookDriver for HttpDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        let started = Instant::now();
        let result = self.exchange(request);
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

/// The failure as the delivery records it: the resolver's refusals as they are
/// (`address_not_allowed: ...`, `dns_timeout: ...`), anything else as `ureq` says it.
fn describe(e: ureq::Error) -> String {
    match e {
        ureq::Error::Other(inner) => match inner.downcast::<Refused>() {
            Ok(refused) => refused.0,
            Err(other) => format!("other: {other}"),
        },
        e => e.to_string(),
    }
}

/// `path` (path and query) with every byte a URI may not carry as it is
/// percent-encoded (RFC 3986: unreserved, reserved and `%` stay), so that a path the
/// domain accepted (any printable text) is one `ureq` accepts too.
fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for &b in path.as_bytes() {
        let keep = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
