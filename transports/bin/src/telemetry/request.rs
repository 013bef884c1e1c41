//! One request, seen by the adapters' [`Observer`]: its span, its series and its log line
//! (product spec §17).
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
//! templates and REST routes — and anything else is `other`: a client cannot grow the
//! series without bound, nor write into the logs. Tokens and argument values never get
//! here ([`RequestLog`] holds neither); the organization is logged, never a label.

use std::cell::RefCell;
use std::collections::HashSet;
use std::time::Duration;

use dunning_core::{Catalog, Endpoint, Era, RequestLog};
use dunning_runtime::{CloseReason, Observer};
use metrics::{counter, gauge, histogram};
use tracing::field::Empty;
use tracing::span::EnteredSpan;

use super::metrics as m;

/// The target of the request span and of the request log line.
pub(crate) const TARGET: &str = "kobana_dunning::request";

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

/// Counts, traces and logs each request: the adapters' [`Observer`].
#[derive(Debug)]
pub(crate) struct Telemetry {
    methods: HashSet<String>,
    names: HashSet<String>,
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
        Self { methods, names }
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
fn record(span: &tracing::Span, log: &RequestLog, method: &str, tool: &str, status: u16) {
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
    if !tool.is_empty() {
        span.record("gen_ai.tool.name", tool);
    }
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
        let method = Self::label(&self.methods, log.method.as_ref());
        let tool = Self::label(&self.names, log.tool.as_ref());
        let era = Self::era(log);
        let secs = elapsed.as_secs_f64();
        counter!(
            m::REQUESTS,
            "endpoint" => endpoint,
            "method" => method.clone(),
            "tool" => tool.clone(),
            "era" => era,
            "status" => status.to_string(),
            "tool_error" => log.tool_error.unwrap_or(""),
        )
        .increment(1);
        histogram!(
            m::DURATION,
            "endpoint" => endpoint,
            "method" => method.clone(),
            "tool" => tool.clone(),
        )
        .record(secs);
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
        record(&span, log, &method, &tool, status);
        drop(span);
        tracing::info!(
            target: TARGET,
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

#[cfg(test)]
mod tests {
    use dunning_core::{AuthError, Version};

    use super::*;
    use crate::telemetry::metrics::Prometheus;

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
    fn counts_and_bounds_labels() {
        let recorder = Prometheus::recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, || {
            let t = Telemetry::new(&catalog());
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
        let text = handle.render();
        assert!(
            text.contains(
                "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"other\",era=\"2026\",status=\"200\",tool_error=\"VALIDATION_ERROR\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains(
            "{endpoint=\"none\",method=\"other\",tool=\"\",era=\"\",status=\"404\",tool_error=\"\"} 1"
        ));
        assert!(text.contains(
            "dunning_request_duration_seconds_bucket{endpoint=\"mcp\",method=\"tools/call\",tool=\"other\",le=\"0.001\"} 1"
        ));
        assert!(text.contains("dunning_auth_failures_total{reason=\"expired\"} 1"));
        assert!(text.contains("dunning_requests_in_flight 0"));
        assert!(text.contains("dunning_connections_open 0"));
        assert!(text.contains("dunning_connections_closed_total{reason=\"done\"} 1"));
        assert!(!text.contains("evil"));
    }
}
