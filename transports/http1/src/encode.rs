//! Response encoding: status line, headers, framing headers, body.

use std::io::Write as _;
use std::time::{Duration, UNIX_EPOCH};

use dunning_core::{Response, UnixTime};
use http::StatusCode;

/// How a response is framed on this connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Framing {
    /// The connection closes after this response (`Connection: close`).
    pub(crate) close: bool,
    /// Announce `Connection: keep-alive` (kept-alive HTTP/1.0 request).
    pub(crate) announce_keep_alive: bool,
    /// Answer to `HEAD`: headers only.
    pub(crate) head: bool,
}

/// Encodes `resp` for an HTTP/1.1 (non-`HEAD`) request, appending to `out`.
///
/// Adds `Content-Length`, `Date` (from `now`) and, unless `keep_alive`, `Connection: close`.
/// Framing headers set by `resp` itself are dropped. [`crate::Conn::encode_response`] is
/// the connection-aware variant (HTTP/1.0, `HEAD`, close decisions).
pub fn encode(resp: &Response, now: UnixTime, keep_alive: bool, out: &mut Vec<u8>) {
    let framing = Framing {
        close: !keep_alive,
        ..Framing::default()
    };
    encode_framed(resp, Some(now), framing, out);
}

/// Whether a response header asks to close the connection (`Connection: close`).
pub(crate) fn asks_close(resp: &Response) -> bool {
    resp.headers.iter().any(|(n, v)| {
        n == http::header::CONNECTION
            && v.as_bytes()
                .split(|&b| b == b',')
                .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close"))
    })
}

/// Encodes `resp` with the given framing; `date` is omitted when `None`.
pub(crate) fn encode_framed(
    resp: &Response,
    date: Option<UnixTime>,
    framing: Framing,
    out: &mut Vec<u8>,
) {
    if encode_head(resp, date, framing, out) {
        out.extend_from_slice(&resp.body);
    }
}

/// Encodes the status line and header section of `resp` (up to its blank line); returns
/// whether its body follows on the wire (not for `HEAD`, `204`, `304`, `1xx`).
pub(crate) fn encode_head(
    resp: &Response,
    date: Option<UnixTime>,
    framing: Framing,
    out: &mut Vec<u8>,
) -> bool {
    let status = resp.status;
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &resp.headers {
        if is_framing_header(name) {
            continue;
        }
        push_name(out, name.as_str());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let no_length = status.is_informational() || status == StatusCode::NO_CONTENT;
    let with_body = !(no_length || status == StatusCode::NOT_MODIFIED || framing.head);
    if !no_length {
        let _ = write!(out, "Content-Length: {}\r\n", resp.body.len());
    }
    if let Some(now) = date {
        let _ = write!(out, "Date: {}\r\n", http_date(now));
    }
    if framing.close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if framing.announce_keep_alive {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
    with_body
}

fn is_framing_header(name: &http::HeaderName) -> bool {
    use http::header::{CONNECTION, CONTENT_LENGTH, DATE, TRANSFER_ENCODING};
    [CONTENT_LENGTH, TRANSFER_ENCODING, CONNECTION, DATE].contains(name)
}

/// Writes a (lowercase) header name in canonical Title-Case (`content-type` →
/// `Content-Type`; `www-authenticate` → `WWW-Authenticate`).
fn push_name(out: &mut Vec<u8>, name: &str) {
    if name == "www-authenticate" {
        out.extend_from_slice(b"WWW-Authenticate");
        return;
    }
    let mut upper = true;
    for &b in name.as_bytes() {
        out.push(if upper { b.to_ascii_uppercase() } else { b });
        upper = b == b'-';
    }
}

/// IMF-fixdate of `now` (clamped to the last second of year 9999, httpdate's range).
pub(crate) fn http_date(now: UnixTime) -> httpdate::HttpDate {
    const MAX_SECS: u64 = 253_402_300_799;
    let secs = now.as_secs().min(MAX_SECS);
    httpdate::HttpDate::from(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use http::{HeaderValue, header};

    use super::*;

    const NOW: UnixTime = UnixTime::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT

    fn enc(resp: &Response, framing: Framing) -> String {
        let mut out = Vec::new();
        encode_framed(resp, Some(NOW), framing, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn ok_json_keep_alive() {
        let resp = Response::json(StatusCode::OK, b"{}".to_vec());
        let mut out = Vec::new();
        encode(&resp, NOW, true, &mut out);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\
              Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n{}"
        );
    }

    #[test]
    fn close_and_keep_alive_announce() {
        let resp = Response::empty(StatusCode::NOT_FOUND);
        let s = enc(
            &resp,
            Framing {
                close: true,
                ..Framing::default()
            },
        );
        assert!(s.ends_with("Connection: close\r\n\r\n"), "{s}");
        let s = enc(
            &resp,
            Framing {
                announce_keep_alive: true,
                ..Framing::default()
            },
        );
        assert!(s.ends_with("Connection: keep-alive\r\n\r\n"), "{s}");
    }

    #[test]
    fn no_body_statuses() {
        let mut resp = Response::empty(StatusCode::NO_CONTENT);
        resp.body = b"xyz".to_vec();
        let s = enc(&resp, Framing::default());
        assert_eq!(
            s,
            "HTTP/1.1 204 No Content\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
        );
        resp.status = StatusCode::NOT_MODIFIED;
        let s = enc(&resp, Framing::default());
        assert!(
            s.contains("Content-Length: 3\r\n") && s.ends_with("\r\n\r\n"),
            "{s}"
        );
        resp.status = StatusCode::CONTINUE;
        let s = enc(&resp, Framing::default());
        assert!(
            !s.contains("Content-Length") && s.ends_with("\r\n\r\n"),
            "{s}"
        );
    }

    #[test]
    fn head_has_length_no_body() {
        let resp = Response::json(StatusCode::OK, b"hello".to_vec());
        let s = enc(
            &resp,
            Framing {
                head: true,
                ..Framing::default()
            },
        );
        assert!(
            s.contains("Content-Length: 5\r\n") && s.ends_with("\r\n\r\n"),
            "{s}"
        );
    }

    #[test]
    fn framing_headers_from_core_are_dropped() {
        let resp = Response::empty(StatusCode::OK)
            .with_header(header::CONTENT_LENGTH, HeaderValue::from_static("99"))
            .with_header(
                header::TRANSFER_ENCODING,
                HeaderValue::from_static("chunked"),
            )
            .with_header(header::CONNECTION, HeaderValue::from_static("close"))
            .with_header(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"))
            .with_header(
                http::HeaderName::from_static("mcp-session-id"),
                HeaderValue::from_static("s"),
            );
        assert!(asks_close(&resp));
        let s = enc(&resp, Framing::default());
        assert_eq!(
            s,
            "HTTP/1.1 200 OK\r\nWWW-Authenticate: Bearer\r\nMcp-Session-Id: s\r\n\
             Content-Length: 0\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n"
        );
    }

    #[test]
    fn unknown_status_and_far_dates() {
        let resp = Response::empty(StatusCode::from_u16(599).unwrap());
        let mut out = Vec::new();
        encode_framed(&resp, None, Framing::default(), &mut out);
        assert_eq!(out, b"HTTP/1.1 599 \r\nContent-Length: 0\r\n\r\n");
        assert_eq!(
            http_date(UnixTime::from_millis(u64::MAX)).to_string(),
            "Fri, 31 Dec 9999 23:59:59 GMT"
        );
        assert_eq!(
            http_date(UnixTime::from_millis(0)).to_string(),
            "Thu, 01 Jan 1970 00:00:00 GMT"
        );
    }
}
