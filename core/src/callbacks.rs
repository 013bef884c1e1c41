//! Routes the product serves outside the MCP endpoint and `/v1`, for callers that hold no
//! token: message providers posting delivery statuses, and debtors following an
//! unsubscribe link. The binary implements [`Callbacks`] (it holds the providers' secrets
//! and checks their signatures); the core routes to it, and bounds it the way it bounds
//! the embedded authorization server's open endpoints:
//!
//! 1. a `POST` must declare its length (`411`), at most [`MAX_BODY`] bytes (`413`), decided
//!    from the head before any body byte is read ([`Server::check_head`]);
//! 2. the complete request counts against its client address's bucket
//!    ([`crate::RateLimit::check_peer`], the one `/register` and `/token` use): past it,
//!    `429` with `Retry-After`;
//! 3. then [`Callbacks::handle`] answers.

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderName, HeaderValue, StatusCode};

use crate::dispatch::Dispatch;
use crate::env::Env;
use crate::request::Request;
use crate::response::{RequestLog, Response};
use crate::server::{Server, close_if_body, open_body_refusal};

/// Largest callback body (bytes): a provider's status batch is a few KiB.
pub const MAX_BODY: usize = 64 * 1024;

/// The binary's open routes (see the module docs).
pub trait Callbacks: Send + Sync {
    /// Whether `path` is one of its routes.
    fn serves(&self, path: &str) -> bool;
    /// The answer to a complete request on one of its routes. May block (the store).
    fn handle(&self, req: &Request<'_>, env: &Env) -> Response;
}

impl<D: Dispatch> Server<D> {
    /// Serves `callbacks`' routes (without it they are `404`).
    pub fn with_callbacks(mut self, callbacks: impl Callbacks + 'static) -> Self {
        self.callbacks = Some(Box::new(callbacks));
        self
    }

    /// Whether `path` is a callback route.
    pub(crate) fn is_callback(&self, path: &str) -> bool {
        self.callbacks.as_ref().is_some_and(|c| c.serves(path))
    }

    /// Step 1 of the module docs, from the head alone.
    pub(crate) fn callback_head(req: &Request<'_>) -> Option<Response> {
        open_body_refusal(req, MAX_BODY)
    }

    /// The answer on a callback route: steps 1 to 3 of the module docs.
    pub(crate) fn callback(&self, req: &Request<'_>, env: &Env, log: &mut RequestLog) -> Response {
        let Some(callbacks) = &self.callbacks else {
            return close_if_body(req, Response::empty(StatusCode::NOT_FOUND));
        };
        if let Some(r) = open_body_refusal(req, MAX_BODY) {
            return close_if_body(req, r);
        }
        if let Some(peer) = env.peer
            && let Err(l) = self.limiter.check_peer(peer, env.now)
        {
            let secs = l.retry_after_ms.div_ceil(1000).max(1);
            let mut r = Response::empty(StatusCode::TOO_MANY_REQUESTS);
            r.headers.push((
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ));
            r.body =
                format!("too many requests from this address; retry in {secs} s\n").into_bytes();
            for (name, value) in [
                (RETRY_AFTER, secs.to_string()),
                (HeaderName::from_static("ratelimit-policy"), l.policy),
                (HeaderName::from_static("ratelimit"), l.state),
            ] {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    r.headers.push((name, v));
                }
            }
            log.reason = Some("callback rate limit (per client address)".into());
            return r;
        }
        let mut r = callbacks.handle(req, env);
        log.method = Some(format!("{} {}", req.method, req.path()));
        log.reason = r.log.reason.take();
        r
    }
}
