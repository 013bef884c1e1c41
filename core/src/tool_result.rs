//! A tool's result written straight to the answer.
//!
//! Why: a result is its value twice, as `structuredContent` and as pretty JSON text in its
//! one content block. Built as a `Value` tree, the text was written once into a string,
//! then that string was escaped into the answer, and the tree walked a third time for the
//! structured copy: most of a list page's writing. Here the value is compact text, written
//! once (by the operation, or from its tree when the result arrives: [`crate::Body`]), and,
//! in order: the answer's head up to the text; that text re-indented and escaped as the
//! JSON string it becomes, in one pass ([`JsonText::write_pretty_escaped`]); the
//! structured copy, a copy; the era's decoration. The bytes are exactly those of the
//! generic path ([`ToolResult::into_value`] decorated and written by `jsonrpc::success`):
//! test `written_is_the_generic_answer`.

use serde_json::{Value, json};

use crate::body::JsonText;
use crate::era::Version;
use crate::jsonrpc;
use crate::reply;

/// A tool's result, kept as its compact text until it is written.
pub(crate) struct ToolResult {
    /// What the tool returned.
    pub(crate) text: JsonText,
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
        let value = self.text.to_value();
        let text = serde_json::to_string_pretty(&value).unwrap_or_default();
        let structured = self.structured();
        let mut result = json!({ "content": [{ "type": "text", "text": text }] });
        if structured {
            result["structuredContent"] = value;
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
        out.reserve(4096 + 3 * self.text.len());
        out.extend_from_slice(br#","result":{"content":[{"type":"text","text":""#);
        self.text.write_pretty_escaped(&mut out);
        out.extend_from_slice(br#""}]"#);
        if self.structured() {
            out.extend_from_slice(br#","structuredContent":"#);
            out.extend_from_slice(self.text.as_str().as_bytes());
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
            // Structure inside strings, escapes next to quotes (the text is re-indented
            // from compact bytes: `JsonText::write_pretty_escaped`).
            json!({ "k:{}[],": "v:{}[],\"", "\\": "\\\\\"", "": [[], {}, [{}]] }),
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
                            text: JsonText::of(&value).unwrap(),
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
