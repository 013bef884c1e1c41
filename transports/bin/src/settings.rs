//! The configuration file (TOML) and the flags merged over it: everything `serve` needs.
//!
//! Every flag of `serve` has a key here; a flag given on the command line wins. Unknown
//! keys are an error (a typo must not silently fall back to a default). Example:
//!
//! ```toml
//! listen = "0.0.0.0:8080"
//! data_dir = "/var/lib/kobana-dunning"
//! store = "postgres://dunning@db.internal:5432/dunning"   # default: SQLite in data_dir
//! public_url = "https://mcp.example.com"
//! mcp_path = "/"
//! transport = "tokio"          # tokio | blocking | mio
//! log_format = "json"          # text | json
//! log_level = "info"           # or directives; --log-level and then RUST_LOG win over it
//! print_token = false          # JSON logs: put the development token in the startup event
//! allowed_origins = ["https://app.example.com"]
//! trust_request_id = false     # true: echo a proxy's X-Request-Id (visible ASCII, <= 128 bytes)
//! metrics_listen = "10.0.0.5:9090"   # /metrics on this address only (flag --metrics-listen)
//! metrics_on_public = false    # /metrics on the public listener too; default: true only
//!                              # without metrics_listen (as before metrics_listen existed)
//!
//! [telemetry]
//! otlp_endpoint = "http://otel-collector:4318"   # OTLP/HTTP base URL; default: the
//!                              # OTEL_EXPORTER_OTLP_ENDPOINT variable; neither: no export
//!
//! [limits]
//! max_body_bytes = 2097152
//! max_connections = 10000
//! max_in_flight = 256
//! header_read_timeout_secs = 10
//! idle_timeout_secs = 60
//! body_read_timeout_secs = 30  # a whole request body, from its admitted head
//! min_body_rate = 1024         # bytes/s a body must average after 5 s (0: off)
//! max_body_buffer_bytes = 134217728   # request bodies in flight, all connections (503 past it)
//! max_pending_output_bytes = 1048576  # unsent answers per connection before it stops reading
//! max_unauthenticated_per_ip = 256    # connections per address not yet authenticated (0: off)
//! drain_timeout_secs = 10
//! workers = 64                 # blocking adapter threads
//! store_readers = 4            # SQLite read connections
//!
//! [rate_limit]
//! enabled = true
//! org_per_minute = 6000
//! org_burst = 1000
//! token_per_minute = 1200
//! token_burst = 200
//! oauth_per_minute = 60        # /register, /authorize, /token per client address (the
//! oauth_burst = 30             #  embedded authorization server; behind a proxy: its address)
//! shared = "redis://127.0.0.1:6379/"   # replicas: buckets in Redis (default: in-process)
//! shared_prefix = "kobana-dunning"      # of the Redis keys (clusters sharing one Redis)
//!
//! [auth]
//! issuer = "https://auth.example.com"
//! jwks_file = "/etc/kobana-dunning/jwks.json"   # or:
//! jwks_url = "https://auth.example.com/.well-known/jwks.json"
//! jwks_refresh_secs = 300
//! dev_key = false              # default: true only without jwks_file/jwks_url
//! authorization_servers = ["https://auth.example.com"]   # default: [issuer]
//! leeway_secs = 60
//! require_at_jwt = true
//! max_token_lifetime_secs = 86400   # `exp` at most this far past `iat` (default 24 h)
//! token_cache_size = 10000
//! subject_claim = "sub"        # the claim naming the person (a member's id or e-mail)
//! org_claim = "org"            # the claim naming the organization (id or slug)
//! scope_claim = "scope"        # the scopes: space-separated string or list ("scp":
//!                              # Entra ID, Okta); all three: dev_key = false to change
//! mcp_audience_aliases = []    # more `aud` values for MCP tokens (Entra ID v2: the
//! api_audience_aliases = []    #  API app's client id); never the same in both
//!
//! [confirmation]
//! ttl_secs = 300
//! # requestState sealing keys: the first seals, all open (rotation). Default: the
//! # data dir's own key.
//! keys = [{ id = "k2", secret = "<base64, >= 32 bytes>" }, { id = "k1", file = "/etc/k1" }]
//!
//! [jobs]
//! sweep_interval_secs = 3600   # idempotency records past retention
//! engine_interval_secs = 60    # ruler engine tick
//!
//! [webhooks]
//! driver = "record"            # record (default: nothing leaves the machine) | http
//! allow_private_addresses = false   # http: refuse loopback/private receivers
//! connect_timeout_secs = 3         # 1 to timeout_secs
//! timeout_secs = 10                 # the whole attempt; 1 to 60 (half a delivery's claim)
//!
//! [channels.email]             # messages to debtors: every key in `crate::channels::settings`
//! driver = "record"            # record (default: nothing leaves the machine) | smtp
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dunning_core::jwt::ClaimNames;
use serde::Deserialize;

use crate::cli::{LogFormat, ServeArgs, Transport};

/// The configuration file as written (every key optional).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct File {
    listen: Option<SocketAddr>,
    data_dir: Option<PathBuf>,
    store: Option<String>,
    public_url: Option<String>,
    mcp_path: Option<String>,
    transport: Option<Transport>,
    log_format: Option<LogFormat>,
    log_level: Option<String>,
    print_token: bool,
    allowed_origins: Vec<String>,
    trust_request_id: bool,
    metrics_listen: Option<SocketAddr>,
    metrics_on_public: Option<bool>,
    telemetry: TelemetryFile,
    limits: Limits,
    rate_limit: RateLimits,
    auth: AuthFile,
    confirmation: Confirmation,
    jobs: Jobs,
    webhooks: Webhooks,
    channels: crate::channels::settings::Channels,
}

/// `[telemetry]`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct TelemetryFile {
    /// OTLP/HTTP base URL (`/v1/traces` is added); wins over the `OTEL_*` variables.
    pub(crate) otlp_endpoint: Option<String>,
}

/// `[limits]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Limits {
    /// Request body limit.
    pub(crate) max_body_bytes: usize,
    /// Most open connections.
    pub(crate) max_connections: usize,
    /// Most requests in the core at once (above: `503`).
    pub(crate) max_in_flight: usize,
    /// A request head must arrive within this.
    pub(crate) header_read_timeout_secs: u64,
    /// A connection making no progress is closed after this.
    pub(crate) idle_timeout_secs: u64,
    /// A request body must be complete this long after its head was admitted (however
    /// steadily it trickles). Default 30.
    pub(crate) body_read_timeout_secs: u64,
    /// Slowest average a request body may arrive at, in bytes per second, after a 5 s
    /// grace (`0`: no minimum). Default 1,024.
    pub(crate) min_body_rate: u64,
    /// Most bytes held in request bodies at once over all connections; past it a request
    /// is answered `503` with `Retry-After` at its head. Default 134,217,728 (128 MiB).
    pub(crate) max_body_buffer_bytes: usize,
    /// Most unsent response bytes a connection may have before no further pipelined
    /// request of it is answered or read. Default 65,536 (64 KiB).
    pub(crate) max_pending_output_bytes: usize,
    /// Most connections from one address that have not authenticated yet (`0`: no cap;
    /// behind a proxy every client shares its address). Default 256.
    pub(crate) max_unauthenticated_per_ip: usize,
    /// How long shutdown waits for in-flight work.
    pub(crate) drain_timeout_secs: u64,
    /// Worker threads of the blocking adapter.
    pub(crate) workers: usize,
    /// SQLite read connections.
    pub(crate) store_readers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_body_bytes: 2_097_152,
            max_connections: 10_000,
            max_in_flight: 256,
            header_read_timeout_secs: 10,
            idle_timeout_secs: 60,
            body_read_timeout_secs: 30,
            min_body_rate: 1024,
            max_body_buffer_bytes: 128 * 1024 * 1024,
            max_pending_output_bytes: 64 * 1024,
            max_unauthenticated_per_ip: 256,
            drain_timeout_secs: 10,
            workers: 64,
            store_readers: 4,
        }
    }
}

/// `[rate_limit]`: the per-organization and per-token GCRA limits (`limiter`).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RateLimits {
    /// Off: every request passes step 6.
    pub(crate) enabled: bool,
    /// Sustained requests per minute per organization.
    pub(crate) org_per_minute: u32,
    /// Requests an organization may send at once.
    pub(crate) org_burst: u32,
    /// Sustained requests per minute per token.
    pub(crate) token_per_minute: u32,
    /// Requests a token may send at once.
    pub(crate) token_burst: u32,
    /// Sustained requests per minute from one client address to the embedded
    /// authorization server's `/register`, `/authorize` and `/token` (open endpoints: no
    /// token or organization to count yet). One sign-in is about four of them.
    pub(crate) oauth_per_minute: u32,
    /// Such requests one address may send at once.
    pub(crate) oauth_burst: u32,
    /// Where replicas keep their buckets together (`redis://host:port/db`); `None`: in
    /// this process (one server).
    pub(crate) shared: Option<String>,
    /// The first part of every Redis key of the buckets: clusters sharing one Redis keep
    /// apart by it.
    pub(crate) shared_prefix: String,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            enabled: true,
            org_per_minute: 6000,
            org_burst: 1000,
            token_per_minute: 1200,
            token_burst: 200,
            oauth_per_minute: 60,
            oauth_burst: 30,
            shared: None,
            shared_prefix: "kobana-dunning".into(),
        }
    }
}

/// `[auth]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct AuthFile {
    issuer: Option<String>,
    jwks_file: Option<PathBuf>,
    jwks_url: Option<String>,
    jwks_refresh_secs: u64,
    dev_key: Option<bool>,
    authorization_servers: Option<Vec<String>>,
    leeway_secs: u64,
    require_at_jwt: bool,
    /// Longest token lifetime accepted (`exp` past `iat`), default 86400 (24 h): a token
    /// minted with a far-future `exp` is refused rather than trusted forever.
    max_token_lifetime_secs: u64,
    token_cache_size: usize,
    /// The claims read as the person, the organization and the scopes.
    subject_claim: String,
    org_claim: String,
    scope_claim: String,
    /// More `aud` values accepted for each audience (Entra ID v2: the API's client id).
    mcp_audience_aliases: Vec<String>,
    api_audience_aliases: Vec<String>,
}

impl Default for AuthFile {
    fn default() -> Self {
        Self {
            issuer: None,
            jwks_file: None,
            jwks_url: None,
            jwks_refresh_secs: 300,
            dev_key: None,
            authorization_servers: None,
            leeway_secs: dunning_core::jwt::LEEWAY_SECS,
            require_at_jwt: true,
            max_token_lifetime_secs: dunning_core::jwt::MAX_TOKEN_LIFETIME_SECS,
            token_cache_size: 10_000,
            subject_claim: "sub".into(),
            org_claim: "org".into(),
            scope_claim: "scope".into(),
            mcp_audience_aliases: Vec::new(),
            api_audience_aliases: Vec::new(),
        }
    }
}

/// Claims whose meaning the verifier fixes: none may be read as the person, the
/// organization or the scopes.
const RESERVED_CLAIMS: [&str; 5] = ["iss", "aud", "exp", "nbf", "iat"];

/// The claim names of `[auth]`, checked: each a non-empty name of at most 128 bytes, not
/// a reserved claim, the three distinct; other than the defaults only when development
/// tokens (which carry `sub`, `org`, `scope`) are not trusted.
fn claim_names(a: &AuthFile, dev_key: bool) -> Result<ClaimNames, String> {
    let names = ClaimNames {
        subject: a.subject_claim.clone(),
        organization: a.org_claim.clone(),
        scope: a.scope_claim.clone(),
    };
    let keyed = [
        ("subject_claim", &names.subject),
        ("org_claim", &names.organization),
        ("scope_claim", &names.scope),
    ];
    for (key, name) in keyed {
        if name.is_empty() || name.len() > 128 || RESERVED_CLAIMS.contains(&name.as_str()) {
            return Err(format!(
                "[auth] {key} {name:?}: a claim name of 1 to 128 bytes, not one of {RESERVED_CLAIMS:?}"
            ));
        }
    }
    if names.subject == names.organization
        || names.subject == names.scope
        || names.organization == names.scope
    {
        return Err(
            "[auth] subject_claim, org_claim and scope_claim: three different claims".into(),
        );
    }
    if dev_key && names != ClaimNames::default() {
        return Err(
            "[auth] subject_claim, org_claim, scope_claim apply to every token, and development \
             tokens carry sub, org and scope: set dev_key = false with them"
                .into(),
        );
    }
    let both = a
        .mcp_audience_aliases
        .iter()
        .find(|m| a.api_audience_aliases.contains(m));
    if let Some(alias) = both {
        return Err(format!(
            "[auth] {alias:?} is in both mcp_audience_aliases and api_audience_aliases: a token \
             for one audience would be accepted by the other"
        ));
    }
    if let Some(empty) = a
        .mcp_audience_aliases
        .iter()
        .chain(&a.api_audience_aliases)
        .find(|x| x.trim().is_empty())
    {
        return Err(format!("[auth] audience alias {empty:?}: empty"));
    }
    Ok(names)
}

/// `[confirmation]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Confirmation {
    /// Lifetime of a `requestState`.
    pub(crate) ttl_secs: u64,
    /// Sealing keys, first seals.
    pub(crate) keys: Vec<StateKeyFile>,
}

impl Default for Confirmation {
    fn default() -> Self {
        Self {
            ttl_secs: 300,
            keys: Vec::new(),
        }
    }
}

/// One `requestState` key: inline base64 `secret`, or a `file` holding the raw bytes.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateKeyFile {
    /// Key id (no dots).
    pub(crate) id: String,
    /// The secret, base64 (standard or URL-safe).
    pub(crate) secret: Option<String>,
    /// A file holding the secret bytes.
    pub(crate) file: Option<PathBuf>,
}

/// `[jobs]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Jobs {
    /// Idempotency sweep period.
    pub(crate) sweep_interval_secs: u64,
    /// Ruler engine period.
    pub(crate) engine_interval_secs: u64,
}

impl Default for Jobs {
    fn default() -> Self {
        Self {
            sweep_interval_secs: 3600,
            engine_interval_secs: 60,
        }
    }
}

/// How webhook deliveries leave (or do not leave) the machine.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum WebhookDriver {
    /// Record every request and answer 200 (development, demos, tests).
    #[default]
    Record,
    /// POST for real (`ureq`, `https` through rustls: `crate::outbound::webhook`).
    Http,
}

/// `[webhooks]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Webhooks {
    /// Which driver delivers.
    pub(crate) driver: WebhookDriver,
    /// Whether receivers on loopback and private networks are allowed (`http` driver).
    pub(crate) allow_private_addresses: bool,
    /// Connect timeout.
    pub(crate) connect_timeout_secs: u64,
    /// Whole-exchange timeout.
    pub(crate) timeout_secs: u64,
}

impl Default for Webhooks {
    fn default() -> Self {
        Self {
            driver: WebhookDriver::Record,
            allow_private_addresses: false,
            connect_timeout_secs: 3,
            timeout_secs: 10,
        }
    }
}

/// Where verification keys come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JwksSource {
    /// A JWKS document on disk (read at start).
    File(PathBuf),
    /// A JWKS URL (fetched at start, refreshed periodically).
    Url(String),
}

/// `[auth]` resolved.
#[derive(Clone, Debug)]
pub(crate) struct Auth {
    /// Configured issuer (`None`: the public URL, development).
    pub(crate) issuer: Option<String>,
    /// Configured JWKS.
    pub(crate) jwks: Option<JwksSource>,
    /// JWKS refresh period.
    pub(crate) jwks_refresh: Duration,
    /// Whether the data dir's development key is trusted.
    pub(crate) dev_key: bool,
    /// Issuers listed in the protected-resource metadata (`None`: the issuer).
    pub(crate) authorization_servers: Option<Vec<String>>,
    /// Clock skew tolerated.
    pub(crate) leeway_secs: u64,
    /// Require `typ: at+jwt`.
    pub(crate) require_at_jwt: bool,
    /// Longest token lifetime accepted (`exp` past `iat`), in seconds; default 86400.
    pub(crate) max_token_lifetime_secs: u64,
    /// Verified-token cache capacity.
    pub(crate) token_cache_size: usize,
    /// The claims read as the person, the organization and the scopes.
    pub(crate) claims: ClaimNames,
    /// More `aud` values accepted for MCP tokens.
    pub(crate) mcp_audience_aliases: Vec<String>,
    /// More `aud` values accepted for REST API tokens.
    pub(crate) api_audience_aliases: Vec<String>,
}

/// Everything `serve` runs with.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    /// Listen address.
    pub(crate) listen: SocketAddr,
    /// Data directory.
    pub(crate) data_dir: PathBuf,
    /// PostgreSQL URL of the store (`None`: SQLite in the data directory).
    pub(crate) store: Option<String>,
    /// Public base URL (`None`: `http://<bound address>`).
    pub(crate) public_url: Option<String>,
    /// MCP endpoint path.
    pub(crate) mcp_path: String,
    /// Network adapter.
    pub(crate) transport: Transport,
    /// Log format.
    pub(crate) log_format: LogFormat,
    /// `--log-level`, which wins over `RUST_LOG`.
    pub(crate) log_level: Option<String>,
    /// The file's `log_level`, under `RUST_LOG`.
    pub(crate) file_log_level: Option<String>,
    /// Whether the JSON startup event carries the development token.
    pub(crate) print_token: bool,
    /// Extra allowed origins.
    pub(crate) allowed_origins: Vec<String>,
    /// Echo a trusted proxy's `X-Request-Id`.
    pub(crate) trust_request_id: bool,
    /// The separate address serving `/metrics` only.
    pub(crate) metrics_listen: Option<SocketAddr>,
    /// Whether the public listener serves `/metrics` (default: without `metrics_listen`).
    pub(crate) metrics_on_public: bool,
    /// The OTLP/HTTP base URL of the config file.
    pub(crate) otlp_endpoint: Option<String>,
    /// Caps and timeouts.
    pub(crate) limits: Limits,
    /// Rate limits.
    pub(crate) rate_limit: RateLimits,
    /// Authentication.
    pub(crate) auth: Auth,
    /// Confirmation state.
    pub(crate) confirmation: Confirmation,
    /// Background jobs.
    pub(crate) jobs: Jobs,
    /// Webhook delivery.
    pub(crate) webhooks: Webhooks,
    /// Messages to debtors.
    pub(crate) channels: crate::channels::settings::Channels,
}

impl Settings {
    /// Reads the config file (if any) and lays the flags over it.
    pub(crate) fn load(args: &ServeArgs) -> Result<Self, String> {
        let file = match &args.config {
            Some(path) => parse_file(path)?,
            None => File::default(),
        };
        Self::merge(file, args)
    }

    fn merge(file: File, args: &ServeArgs) -> Result<Self, String> {
        let mcp_path = file.mcp_path.unwrap_or_else(|| "/".into());
        if !mcp_path.starts_with('/') || mcp_path.contains(['?', '#', ' ']) {
            return Err(format!("mcp_path {mcp_path:?}: must be an absolute path"));
        }
        let public_url = args
            .public_url
            .clone()
            .or(file.public_url)
            .map(|u| u.trim_end_matches('/').to_owned());
        if let Some(u) = &public_url {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(format!("public_url {u:?}: must be an http(s) URL"));
            }
        }
        let store = args.store.clone().or(file.store);
        if let Some(u) = &store {
            if !(u.starts_with("postgres://") || u.starts_with("postgresql://")) {
                return Err(
                    "store: must be a postgres:// URL (or absent, for SQLite in the data dir)"
                        .into(),
                );
            }
        }
        let mut a = file.auth;
        let jwks = match (a.jwks_file.take(), a.jwks_url.take()) {
            (Some(_), Some(_)) => return Err("[auth]: jwks_file and jwks_url are exclusive".into()),
            (Some(f), None) => Some(JwksSource::File(f)),
            (None, Some(u)) => Some(JwksSource::Url(u)),
            (None, None) => None,
        };
        if jwks.is_some() && a.issuer.is_none() {
            return Err("[auth]: a JWKS needs its issuer (auth.issuer)".into());
        }
        let dev_key = a.dev_key.unwrap_or_else(|| jwks.is_none());
        if !dev_key && jwks.is_none() {
            return Err("[auth]: dev_key = false needs jwks_file or jwks_url".into());
        }
        let claims = claim_names(&a, dev_key)?;
        let rl = &file.rate_limit;
        if rl.enabled
            && [
                rl.org_per_minute,
                rl.org_burst,
                rl.token_per_minute,
                rl.token_burst,
                rl.oauth_per_minute,
                rl.oauth_burst,
            ]
            .contains(&0)
        {
            return Err("[rate_limit]: rates and bursts must be positive".into());
        }
        for k in &file.confirmation.keys {
            if k.id.is_empty() || k.id.contains('.') {
                return Err(format!(
                    "[confirmation] key id {:?}: non-empty, no dots",
                    k.id
                ));
            }
            if k.secret.is_some() == k.file.is_some() {
                return Err(format!(
                    "[confirmation] key {:?}: give exactly one of secret, file",
                    k.id
                ));
            }
        }
        // An attempt must end well inside its claim, or the outbox worker could take the
        // same delivery again and post it twice (a claim lasts `CLAIM_MS`).
        let w = &file.webhooks;
        let most = dunning_domain::ops::webhooks::CLAIM_MS / 2000;
        if !(1..=most).contains(&w.timeout_secs)
            || !(1..=w.timeout_secs).contains(&w.connect_timeout_secs)
        {
            return Err(format!(
                "[webhooks]: timeout_secs from 1 to {most}, connect_timeout_secs from 1 to timeout_secs"
            ));
        }
        file.channels.check()?;
        if let Some(u) = &file.telemetry.otlp_endpoint {
            if !(u.starts_with("http://") || u.starts_with("https://")) {
                return Err(format!(
                    "[telemetry] otlp_endpoint {u:?}: must be an http(s) URL (OTLP over HTTP)"
                ));
            }
        }
        let metrics_listen = args.metrics_listen.or(file.metrics_listen);
        Ok(Self {
            metrics_on_public: file
                .metrics_on_public
                .unwrap_or_else(|| metrics_listen.is_none()),
            metrics_listen,
            otlp_endpoint: file.telemetry.otlp_endpoint,
            listen: args
                .listen
                .or(file.listen)
                .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
            data_dir: args
                .data_dir
                .clone()
                .or(file.data_dir)
                .unwrap_or_else(|| PathBuf::from("./data")),
            store,
            public_url,
            mcp_path,
            transport: args
                .transport
                .or(file.transport)
                .unwrap_or(Transport::Tokio),
            log_format: args
                .log_format
                .or(file.log_format)
                .unwrap_or(LogFormat::Text),
            log_level: args.log_level.clone(),
            file_log_level: file.log_level,
            print_token: args.print_token || file.print_token,
            allowed_origins: file.allowed_origins,
            trust_request_id: file.trust_request_id,
            limits: file.limits,
            rate_limit: file.rate_limit,
            auth: Auth {
                issuer: a.issuer,
                jwks,
                jwks_refresh: Duration::from_secs(a.jwks_refresh_secs.max(10)),
                dev_key,
                authorization_servers: a.authorization_servers,
                leeway_secs: a.leeway_secs,
                require_at_jwt: a.require_at_jwt,
                max_token_lifetime_secs: a.max_token_lifetime_secs,
                token_cache_size: a.token_cache_size,
                claims,
                mcp_audience_aliases: a.mcp_audience_aliases,
                api_audience_aliases: a.api_audience_aliases,
            },
            confirmation: file.confirmation,
            jobs: file.jobs,
            webhooks: file.webhooks,
            channels: file.channels,
        })
    }
}

/// The `store` key of the configuration file at `path` (the whole file is checked, as
/// `serve --config` checks it): where `token` and `demo` read the password of a store
/// `serve` took from that file.
pub(crate) fn store_in_file(path: &Path) -> Result<Option<String>, String> {
    Ok(parse_file(path)?.store)
}

/// Parses a configuration file.
fn parse_file(path: &Path) -> Result<File, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServeArgs {
        ServeArgs {
            listen: None,
            data_dir: None,
            store: None,
            public_url: None,
            transport: None,
            config: None,
            log_format: None,
            log_level: None,
            metrics_listen: None,
            print_token: false,
            clock: crate::cli::ClockArg { clock: None },
        }
    }

    #[test]
    fn metrics_stay_on_the_public_listener_only_without_metrics_listen() {
        let s = Settings::merge(File::default(), &args()).unwrap();
        assert_eq!((s.metrics_listen, s.metrics_on_public), (None, true));
        let file: File = toml::from_str("metrics_listen = \"127.0.0.1:9090\"").unwrap();
        let s = Settings::merge(file, &args()).unwrap();
        assert_eq!(s.metrics_listen.map(|a| a.port()), Some(9090));
        assert!(
            !s.metrics_on_public,
            "off the public listener once it has its own"
        );
        let file: File =
            toml::from_str("metrics_listen = \"127.0.0.1:9090\"\nmetrics_on_public = true")
                .unwrap();
        assert!(Settings::merge(file, &args()).unwrap().metrics_on_public);
        let file: File = toml::from_str("metrics_on_public = false").unwrap();
        assert!(!Settings::merge(file, &args()).unwrap().metrics_on_public);
        let mut a = args();
        a.metrics_listen = Some(SocketAddr::from(([127, 0, 0, 1], 9191)));
        let file: File = toml::from_str("metrics_listen = \"127.0.0.1:9090\"").unwrap();
        assert_eq!(
            Settings::merge(file, &a)
                .unwrap()
                .metrics_listen
                .map(|a| a.port()),
            Some(9191),
            "the flag wins"
        );
        let file: File = toml::from_str("[telemetry]\notlp_endpoint = \"grpc://c:4317\"").unwrap();
        assert!(Settings::merge(file, &args()).is_err());
        assert!(toml::from_str::<File>("[telemetry]\nendpoint = \"x\"").is_err());
    }

    #[test]
    fn defaults() {
        let s = Settings::merge(File::default(), &args()).unwrap();
        assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
        assert_eq!(s.mcp_path, "/");
        assert_eq!(s.transport, Transport::Tokio);
        assert!(s.auth.dev_key);
        assert_eq!(s.rate_limit.org_per_minute, 6000);
        assert_eq!(s.rate_limit.token_burst, 200);
        assert_eq!(s.limits.max_body_bytes, 2_097_152);
        assert_eq!(
            s.webhooks.driver,
            WebhookDriver::Record,
            "nothing leaves by default"
        );
        assert!(!s.webhooks.allow_private_addresses);
    }

    #[test]
    fn hostile_load_limits_default_to_the_runtime_s_and_parse() {
        let d = dunning_runtime::Options::default();
        let l = Limits::default();
        assert_eq!(l.body_read_timeout_secs, d.body_read_timeout.as_secs());
        assert_eq!(l.min_body_rate, d.min_body_rate);
        assert_eq!(l.max_body_buffer_bytes, d.max_body_buffer);
        assert_eq!(l.max_pending_output_bytes, d.max_pending_output);
        assert_eq!(l.max_unauthenticated_per_ip, d.max_unauthenticated_per_ip);
        let file: File = toml::from_str(
            "[limits]\nbody_read_timeout_secs = 5\nmin_body_rate = 0\n\
             max_body_buffer_bytes = 1000\nmax_pending_output_bytes = 10\n\
             max_unauthenticated_per_ip = 0\n",
        )
        .unwrap();
        let s = Settings::merge(file, &args()).unwrap();
        assert_eq!(s.limits.body_read_timeout_secs, 5);
        assert_eq!(s.limits.min_body_rate, 0);
        assert_eq!(s.limits.max_body_buffer_bytes, 1000);
        assert_eq!(s.limits.max_pending_output_bytes, 10);
        assert_eq!(s.limits.max_unauthenticated_per_ip, 0);
    }

    #[test]
    fn flags_win() {
        let file: File = toml::from_str(
            "listen = \"127.0.0.1:9000\"\ntransport = \"mio\"\npublic_url = \"https://a.example\"\n\
             [rate_limit]\ntoken_per_minute = 5\ntoken_burst = 2\n",
        )
        .unwrap();
        let mut a = args();
        a.transport = Some(Transport::Blocking);
        let s = Settings::merge(file, &a).unwrap();
        assert_eq!(s.listen.port(), 9000);
        assert_eq!(s.transport, Transport::Blocking);
        assert_eq!(s.public_url.as_deref(), Some("https://a.example"));
        assert_eq!(s.rate_limit.token_per_minute, 5);
        assert_eq!(s.rate_limit.org_per_minute, 6000);
        assert_eq!(s.store, None, "SQLite in the data dir by default");
        // The store: the file's, unless the flag names another.
        let file: File = toml::from_str("store = \"postgres://a@h/one\"").unwrap();
        let s = Settings::merge(file, &args()).unwrap();
        assert_eq!(s.store.as_deref(), Some("postgres://a@h/one"));
        let file: File = toml::from_str("store = \"postgres://a@h/one\"").unwrap();
        let mut a = args();
        a.store = Some("postgresql://b@h/two".into());
        let s = Settings::merge(file, &a).unwrap();
        assert_eq!(s.store.as_deref(), Some("postgresql://b@h/two"));
    }

    #[test]
    fn claim_names_and_audience_aliases() {
        let jwks = "[auth]\nissuer = \"https://i\"\njwks_file = \"/j\"\n";
        let merge = |extra: &str| {
            let file: File = toml::from_str(&format!("{jwks}{extra}")).unwrap();
            Settings::merge(file, &args())
        };
        let s = merge("").unwrap();
        assert_eq!(s.auth.claims, ClaimNames::default());
        let s = merge(
            "subject_claim = \"email\"\norg_claim = \"extn.org\"\nscope_claim = \"scp\"\n\
             mcp_audience_aliases = [\"6e74172b\"]\n",
        )
        .unwrap();
        assert_eq!(
            (
                s.auth.claims.subject.as_str(),
                s.auth.claims.organization.as_str(),
                s.auth.claims.scope.as_str()
            ),
            ("email", "extn.org", "scp")
        );
        assert_eq!(s.auth.mcp_audience_aliases, ["6e74172b"]);
        for (bad, says) in [
            ("org_claim = \"\"\n", "1 to 128 bytes"),
            ("scope_claim = \"aud\"\n", "not one of"),
            ("org_claim = \"scope\"\n", "three different"),
            ("subject_claim = \"org\"\n", "three different"),
            ("scope_claim = \"scp\"\ndev_key = true\n", "dev_key = false"),
            (
                "mcp_audience_aliases = [\"x\"]\napi_audience_aliases = [\"x\"]\n",
                "both",
            ),
            ("api_audience_aliases = [\" \"]\n", "empty"),
        ] {
            let e = merge(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // The development default keeps the development tokens' claims.
        let file: File = toml::from_str("[auth]\nscope_claim = \"scp\"").unwrap();
        assert!(Settings::merge(file, &args()).is_err());
    }

    #[test]
    fn refusals() {
        assert!(toml::from_str::<File>("lissten = \"x\"").is_err());
        assert!(toml::from_str::<File>("[auth]\njwks = \"x\"").is_err());
        assert!(toml::from_str::<File>("[webhooks]\ndriver = \"smtp\"").is_err());
        assert!(toml::from_str::<File>("[webhooks]\nallow_private = true").is_err());
        let bad = [
            "[auth]\njwks_url = \"https://a/jwks\"",
            "[auth]\ndev_key = false",
            "[auth]\nissuer = \"i\"\njwks_url = \"u\"\njwks_file = \"f\"",
            "mcp_path = \"mcp\"",
            "public_url = \"ftp://x\"",
            "[rate_limit]\ntoken_burst = 0",
            "[confirmation]\nkeys = [{ id = \"a.b\", secret = \"x\" }]",
            "[confirmation]\nkeys = [{ id = \"a\" }]",
            "[webhooks]\ntimeout_secs = 61",
            "[webhooks]\ntimeout_secs = 0",
            "[webhooks]\nconnect_timeout_secs = 11",
            "store = \"mysql://x\"",
            "store = \"/var/lib/dunning.sqlite3\"",
        ];
        for text in bad {
            let file: File = toml::from_str(text).unwrap();
            assert!(Settings::merge(file, &args()).is_err(), "{text}");
        }
        let file: File =
            toml::from_str("[auth]\nissuer = \"https://i\"\njwks_file = \"/j\"").unwrap();
        let s = Settings::merge(file, &args()).unwrap();
        assert!(!s.auth.dev_key);
        assert_eq!(s.auth.jwks, Some(JwksSource::File("/j".into())));
    }
}
