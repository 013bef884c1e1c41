//! The Prometheus side of the telemetry: the recorder behind the `metrics` facade, the
//! names of every series, and `/metrics` rendering.
//!
//! Why the `metrics` facade with `metrics-exporter-prometheus` (and not
//! `prometheus-client`): code anywhere in the binary records with one macro call
//! (`counter!(NAME, "label" => value)`) without threading a registry through every
//! constructor, `metrics-process` reports the process on the same facade, and the
//! exporter stores each series in its own atomics behind a sharded registry: no lock of
//! ours per request (the hand-written renderer took one global mutex per request). We
//! render through [`PrometheusHandle::render`] and serve it ourselves (the core's
//! `/metrics`, or [`crate::telemetry::listener`]); the exporter's own HTTP listener and
//! push gateway are left out (no hyper).
//!
//! Every label value comes from a closed set (the catalogue's names, the MCP methods,
//! the fixed lists here) and anything else is `other`, so no client can grow the number
//! of series; no organization id or other tenant data is ever a label.

use std::sync::Arc;
use std::time::Duration;

use dunning_core::Metrics;
use metrics::{counter, gauge};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Requests answered: `endpoint`, `method`, `tool`, `era`, `status`, `tool_error`.
pub(crate) const REQUESTS: &str = "dunning_requests_total";
/// Time spent in the core per request: `endpoint`, `method`, `tool`.
pub(crate) const DURATION: &str = "dunning_request_duration_seconds";
/// Requests in the core right now.
pub(crate) const IN_FLIGHT: &str = "dunning_requests_in_flight";
/// Connections open right now.
pub(crate) const CONNECTIONS_OPEN: &str = "dunning_connections_open";
/// Connections accepted.
pub(crate) const CONNECTIONS_OPENED: &str = "dunning_connections_opened_total";
/// Connections refused over the connection cap.
pub(crate) const CONNECTIONS_REFUSED: &str = "dunning_connections_refused_total";
/// Connections closed: `reason`.
pub(crate) const CONNECTIONS_CLOSED: &str = "dunning_connections_closed_total";
/// `401`s: `reason` ([`dunning_core::AuthError::kind`]).
pub(crate) const AUTH_FAILURES: &str = "dunning_auth_failures_total";
/// `429`s: `scope` (`token` or `org`, the bucket that refused).
pub(crate) const RATE_LIMITED: &str = "dunning_rate_limited_total";
/// Unix time of the last JWKS fetched (or read) successfully.
pub(crate) const JWKS_REFRESHED: &str = "dunning_jwks_last_refresh_timestamp_seconds";
/// JWKS refreshes that failed (the current keys were kept).
pub(crate) const JWKS_FAILURES: &str = "dunning_jwks_refresh_failures_total";
/// Ruler engine ticks: `outcome` (`ok`, `error`).
pub(crate) const ENGINE_TICKS: &str = "dunning_engine_ticks_total";
/// Deliveries the engine finished: `channel`, `outcome` (`sent`, `failed`, `canceled`).
pub(crate) const DELIVERIES: &str = "dunning_deliveries_total";
/// Webhook delivery attempts: `outcome` (`delivered`, `retrying`, `failed`).
pub(crate) const WEBHOOK_ATTEMPTS: &str = "dunning_webhook_attempts_total";
/// Webhook deliveries pending in the outbox.
pub(crate) const OUTBOX_PENDING: &str = "dunning_webhook_outbox_pending";
/// Age of the oldest pending webhook delivery, in seconds (0 when none).
pub(crate) const OUTBOX_OLDEST_AGE: &str = "dunning_webhook_outbox_oldest_pending_age_seconds";
/// Exports in each state: `state`.
pub(crate) const EXPORTS: &str = "dunning_exports";
/// The running version: `version`.
pub(crate) const BUILD_INFO: &str = "dunning_build_info";

/// Upper bounds of the latency histogram, in seconds.
const BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The delivery channels (`ops::deliveries::CHANNELS`), a label's closed set.
pub(crate) fn channel(c: &str) -> &'static str {
    dunning_domain::ops::deliveries::CHANNELS
        .iter()
        .copied()
        .find(|k| *k == c)
        .unwrap_or("other")
}

/// The recorder's handle and the process collector: what renders `/metrics`.
#[derive(Clone)]
pub(crate) struct Prometheus {
    handle: PrometheusHandle,
    process: Arc<metrics_process::Collector>,
}

impl std::fmt::Debug for Prometheus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Prometheus")
    }
}

impl Prometheus {
    /// A recorder with the latency buckets, not installed ([`Prometheus::install`] makes
    /// it the process's; tests use it through `metrics::with_local_recorder`).
    pub(crate) fn recorder() -> metrics_exporter_prometheus::PrometheusRecorder {
        // Only fails for an empty bucket list, which BUCKETS is not.
        match PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(DURATION.into()), &BUCKETS)
        {
            Ok(b) => b.build_recorder(),
            Err(_) => PrometheusBuilder::new().build_recorder(),
        }
    }

    /// Installs the recorder for the whole process (once: `serve` runs once per
    /// process), describes the series and starts the upkeep thread, which drains the
    /// histograms' samples every 5 s so that memory stays flat between scrapes.
    pub(crate) fn install() -> Result<Self, String> {
        let recorder = Self::recorder();
        let handle = recorder.handle();
        metrics::set_global_recorder(recorder).map_err(|e| format!("metrics recorder: {e}"))?;
        let process = Arc::new(metrics_process::Collector::default());
        process.describe();
        describe();
        let upkeep = handle.clone();
        std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_secs(5));
                    upkeep.run_upkeep();
                }
            })
            .map_err(|e| format!("metrics upkeep thread: {e}"))?;
        Ok(Self { handle, process })
    }

    /// The Prometheus exposition text, the process's figures read now.
    pub(crate) fn render(&self) -> String {
        self.process.collect();
        self.handle.render()
    }
}

impl Metrics for Prometheus {
    fn render(&self) -> String {
        Self::render(self)
    }
}

/// Help texts, and every series of a closed set registered at zero: a counter that
/// exists from the start gives `rate()` its first sample, and a dashboard its panel
/// before the first event.
pub(crate) fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        REQUESTS,
        "Requests answered, by endpoint, method, tool, era, HTTP status and tool error code."
    );
    describe_histogram!(
        DURATION,
        metrics::Unit::Seconds,
        "Time spent answering a request in the core."
    );
    describe_gauge!(IN_FLIGHT, "Requests in the core right now.");
    describe_gauge!(CONNECTIONS_OPEN, "Connections open right now.");
    describe_counter!(CONNECTIONS_OPENED, "Connections accepted.");
    describe_counter!(
        CONNECTIONS_REFUSED,
        "Connections refused over the connection cap."
    );
    describe_counter!(CONNECTIONS_CLOSED, "Connections closed, by reason.");
    describe_counter!(
        AUTH_FAILURES,
        "Requests refused 401, by the check that failed."
    );
    describe_counter!(
        RATE_LIMITED,
        "Requests refused 429, by the bucket that refused (token, org, or address: the authorization server's endpoints)."
    );
    describe_gauge!(
        JWKS_REFRESHED,
        "Unix time of the last successful JWKS fetch (or read of jwks_file)."
    );
    describe_counter!(JWKS_FAILURES, "JWKS refreshes that failed.");
    describe_counter!(ENGINE_TICKS, "Ruler engine ticks, by outcome.");
    describe_counter!(
        DELIVERIES,
        "Deliveries the engine finished, by channel and outcome."
    );
    describe_counter!(
        WEBHOOK_ATTEMPTS,
        "Webhook delivery attempts, by what the delivery became."
    );
    describe_gauge!(OUTBOX_PENDING, "Webhook deliveries pending.");
    describe_gauge!(
        OUTBOX_OLDEST_AGE,
        "Age of the oldest pending webhook delivery in seconds (0: none)."
    );
    describe_gauge!(EXPORTS, "Exports in each state.");
    describe_gauge!(BUILD_INFO, "The running version.");
    gauge!(BUILD_INFO, "version" => env!("CARGO_PKG_VERSION")).set(1.0);
    gauge!(IN_FLIGHT).set(0.0);
    gauge!(CONNECTIONS_OPEN).set(0.0);
    counter!(CONNECTIONS_OPENED).absolute(0);
    counter!(CONNECTIONS_REFUSED).absolute(0);
    for scope in ["token", "org", "address"] {
        counter!(RATE_LIMITED, "scope" => scope).absolute(0);
    }
    counter!(JWKS_FAILURES).absolute(0);
    for outcome in ["ok", "error"] {
        counter!(ENGINE_TICKS, "outcome" => outcome).absolute(0);
    }
    for ch in dunning_domain::ops::deliveries::CHANNELS {
        for outcome in ["sent", "failed", "canceled"] {
            counter!(DELIVERIES, "channel" => *ch, "outcome" => outcome).absolute(0);
        }
    }
    for outcome in ["delivered", "retrying", "failed"] {
        counter!(WEBHOOK_ATTEMPTS, "outcome" => outcome).absolute(0);
    }
    gauge!(OUTBOX_PENDING).set(0.0);
    gauge!(OUTBOX_OLDEST_AGE).set(0.0);
    for state in dunning_domain::backlog::EXPORT_STATES {
        gauge!(EXPORTS, "state" => state).set(0.0);
    }
}

/// Records a successful JWKS fetch (or read) now.
pub(crate) fn jwks_refreshed() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    gauge!(JWKS_REFRESHED).set(now.floor());
}

/// Records a failed JWKS refresh.
pub(crate) fn jwks_failed() {
    counter!(JWKS_FAILURES).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_sets_are_registered_at_zero_and_unknown_channels_are_other() {
        let recorder = Prometheus::recorder();
        let handle = recorder.handle();
        metrics::with_local_recorder(&recorder, describe);
        let text = handle.render();
        assert!(
            text.contains("dunning_rate_limited_total{scope=\"org\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("dunning_deliveries_total{channel=\"email\",outcome=\"canceled\"} 0")
        );
        assert!(text.contains("dunning_exports{state=\"queued\"} 0"));
        assert_eq!(channel("email"), "email");
        assert_eq!(channel("carrier-pigeon\"}"), "other");
    }
}
