//! OpenTelemetry: the request spans ([`crate::telemetry::request`]) exported over OTLP
//! (HTTP, protobuf) when an endpoint is configured: `[telemetry] otlp_endpoint` in the
//! config file (a base URL, as `OTEL_EXPORTER_OTLP_ENDPOINT`: `/v1/traces` is added), or
//! the standard `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
//! variables (and `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_BSP_*`,
//! which the SDK reads itself).
//!
//! The exporter posts through [`UreqClient`] (`crate::outbound::otlp`), on the `ureq` the binary already has for
//! JWKS and webhooks: no second HTTP stack (reqwest, hyper) and nothing tied to a tokio
//! runtime. The SDK's batch processor runs on a thread of its own and drives the export
//! future with a plain executor, so a blocking post is fine there. Spans are batched
//! (flushed every 5 s by default, and at shutdown: [`Otel::shutdown`]); only the request
//! spans go (a per-layer filter), whatever the log level.

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, SpanExporter, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;

use super::BoxedLayer;
use super::request::TARGET;
use crate::outbound::otlp::UreqClient;

/// The running exporter: keep it, and [`Otel::shutdown`] it last (it flushes).
#[derive(Debug)]
pub(crate) struct Otel {
    provider: SdkTracerProvider,
}

/// Whether OTLP export is asked for: the file's endpoint, or one of the standard
/// variables set and not empty.
pub(crate) fn wanted(file_endpoint: Option<&str>) -> bool {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    file_endpoint.is_some()
        || set("OTEL_EXPORTER_OTLP_ENDPOINT")
        || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
}

/// The traces URL of a base endpoint (`http://collector:4318` →
/// `http://collector:4318/v1/traces`), as the specification builds it from
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub(crate) fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    }
}

/// Starts the exporter: the file's endpoint if given (it wins over the variables), else
/// what the SDK reads from the environment.
pub(crate) fn start(file_endpoint: Option<&str>) -> Result<(Otel, BoxedLayer), String> {
    let mut builder = SpanExporter::builder()
        .with_http()
        .with_http_client(UreqClient::new())
        .with_protocol(Protocol::HttpBinary);
    if let Some(base) = file_endpoint {
        builder = builder.with_endpoint(traces_url(base));
    }
    let exporter = builder
        .build()
        .map_err(|e| format!("[telemetry] OTLP exporter: {e}"))?;
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("kobana-dunning");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build();
    let tracer = provider.tracer("kobana-dunning");
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
        .boxed();
    Ok((Otel { provider }, layer))
}

impl Otel {
    /// Exports what is still batched and stops (bounded by the SDK's timeout).
    pub(crate) fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "OTLP exporter shutdown");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_endpoint_gets_the_traces_path_once() {
        assert_eq!(
            traces_url("http://c:4318"),
            "http://c:4318/v1/traces".to_owned()
        );
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(
            traces_url("http://c:4318/v1/traces"),
            "http://c:4318/v1/traces"
        );
    }
}
