//! A stand-in HTTP/1.1 codec, used until `dunning-http1` is usable.
//!
//! Same shape as the real codec (`Conn::handle_input`/`handle_eof`/`poll_output`,
//! `encode_response`), minimal rules: request line, headers, `Content-Length` or
//! `chunked`, the 2 MB body limit. Anything it cannot read is a `400` and a close.

use std::collections::VecDeque;

use dunning_core::{Header, Request, Response, UnixTime};
use http::{HeaderValue, StatusCode};

const MAX_BODY: usize = 2_097_152;
const MAX_HEAD: usize = 64 * 1024;
const TOO_LARGE: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit 2097152 bytes)"}}"#;

/// What the connection wants done next.
pub(crate) enum Output {
    /// A complete request for the core.
    Request(OwnedRequest),
    /// Bytes to write.
    Transmit(Vec<u8>),
    /// Close the connection.
    Close,
}

/// A request owning its bytes.
pub(crate) struct OwnedRequest {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl OwnedRequest {
    /// Lends the request to `f` as the core's borrowed view.
    pub(crate) fn with_core<R>(&self, f: impl FnOnce(&Request<'_>) -> R) -> R {
        let headers: Vec<Header<'_>> = self
            .headers
            .iter()
            .map(|(n, v)| Header { name: n, value: v })
            .collect();
        f(&Request {
            method: &self.method,
            target: &self.target,
            headers: &headers,
            body: &self.body,
        })
    }
}

/// One connection's parser state.
#[derive(Default)]
pub(crate) struct Conn {
    buf: Vec<u8>,
    /// Buffer length at which to parse again (the parser restarts from scratch, so it
    /// waits for the buffer to double: linear time for byte-by-byte input).
    retry_at: usize,
    out: VecDeque<Output>,
    closed: bool,
}

enum Step {
    Partial,
    Done(usize, OwnedRequest),
    Refuse(u16, &'static str),
}

impl Conn {
    pub(crate) fn handle_input(&mut self, bytes: &[u8]) {
        if self.closed {
            return;
        }
        self.buf.extend_from_slice(bytes);
        if self.buf.len() >= self.retry_at {
            self.parse_all();
        }
    }

    fn parse_all(&mut self) {
        loop {
            match parse(&self.buf) {
                Step::Partial => {
                    if self.buf.len() > MAX_HEAD + MAX_BODY + 1024 {
                        self.refuse(413, TOO_LARGE);
                    }
                    self.retry_at = self.buf.len().saturating_mul(2).max(64);
                    return;
                }
                Step::Done(used, req) => {
                    self.buf.drain(..used);
                    self.retry_at = 0;
                    self.out.push_back(Output::Request(req));
                }
                Step::Refuse(status, body) => {
                    self.refuse(status, body);
                    return;
                }
            }
        }
    }

    pub(crate) fn handle_eof(&mut self) {
        if !self.closed && !self.buf.is_empty() {
            self.parse_all();
        }
        if !self.closed {
            self.closed = true;
            self.out.push_back(Output::Close);
        }
    }

    pub(crate) fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    fn refuse(&mut self, status: u16, body: &str) {
        let mut r = Response::empty(StatusCode::from_u16(status).expect("valid status"));
        r.body = body.as_bytes().to_vec();
        if !body.is_empty() {
            r.headers.push((
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ));
        }
        let mut bytes = Vec::new();
        encode_response(&r, UnixTime::default(), &mut bytes);
        self.out.push_back(Output::Transmit(bytes));
        self.out.push_back(Output::Close);
        self.closed = true;
        self.buf.clear();
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn parse(buf: &[u8]) -> Step {
    let head_end = match find(buf, b"\r\n\r\n") {
        Some(end) if end <= MAX_HEAD => end,
        Some(_) => return Step::Refuse(400, ""),
        None if buf.len() > MAX_HEAD => return Step::Refuse(400, ""),
        None => return Step::Partial,
    };
    let Ok(head) = std::str::from_utf8(&buf[..head_end]) else {
        return Step::Refuse(400, "");
    };
    let mut lines = head.split("\r\n");
    let mut parts = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some("HTTP/1.1"), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Step::Refuse(400, "");
    };
    let mut headers = Vec::new();
    let (mut length, mut chunked) = (None, false);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            return Step::Refuse(400, "");
        };
        if name.is_empty() || name.contains([' ', '\t']) {
            return Step::Refuse(400, "");
        }
        let value = value.trim_matches([' ', '\t']);
        if name.eq_ignore_ascii_case("content-length") {
            let Ok(n) = value.parse::<usize>() else {
                return Step::Refuse(400, "");
            };
            if length.is_some_and(|l| l != n) {
                return Step::Refuse(400, "");
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !value.eq_ignore_ascii_case("chunked") {
                return Step::Refuse(400, "");
            }
            chunked = true;
        }
        headers.push((name.to_owned(), value.as_bytes().to_vec()));
    }
    if chunked && length.is_some() {
        return Step::Refuse(400, "");
    }
    let rest = &buf[head_end + 4..];
    let (body, used) = if chunked {
        match dechunk(rest) {
            Ok(Some(x)) => x,
            Ok(None) => return Step::Partial,
            Err(s) => return Step::Refuse(s, if s == 413 { TOO_LARGE } else { "" }),
        }
    } else {
        let n = length.unwrap_or(0);
        if n > MAX_BODY {
            return Step::Refuse(413, TOO_LARGE);
        }
        if rest.len() < n {
            return Step::Partial;
        }
        (rest[..n].to_vec(), n)
    };
    Step::Done(
        head_end + 4 + used,
        OwnedRequest {
            method: method.to_owned(),
            target: target.to_owned(),
            headers,
            body,
        },
    )
}

fn dechunk(mut rest: &[u8]) -> Result<Option<(Vec<u8>, usize)>, u16> {
    let total = rest.len();
    let mut body = Vec::new();
    loop {
        let Some(eol) = find(rest, b"\r\n") else {
            return Ok(None);
        };
        let size = std::str::from_utf8(&rest[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.split(';').next().unwrap_or_default(), 16).ok())
            .ok_or(400u16)?;
        rest = &rest[eol + 2..];
        if size == 0 {
            let Some(end) = find(rest, b"\r\n") else {
                return Ok(None);
            };
            rest = &rest[end + 2..];
            return Ok(Some((body, total - rest.len())));
        }
        if body.len() + size > MAX_BODY {
            return Err(413);
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

/// Writes `resp` as HTTP/1.1 bytes (no `Date`: the stand-in has no calendar).
pub(crate) fn encode_response(resp: &Response, _now: UnixTime, out: &mut Vec<u8>) {
    let status = resp.status;
    out.extend_from_slice(
        format!(
            "HTTP/1.1 {} {}\r\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("")
        )
        .as_bytes(),
    );
    for (name, value) in &resp.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("Content-Length: {}\r\n\r\n", resp.body.len()).as_bytes());
    out.extend_from_slice(&resp.body);
}
