//! A complete request owned by the codec's caller, and its borrowed core view.

use std::net::IpAddr;
use std::ops::Range;

use dunning_core::{Header, Request};

/// A complete request (head and de-framed body), owned.
///
/// Stored compactly: method, target and header names share one string, header values one
/// byte buffer. Borrow it as a [`dunning_core::Request`] with [`OwnedRequest::as_core`]
/// (or [`OwnedRequest::with_core`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedRequest {
    /// Method, target and header names, concatenated.
    text: String,
    method: Range<usize>,
    target: Range<usize>,
    /// (name range in `text`, value range in `values`), in order of arrival.
    headers: Vec<(Range<usize>, Range<usize>)>,
    values: Vec<u8>,
    body: Vec<u8>,
    version: u8,
    keep_alive: bool,
    /// The `Content-Length` the head declared (`None`: chunked, or no body).
    declared: Option<u64>,
    /// The connection's peer, when the caller stamped it ([`OwnedRequest::set_peer`]).
    peer: Option<IpAddr>,
}

impl OwnedRequest {
    /// From a parsed head; the body is filled in afterwards.
    pub(crate) fn new(
        method: &str,
        target: &str,
        version: u8,
        headers: &[httparse::Header<'_>],
        keep_alive: bool,
    ) -> Self {
        let names: usize = headers.iter().map(|h| h.name.len()).sum();
        let mut text = String::with_capacity(method.len() + target.len() + names);
        let mut push = |s: &str| {
            let start = text.len();
            text.push_str(s);
            start..text.len()
        };
        let method = push(method);
        let target = push(target);
        let mut values = Vec::with_capacity(headers.iter().map(|h| h.value.len()).sum());
        let mut ranges = Vec::with_capacity(headers.len());
        for h in headers {
            let name = push(h.name);
            let start = values.len();
            values.extend_from_slice(h.value);
            ranges.push((name, start..values.len()));
        }
        Self {
            text,
            method,
            target,
            headers: ranges,
            values,
            body: Vec::new(),
            version,
            keep_alive,
            declared: None,
            peer: None,
        }
    }

    /// Stamps the address the request came from: the codec sees bytes, not sockets, so
    /// the connection that owns the socket tells it (the core limits some endpoints per
    /// address).
    pub fn set_peer(&mut self, peer: Option<IpAddr>) {
        self.peer = peer;
    }

    /// The address stamped by [`OwnedRequest::set_peer`], if any.
    pub fn peer(&self) -> Option<IpAddr> {
        self.peer
    }

    /// Records the body length the head declared.
    pub(crate) fn set_declared(&mut self, n: u64) {
        self.declared = Some(n);
    }

    /// The body length declared by `Content-Length` (validated by the codec, within
    /// [`crate::Limits::max_body`]); `None` for a chunked body or none at all. What a
    /// caller deciding from the head (see [`crate::Output::Head`]) may budget for.
    pub fn declared_length(&self) -> Option<u64> {
        self.declared
    }

    /// The body under construction.
    pub(crate) fn body_mut(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }

    fn str(&self, r: &Range<usize>) -> &str {
        self.text.get(r.clone()).unwrap_or_default()
    }

    /// Request method, e.g. `POST` (case-sensitive, as sent).
    pub fn method(&self) -> &str {
        self.str(&self.method)
    }

    /// Request target as sent (ASCII).
    pub fn target(&self) -> &str {
        self.str(&self.target)
    }

    /// Minor HTTP version: `0` for HTTP/1.0, `1` for HTTP/1.1.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Whether the connection stays open after the response (absent a `Connection: close`
    /// from the response or a codec-side reason to close).
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// Whether the method is `HEAD` (the response is sent without its body).
    pub fn is_head(&self) -> bool {
        self.method() == "HEAD"
    }

    /// Every header field, in order of arrival.
    pub fn headers(&self) -> impl ExactSizeIterator<Item = Header<'_>> + '_ {
        self.headers.iter().map(|(n, v)| Header {
            name: self.str(n),
            value: self.values.get(v.clone()).unwrap_or_default(),
        })
    }

    /// The complete de-framed body (empty when the request had none).
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// Takes the body out.
    pub fn into_body(self) -> Vec<u8> {
        self.body
    }

    /// A borrowed view that yields the core's [`Request`]: `let view = req.as_core();`
    /// then `server.handle(&view.request(), &env)` (the view owns the `Vec<Header>` the
    /// request's `headers` slice points into, so it must outlive the call).
    pub fn as_core(&self) -> CoreRequest<'_> {
        CoreRequest {
            method: self.method(),
            target: self.target(),
            headers: self.headers().collect(),
            body: &self.body,
        }
    }

    /// Calls `f` with the core's [`Request`] borrowed from this one.
    pub fn with_core<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        f(&self.as_core().request())
    }
}

/// The borrowed parts of an [`OwnedRequest`], holding the header slice the core's
/// [`Request`] points into. Get the request with [`CoreRequest::request`].
#[derive(Clone, Debug)]
pub struct CoreRequest<'a> {
    /// Request method.
    pub method: &'a str,
    /// Request target.
    pub target: &'a str,
    /// Header fields, in order of arrival.
    pub headers: Vec<Header<'a>>,
    /// De-framed body.
    pub body: &'a [u8],
}

impl CoreRequest<'_> {
    /// The core's request, borrowing from this view.
    pub fn request(&self) -> Request<'_> {
        Request {
            method: self.method,
            target: self.target,
            headers: &self.headers,
            body: self.body,
        }
    }
}
