//! Mirrored headers of era-2026 requests: `Mcp-Method`, `Mcp-Name`,
//! `Mcp-Param-*`, and the `=?base64?…?=` sentinel.
//!
//! Names compare case-insensitively, values case-sensitively, after trimming optional
//! whitespace and decoding the sentinel strictly (padded standard alphabet, UTF-8).
//! Every failure is a `-32020` naming the header.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::error::ProtocolError;
use crate::request::Request;
use crate::xheader::Binding;

const PREFIX: &str = "=?base64?";
const SUFFIX: &str = "?=";

/// Decodes a header value that may be a base64 sentinel. Plain text passes through.
///
/// Only the exact lowercase markers count; `=?BASE64?…?=` is literal text.
pub fn decode(value: &str) -> Result<Cow<'_, str>, &'static str> {
    let Some(inner) = value
        .strip_prefix(PREFIX)
        .and_then(|v| v.strip_suffix(SUFFIX))
    else {
        return Ok(Cow::Borrowed(value));
    };
    let bytes = STANDARD.decode(inner).map_err(|_| "invalid base64")?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| "base64 does not decode to UTF-8")
}

/// How a client must send `value`: plain when it is visible ASCII with
/// interior spaces only and does not look like a sentinel, else the sentinel.
pub fn encode(value: &str) -> Cow<'_, str> {
    let plain_char = |b: u8| (0x20..=0x7e).contains(&b);
    let looks_like_sentinel = value.starts_with(PREFIX) && value.ends_with(SUFFIX);
    let edge_space = value.starts_with([' ', '\t']) || value.ends_with([' ', '\t']);
    let safe = value.bytes().all(plain_char) && !edge_space && !looks_like_sentinel;
    if safe {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!("{PREFIX}{}{SUFFIX}", STANDARD.encode(value)))
    }
}

fn mismatch(what: String) -> ProtocolError {
    ProtocolError::HeaderMismatch(what)
}

/// The single value of header `name`, trimmed of optional whitespace, as text.
///
/// Repeated headers and bytes outside visible ASCII/SP/HTAB are refused.
pub fn text<'a>(req: &Request<'a>, name: &'a str) -> Result<Option<&'a str>, ProtocolError> {
    let raw = req
        .single_header(name)
        .map_err(|()| mismatch(format!("{name} header sent more than once")))?;
    let Some(raw) = raw else { return Ok(None) };
    let valid = |b: &u8| *b == b'\t' || (0x20..=0x7e).contains(b);
    if !raw.iter().all(valid) {
        return Err(mismatch(format!("{name} header has invalid characters")));
    }
    let s = std::str::from_utf8(raw).map_err(|_| mismatch(format!("{name} header is not text")))?;
    Ok(Some(s.trim_matches([' ', '\t'])))
}

/// Checks `Mcp-Method` (and nothing else) of a notification: optional, must agree.
pub fn check_notification(req: &Request<'_>, method: &str) -> Result<(), ProtocolError> {
    match text(req, "mcp-method")? {
        Some(h) if h != method => Err(mismatch(format!(
            "Mcp-Method header \"{h}\" does not match method \"{method}\""
        ))),
        _ => Ok(()),
    }
}

/// Checks the mirrored headers of an era-2026 request.
///
/// `bindings` are the `x-mcp-header` annotations of the called tool (`tools/call` of a
/// known tool only); `args` its arguments.
pub fn check_request(
    req: &Request<'_>,
    method: &str,
    params: Option<&Map<String, Value>>,
    bindings: &[Binding],
    args: Option<&Value>,
) -> Result<(), ProtocolError> {
    match text(req, "mcp-method")? {
        None => return Err(mismatch("Mcp-Method header is required".into())),
        Some(h) if h != method => {
            return Err(mismatch(format!(
                "Mcp-Method header \"{h}\" does not match method \"{method}\""
            )));
        }
        Some(_) => {}
    }
    let name_field = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(field) = name_field {
        let body = params.and_then(|p| p.get(field)).and_then(Value::as_str);
        match (text(req, "mcp-name")?, body) {
            (None, _) => return Err(mismatch("Mcp-Name header is required".into())),
            (Some(h), body) => {
                let decoded = decode(h).map_err(|e| mismatch(format!("Mcp-Name header: {e}")))?;
                if body != Some(decoded.as_ref()) {
                    return Err(mismatch(format!(
                        "Mcp-Name header does not match params.{field}"
                    )));
                }
            }
        }
    }
    for b in bindings {
        let header_name = format!("mcp-param-{}", b.name);
        let header = req
            .single_header(&header_name)
            .map_err(|()| mismatch(format!("Mcp-Param-{} header sent more than once", b.name)))?;
        let value = args.and_then(|a| b.value(a));
        match (header, value) {
            (None, None) => {}
            (None, Some(_)) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{} header is required: the argument is present",
                    b.name
                )));
            }
            (Some(_), None) => {
                return Err(mismatch(format!(
                    "Mcp-Param-{} header sent but the argument is absent",
                    b.name
                )));
            }
            (Some(_), Some(v)) => {
                let h = text(req, &header_name)?.unwrap_or_default();
                let decoded =
                    decode(h).map_err(|e| mismatch(format!("Mcp-Param-{} header: {e}", b.name)))?;
                if b.agrees(&decoded, v) == Some(false) {
                    return Err(mismatch(format!(
                        "Mcp-Param-{} header does not match the argument",
                        b.name
                    )));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_examples_encode() {
        assert_eq!(encode("us-west1"), "us-west1");
        assert_eq!(encode("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode(""), "");
    }

    #[test]
    fn strict_decoding() {
        assert_eq!(decode("=?base64?SGVsbG8=?=").unwrap(), "Hello");
        assert!(decode("=?base64?SGVsbG8?=").is_err());
        assert!(decode("=?base64?SGVs!!!bG8=?=").is_err());
        assert!(decode("=?base64?SGVsbG8_?=").is_err());
        assert!(decode("=?base64?/w==?=").is_err(), "not UTF-8");
        assert_eq!(
            decode("=?BASE64?SGVsbG8=?=").unwrap(),
            "=?BASE64?SGVsbG8=?="
        );
        assert_eq!(decode("=?base64?SGVsbG8=").unwrap(), "=?base64?SGVsbG8=");
        assert_eq!(decode("SGVsbG8=?=").unwrap(), "SGVsbG8=?=");
        assert_eq!(decode("=?base64??=").unwrap(), "");
    }
}
