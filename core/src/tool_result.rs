//! A tool's result written straight to the answer.
//!
//! Why: a result is its value twice, as `structuredContent` and as pretty JSON text in its
//! one content block. Built as a `Value` tree, the text was written once into a string,
//! then that string was escaped into the answer, and the tree walked a third time for the
//! structured copy: most of a list page's writing. Here, in order: the answer's head up to
//! the text; the value pretty-printed through [`Escaped`], which escapes it as the JSON
//! string it becomes on the way (no intermediate string); the structured copy; the era's
//! decoration. The bytes are exactly those of the generic path ([`ToolResult::into_value`]
//! decorated and written by `jsonrpc::success`): test `written_is_the_generic_answer`.

use std::io;

use serde_json::{Value, json};

use crate::era::Version;
use crate::jsonrpc;
use crate::reply;

/// A tool's result, kept as its value until it is written.
pub(crate) struct ToolResult {
    /// What the tool returned.
    pub(crate) value: Value,
    /// An `isError` result.
    pub(crate) is_error: bool,
    /// The version the answer is written for.
    pub(crate) version: Version,
}

impl ToolResult {
    /// `structuredContent` is left out for 2025-03-26, which predates it.
    fn structured(&self) -> bool {
        self.version != Version::V2025_03_26
    }

    /// The result as a JSON object (for the answers that wrap it: progress streams).
    pub(crate) fn into_value(self) -> Value {
        let text = serde_json::to_string_pretty(&self.value).unwrap_or_default();
        let structured = self.structured();
        let mut result = json!({ "content": [{ "type": "text", "text": text }] });
        if structured {
            result["structuredContent"] = self.value;
        }
        if self.is_error {
            result["isError"] = Value::Bool(true);
        }
        result
    }

    /// The complete answer for `id`; `server_info` is the era-2026 decoration's (`None`
    /// before 2026-07-28, which has none).
    pub(crate) fn answer(&self, id: &Value, server_info: Option<&Value>) -> Vec<u8> {
        let mut out = jsonrpc::head(id);
        // A small result's answer without growing the buffer on the way.
        out.reserve(4096);
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer_pretty(Escaped(&mut out), &self.value);
        out.extend_from_slice(br#""}]"#);
        if self.structured() {
            out.extend_from_slice(br#","structuredContent":"#);
            jsonrpc::write_json(&mut out, &self.value);
        }
        if self.is_error {
            out.extend_from_slice(br#","isError":true"#);
        }
        if let Some(info) = server_info {
            reply::write_decoration(&mut out, "tools/call", info);
        }
        out.extend_from_slice(b"}}");
        out
    }
}

/// Writes what it is given escaped as the inside of a JSON string, as `serde_json`
/// escapes a string: `"` and `\` escaped, control characters as `\b \t \n \f \r` or
/// `\u00XX`, everything else (UTF-8 included) as it is.
struct Escaped<'a>(&'a mut Vec<u8>);

/// The escape of each byte (0: none).
const ESCAPE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        t[b] = b'u';
        b += 1;
    }
    t[0x08] = b'b';
    t[0x09] = b't';
    t[0x0a] = b'n';
    t[0x0c] = b'f';
    t[0x0d] = b'r';
    t[b'"' as usize] = b'"';
    t[b'\\' as usize] = b'\\';
    t
};

impl io::Write for Escaped<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let out = &mut *self.0;
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            let e = ESCAPE[usize::from(b)];
            if e == 0 {
                continue;
            }
            out.extend_from_slice(&buf[start..i]);
            if e == b'u' {
                let hex = [HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]];
                out.extend_from_slice(b"\\u00");
                out.extend_from_slice(&hex);
            } else {
                out.extend_from_slice(&[b'\\', e]);
            }
            start = i + 1;
        }
        out.extend_from_slice(&buf[start..]);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values with every kind of character a tool may return inside its strings.
    fn values() -> Vec<Value> {
        let mut all_bytes = String::new();
        for c in 0u8..0x80 {
            all_bytes.push(char::from(c));
        }
        vec![
            json!({}),
            json!([]),
            json!(null),
            json!("plain"),
            json!({ "data": [], "meta": { "page": 1, "total": 0 } }),
            json!({ "name": "Zé \"da\" Silva\\", "tabs\tand\nlines": "\r\u{8}\u{c}\u{1}\u{1f}\u{7f}" }),
            json!({ "all": all_bytes, "unicode": "ação – 日本 😀 \u{2028}" }),
            json!({ "nested": [[{}], [1.5, -2, 3e20, true, false, null], { "a": { "b": [] } }] }),
        ]
    }

    /// For every version, errors or not, and a few ids: the same bytes as the result
    /// built as a value, decorated by the server (2026) and written by `jsonrpc::success`.
    #[test]
    fn written_is_the_generic_answer() {
        let server = crate::fuzzing::server();
        for value in values() {
            for version in Version::ALL {
                for is_error in [false, true] {
                    for id in [json!(1), json!("a\"b"), Value::Null] {
                        let r = ToolResult {
                            value: value.clone(),
                            is_error,
                            version,
                        };
                        let modern = version == Version::V2026_07_28;
                        let written = r.answer(&id, modern.then(|| server.server_info()));
                        let mut generic = r.into_value();
                        if modern {
                            server.decorate("tools/call", &mut generic);
                        }
                        assert_eq!(
                            String::from_utf8(written).unwrap(),
                            String::from_utf8(jsonrpc::success(&id, &generic)).unwrap(),
                            "{value} {version:?} {is_error} {id}"
                        );
                    }
                }
            }
        }
    }
}
