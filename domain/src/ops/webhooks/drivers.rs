//! How deliveries leave: the [`WebhookDriver`] trait, what it is given and answers, and
//! the recording driver (the default). The driver that posts for real lives in the binary
//! (`transports/bin/src/webhook_http/`): sockets stay out of the domain.

use std::sync::Mutex;

use super::RESPONSE_BODY_MAX;

/// One POST to a receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRequest {
    /// Delivery id.
    pub delivery_id: String,
    /// Webhook id.
    pub webhook_id: String,
    /// Event code.
    pub event_code: String,
    /// Target URL.
    pub url: String,
    /// Verify the TLS certificate.
    pub ssl_verification: bool,
    /// Headers besides `Host`, `Content-Length` and `Connection`.
    pub headers: Vec<(String, String)>,
    /// The raw JSON body (what the signature covers).
    pub body: String,
}

impl WebhookRequest {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What came back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookResponse {
    /// HTTP status, when an answer was read.
    pub status: Option<u16>,
    /// Start of the answer's body (≤ 4 KB).
    pub body: String,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// A network or protocol failure.
    pub error: Option<String>,
}

impl WebhookResponse {
    /// Whether the receiver took it (2xx).
    pub fn is_success(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Posts webhook deliveries. Called outside any store transaction by [`tick`] and by
/// `dunning_webhooks_test` (through [`crate::Domain::webhook_driver`]).
pub trait WebhookDriver: Send + Sync {
    /// Performs one attempt.
    fn post(&self, request: &WebhookRequest) -> WebhookResponse;
}

/// The default driver: keeps every request in memory and answers with a fixed status
/// (200 unless told otherwise); nothing leaves the machine.
#[derive(Debug)]
pub struct RecordingDriver {
    pub(super) requests: Mutex<Vec<WebhookRequest>>,
    pub(super) answer: Mutex<(u16, String)>,
}

impl Default for RecordingDriver {
    fn default() -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            answer: Mutex::new((200, "recorded".into())),
        }
    }
}

impl RecordingDriver {
    /// A recorder answering 200.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<WebhookRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Answers the following requests with `status` and `body`.
    pub fn respond_with(&self, status: u16, body: &str) {
        *self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (status, body.to_owned());
    }
}

impl WebhookDriver for RecordingDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let (status, body) = self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        WebhookResponse {
            status: Some(status),
            body,
            duration_ms: 0,
            error: None,
        }
    }
}

/// At most [`RESPONSE_BODY_MAX`] bytes, cut on a character boundary, as text.
pub fn truncate_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(RESPONSE_BODY_MAX)]).into_owned();
    if text.len() <= RESPONSE_BODY_MAX {
        return text;
    }
    let mut cut = RESPONSE_BODY_MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_owned()
}
