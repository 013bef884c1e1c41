//! `kobana-dunning serve`: wire the OS (sockets, clock, randomness, files, signals) to
//! the sans-IO core, and run until SIGTERM/SIGINT.
//!
//! Startup, in order: settings (file, then flags) → data dir (database, demo data on a
//! new one, keys; under the directory's lock; then `store.json`) → bind (the port is
//! known, nothing is accepted) → verification keys (development key, JWKS file or
//! URL) → [`Server`] with the [`Authenticator`], the [`Gcra`] limiter and the telemetry
//! → `endpoint.json` → listen (the port opens last, so whoever sees it open can mint a
//! token the server accepts) → print the endpoint (and a development token when the
//! development key is trusted) → serve on the chosen adapter. Beside the adapter run
//! the jobs thread ([`crate::jobs`]) and, with a JWKS URL, a refresher thread.
//!
//! Shutdown: the first SIGTERM or SIGINT sets a flag the adapter watches (stop
//! accepting, answer what arrives `503`, drain, bounded by `drain_timeout_secs`); a
//! second one exits at once. Then the threads are stopped and the process exits 0.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dunning_core::jwt::Validation;
use dunning_core::oauth::{AsConfig, AuthorizationServer};
use dunning_core::{Config, Dispatch, Keys, Server};
use dunning_domain::Domain;
use dunning_domain::oauth::OAuthStore;
use dunning_runtime::{Observer, Options};
use socket2::{Domain as SockDomain, Socket, Type};
use zeroize::Zeroizing;

use crate::auth::Authenticator;
use crate::cli::{AudienceArg, ServeArgs, Transport};
use crate::clock::ShiftedEnv;
use crate::datadir::{DataDir, Endpoint, StoreRecord};
use crate::fdlimit;
use crate::instructions::INSTRUCTIONS;
use crate::jobs::JobsThread;
use crate::keys::{self, TrustedKeys};
use crate::limiter::Gcra;
use crate::limiter::shared::SharedGcra;
use crate::outbound::client_metadata::{Fetcher, WithClientMetadata};
use crate::outbound::webhook::HttpDriver;
use crate::settings::{JwksSource, Settings, WebhookDriver};
use crate::telemetry::metrics::Prometheus;
use crate::telemetry::{self, Telemetry, listener, otel};
use crate::token;

/// Pending connections the kernel queues before `accept`.
const LISTEN_BACKLOG: i32 = 1024;

/// Lifetime of the development token printed at startup.
const DEV_TOKEN_TTL_SECS: i64 = 24 * 3600;

/// Runs `serve`; `Err` is a startup failure (printed, exit code 1).
pub(crate) fn run(args: &ServeArgs) -> Result<(), String> {
    let settings = Settings::load(args)?;
    let filter = telemetry::log_filter(
        settings.log_level.as_deref(),
        std::env::var("RUST_LOG").ok().as_deref(),
        settings.file_log_level.as_deref(),
    )?;
    let (otel, layer) = if otel::wanted(settings.otlp_endpoint.as_deref()) {
        let (o, l) = otel::start(settings.otlp_endpoint.as_deref())?;
        (Some(o), Some(l))
    } else {
        (None, None)
    };
    let _flushed_on_return = telemetry::init_logging(settings.log_format, filter, layer);
    if otel.is_some() {
        tracing::info!(
            otlp_endpoint = settings.otlp_endpoint.as_deref().map(otel::traces_url),
            "exporting request spans over OTLP"
        );
    }
    let served = serve(args, &settings);
    // Last: the spans of the drained requests are still batched.
    if let Some(o) = otel {
        o.shutdown();
    }
    served
}

/// Everything between the subscriber and the exit.
fn serve(args: &ServeArgs, settings: &Settings) -> Result<(), String> {
    let prometheus = Prometheus::install()?;
    tracing::debug!(
        listen = %settings.listen,
        transport = ?settings.transport,
        public_url = settings.public_url.as_deref(),
        dev_key = settings.auth.dev_key,
        require_at_jwt = settings.auth.require_at_jwt,
        trust_request_id = settings.trust_request_id,
        rate_limit = settings.rate_limit.enabled,
        max_in_flight = settings.limits.max_in_flight,
        "effective settings"
    );
    let clock = args.clock.clock();
    if clock.is_shifted() {
        tracing::warn!(now = %dunning_domain::brazil::calendar::timestamp(clock.now()), "--clock: the wall clock is shifted (tests only)");
    }
    let now = clock.now();
    match fdlimit::raise(settings.limits.max_connections) {
        (Some(limit), false) => tracing::warn!(
            limit,
            max_connections = settings.limits.max_connections,
            "the descriptor limit (ulimit -n) is below max_connections plus {}: connections past it will wait unanswered; raise LimitNOFILE",
            fdlimit::SPARE
        ),
        (limit, true) => tracing::debug!(?limit, "descriptor limit"),
        (None, false) => {}
    }

    // Everything a client or `token` needs exists before the port opens: the data dir
    // (database, demo data, keys), then the socket is bound (its port is known, nothing
    // is accepted yet), `endpoint.json` written, and only then does it listen.
    let dir = DataDir::create(&settings.data_dir)?;
    let init = dir.initialize(
        settings.store.as_deref(),
        settings.limits.store_readers,
        now,
        settings.auth.dev_key,
    )?;
    // What `token` and `demo` on this directory look for: the store, never its password
    // (where the password is, when there is one: `datadir/record.rs`).
    let from_file = if args.store.is_none() {
        args.config.as_deref()
    } else {
        None
    };
    dir.write_store_record(&StoreRecord::of(settings.store.as_deref(), from_file))?;
    let store = init.store;
    if init.fresh && settings.store.is_some() {
        tracing::info!("seeded the demo data in the PostgreSQL store");
    } else if init.fresh {
        tracing::info!(data_dir = %dir.path().display(), "created the database and the demo data");
    }

    let socket = bind(settings.listen)?;
    let bound = socket
        .local_addr()
        .ok()
        .and_then(|a| a.as_socket())
        .ok_or_else(|| format!("listen on {}: no local address", settings.listen))?;
    let public_url = settings
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"));
    let endpoint = Endpoint::new(
        &public_url,
        &settings.mcp_path,
        settings.auth.issuer.as_deref(),
    );

    let dev_seed = init.dev_key;
    let keys = Arc::new(TrustedKeys::new(keys::initial(
        settings,
        dev_seed.as_deref(),
    )?));
    let mut validation = Validation::new(
        &endpoint.issuer,
        &endpoint.mcp_audience,
        &endpoint.api_audience,
    );
    validation.leeway_secs = settings.auth.leeway_secs;
    validation.require_at_jwt = settings.auth.require_at_jwt;
    validation.max_token_lifetime_secs = settings.auth.max_token_lifetime_secs;
    validation.claims = settings.auth.claims.clone();
    validation.mcp_audience_aliases = settings.auth.mcp_audience_aliases.clone();
    validation.api_audience_aliases = settings.auth.api_audience_aliases.clone();
    check_aliases(&validation)?;

    let config = Config {
        mcp_path: settings.mcp_path.clone(),
        public_url: public_url.clone(),
        allowed_origins: settings.allowed_origins.clone(),
        loopback: bound.ip().is_loopback(),
        trust_request_id: settings.trust_request_id,
        max_body: settings.limits.max_body_bytes,
        authorization_servers: settings
            .auth
            .authorization_servers
            .clone()
            .unwrap_or_else(|| vec![endpoint.issuer.clone()]),
        instructions: INSTRUCTIONS.to_owned(),
        confirmation_ttl_ms: settings.confirmation.ttl_secs.saturating_mul(1000),
        ..Config::default()
    };
    let state_keys = keys::state_keys(settings, init.state_key)?;
    // Messages to debtors: the drivers `[channels]` asks for (the jobs thread sends
    // through them) and the routes their providers and debtors call back on.
    let links = crate::channels::unsubscribe::Links::new(&public_url, &state_keys);
    let channel_drivers = Arc::new(crate::channels::Drivers::new(
        &settings.channels,
        &links,
        &public_url,
    )?);
    let mut callback_domain = Domain::new(store.clone());
    callback_domain.lend_entropy(worker_entropy(now));
    let callbacks = crate::channels::callbacks::Routes::new(
        &settings.channels,
        callback_domain,
        clock,
        links,
        &public_url,
    )?;

    // The webhook driver `[webhooks]` asks for, passed to whoever posts: the domain
    // (`dunning_webhooks_test`) and the jobs thread (the outbox).
    let webhooks = webhook_driver(&settings.webhooks);
    let mut domain = Domain::new(store.clone());
    domain.set_webhook_driver(webhooks.clone());
    domain.lend_entropy(worker_entropy(now));
    let telemetry = Arc::new(Telemetry::new(&domain.catalog()));
    let authenticator = Authenticator::new(
        keys.clone(),
        validation,
        settings.auth.token_cache_size,
        Domain::new(store.clone()),
    );
    let embedded_as = embedded_authorization_server(
        settings,
        &endpoint,
        dev_seed.as_deref(),
        &state_keys,
        &store,
    );
    let mut server = Server::new(config, state_keys, domain, authenticator)
        .map_err(|e| format!("catalog: {e}"))?
        .with_callbacks(callbacks);
    if settings.metrics_on_public {
        server = server.with_metrics(prometheus.clone());
    }
    if let Some(a) = embedded_as {
        server = server.with_authorization_server(a);
    }
    if settings.rate_limit.enabled {
        server = match &settings.rate_limit.shared {
            Some(url) => server.with_limiter(
                SharedGcra::connect(&settings.rate_limit, url)
                    .map_err(|e| format!("rate_limit.shared: {e}"))?,
            ),
            None => server.with_limiter(Gcra::new(&settings.rate_limit)),
        };
    }
    let server = Arc::new(server);

    // The metrics address is bound before the public port opens, like the rest.
    let metrics_listener = settings.metrics_listen.map(listener::bind).transpose()?;
    let metrics_addr = match &metrics_listener {
        Some(l) => Some(l.local_addr().map_err(|e| format!("metrics_listen: {e}"))?),
        None => None,
    };
    dir.write_endpoint(&endpoint)?;
    socket
        .listen(LISTEN_BACKLOG)
        .map_err(|e| format!("listen on {bound}: {e}"))?;
    let listener = TcpListener::from(socket);
    let dev = dunning_domain::demo::dev_identity();
    let dev_token = dev_seed.as_deref().map(|seed| {
        token::mint(
            seed,
            &endpoint,
            &token::Request {
                org_id: &dev.org_id(),
                person: dev.person,
                scope: &token::role_scopes(dev.role),
                ttl: DEV_TOKEN_TTL_SECS,
                audience: AudienceArg::Mcp,
            },
            now,
        )
    });
    if settings.auth.dev_key && !bound.ip().is_loopback() {
        tracing::warn!(
            listen = %bound,
            "the development key is trusted on a non-loopback address: anyone who can read the data dir can mint tokens this server accepts; set [auth] dev_key = false and configure jwks_file or jwks_url"
        );
    }
    if let Some(addr) = metrics_addr {
        tracing::info!(metrics_listen = %addr, on_public = settings.metrics_on_public, "serving /metrics");
    }
    telemetry::banner(
        settings.log_format,
        &telemetry::Banner {
            listen: bound,
            mcp_endpoint: endpoint.mcp_audience_url(),
            rest_api: &endpoint.api_audience,
            dev_token: dev_token.as_deref(),
            print_token: settings.print_token,
            metrics: metrics_addr,
        },
    );

    tracing::info!(
        listen = %bound,
        public_url = %public_url,
        transport = ?settings.transport,
        dev_key = settings.auth.dev_key,
        "serving"
    );

    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        // A second signal while shutting down exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 1, stop.clone())
            .and_then(|_| signal_hook::flag::register(sig, stop.clone()))
            .map_err(|e| format!("signal handler: {e}"))?;
    }

    let metrics_thread = match metrics_listener {
        Some(l) => Some(listener::spawn(l, prometheus.clone(), stop.clone())?),
        None => None,
    };
    let jobs = JobsThread::spawn(
        server.clone(),
        &settings.jobs,
        clock,
        webhooks,
        (channel_drivers, crate::channels::policy(&settings.channels)),
    );
    let refresher = match &settings.auth.jwks {
        Some(JwksSource::Url(url)) => Some(keys::spawn_refresher(
            keys.clone(),
            url.clone(),
            dev_seed.as_deref().copied(),
            settings.auth.jwks_refresh,
            stop.clone(),
        )),
        _ => None,
    };

    let mut opts = options(settings);
    if clock.is_shifted() {
        opts.env = Arc::new(ShiftedEnv(clock));
    }
    // Queuing an export wakes the jobs thread, so it starts at once.
    let observer: Arc<dyn Observer> = Arc::new(jobs.waking(telemetry));
    let served = match settings.transport {
        Transport::Tokio => serve_tokio(listener, server, opts, observer, stop.clone()),
        Transport::Blocking => {
            dunning_blocking::serve(listener, server, opts, observer, stop.clone())
        }
        Transport::Mio => dunning_mio::serve(listener, server, opts, observer, stop.clone()),
    };
    stop.store(true, Ordering::Release);
    jobs.stop();
    if let Some(r) = refresher {
        let _ = r.join();
    }
    if let Some(t) = metrics_thread {
        let _ = t.join();
    }
    served.map_err(|e| format!("serve: {e}"))?;
    tracing::info!("stopped");
    Ok(())
}

impl Endpoint {
    /// The URL clients POST to.
    fn mcp_audience_url(&self) -> String {
        format!("{}{}", self.public_url, self.mcp_path)
    }
}

/// An audience alias must not name the other audience: a token for the REST API would
/// then be accepted by the MCP endpoint, or the reverse.
fn check_aliases(v: &Validation) -> Result<(), String> {
    let clash = |aliases: &[String], other: &str, key: &str| {
        let other = other.trim_end_matches('/');
        match aliases
            .iter()
            .find(|a| a.trim_end_matches('/').eq_ignore_ascii_case(other))
        {
            Some(a) => Err(format!(
                "[auth] {key}: {a:?} is the other audience's identifier"
            )),
            None => Ok(()),
        }
    };
    clash(
        &v.mcp_audience_aliases,
        &v.api_audience,
        "mcp_audience_aliases",
    )?;
    clash(
        &v.api_audience_aliases,
        &v.mcp_audience,
        "api_audience_aliases",
    )
}

/// A TCP socket bound to `addr` (address reuse as `std` does) but not yet listening:
/// connections are refused until [`socket2::Socket::listen`].
fn bind(addr: SocketAddr) -> Result<Socket, String> {
    let failed = |e: std::io::Error| format!("listen on {addr}: {e}");
    let socket = Socket::new(SockDomain::for_address(addr), Type::STREAM, None).map_err(failed)?;
    socket.set_reuse_address(true).map_err(failed)?;
    socket.bind(&addr.into()).map_err(failed)?;
    Ok(socket)
}

/// Adapter options from `[limits]`.
fn options(s: &Settings) -> Options {
    let l = &s.limits;
    let mut o = Options {
        header_read_timeout: Duration::from_secs(l.header_read_timeout_secs),
        idle_timeout: Duration::from_secs(l.idle_timeout_secs),
        body_read_timeout: Duration::from_secs(l.body_read_timeout_secs),
        min_body_rate: l.min_body_rate,
        max_body_buffer: l.max_body_buffer_bytes,
        max_pending_output: l.max_pending_output_bytes,
        max_unauthenticated_per_ip: l.max_unauthenticated_per_ip,
        max_connections: l.max_connections,
        max_in_flight: l.max_in_flight,
        drain_timeout: Duration::from_secs(l.drain_timeout_secs),
        workers: l.workers,
        ..Options::default()
    };
    o.limits.max_body = l.max_body_bytes;
    o
}

/// The tokio adapter on a multi-threaded runtime, until `stop`.
fn serve_tokio<D: Dispatch + 'static>(
    listener: TcpListener,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<()> {
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("dunning-io")
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let shutdown = async move {
            while !stop.load(Ordering::Acquire) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        dunning_tokio::serve(listener, server, opts, observer, shutdown).await
    })
}

/// The embedded development authorization server: served when the
/// development key is trusted and no JWKS is configured, i.e. when the tokens this
/// server accepts can only come from itself. With a real authorization server
/// configured its paths answer `404` and the metadata names the configured servers.
fn embedded_authorization_server(
    settings: &Settings,
    endpoint: &Endpoint,
    dev_seed: Option<&[u8; 32]>,
    state_keys: &Keys,
    store: &Arc<dyn dunning_domain::store::Store>,
) -> Option<AuthorizationServer> {
    if settings.auth.jwks.is_some() {
        return None;
    }
    let seed = dev_seed?;
    let scopes = dunning_domain::catalog::SCOPES
        .all()
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    let mut c = AsConfig::new(&endpoint.issuer, &endpoint.mcp_audience, scopes);
    c.title = "Kobana Dunning".into();
    c.api_resource = Some(endpoint.api_audience.clone());
    c.client_metadata_documents = true;
    Some(AuthorizationServer::new(
        c,
        &keys::dev_kid(seed),
        Zeroizing::new(*seed),
        state_keys.clone(),
        WithClientMetadata {
            store: OAuthStore::new(store.clone()),
            fetcher: Fetcher::new(false),
        },
    ))
}

/// The webhook driver `[webhooks]` asks for: the recording one (nothing leaves the
/// machine) or [`HttpDriver`] with TLS.
fn webhook_driver(
    w: &crate::settings::Webhooks,
) -> Arc<dyn dunning_domain::ops::webhooks::WebhookDriver> {
    match w.driver {
        WebhookDriver::Record => {
            tracing::info!("webhooks: recording driver (nothing leaves the machine)");
            Arc::new(dunning_domain::ops::webhooks::RecordingDriver::new())
        }
        WebhookDriver::Http => {
            tracing::info!(
                allow_private_addresses = w.allow_private_addresses,
                "webhooks: HTTP driver"
            );
            Arc::new(
                HttpDriver::new()
                    .timeouts(
                        Duration::from_secs(w.connect_timeout_secs.max(1)),
                        Duration::from_secs(w.timeout_secs.max(1)),
                    )
                    .allow_private_addresses(w.allow_private_addresses)
                    .with_tls(),
            )
        }
    }
}

/// Fresh OS entropy for the ids of the workers' operations (the domain has no RNG of
/// its own). Should the OS refuse it (it does not on any supported system), the clock
/// and the process id still keep this process's ids apart from another's.
fn worker_entropy(now: dunning_core::UnixTime) -> [u8; 32] {
    let mut seed = [0u8; 32];
    if let Err(e) = getrandom::fill(&mut seed) {
        tracing::warn!(error = %e, "no OS entropy for the workers; using the clock");
        seed[..8].copy_from_slice(&now.as_millis().to_be_bytes());
        seed[8..12].copy_from_slice(&std::process::id().to_be_bytes());
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_audience_alias_never_names_the_other_audience() {
        let mut v = Validation::new("https://i", "https://m.example", "https://m.example/v1");
        v.mcp_audience_aliases = vec!["6e74172b".into()];
        v.api_audience_aliases = vec!["0e8a3e4c".into()];
        assert!(check_aliases(&v).is_ok());
        v.mcp_audience_aliases = vec!["https://M.example/v1/".into()];
        assert!(
            check_aliases(&v)
                .unwrap_err()
                .contains("mcp_audience_aliases")
        );
        v.mcp_audience_aliases.clear();
        v.api_audience_aliases = vec!["https://m.example".into()];
        assert!(
            check_aliases(&v)
                .unwrap_err()
                .contains("api_audience_aliases")
        );
    }
}
