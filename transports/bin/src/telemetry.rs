//! Logs and metrics (product spec §17): one [`Telemetry`] is the adapters' [`Observer`]
//! (it counts and logs each request) and, through [`MetricsView`], the core's
//! [`Metrics`] (it renders `/metrics` in the Prometheus text format).
//!
//! Label values come from closed sets — the MCP methods, the catalogue's tools, prompts,
//! templates and REST routes — and anything else is `other`: a client cannot grow the
//! series without bound, nor write into the logs. Tokens and argument values never get
//! here ([`RequestLog`] holds neither).

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use dunning_core::{Catalog, Era, Metrics, RequestLog};
use dunning_runtime::{CloseReason, Observer};

use tracing_subscriber::EnvFilter;

use crate::cli::LogFormat;

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// MCP methods that get their own label.
const METHODS: [&str; 14] = [
    "server/discover",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "notifications/initialized",
    "notifications/cancelled",
    "subscriptions/listen",
];

#[derive(Debug, Default)]
struct Histogram {
    counts: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// `(method, tool, era, status)`.
type Series = (String, String, &'static str, u16);

#[derive(Debug, Default)]
struct Tables {
    requests: BTreeMap<Series, u64>,
    latency: BTreeMap<String, Histogram>,
    closed: BTreeMap<&'static str, u64>,
}

/// Counters, gauges and the request log line.
#[derive(Debug)]
pub(crate) struct Telemetry {
    methods: HashSet<String>,
    names: HashSet<String>,
    in_flight: AtomicI64,
    connections: AtomicI64,
    opened: AtomicU64,
    refused: AtomicU64,
    tables: Mutex<Tables>,
}

impl Telemetry {
    /// Telemetry whose labels are the methods and names of `catalog`.
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let mut methods: HashSet<String> = METHODS.iter().map(|m| (*m).to_owned()).collect();
        let mut names = HashSet::new();
        for t in &catalog.tools {
            names.insert(t.name.clone());
            if let Some(r) = &t.route {
                methods.insert(format!("{} {}", r.method, r.path));
            }
        }
        names.extend(catalog.prompts.iter().map(|p| p.name.clone()));
        names.extend(catalog.templates.iter().map(|t| t.uri_template.clone()));
        Self {
            methods,
            names,
            in_flight: AtomicI64::new(0),
            connections: AtomicI64::new(0),
            opened: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            tables: Mutex::default(),
        }
    }

    fn label(set: &HashSet<String>, v: Option<&String>) -> String {
        match v {
            None => String::new(),
            Some(v) if set.contains(v) => v.clone(),
            Some(_) => "other".into(),
        }
    }

    fn era(log: &RequestLog) -> &'static str {
        match log.version.map(|v| v.era()) {
            Some(Era::Modern) => "2026",
            Some(Era::Legacy) => "2025",
            None => "",
        }
    }

    /// The Prometheus exposition text.
    pub(crate) fn render(&self) -> String {
        let t = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = String::with_capacity(4096);
        out.push_str(
            "# HELP dunning_requests_total Requests answered, by method, tool, era and HTTP status.\n\
             # TYPE dunning_requests_total counter\n",
        );
        for ((method, tool, era, status), n) in &t.requests {
            let _ = writeln!(
                out,
                "dunning_requests_total{{method=\"{}\",tool=\"{}\",era=\"{era}\",status=\"{status}\"}} {n}",
                escape(method),
                escape(tool)
            );
        }
        out.push_str(
            "# HELP dunning_request_duration_seconds Time spent answering a request in the core.\n\
             # TYPE dunning_request_duration_seconds histogram\n",
        );
        for (method, h) in &t.latency {
            let m = escape(method);
            let mut cumulative = 0;
            for (le, n) in BUCKETS.iter().zip(h.counts) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "dunning_request_duration_seconds_bucket{{method=\"{m}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "dunning_request_duration_seconds_bucket{{method=\"{m}\",le=\"+Inf\"}} {}\n\
                 dunning_request_duration_seconds_sum{{method=\"{m}\"}} {}\n\
                 dunning_request_duration_seconds_count{{method=\"{m}\"}} {}",
                h.count, h.sum, h.count
            );
        }
        let _ = write!(
            out,
            "# HELP dunning_requests_in_flight Requests in the core right now.\n\
             # TYPE dunning_requests_in_flight gauge\n\
             dunning_requests_in_flight {}\n\
             # HELP dunning_connections_open Connections open right now.\n\
             # TYPE dunning_connections_open gauge\n\
             dunning_connections_open {}\n\
             # HELP dunning_connections_opened_total Connections accepted.\n\
             # TYPE dunning_connections_opened_total counter\n\
             dunning_connections_opened_total {}\n\
             # HELP dunning_connections_refused_total Connections refused over the connection cap.\n\
             # TYPE dunning_connections_refused_total counter\n\
             dunning_connections_refused_total {}\n\
             # HELP dunning_connections_closed_total Connections closed, by reason.\n\
             # TYPE dunning_connections_closed_total counter\n",
            self.in_flight.load(Ordering::Relaxed).max(0),
            self.connections.load(Ordering::Relaxed).max(0),
            self.opened.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        );
        for (reason, n) in &t.closed {
            let _ = writeln!(
                out,
                "dunning_connections_closed_total{{reason=\"{reason}\"}} {n}"
            );
        }
        let _ = write!(
            out,
            "# HELP dunning_build_info The running version.\n\
             # TYPE dunning_build_info gauge\n\
             dunning_build_info{{version=\"{}\"}} 1\n",
            env!("CARGO_PKG_VERSION")
        );
        out
    }
}

/// `None` for an empty label (left out of the log line).
fn some(v: &str) -> Option<&str> {
    (!v.is_empty()).then_some(v)
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn close_reason(r: CloseReason) -> &'static str {
    match r {
        CloseReason::Done => "done",
        CloseReason::Codec => "codec",
        CloseReason::HeaderTimeout => "header_timeout",
        CloseReason::IdleTimeout => "idle_timeout",
        CloseReason::BodyTimeout => "body_timeout",
        CloseReason::Drain => "drain",
        CloseReason::Io => "io",
        CloseReason::Aborted => "aborted",
        _ => "other",
    }
}

impl Observer for Telemetry {
    fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::Relaxed);
        self.opened.fetch_add(1, Ordering::Relaxed);
    }

    fn connection_refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    fn connection_closed(&self, reason: CloseReason) {
        self.connections.fetch_sub(1, Ordering::Relaxed);
        let mut t = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
        *t.closed.entry(close_reason(reason)).or_default() += 1;
    }

    fn request_started(&self, _request_id: &str) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    fn request_finished(&self, request_id: &str, log: &RequestLog, status: u16, elapsed: Duration) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
        let method = Self::label(&self.methods, log.method.as_ref());
        let tool = Self::label(&self.names, log.tool.as_ref());
        let era = Self::era(log);
        let secs = elapsed.as_secs_f64();
        {
            let mut t = self.tables.lock().unwrap_or_else(PoisonError::into_inner);
            *t.requests
                .entry((method.clone(), tool.clone(), era, status))
                .or_default() += 1;
            let h = t.latency.entry(method.clone()).or_default();
            if let Some(i) = BUCKETS.iter().position(|le| secs <= *le) {
                h.counts[i] += 1;
            }
            h.count += 1;
            h.sum += secs;
        }
        // A trusted proxy's id, when the response carried that one.
        let request_id = log.request_id.as_deref().unwrap_or(request_id);
        tracing::info!(
            target: "kobana_dunning::request",
            request_id,
            method = some(&method),
            tool = some(&tool),
            status,
            era = some(era),
            duration_ms = (secs * 1e6).round() / 1e3,
            rpc_code = log.rpc_code,
            tool_error = log.tool_error,
            org = log.organization.as_deref(),
            reason = log.reason.as_deref(),
            "request"
        );
    }
}

/// The core's view of the telemetry: `/metrics`.
#[derive(Debug, Clone)]
pub(crate) struct MetricsView(pub(crate) Arc<Telemetry>);

impl Metrics for MetricsView {
    fn render(&self) -> String {
        self.0.render()
    }
}

/// The target of the startup event: always let through, whatever the filter says.
const BANNER: &str = "kobana_dunning::banner";

/// What the startup banner says.
pub(crate) struct Banner<'a> {
    /// The bound address.
    pub(crate) listen: std::net::SocketAddr,
    /// The MCP endpoint URL.
    pub(crate) mcp_endpoint: String,
    /// The REST API base URL.
    pub(crate) rest_api: &'a str,
    /// A development token, when the development key is trusted.
    pub(crate) dev_token: Option<&'a str>,
    /// Whether the JSON event may carry the token.
    pub(crate) print_token: bool,
}

/// Writes the startup banner on stderr (stdout stays free for a supervisor or a pipe):
/// the human text in text mode (the development token included), one JSON event in
/// JSON mode (the token only with `--print-token`: JSON logs are usually shipped to a
/// log store, and a token there is a credential anyone with access to it could use).
pub(crate) fn banner(format: LogFormat, b: &Banner<'_>) {
    match format {
        LogFormat::Text => {
            let mut text = format!(
                "kobana-dunning {} listening on {}
MCP endpoint: {}
REST API: {}
",
                env!("CARGO_PKG_VERSION"),
                b.listen,
                b.mcp_endpoint,
                b.rest_api
            );
            if let Some(token) = b.dev_token {
                let _ = writeln!(
                    text,
                    "Development token (ana@demo.example, organization demo, MCP audience, 24 h):
{token}"
                );
            }
            text.push_str("Ready: stop with Ctrl-C (SIGINT) or SIGTERM.\n");
            // One write, so no log line lands in the middle of it.
            let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes());
        }
        LogFormat::Json => {
            let token = b.dev_token.filter(|_| b.print_token);
            let hint = (b.dev_token.is_some() && token.is_none()).then_some(
                "kobana-dunning token --org demo --person ana@demo.example (or --print-token)",
            );
            tracing::info!(
                target: BANNER,
                version = env!("CARGO_PKG_VERSION"),
                listen = %b.listen,
                mcp_endpoint = %b.mcp_endpoint,
                rest_api = b.rest_api,
                dev_key = b.dev_token.is_some(),
                dev_token = token,
                mint_a_token = hint,
                "ready"
            );
        }
    }
}

/// The log filter: `--log-level` if given, else `RUST_LOG` if set and not empty, else
/// the file's `log_level`, else `info`. Each is a level or `RUST_LOG`-style directives;
/// an invalid one given by the flag or the file is a startup error, an invalid `RUST_LOG`
/// too (a typo must not silently fall back).
pub(crate) fn log_filter(
    flag: Option<&str>,
    env: Option<&str>,
    file: Option<&str>,
) -> Result<EnvFilter, String> {
    let (source, text) = match (flag, env.filter(|e| !e.trim().is_empty()), file) {
        (Some(f), _, _) => ("--log-level", f),
        (None, Some(e), _) => ("RUST_LOG", e),
        (None, None, Some(f)) => ("log_level", f),
        (None, None, None) => ("default", "info"),
    };
    let filter = EnvFilter::try_new(text).map_err(|e| format!("{source} {text:?}: {e}"))?;
    Ok(match format!("{BANNER}=info").parse() {
        Ok(always) => filter.add_directive(always),
        Err(_) => filter,
    })
}

/// Installs the global `tracing` subscriber: text or JSON lines on stderr, filtered by
/// `filter` ([`log_filter`]).
pub(crate) fn init_logging(format: LogFormat, filter: EnvFilter) {
    let builder = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(false).try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .try_init(),
    };
}

#[cfg(test)]
mod tests {
    use dunning_core::Version;

    use super::*;

    fn catalog() -> Catalog {
        Catalog {
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            scopes: dunning_core::ScopeNames::default(),
        }
    }

    #[test]
    fn the_flag_wins_over_rust_log_which_wins_over_the_file() {
        // The banner's directive is always there; the rest is what was chosen.
        let show = |f: EnvFilter| {
            let text = f.to_string();
            assert!(text.contains("kobana_dunning::banner=info"), "{text}");
            text.split(',')
                .filter(|d| !d.starts_with("kobana_dunning::banner"))
                .collect::<Vec<_>>()
                .join(",")
        };
        assert_eq!(show(log_filter(None, None, None).unwrap()), "info");
        assert_eq!(show(log_filter(None, None, Some("warn")).unwrap()), "warn");
        assert_eq!(
            show(log_filter(None, Some("debug"), Some("warn")).unwrap()),
            "debug"
        );
        assert_eq!(
            show(log_filter(None, Some(" "), Some("warn")).unwrap()),
            "warn"
        );
        assert_eq!(
            show(log_filter(Some("trace"), Some("debug"), Some("warn")).unwrap()),
            "trace"
        );
        let e = log_filter(Some("verbose=loud=yes"), None, None).unwrap_err();
        assert!(e.starts_with("--log-level"), "{e}");
    }

    #[test]
    fn counts_and_bounds_labels() {
        let t = Telemetry::new(&catalog());
        t.connection_opened();
        t.request_started("r1");
        let log = RequestLog {
            method: Some("tools/call".into()),
            tool: Some("evil\"}\nname".into()),
            version: Some(Version::V2026_07_28),
            ..RequestLog::default()
        };
        t.request_finished("r1", &log, 200, Duration::from_micros(700));
        let log = RequestLog {
            method: Some("made/up".into()),
            ..RequestLog::default()
        };
        t.request_started("r2");
        t.request_finished("r2", &log, 404, Duration::from_millis(3));
        t.connection_closed(CloseReason::Done);
        let text = t.render();
        assert!(text.contains(
            "dunning_requests_total{method=\"tools/call\",tool=\"other\",era=\"2026\",status=\"200\"} 1"
        ));
        assert!(text.contains("method=\"other\",tool=\"\",era=\"\",status=\"404\"} 1"));
        assert!(text.contains(
            "dunning_request_duration_seconds_bucket{method=\"tools/call\",le=\"0.001\"} 1"
        ));
        assert!(text.contains("dunning_request_duration_seconds_count{method=\"other\"} 1"));
        assert!(text.contains("dunning_requests_in_flight 0"));
        assert!(text.contains("dunning_connections_open 0"));
        assert!(text.contains("dunning_connections_closed_total{reason=\"done\"} 1"));
        assert!(!text.contains("evil"));
    }
}
