//! Logs, metrics and traces, in modules named after what they hold:
//!
//! - [`request`]: the adapters' observer — one span, one set of series and one log line
//!   per request;
//! - [`metrics`]: the Prometheus recorder behind the `metrics` facade, every series'
//!   name, `/metrics` rendering;
//! - [`listener`]: the separate `metrics_listen` address;
//! - [`otel`]: OTLP export of the request spans;
//! - here: the startup banner, the log filter and the subscriber.

pub(crate) mod listener;
pub(crate) mod metrics;
pub(crate) mod otel;
pub(crate) mod request;

use std::fmt::Write as _;

use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer};

use crate::cli::LogFormat;

pub(crate) use request::Telemetry;

/// A layer of the global subscriber (the log lines, the OTLP export).
pub(crate) type BoxedLayer = Box<dyn Layer<tracing_subscriber::Registry> + Send + Sync>;

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
    /// The separate metrics address, when there is one.
    pub(crate) metrics: Option<std::net::SocketAddr>,
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
            if let Some(addr) = b.metrics {
                let _ = writeln!(text, "Metrics: http://{addr}/metrics");
            }
            if let Some(token) = b.dev_token {
                let dev = dunning_domain::demo::dev_identity();
                let _ = writeln!(
                    text,
                    "Development token ({}, organization {}, MCP audience, 24 h):\n{token}",
                    dev.person, dev.org
                );
            }
            text.push_str("Ready: stop with Ctrl-C (SIGINT) or SIGTERM.\n");
            // One write, so no log line lands in the middle of it, through the log
            // thread's queue when there is one, so it comes after the lines logged before
            // it (a warning at startup, then `Ready:`).
            let _ = match LOG_WRITER.get() {
                Some(log) => std::io::Write::write_all(&mut log.clone(), text.as_bytes()),
                None => std::io::Write::write_all(&mut std::io::stderr().lock(), text.as_bytes()),
            };
        }
        LogFormat::Json => {
            let token = b.dev_token.filter(|_| b.print_token);
            let dev = dunning_domain::demo::dev_identity();
            let hint = (b.dev_token.is_some() && token.is_none()).then(|| {
                format!(
                    "kobana-dunning token --org {} --person {} (or --print-token)",
                    dev.org, dev.person
                )
            });
            tracing::info!(
                target: BANNER,
                version = env!("CARGO_PKG_VERSION"),
                listen = %b.listen,
                mcp_endpoint = %b.mcp_endpoint,
                rest_api = b.rest_api,
                metrics = b.metrics.map(|a| format!("http://{a}/metrics")),
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

/// The log thread's writer, for what goes to standard error besides the log lines (the
/// text banner), in their order.
static LOG_WRITER: std::sync::OnceLock<tracing_appender::non_blocking::NonBlocking> =
    std::sync::OnceLock::new();

/// Lines queued for the log thread before a request waits for it to catch up.
const LOG_QUEUE_LINES: usize = 64 * 1024;

/// The log thread's writer over `sink`: a queue of `lines` lines, never lossy, buffered
/// and flushed whenever the queue runs empty.
fn log_writer(
    sink: impl std::io::Write + Send + 'static,
    lines: usize,
) -> (
    tracing_appender::non_blocking::NonBlocking,
    tracing_appender::non_blocking::WorkerGuard,
) {
    tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .buffered_lines_limit(lines)
        .thread_name("dunning-log")
        .finish(std::io::BufWriter::with_capacity(64 * 1024, sink))
}

/// Installs the global `tracing` subscriber: text or JSON lines on stderr, filtered by
/// `filter` ([`log_filter`]), and the OTLP layer when given ([`otel::start`]). Each has
/// its own filter, so the log level never decides which spans are exported. The returned
/// guard flushes every queued line when dropped; `serve` holds it until it returns.
///
/// The log lines never see the request span ([`request::TARGET`]): it exists for the
/// OTLP export, the request's log line carries the same fields, and formatting each
/// field recorded into a span the log never prints cost 7 % of a `server/discover`.
/// Without the OTLP layer nobody wants the span, so it is never built.
///
/// The lines are written by a thread of their own, not by the I/O thread that answered:
/// a write to standard error per request was a system call on the request's path (15 %
/// of `server/discover`). That thread buffers what it finds queued and flushes when the
/// queue is empty, so a line reaches the file as soon as the thread runs, and a quiet
/// server's log is never behind. The queue is not lossy: when it is full, a request waits
/// for the writer rather than dropping its line (an access log with holes is worse than a
/// slower request; docs/decisions.md, "The log lines off the request's path").
pub(crate) fn init_logging(
    format: LogFormat,
    filter: EnvFilter,
    otel: Option<BoxedLayer>,
) -> tracing_appender::non_blocking::WorkerGuard {
    use tracing_subscriber::filter::{FilterExt as _, filter_fn};
    let filter = filter.and(filter_fn(|m| {
        !(m.is_span() && m.target() == request::TARGET)
    }));
    let (writer, guard) = log_writer(std::io::stderr(), LOG_QUEUE_LINES);
    let _ = LOG_WRITER.set(writer.clone());
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_target(false);
    let logs: BoxedLayer = match format {
        LogFormat::Text => fmt.with_ansi(false).with_filter(filter).boxed(),
        LogFormat::Json => fmt
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_filter(filter)
            .boxed(),
    };
    let mut layers = vec![logs];
    layers.extend(otel);
    let _ = tracing_subscriber::registry().with(layers).try_init();
    guard
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A sink slower than its writers, so the log queue fills.
    #[derive(Clone, Default)]
    struct Slow(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Slow {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            std::thread::sleep(std::time::Duration::from_micros(200));
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_log_queue_makes_the_request_wait_and_loses_no_line() {
        let sink = Slow::default();
        let (writer, guard) = log_writer(sink.clone(), 4);
        let writers: Vec<_> = (0..4)
            .map(|t| {
                let mut w = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..100 {
                        // Longer than the buffer, so the slow sink is written often.
                        let line = format!("{t} {i} {}\n", "x".repeat(2000));
                        w.write_all(line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 400);
        for t in 0..4 {
            for i in 0..100 {
                assert!(
                    text.contains(&format!("\n{t} {i} x"))
                        || text.starts_with(&format!("{t} {i} x"))
                );
            }
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
}
