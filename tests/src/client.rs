//! The HTTP/1.1 test client of the suites that talk to a server over real loopback
//! sockets (the binary's `transports/bin/tests`): one request per connection
//! (`Connection: close`), read until the server closes, then parsed.
//!
//! Parsing is deliberately loose (any status line, header names lowercased, the body cut
//! at its `Content-Length`, what follows it kept in [`Resp::excess`]): the framing rules
//! are the tests' to check, with the raw facts kept. Every socket has [`TIMEOUT`] on
//! connect, reads and writes, so a hung server fails a test instead of hanging it.
//!
//! Three ways to send, by what a refusal means to the caller:
//! - [`http`] / [`send_raw`]: a write the server refuses (it already answered and closed,
//!   e.g. a `413` before the whole body) or a reset while reading is not an error; the
//!   answer read so far is what counts. No answer head at all panics.
//! - [`try_http`]: `None` for a refused connection, a reset or an incomplete answer (what
//!   a client sees of a server killed mid-request).
//! - [`roundtrip`]: every I/O error is an error (the request must be written whole and
//!   the answer read to the end).

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use serde_json::Value;

/// How long connecting, each read and each write may wait for the server.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// One HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resp {
    /// Status code.
    pub status: u16,
    /// Header fields in order, names lowercased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// Body: what followed the head, cut at `Content-Length` when there is one.
    pub body: Vec<u8>,
    /// How many bytes followed the `Content-Length` body (none in a well-framed answer).
    pub excess: usize,
}

impl Resp {
    /// Parses one response; `None` without a complete head (`\r\n\r\n`) or a status code.
    pub fn try_parse(raw: &[u8]) -> Option<Self> {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())?;
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let mut body = raw[end + 4..].to_vec();
        let mut excess = 0;
        let length = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok());
        if let Some(n) = length
            && body.len() > n
        {
            excess = body.len() - n;
            body.truncate(n);
        }
        Some(Self {
            status,
            headers,
            body,
            excess,
        })
    }

    /// Parses one response, panicking with the raw bytes when there is none.
    pub fn parse(raw: &[u8]) -> Self {
        Self::try_parse(raw).unwrap_or_else(|| {
            panic!(
                "no response head in {:?}",
                String::from_utf8_lossy(&raw[..raw.len().min(2000)])
            )
        })
    }

    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The declared `Content-Length`, if there is a valid one.
    pub fn content_length(&self) -> Option<usize> {
        self.header("content-length").and_then(|v| v.parse().ok())
    }

    /// Whether the body is declared JSON (`Content-Type: application/json...`).
    pub fn is_json(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    }

    /// The body as JSON, panicking with the status and the body when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The `structuredContent` of a JSON-RPC tool result (`null` when there is none).
    pub fn structured(&self) -> Value {
        self.json()["result"]["structuredContent"].clone()
    }
}

/// The bytes of one request: request line, `Host: {host}`, `Connection: close`, the
/// given headers in order, then `Content-Length` when there is a body or the method is
/// `POST`, `PUT` or `PATCH` (they define a body, so an empty one is declared).
pub fn request(
    host: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n");
    for (k, v) in headers {
        let _ = write!(head, "{k}: {v}\r\n");
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        let _ = write!(head, "Content-Length: {}\r\n", body.len());
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A connected socket with [`TIMEOUT`] on connect, reads and writes (`addr`: `host:port`).
pub fn connect(addr: &str) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::InvalidInput, format!("no address in {addr}"));
    for a in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&a, TIMEOUT) {
            Ok(s) => {
                s.set_read_timeout(Some(TIMEOUT))?;
                s.set_write_timeout(Some(TIMEOUT))?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Reads until the server closes; an error after some bytes keeps them (`Err` only when
/// nothing was read).
fn read_lenient(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    match s.read_to_end(&mut out) {
        Err(e) if out.is_empty() => Err(e),
        _ => Ok(out),
    }
}

/// Sends `raw` on a new connection and parses the answer; a refused write or a reset
/// after the answer is not an error (see the module documentation). Panics when the
/// connection cannot be made or no answer head arrives.
pub fn send_raw(addr: &str, raw: &[u8]) -> Resp {
    let mut s = connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    let _ = s.write_all(raw);
    let got = read_lenient(&mut s).unwrap_or_default();
    Resp::parse(&got)
}

/// One request on a fresh connection (`Connection: close`), read to the end; lenient as
/// [`send_raw`].
pub fn http(addr: &str, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    send_raw(addr, &request(addr, method, target, headers, body))
}

/// Like [`http`], but a refused connection, a failed write, a reset or an incomplete
/// answer (no head, not `HTTP/1.1`, or a body shorter than its `Content-Length`, or none
/// declared) is `None` instead of a panic.
pub fn try_http(
    addr: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Option<Resp> {
    let mut s = connect(addr).ok()?;
    s.write_all(&request(addr, method, target, headers, body))
        .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    if !raw.starts_with(b"HTTP/1.1 ") {
        return None;
    }
    let resp = Resp::try_parse(&raw)?;
    let declared = resp.content_length()?;
    (resp.body.len() == declared).then_some(resp)
}

/// Sends `raw` whole on a new connection and reads until the server closes: any I/O
/// error (connect, write, read) is an error. Returns the raw answer.
pub fn roundtrip(addr: &str, raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut s = connect(addr)?;
    s.write_all(raw)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::thread;

    use super::*;

    /// A one-shot server: reads the request head (and `Content-Length` body), answers
    /// `answer`, closes; returns the request it read.
    fn serve_once(answer: &'static [u8]) -> (String, thread::JoinHandle<Vec<u8>>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let t = thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(TIMEOUT)).unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = s.read(&mut buf).unwrap();
                got.extend_from_slice(&buf[..n]);
                if n == 0 {
                    break;
                }
                if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
                    let len: usize = head
                        .split("\r\n")
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    if got.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            s.write_all(answer).unwrap();
            got
        });
        (addr, t)
    }

    #[test]
    fn a_request_is_framed_and_its_answer_parsed() {
        let (addr, t) =
            serve_once(b"HTTP/1.1 201 Created\r\nX-A: 1\r\nContent-Length: 2\r\n\r\n{}");
        let r = http(&addr, "POST", "/v1/x?a=b", &[("X-Key", "k")], b"{}");
        let sent = String::from_utf8(t.join().unwrap()).unwrap();
        assert_eq!(
            sent,
            format!(
                "POST /v1/x?a=b HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nX-Key: k\r\n\
                 Content-Length: 2\r\n\r\n{{}}"
            )
        );
        assert_eq!(r.status, 201);
        assert_eq!(r.header("X-A"), Some("1"));
        assert_eq!(r.json(), serde_json::json!({}));
        assert_eq!(r.excess, 0);
    }

    #[test]
    fn a_get_without_body_declares_no_length() {
        let bytes = request("h:1", "GET", "/", &[], b"");
        assert_eq!(
            bytes,
            b"GET / HTTP/1.1\r\nHost: h:1\r\nConnection: close\r\n\r\n"
        );
        let bytes = request("h:1", "POST", "/", &[], b"");
        assert!(bytes.ends_with(b"Content-Length: 0\r\n\r\n"));
    }

    #[test]
    fn bytes_after_the_declared_body_are_counted_not_kept() {
        let r = Resp::parse(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA");
        assert_eq!((r.body.as_slice(), r.excess), (&b"ok"[..], 5));
        let r = Resp::parse(b"HTTP/1.1 204 No Content\r\n\r\n");
        assert_eq!((r.status, r.content_length(), r.body.len()), (204, None, 0));
    }

    #[test]
    fn no_head_is_none_or_a_panic_naming_the_bytes() {
        assert!(Resp::try_parse(b"HTTP/1.1 200 OK\r\n").is_none());
        assert!(Resp::try_parse(b"garbage\r\n\r\n").is_none());
        let p = std::panic::catch_unwind(|| Resp::parse(b"half"));
        let msg = p.unwrap_err().downcast::<String>().unwrap();
        assert!(
            msg.contains("no response head") && msg.contains("half"),
            "{msg}"
        );
    }

    #[test]
    fn try_http_refuses_a_short_body_and_a_closed_port() {
        let (addr, t) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
        assert!(try_http(&addr, "GET", "/", &[], b"").is_none());
        t.join().unwrap();
        let closed = TcpListener::bind("127.0.0.1:0").unwrap();
        let gone = closed.local_addr().unwrap().to_string();
        drop(closed);
        assert!(try_http(&gone, "GET", "/", &[], b"").is_none());
        assert!(roundtrip(&gone, b"GET / HTTP/1.1\r\n\r\n").is_err());
    }
}
