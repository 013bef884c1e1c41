//! Why the codec refused a request, and THE mapping from that to a status and a body.

use std::fmt;

use dunning_core::Response;
use http::{HeaderValue, StatusCode, header};

use crate::Limits;

/// A framing or syntax error the codec answers itself (then closes the connection).
///
/// [`CodecError::status`] is the one place that maps an error to its HTTP status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodecError {
    /// The request line is longer than [`Limits::max_request_line`].
    RequestLineTooLong,
    /// The header section is larger than [`Limits::max_header_bytes`].
    HeaderSectionTooLarge,
    /// More header field lines than [`Limits::max_headers`].
    TooManyHeaders,
    /// The body is (or is declared) larger than [`Limits::max_body`].
    BodyTooLarge,
    /// A LF not preceded by CR.
    BareLf,
    /// A CR not followed by LF.
    BareCr,
    /// A NUL byte in the head.
    NulByte,
    /// A header line starting with SP or HTAB (obsolete line folding).
    ObsFold,
    /// The request line is not `method SP target SP version`.
    InvalidRequestLine,
    /// The request target holds non-ASCII bytes.
    InvalidTarget,
    /// A well-formed HTTP version other than 1.0 and 1.1.
    UnsupportedVersion,
    /// A header name that is not a token, or whitespace before the colon.
    InvalidHeaderName,
    /// A header value with a forbidden byte.
    InvalidHeaderValue,
    /// More than one `Host` field.
    MultipleHost,
    /// An HTTP/1.1 request without `Host` (RFC 9112 §3.2).
    MissingHost,
    /// Both `Content-Length` and `Transfer-Encoding`.
    ContentLengthWithTransferEncoding,
    /// `Content-Length` values that are not all identical.
    ConflictingContentLength,
    /// A `Content-Length` that is not `1*DIGIT` (at most 19 digits).
    InvalidContentLength,
    /// A transfer coding other than one single `chunked`.
    UnsupportedTransferEncoding,
    /// `Transfer-Encoding` in an HTTP/1.0 request.
    TransferEncodingInHttp10,
    /// A chunk size that is empty or not hexadecimal.
    InvalidChunkSize,
    /// A chunk size of more than 16 hex digits.
    ChunkSizeOverflow,
    /// A malformed chunk extension.
    InvalidChunkExtension,
    /// A chunk extension longer than [`Limits::max_chunk_ext`].
    ChunkExtensionTooLong,
    /// Chunk data not followed by CRLF.
    MissingChunkCrlf,
    /// A malformed trailer field line.
    InvalidTrailer,
    /// The trailer section is larger than [`Limits::max_header_bytes`].
    TrailerSectionTooLarge,
    /// More trailer field lines than [`Limits::max_headers`].
    TooManyTrailers,
}

impl CodecError {
    /// The HTTP status this error is answered with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::RequestLineTooLong => StatusCode::URI_TOO_LONG,
            Self::TooManyHeaders | Self::TooManyTrailers => {
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE
            }
            Self::BodyTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedVersion => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            // Processing order, step 1: an oversized header section is a plain 400.
            Self::HeaderSectionTooLarge
            | Self::TrailerSectionTooLarge
            | Self::BareLf
            | Self::BareCr
            | Self::NulByte
            | Self::ObsFold
            | Self::InvalidRequestLine
            | Self::InvalidTarget
            | Self::InvalidHeaderName
            | Self::InvalidHeaderValue
            | Self::MultipleHost
            | Self::MissingHost
            | Self::ContentLengthWithTransferEncoding
            | Self::ConflictingContentLength
            | Self::InvalidContentLength
            | Self::UnsupportedTransferEncoding
            | Self::TransferEncodingInHttp10
            | Self::InvalidChunkSize
            | Self::ChunkSizeOverflow
            | Self::InvalidChunkExtension
            | Self::ChunkExtensionTooLong
            | Self::MissingChunkCrlf
            | Self::InvalidTrailer => StatusCode::BAD_REQUEST,
        }
    }

    /// A short lowercase description (ASCII, no quotes: safe inside a JSON string).
    pub fn reason(self) -> &'static str {
        match self {
            Self::RequestLineTooLong => "request line too long",
            Self::HeaderSectionTooLarge => "header section too large",
            Self::TooManyHeaders => "too many header fields",
            Self::BodyTooLarge => "request body too large",
            Self::BareLf => "bare LF line terminator",
            Self::BareCr => "bare CR",
            Self::NulByte => "NUL byte in request head",
            Self::ObsFold => "obsolete line folding",
            Self::InvalidRequestLine => "invalid request line",
            Self::InvalidTarget => "invalid request target",
            Self::UnsupportedVersion => "unsupported HTTP version",
            Self::InvalidHeaderName => "invalid header name",
            Self::InvalidHeaderValue => "invalid header value",
            Self::MultipleHost => "multiple Host headers",
            Self::MissingHost => "missing Host header",
            Self::ContentLengthWithTransferEncoding => "Content-Length with Transfer-Encoding",
            Self::ConflictingContentLength => "conflicting Content-Length",
            Self::InvalidContentLength => "invalid Content-Length",
            Self::UnsupportedTransferEncoding => "unsupported Transfer-Encoding",
            Self::TransferEncodingInHttp10 => "Transfer-Encoding in HTTP/1.0",
            Self::InvalidChunkSize => "invalid chunk size",
            Self::ChunkSizeOverflow => "chunk size overflow",
            Self::InvalidChunkExtension => "invalid chunk extension",
            Self::ChunkExtensionTooLong => "chunk extension too long",
            Self::MissingChunkCrlf => "missing CRLF after chunk data",
            Self::InvalidTrailer => "invalid trailer field",
            Self::TrailerSectionTooLarge => "trailer section too large",
            Self::TooManyTrailers => "too many trailer fields",
        }
    }

    /// The response the codec sends for this error: a JSON-RPC `-32600` error body,
    /// `Content-Type: application/json`, `Cache-Control: no-store`.
    ///
    /// `413` carries exactly
    /// `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit N bytes)"}}`
    /// with `N` = [`Limits::max_body`]; the others `"<Status reason>: <reason>"`.
    pub fn response(self, limits: &Limits) -> Response {
        let status = self.status();
        let message = match self {
            Self::BodyTooLarge => {
                format!("Request body too large (limit {} bytes)", limits.max_body)
            }
            _ => format!(
                "{}: {}",
                status.canonical_reason().unwrap_or("Error"),
                self.reason()
            ),
        };
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{message}"}}}}"#
        );
        Response::json(status, body.into_bytes())
            .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"))
    }
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.reason(), self.status().as_u16())
    }
}

impl std::error::Error for CodecError {}
