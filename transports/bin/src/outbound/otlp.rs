//! The OpenTelemetry exporter's HTTP client ([`crate::telemetry::otel`] sets up the
//! exporter): the `ureq` the binary already has, so no second HTTP stack and nothing tied
//! to a tokio runtime; the SDK's batch thread drives it, so a blocking post is fine.

use std::time::Duration;

use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};

/// Longest answer of a collector read (it is discarded but for its status).
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The OTLP exporter's HTTP client: one blocking `ureq` request per export.
#[derive(Debug)]
pub(crate) struct UreqClient(ureq::Agent);

impl UreqClient {
    /// A client whose every post is bounded to 10 s; a non-`2xx` is an answer, not an error.
    pub(crate) fn new() -> Self {
        Self(
            ureq::Agent::config_builder()
                .timeout_global(Some(Duration::from_secs(10)))
                .http_status_as_error(false)
                .build()
                .into(),
        )
    }
}

#[async_trait::async_trait]
impl HttpClient for UreqClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let mut req = self.0.post(parts.uri.to_string());
        for (name, value) in &parts.headers {
            if let Ok(v) = value.to_str() {
                req = req.header(name.as_str(), v);
            }
        }
        let mut answer = req.send(&body[..])?;
        let status = answer.status().as_u16();
        let bytes = answer
            .body_mut()
            .with_config()
            .limit(MAX_ANSWER_BYTES)
            .read_to_vec()?;
        Ok(Response::builder()
            .status(status)
            .body(Bytes::from(bytes))?)
    }
}
