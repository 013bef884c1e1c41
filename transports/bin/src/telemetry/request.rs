//! One request, seen by the adapters' [`Observer`]: its span, its series and its log line.
//!
//! The span. The adapters call [`Observer::request_started`] and
//! [`Observer::request_finished`] on the same thread, right around the core's synchronous
//! `handle` (or `check_head`), so the span is entered at the start and kept in a
//! thread-local until the finish: whatever the domain logs meanwhile is inside it, and
//! its duration is the core's time. It is named and attributed after the OpenTelemetry
//! semantic conventions for MCP servers (`tools/call dunning_me`, `mcp.method.name`,
//! `gen_ai.tool.name`, `gen_ai.operation.name = execute_tool`, `mcp.protocol.version`,
//! `error.type`: the JSON-RPC code, or `tool_error` for an `isError` result, with the
//! code itself in `dunning.tool_error`); [`crate::telemetry::otel`] exports it when
//! OTLP is configured. `jsonrpc.request.id` is left out: the core's
//! [`RequestLog`] does not carry the id (it would be client text in the log).
//!
//! The log line is written after the span is closed, so text logs read as they did.
//!
//! Label values come from closed sets — the MCP methods, the catalogue's tools, prompts,
//! templates and REST routes, the HTTP methods and the fixed paths — so a client cannot
//! grow the series without bound, nor write into the labels:
//!
//! - `method`: the JSON-RPC method (an unknown one: `other`) or REST route; for a fixed
//!   endpoint (well-known documents, probes, `/metrics`, `/register`, `/authorize`,
//!   `/token`) its HTTP method and path, `GET /.well-known/jwks.json` (a method outside
//!   the standard ones: `OTHER`);
//! - what the method names, in the log under its own kind: `tool` (`tools/call`, a REST
//!   route), `prompt` (`prompts/get`), `resource` (the template of `resources/read`); a
//!   name the catalogue does not have is `unknown`, and the log line (never a metric)
//!   adds the name asked for as `requested`, cut to [`REQUESTED_MAX`] characters with
//!   control and bidirectional characters replaced, so an operator sees the typo;
//! - the metrics' `tool` label carries tools only (prompts and templates are counted
//!   under their method).
//!
//! Tokens and argument values never get here ([`RequestLog`] holds neither); the
//! organization is logged, never a label.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use dunning_core::{Catalog, Endpoint, Era, RequestLog};
use dunning_runtime::{CloseReason, Observer};
use metrics::{Counter, Histogram, counter, gauge, histogram};
use tracing::field::Empty;
use tracing::span::EnteredSpan;

use super::metrics as m;

/// The target of the request span and of the request log line.
pub(crate) const TARGET: &str = "kobana_dunning::request";

/// Longest requested name a log line shows, in characters.
const REQUESTED_MAX: usize = 64;

/// HTTP methods named in a fixed endpoint's label; any other is `OTHER`.
const HTTP_METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

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

thread_local! {
    /// The span of the request this thread is handling (see the module docs).
    static SPAN: RefCell<Option<EnteredSpan>> = const { RefCell::new(None) };
}

/// Series handles kept before the map is cleared (the labels come from closed sets, so it
/// is never reached in practice; the bound holds whatever the core's statuses become).
const SERIES_KEPT: usize = 4096;

/// Counts, traces and logs each request: the adapters' [`Observer`].
#[derive(Debug)]
pub(crate) struct Telemetry {
    methods: HashSet<String>,
    tools: HashSet<String>,
    prompts: HashSet<String>,
    templates: HashSet<String>,
    /// The request counter and duration histogram of each label set met so far. Looking
    /// a series up in the recorder builds its key and compares every label (6 % of a
    /// `server/discover`); a handle found here is one hash of the labels.
    series: Mutex<HashMap<Series, (Counter, Histogram)>>,
}

/// The labels of [`m::REQUESTS`] (those of [`m::DURATION`] are the first three).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Series {
    endpoint: &'static str,
    method: String,
    tool: String,
    era: &'static str,
    status: u16,
    tool_error: &'static str,
}

impl Series {
    /// Registers the series' counter and histogram with the recorder.
    fn register(&self) -> (Counter, Histogram) {
        let counter = counter!(
            m::REQUESTS,
            "endpoint" => self.endpoint,
            "method" => self.method.clone(),
            "tool" => self.tool.clone(),
            "era" => self.era,
            "status" => self.status.to_string(),
            "tool_error" => self.tool_error,
        );
        let histogram = histogram!(
            m::DURATION,
            "endpoint" => self.endpoint,
            "method" => self.method.clone(),
            "tool" => self.tool.clone(),
        );
        (counter, histogram)
    }
}

/// What a request's method names, by kind (see the module docs).
#[derive(Debug, Default, PartialEq, Eq)]
struct Named {
    /// The log field: `tool`, `prompt` or `resource` (empty: nothing named).
    kind: &'static str,
    /// The catalogue's name, or `unknown`.
    label: String,
    /// The name asked for, shown (cut and cleaned), when the catalogue has none such.
    requested: Option<String>,
}

impl Telemetry {
    /// Telemetry whose labels are the methods and names of `catalog`.
    pub(crate) fn new(catalog: &Catalog) -> Self {
        let mut methods: HashSet<String> = METHODS.iter().map(|m| (*m).to_owned()).collect();
        let mut tools = HashSet::new();
        for t in &catalog.tools {
            tools.insert(t.name.clone());
            if let Some(r) = &t.route {
                methods.insert(format!("{} {}", r.method, r.path));
            }
        }
        let prompts = catalog.prompts.iter().map(|p| p.name.clone()).collect();
        let templates = catalog
            .templates
            .iter()
            .map(|t| t.uri_template.clone())
            .collect();
        Self {
            methods,
            tools,
            prompts,
            templates,
            series: Mutex::new(HashMap::new()),
        }
    }

    /// The handles of `series`, registered the first time it is met.
    fn handles(&self, series: Series) -> (Counter, Histogram) {
        let mut kept = self
            .series
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(h) = kept.get(&series) {
            return h.clone();
        }
        if kept.len() >= SERIES_KEPT {
            kept.clear();
        }
        let h = series.register();
        kept.insert(series, h.clone());
        h
    }

    /// The `method` label: the JSON-RPC method or REST route from the closed set
    /// (`other` past it), or a fixed endpoint's HTTP method and path.
    fn method(&self, log: &RequestLog) -> String {
        let Some(m) = log.method.as_ref() else {
            return String::new();
        };
        match log.endpoint {
            None | Some(Endpoint::Mcp | Endpoint::Rest) => {
                if self.methods.contains(m) {
                    m.clone()
                } else {
                    "other".into()
                }
            }
            // The path is one routing accepted (`RequestLog::at`); the method is bounded.
            Some(_) => match m.split_once(' ') {
                Some((verb, path)) => {
                    let verb = HTTP_METHODS
                        .iter()
                        .find(|v| **v == verb)
                        .unwrap_or(&"OTHER");
                    format!("{verb} {path}")
                }
                None => "other".into(),
            },
        }
    }

    /// What `method` (a label) names: a tool, a prompt or a resource template.
    fn named(&self, log: &RequestLog, method: &str) -> Named {
        let Some(name) = log.tool.as_ref() else {
            return Named::default();
        };
        let (kind, set) = match method {
            "prompts/get" => ("prompt", &self.prompts),
            "resources/read" => ("resource", &self.templates),
            _ => ("tool", &self.tools),
        };
        if set.contains(name) {
            Named {
                kind,
                label: name.clone(),
                requested: None,
            }
        } else {
            Named {
                kind,
                label: "unknown".into(),
                requested: Some(shown(name)),
            }
        }
    }

    fn era(log: &RequestLog) -> &'static str {
        match log.version.map(|v| v.era()) {
            Some(Era::Modern) => "2026",
            Some(Era::Legacy) => "2025",
            None => "",
        }
    }
}

/// The span of one request, its fields still empty.
fn span(request_id: &str) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = "request",
        otel.kind = "server",
        otel.status_code = Empty,
        request_id,
        mcp.method.name = Empty,
        mcp.protocol.version = Empty,
        gen_ai.tool.name = Empty,
        gen_ai.prompt.name = Empty,
        gen_ai.operation.name = Empty,
        error.type = Empty,
        rpc.response.status_code = Empty,
        http.response.status_code = Empty,
        dunning.endpoint = Empty,
        dunning.tool_error = Empty,
    )
}

/// Names the OpenTelemetry span once the method is known: recording `otel.name` only
/// works before the span is entered (`tracing-opentelemetry` builds the span then), so
/// the started span is renamed through its context (a no-op without OTLP).
fn rename(span: &tracing::Span, name: String) {
    use opentelemetry::trace::TraceContextExt as _;
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    span.context().span().update_name(name);
}

/// Fills the span's fields from what the core answered.
fn record(span: &tracing::Span, log: &RequestLog, method: &str, named: &Named, status: u16) {
    let tool = named.label.as_str();
    span.record("http.response.status_code", status);
    if let Some(e) = log.endpoint {
        span.record("dunning.endpoint", e.label());
    }
    if !method.is_empty() {
        span.record("mcp.method.name", method);
        let name = if tool.is_empty() {
            method.to_owned()
        } else {
            format!("{method} {tool}")
        };
        rename(span, name);
    } else if let Some(e) = log.endpoint {
        rename(span, e.label().to_owned());
    }
    match named.kind {
        "tool" => span.record("gen_ai.tool.name", tool),
        "prompt" => span.record("gen_ai.prompt.name", tool),
        _ => span,
    };
    if method == "tools/call" {
        span.record("gen_ai.operation.name", "execute_tool");
    }
    if let Some(v) = log.version {
        span.record("mcp.protocol.version", v.as_str());
    }
    let error = match (log.rpc_code, log.tool_error) {
        (Some(code), _) => {
            span.record("rpc.response.status_code", code);
            Some(code.to_string())
        }
        (None, Some(code)) => {
            span.record("dunning.tool_error", code);
            Some("tool_error".to_owned())
        }
        (None, None) if status >= 500 => Some(status.to_string()),
        (None, None) => None,
    };
    match error {
        Some(e) => {
            span.record("error.type", e.as_str());
            span.record("otel.status_code", "ERROR");
        }
        None => {
            span.record("otel.status_code", "OK");
        }
    }
}

/// A name a client asked for, fit for a log line: at most [`REQUESTED_MAX`] characters
/// (an ellipsis says it was cut), control and bidirectional-override characters replaced
/// by `?` (the formatter then escapes quotes and backslashes).
fn shown(name: &str) -> String {
    let clean = |c: char| {
        if c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            '?'
        } else {
            c
        }
    };
    let mut out: String = name.chars().take(REQUESTED_MAX).map(clean).collect();
    if name.chars().nth(REQUESTED_MAX).is_some() {
        out.push('…');
    }
    out
}

/// `None` for an empty label (left out of the log line).
fn some(v: &str) -> Option<&str> {
    (!v.is_empty()).then_some(v)
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
        CloseReason::Evicted => "evicted",
        _ => "other",
    }
}

impl Observer for Telemetry {
    fn connection_opened(&self) {
        gauge!(m::CONNECTIONS_OPEN).increment(1.0);
        counter!(m::CONNECTIONS_OPENED).increment(1);
    }

    fn connection_refused(&self) {
        counter!(m::CONNECTIONS_REFUSED).increment(1);
    }

    fn connection_closed(&self, reason: CloseReason) {
        gauge!(m::CONNECTIONS_OPEN).decrement(1.0);
        counter!(m::CONNECTIONS_CLOSED, "reason" => close_reason(reason)).increment(1);
    }

    fn request_started(&self, request_id: &str) {
        gauge!(m::IN_FLIGHT).increment(1.0);
        let entered = span(request_id).entered();
        // A span left by a request that never finished on this thread (cannot happen
        // with the adapters, which call both around one synchronous call) is closed.
        SPAN.with(|s| drop(s.borrow_mut().replace(entered)));
    }

    fn request_finished(&self, request_id: &str, log: &RequestLog, status: u16, elapsed: Duration) {
        gauge!(m::IN_FLIGHT).decrement(1.0);
        let endpoint = log.endpoint.map_or("none", Endpoint::label);
        let method = self.method(log);
        let named = self.named(log, &method);
        // The metrics' `tool` label: tools only.
        let tool = if named.kind == "tool" {
            named.label.clone()
        } else {
            String::new()
        };
        let era = Self::era(log);
        let secs = elapsed.as_secs_f64();
        let (requests, duration) = self.handles(Series {
            endpoint,
            method: method.clone(),
            tool,
            era,
            status,
            tool_error: log.tool_error.unwrap_or(""),
        });
        requests.increment(1);
        duration.record(secs);
        if let Some(why) = log.auth_error {
            counter!(m::AUTH_FAILURES, "reason" => why.kind()).increment(1);
        }
        // A trusted proxy's id, when the response carried that one.
        let request_id = log.request_id.as_deref().unwrap_or(request_id);
        let span = match SPAN.with(|s| s.borrow_mut().take()) {
            Some(entered) => entered.exit(),
            None => span(request_id),
        };
        if log.request_id.is_some() {
            span.record("request_id", request_id);
        }
        record(&span, log, &method, &named, status);
        drop(span);
        let of = |kind: &str| (named.kind == kind).then_some(named.label.as_str());
        tracing::info!(
            target: TARGET,
            request_id,
            method = some(&method),
            tool = of("tool"),
            prompt = of("prompt"),
            resource = of("resource"),
            requested = named.requested.as_deref(),
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

#[cfg(test)]
mod tests {
    use dunning_core::{AuthError, Version};

    use super::*;
    use crate::telemetry::metrics::Prometheus;

    /// A connection the runtime evicted at the connection cap (an unauthenticated head
    /// that never finished) is counted as such, not as "other".
    #[test]
    fn an_evicted_connection_has_its_own_close_reason() {
        assert_eq!(close_reason(CloseReason::Evicted), "evicted");
        assert_ne!(
            close_reason(CloseReason::Evicted),
            close_reason(CloseReason::Io)
        );
    }

    fn catalog() -> Catalog {
        Catalog {
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            scopes: dunning_core::ScopeNames::default(),
        }
    }

    /// What a fresh recorder renders after `f` ran with it and a new [`Telemetry`].
    fn rendered(f: impl FnOnce(&Telemetry)) -> String {
        let recorder = Prometheus::recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || f(&Telemetry::new(&catalog())));
        handle.render()
    }

    #[test]
    fn a_series_met_again_is_counted_through_its_kept_handles() {
        let text = rendered(|t| {
            let log = |method: &str| RequestLog {
                method: Some(method.into()),
                version: Some(Version::V2026_07_28),
                endpoint: Some(Endpoint::Mcp),
                ..RequestLog::default()
            };
            for (method, status) in [
                ("ping", 200),
                ("ping", 200),
                ("ping", 400),
                ("tools/list", 200),
            ] {
                t.request_started("r");
                t.request_finished("r", &log(method), status, Duration::from_micros(300));
            }
            assert_eq!(t.series.lock().unwrap().len(), 3);
        });

        for (series, n) in [
            ("method=\"ping\",tool=\"\",era=\"2026\",status=\"200\"", 2),
            ("method=\"ping\",tool=\"\",era=\"2026\",status=\"400\"", 1),
            (
                "method=\"tools/list\",tool=\"\",era=\"2026\",status=\"200\"",
                1,
            ),
        ] {
            let line =
                format!("dunning_requests_total{{endpoint=\"mcp\",{series},tool_error=\"\"}} {n}");
            assert!(text.contains(&line), "{line} in {text}");
        }
        assert!(text.contains(
            "dunning_request_duration_seconds_count{endpoint=\"mcp\",method=\"ping\",tool=\"\"} 3"
        ), "{text}");
    }

    #[test]
    fn counts_and_bounds_labels() {
        let text = rendered(|t| {
            t.connection_opened();
            t.request_started("r1");
            let log = RequestLog {
                method: Some("tools/call".into()),
                tool: Some("evil\"}\nname".into()),
                version: Some(Version::V2026_07_28),
                endpoint: Some(Endpoint::Mcp),
                tool_error: Some("VALIDATION_ERROR"),
                ..RequestLog::default()
            };
            t.request_finished("r1", &log, 200, Duration::from_micros(700));
            let log = RequestLog {
                method: Some("made/up".into()),
                ..RequestLog::default()
            };
            t.request_started("r2");
            t.request_finished("r2", &log, 404, Duration::from_millis(3));
            let log = RequestLog {
                endpoint: Some(Endpoint::Mcp),
                auth_error: Some(AuthError::Expired),
                ..RequestLog::default()
            };
            t.request_started("r3");
            t.request_finished("r3", &log, 401, Duration::from_millis(1));
            t.connection_closed(CloseReason::Done);
        });

        assert!(
            text.contains(
                "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"unknown\",era=\"2026\",status=\"200\",tool_error=\"VALIDATION_ERROR\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains(
            "{endpoint=\"none\",method=\"other\",tool=\"\",era=\"\",status=\"404\",tool_error=\"\"} 1"
        ));
        assert!(text.contains(
            "dunning_request_duration_seconds_bucket{endpoint=\"mcp\",method=\"tools/call\",tool=\"unknown\",le=\"0.001\"} 1"
        ));
        assert!(text.contains("dunning_auth_failures_total{reason=\"expired\"} 1"));
        assert!(text.contains("dunning_requests_in_flight 0"));
        assert!(text.contains("dunning_connections_open 0"));
        assert!(text.contains("dunning_connections_closed_total{reason=\"done\"} 1"));
        assert!(!text.contains("evil"));
    }

    fn named_catalog() -> Catalog {
        let mut c = catalog();
        c.prompts = vec![dunning_core::PromptDef {
            name: "overdue_triage".into(),
            title: String::new(),
            description: String::new(),
            arguments: Vec::new(),
            access: dunning_core::Access::read(),
        }];
        c
    }

    #[test]
    fn each_name_is_labelled_by_its_kind_and_unknown_ones_are_cut() {
        let t = Telemetry::new(&named_catalog());
        let log = |method: &str, name: &str| RequestLog {
            method: Some(method.into()),
            tool: Some(name.into()),
            endpoint: Some(Endpoint::Mcp),
            ..RequestLog::default()
        };
        let prompt = log("prompts/get", "overdue_triage");
        let m = t.method(&prompt);
        assert_eq!(m, "prompts/get");
        let n = t.named(&prompt, &m);
        assert_eq!(
            (n.kind, n.label.as_str(), n.requested),
            ("prompt", "overdue_triage", None)
        );
        // A prompt's name called as a tool is no tool.
        let n = t.named(&log("tools/call", "overdue_triage"), "tools/call");
        assert_eq!((n.kind, n.label.as_str()), ("tool", "unknown"));
        assert_eq!(n.requested.as_deref(), Some("overdue_triage"));
        let long = format!("x\u{202e}\n{}", "y".repeat(100));
        let n = t.named(&log("tools/call", &long), "tools/call");
        let shown = n.requested.unwrap();
        assert_eq!(shown.chars().count(), REQUESTED_MAX + 1, "{shown}");
        assert!(shown.starts_with("x??y") && shown.ends_with('…'), "{shown}");
    }

    #[test]
    fn fixed_endpoints_are_named_by_http_method_and_path() {
        let t = Telemetry::new(&catalog());
        let at = |endpoint, method: &str| RequestLog {
            method: Some(method.into()),
            endpoint: Some(endpoint),
            ..RequestLog::default()
        };
        let token = Endpoint::OAuth(dunning_core::oauth::Route::Token);
        assert_eq!(t.method(&at(token, "POST /token")), "POST /token");
        assert_eq!(t.method(&at(token, "BREW /token")), "OTHER /token");
        assert_eq!(
            t.method(&at(
                Endpoint::WellKnown,
                "GET /.well-known/oauth-protected-resource"
            )),
            "GET /.well-known/oauth-protected-resource"
        );
        // On the MCP endpoint the method is JSON-RPC's, from the closed set.
        assert_eq!(t.method(&at(Endpoint::Mcp, "GET /")), "other");
    }
}
