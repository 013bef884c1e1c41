//! The chunked transfer coding (RFC 9112 §7.1): a byte-wise state machine.
//!
//! It consumes input as it goes (never rescans) and copies chunk data straight into the
//! body, so at most one byte of framing state is carried between inputs.

use crate::{CodecError, Limits};

/// Decoder state for one chunked body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ChunkedDecoder {
    /// In a chunk-size line.
    Size {
        size: u64,
        digits: u8,
        /// The extension so far (`None`: still in digits).
        ext: Option<Ext>,
        cr: bool,
    },
    /// In chunk data.
    Data { remaining: u64 },
    /// After chunk data: expecting CRLF.
    DataEnd { cr: bool },
    /// In the trailer section (after the last chunk).
    Trailer {
        section: usize,
        fields: usize,
        line_len: usize,
        in_value: bool,
        cr: bool,
    },
}

/// Where a chunk extension is: its length so far, whether its `;` was seen, and whether
/// a quoted string is open (a line may not end inside one: RFC 9112 §7.1.1, RFC 9110
/// §5.6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ext {
    len: usize,
    semicolon: bool,
    quote: Quote,
}

/// Inside a chunk extension: outside quotes, in a quoted string, or after its backslash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Quote {
    Out,
    In,
    Escape,
}

impl Default for ChunkedDecoder {
    fn default() -> Self {
        Self::Size {
            size: 0,
            digits: 0,
            ext: None,
            cr: false,
        }
    }
}

/// Result of feeding bytes: how many were consumed and whether the body is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Step {
    pub(crate) consumed: usize,
    pub(crate) done: bool,
}

impl ChunkedDecoder {
    /// Decodes from `input`, appending data to `body`. Stops right after the body's end.
    pub(crate) fn decode(
        &mut self,
        input: &[u8],
        body: &mut Vec<u8>,
        limits: &Limits,
    ) -> Result<Step, CodecError> {
        let mut i = 0;
        while i < input.len() {
            if let Self::Data { remaining } = self {
                let avail = input.len() - i;
                let take = usize::try_from(*remaining).map_or(avail, |r| r.min(avail));
                body.extend_from_slice(&input[i..i + take]);
                i += take;
                *remaining -= take as u64;
                if *remaining == 0 {
                    *self = Self::DataEnd { cr: false };
                }
                continue;
            }
            let b = input[i];
            i += 1;
            if self.byte(b, body.len(), limits)? {
                return Ok(Step {
                    consumed: i,
                    done: true,
                });
            }
        }
        Ok(Step {
            consumed: i,
            done: false,
        })
    }

    /// One framing byte. `Ok(true)` when it ended the body.
    fn byte(&mut self, b: u8, body_len: usize, limits: &Limits) -> Result<bool, CodecError> {
        match self {
            Self::Size {
                size,
                digits,
                ext,
                cr,
            } => {
                if *cr {
                    if b != b'\n' {
                        return Err(CodecError::BareCr);
                    }
                    *self = if *size == 0 {
                        Self::Trailer {
                            section: 0,
                            fields: 0,
                            line_len: 0,
                            in_value: false,
                            cr: false,
                        }
                    } else {
                        let total = (body_len as u64).saturating_add(*size);
                        if total > limits.max_body as u64 {
                            return Err(CodecError::BodyTooLarge);
                        }
                        Self::Data { remaining: *size }
                    };
                    return Ok(false);
                }
                match (b, ext.as_mut()) {
                    (b'\n', _) => return Err(CodecError::BareLf),
                    (b'\r', _) if *digits == 0 => return Err(CodecError::InvalidChunkSize),
                    (b'\r', Some(e)) if !e.semicolon || e.quote != Quote::Out => {
                        return Err(CodecError::InvalidChunkExtension);
                    }
                    (b'\r', _) => *cr = true,
                    (_, None) => match hex(b) {
                        Some(v) => {
                            *digits += 1;
                            if *digits > 16 {
                                return Err(CodecError::ChunkSizeOverflow);
                            }
                            *size = (*size << 4) | u64::from(v);
                        }
                        None if *digits > 0 && matches!(b, b';' | b' ' | b'\t') => {
                            if limits.max_chunk_ext == 0 {
                                return Err(CodecError::ChunkExtensionTooLong);
                            }
                            *ext = Some(Ext {
                                len: 1,
                                semicolon: b == b';',
                                quote: Quote::Out,
                            });
                        }
                        None => return Err(CodecError::InvalidChunkSize),
                    },
                    (_, Some(e)) => {
                        e.len += 1;
                        if e.len > limits.max_chunk_ext {
                            return Err(CodecError::ChunkExtensionTooLong);
                        }
                        if !e.semicolon {
                            match b {
                                b' ' | b'\t' => {}
                                b';' => e.semicolon = true,
                                _ => return Err(CodecError::InvalidChunkExtension),
                            }
                        } else if !is_field_vchar(b) {
                            return Err(CodecError::InvalidChunkExtension);
                        } else {
                            e.quote = match (e.quote, b) {
                                (Quote::Out, b'"') | (Quote::Escape, _) => Quote::In,
                                (Quote::In, b'"') => Quote::Out,
                                (Quote::In, b'\\') => Quote::Escape,
                                (q, _) => q,
                            };
                        }
                    }
                }
            }
            Self::Data { .. } => {}
            Self::DataEnd { cr } => match (b, *cr) {
                (b'\r', false) => *cr = true,
                (b'\n', true) => *self = Self::default(),
                _ => return Err(CodecError::MissingChunkCrlf),
            },
            Self::Trailer {
                section,
                fields,
                line_len,
                in_value,
                cr,
            } => {
                *section += 1;
                if *section > limits.max_header_bytes {
                    return Err(CodecError::TrailerSectionTooLarge);
                }
                if *cr {
                    if b != b'\n' {
                        return Err(CodecError::BareCr);
                    }
                    if *line_len == 0 {
                        return Ok(true);
                    }
                    *fields += 1;
                    if *fields > limits.max_headers {
                        return Err(CodecError::TooManyTrailers);
                    }
                    (*line_len, *in_value, *cr) = (0, false, false);
                    return Ok(false);
                }
                match b {
                    b'\n' => return Err(CodecError::BareLf),
                    b'\r' if !*in_value && *line_len > 0 => {
                        return Err(CodecError::InvalidTrailer);
                    }
                    b'\r' => {
                        *cr = true;
                        return Ok(false);
                    }
                    b' ' | b'\t' if !*in_value && *line_len == 0 => {
                        return Err(CodecError::ObsFold);
                    }
                    b':' if !*in_value && *line_len > 0 => *in_value = true,
                    _ if !*in_value && is_token(b) => {}
                    _ if *in_value && is_field_vchar(b) => {}
                    _ => return Err(CodecError::InvalidTrailer),
                }
                *line_len += 1;
            }
        }
        Ok(false)
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// `tchar` (RFC 9110 §5.6.2).
fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A byte allowed in a field value: HTAB, SP, VCHAR, obs-text.
fn is_field_vchar(b: u8) -> bool {
    matches!(b, b'\t' | b' '..=b'~' | 0x80..=0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(input: &[u8], limits: &Limits) -> (Result<Step, CodecError>, Vec<u8>) {
        let mut body = Vec::new();
        let r = ChunkedDecoder::default().decode(input, &mut body, limits);
        (r, body)
    }

    #[test]
    fn decodes_and_stops_at_end() {
        let input = b"5\r\nhello\r\n6;a=b\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        let (r, body) = run(input, &Limits::default());
        assert_eq!(
            r,
            Ok(Step {
                consumed: input.len() - 4,
                done: true
            })
        );
        assert_eq!(body, b"hello world");
    }

    #[test]
    fn byte_at_a_time() {
        let input = b"A\r\n0123456789\r\n0\r\n\r\n";
        let mut dec = ChunkedDecoder::default();
        let mut body = Vec::new();
        for (i, b) in input.iter().enumerate() {
            let step = dec
                .decode(std::slice::from_ref(b), &mut body, &Limits::default())
                .unwrap();
            assert_eq!(step.consumed, 1);
            assert_eq!(step.done, i == input.len() - 1);
        }
        assert_eq!(body, b"0123456789");
    }

    #[test]
    fn errors() {
        let l = Limits::default();
        let cases: &[(&[u8], CodecError)] = &[
            (b"\r\n", CodecError::InvalidChunkSize),
            (b"g\r\n", CodecError::InvalidChunkSize),
            (b"-1\r\n", CodecError::InvalidChunkSize),
            (b"0x5\r\n", CodecError::InvalidChunkSize),
            (b";x\r\n", CodecError::InvalidChunkSize),
            (b"10000000000000000\r\n", CodecError::ChunkSizeOverflow),
            (b"5 x\r\n", CodecError::InvalidChunkExtension),
            (b"5 \r\n", CodecError::InvalidChunkExtension),
            (b"5;a\0\r\n", CodecError::InvalidChunkExtension),
            (b"5;a=\"open\r\n", CodecError::InvalidChunkExtension),
            (b"5;a=\"esc\\\"\r\n", CodecError::InvalidChunkExtension),
            (b"5;a=\"x\\\r\n", CodecError::InvalidChunkExtension),
            (b"5\n", CodecError::BareLf),
            (b"5\rx", CodecError::BareCr),
            (b"5\r\nhelloXY", CodecError::MissingChunkCrlf),
            (b"5\r\nhello\rX", CodecError::MissingChunkCrlf),
            (b"5\r\nhello\n", CodecError::MissingChunkCrlf),
            (b"0\r\nX: 1\n", CodecError::BareLf),
            (b"0\r\n\n", CodecError::BareLf),
            (b"0\r\nX : 1\r\n", CodecError::InvalidTrailer),
            (b"0\r\n: 1\r\n", CodecError::InvalidTrailer),
            (b"0\r\nX\r\n", CodecError::InvalidTrailer),
            (b"0\r\nX: \x01\r\n", CodecError::InvalidTrailer),
            (b"0\r\n folded\r\n", CodecError::ObsFold),
        ];
        for (input, want) in cases {
            assert_eq!(
                run(input, &l).0,
                Err(*want),
                "{:?}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn quoted_extensions() {
        let l = Limits::default();
        for ok in [
            &b"1;a=\"b c\"\r\nx\r\n0\r\n\r\n"[..],
            b"1;a=\"q\\\"d\";b=\"\"\r\nx\r\n0\r\n\r\n",
            b"1;a=b;c\r\nx\r\n0\r\n\r\n",
        ] {
            assert!(
                run(ok, &l).0.unwrap().done,
                "{:?}",
                String::from_utf8_lossy(ok)
            );
        }
    }

    #[test]
    fn extension_limit() {
        let l = Limits {
            max_chunk_ext: 4,
            ..Limits::default()
        };
        assert!(run(b"1;abc\r\nx\r\n0\r\n\r\n", &l).0.unwrap().done);
        assert_eq!(
            run(b"1;abcd\r\n", &l).0,
            Err(CodecError::ChunkExtensionTooLong)
        );
    }

    #[test]
    fn body_limit_on_size_line() {
        let l = Limits {
            max_body: 10,
            ..Limits::default()
        };
        assert!(run(b"a\r\n0123456789\r\n0\r\n\r\n", &l).0.unwrap().done);
        assert_eq!(
            run(b"5\r\n01234\r\n6\r\n", &l).0,
            Err(CodecError::BodyTooLarge)
        );
        assert_eq!(
            run(b"ffffffffffffffff\r\n", &l).0,
            Err(CodecError::BodyTooLarge)
        );
    }

    #[test]
    fn trailer_limits() {
        let l = Limits {
            max_headers: 1,
            max_header_bytes: 12,
            ..Limits::default()
        };
        assert!(run(b"0\r\nA: 12345\r\n\r\n", &l).0.unwrap().done);
        assert_eq!(
            run(b"0\r\nA: 123456\r\n\r\n", &l).0,
            Err(CodecError::TrailerSectionTooLarge)
        );
        assert_eq!(
            run(b"0\r\nA: 1\r\nB: 2\r\n\r\n", &l).0,
            Err(CodecError::TooManyTrailers)
        );
    }
}
