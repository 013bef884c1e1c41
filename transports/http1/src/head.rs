//! The request head: an incremental strict scanner, then httparse, then framing checks.

use crate::request::OwnedRequest;
use crate::{CodecError, Limits};

/// Incremental scan of a request head: finds its end and enforces what httparse does not
/// (CRLF-only line ends, no NUL, no obs-fold) plus the size and count limits.
///
/// Each byte is examined once, whatever the input's fragmentation; a line's ordinary
/// bytes are skipped together (`memchr3`).
#[derive(Clone, Debug, Default)]
pub(crate) struct HeadScanner {
    /// Next byte to examine.
    pos: usize,
    /// Start of the current line.
    line_start: usize,
    /// Start of the request line (after leading empty lines).
    request_line_start: usize,
    /// Start of the header section, once the request line has ended.
    section_start: Option<usize>,
    /// Field lines seen.
    fields: usize,
}

/// A scanned head: its length, where its request line is, and how many field lines.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Scanned {
    pub(crate) len: usize,
    pub(crate) request_line: (usize, usize),
    pub(crate) fields: usize,
}

impl HeadScanner {
    /// Whether the request line ended (to pick 414 or 400 when the buffer is full).
    pub(crate) fn request_line_done(&self) -> bool {
        self.section_start.is_some()
    }

    /// Examines the new bytes of `buf` (which starts at the head). `Ok(None)`: need more.
    pub(crate) fn scan(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<Scanned>, CodecError> {
        while let Some(&b) = buf.get(self.pos) {
            let i = self.pos;
            let (limit, too_long) = self.limit(limits);
            // A request line's CR may sit at its limit: it ends the line.
            if i >= limit && !(b == b'\r' && self.section_start.is_none()) {
                return Err(too_long);
            }
            match b {
                b'\r' => {
                    let Some(&next) = buf.get(i + 1) else {
                        return Ok(None);
                    };
                    if next != b'\n' {
                        return Err(CodecError::BareCr);
                    }
                    match self.section_start {
                        // An empty line before the request line is ignored (RFC 9112 §2.2).
                        None if i == self.line_start => self.request_line_start = i + 2,
                        None => self.section_start = Some(i + 2),
                        Some(s) => {
                            if i + 1 - s >= limits.max_header_bytes {
                                return Err(CodecError::HeaderSectionTooLarge);
                            }
                            if i == self.line_start {
                                return Ok(Some(Scanned {
                                    len: i + 2,
                                    request_line: (self.request_line_start, s - 2),
                                    fields: self.fields,
                                }));
                            }
                            self.fields += 1;
                            if self.fields > limits.max_headers {
                                return Err(CodecError::TooManyHeaders);
                            }
                        }
                    }
                    self.pos = i + 2;
                    self.line_start = i + 2;
                }
                b'\n' => return Err(CodecError::BareLf),
                0 => return Err(CodecError::NulByte),
                b' ' | b'\t' if self.section_start.is_some() && i == self.line_start => {
                    return Err(CodecError::ObsFold);
                }
                _ => {
                    // The run of ordinary bytes up to the next CR, LF or NUL, at once: the
                    // first of them at or past the limit is the one refused byte by byte.
                    let end =
                        memchr::memchr3(b'\r', b'\n', 0, &buf[i..]).map_or(buf.len(), |n| i + n);
                    if end > limit {
                        return Err(too_long);
                    }
                    self.pos = end;
                }
            }
        }
        Ok(None)
    }

    /// Where the part being scanned must end (bytes at or past it are refused) and the
    /// error that refuses them: the request line's own length, or the header section's.
    fn limit(&self, limits: &Limits) -> (usize, CodecError) {
        match self.section_start {
            None => (
                self.line_start.saturating_add(limits.max_request_line),
                CodecError::RequestLineTooLong,
            ),
            Some(s) => (
                s.saturating_add(limits.max_header_bytes),
                CodecError::HeaderSectionTooLarge,
            ),
        }
    }
}

/// How the body of a request is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BodyKind {
    /// No body.
    None,
    /// `Content-Length: n` (n > 0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// A parsed head: the request without its body, and how to read the body.
#[derive(Debug)]
pub(crate) struct Head {
    pub(crate) request: OwnedRequest,
    pub(crate) body: BodyKind,
    pub(crate) expect_continue: bool,
}

/// Parses a scanned head (`buf[..scanned.len]`) and checks its framing headers.
pub(crate) fn parse(buf: &[u8], scanned: &Scanned) -> Result<Head, CodecError> {
    let head = buf.get(..scanned.len).unwrap_or_default();
    let mut headers = vec![httparse::EMPTY_HEADER; scanned.fields];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        Ok(_) => return Err(CodecError::InvalidRequestLine),
        Err(e) => {
            return Err(match e {
                httparse::Error::Version => {
                    let (a, b) = scanned.request_line;
                    version_error(buf.get(a..b).unwrap_or_default())
                }
                httparse::Error::HeaderName => CodecError::InvalidHeaderName,
                httparse::Error::HeaderValue => CodecError::InvalidHeaderValue,
                httparse::Error::TooManyHeaders => CodecError::TooManyHeaders,
                _ => CodecError::InvalidRequestLine,
            });
        }
    }
    let (Some(method), Some(target), Some(version)) = (req.method, req.path, req.version) else {
        return Err(CodecError::InvalidRequestLine);
    };
    if !target.is_ascii() {
        return Err(CodecError::InvalidTarget);
    }

    let mut f = Framing::default();
    for h in req.headers.iter() {
        f.add(h.name, h.value)?;
    }
    let body = f.body(version)?;
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without `Host`.
    if version == 1 && f.hosts == 0 {
        return Err(CodecError::MissingHost);
    }
    let keep_alive = match version {
        0 => f.keep_alive && !f.close,
        _ => !f.close,
    };
    let expect_continue = f.expect_continue && version == 1 && body != BodyKind::None;
    let mut request = OwnedRequest::new(method, target, version, req.headers, keep_alive);
    if let BodyKind::Length(n) = body {
        request.set_declared(n);
    }
    Ok(Head {
        request,
        body,
        expect_continue,
    })
}

/// 505 for a well-formed `HTTP/d.d` version we do not serve, 400 otherwise.
fn version_error(request_line: &[u8]) -> CodecError {
    let version = request_line
        .rsplit(|&b| b == b' ')
        .next()
        .unwrap_or_default();
    match version {
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            CodecError::UnsupportedVersion
        }
        _ => CodecError::InvalidRequestLine,
    }
}

/// What the framing-relevant headers of a head said.
#[derive(Default)]
struct Framing<'a> {
    /// First `Content-Length` element (trimmed) and its value.
    content_length: Option<(&'a [u8], u64)>,
    /// Transfer codings seen (count, and whether all were `chunked`).
    codings: usize,
    all_chunked: bool,
    transfer_encoding: bool,
    close: bool,
    keep_alive: bool,
    expect_continue: bool,
    hosts: usize,
}

impl<'a> Framing<'a> {
    fn add(&mut self, name: &str, value: &'a [u8]) -> Result<(), CodecError> {
        if name.eq_ignore_ascii_case("content-length") {
            for element in value.split(|&b| b == b',').map(trim) {
                let n = parse_decimal(element)?;
                match self.content_length {
                    Some((first, _)) if first != element => {
                        return Err(CodecError::ConflictingContentLength);
                    }
                    Some(_) => {}
                    None => self.content_length = Some((element, n)),
                }
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            if !self.transfer_encoding {
                self.all_chunked = true;
            }
            self.transfer_encoding = true;
            for coding in value.split(|&b| b == b',').map(trim) {
                self.codings += 1;
                self.all_chunked &= coding.eq_ignore_ascii_case(b"chunked");
            }
        } else if name.eq_ignore_ascii_case("connection") {
            for option in value.split(|&b| b == b',').map(trim) {
                if option.eq_ignore_ascii_case(b"close") {
                    self.close = true;
                } else if option.eq_ignore_ascii_case(b"keep-alive") {
                    self.keep_alive = true;
                }
            }
        } else if name.eq_ignore_ascii_case("expect") {
            self.expect_continue |= trim(value).eq_ignore_ascii_case(b"100-continue");
        } else if name.eq_ignore_ascii_case("host") {
            self.hosts += 1;
            if self.hosts > 1 {
                return Err(CodecError::MultipleHost);
            }
        }
        Ok(())
    }

    fn body(&self, version: u8) -> Result<BodyKind, CodecError> {
        if self.transfer_encoding {
            if self.content_length.is_some() {
                return Err(CodecError::ContentLengthWithTransferEncoding);
            }
            if version == 0 {
                return Err(CodecError::TransferEncodingInHttp10);
            }
            if self.codings != 1 || !self.all_chunked {
                return Err(CodecError::UnsupportedTransferEncoding);
            }
            return Ok(BodyKind::Chunked);
        }
        Ok(match self.content_length {
            Some((_, 0)) | None => BodyKind::None,
            Some((_, n)) => BodyKind::Length(n),
        })
    }
}

/// `1*DIGIT`, at most 19 digits (always fits in a u64).
fn parse_decimal(digits: &[u8]) -> Result<u64, CodecError> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(CodecError::InvalidContentLength);
    }
    Ok(digits
        .iter()
        .fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
}

/// Strips leading and trailing SP / HTAB.
fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal() {
        assert_eq!(parse_decimal(b"0"), Ok(0));
        assert_eq!(
            parse_decimal(b"9999999999999999999"),
            Ok(9_999_999_999_999_999_999)
        );
        for bad in [
            &b""[..],
            b"+1",
            b"-1",
            b"1a",
            b"0x10",
            b"10000000000000000000",
            b"1 2",
        ] {
            assert_eq!(parse_decimal(bad), Err(CodecError::InvalidContentLength));
        }
    }

    #[test]
    fn trims() {
        assert_eq!(trim(b" \t a b\t "), b"a b");
        assert_eq!(trim(b"   "), b"");
    }

    #[test]
    fn versions() {
        assert_eq!(
            version_error(b"GET / HTTP/2.0"),
            CodecError::UnsupportedVersion
        );
        assert_eq!(
            version_error(b"GET / HTTP/1.2"),
            CodecError::UnsupportedVersion
        );
        assert_eq!(
            version_error(b"GET / HTTP/2"),
            CodecError::InvalidRequestLine
        );
        assert_eq!(
            version_error(b"GET / FOO/1.1"),
            CodecError::InvalidRequestLine
        );
    }
}
