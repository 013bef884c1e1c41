//! A JSON body: a tree built by hand, or text serialized once from typed values.
//!
//! Why: a list page's rows are typed values. Turned into a `Value` tree, measured, then
//! walked twice more (a tool result's pretty text and its structured copy), the tree was
//! most of a page's CPU. A body written as [`JsonText`] is serialized once: its size is
//! its length, its structured copy is a copy, and its pretty text is re-indented from
//! those bytes by [`JsonText::write_pretty_escaped`], which escapes it on the way as the
//! JSON string it becomes. A tree is turned into text once, at the answer, and takes the
//! same path: one writer of tool results, whatever the operation built.

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// What a JSON output holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    /// A tree, built field by field.
    Tree(Value),
    /// Compact text, serialized once.
    Text(JsonText),
}

impl Body {
    /// The body as a tree (a text is parsed: for the rare readers of a field).
    pub fn into_value(self) -> Value {
        match self {
            Self::Tree(v) => v,
            Self::Text(t) => t.to_value(),
        }
    }

    /// The body as compact text (a tree is serialized).
    pub fn into_text(self) -> JsonText {
        match self {
            Self::Tree(v) => JsonText::of(&v).unwrap_or_else(|_| JsonText::null()),
            Self::Text(t) => t,
        }
    }

    /// The top-level member `key` of an object body, as a tree; a text body's other
    /// members are scanned, not built.
    pub fn member(&self, key: &str) -> Option<Value> {
        match self {
            Self::Tree(v) => v.get(key).cloned(),
            Self::Text(t) => {
                let object: std::collections::HashMap<String, &RawValue> =
                    serde_json::from_str(t.as_str()).ok()?;
                serde_json::from_str(object.get(key)?.get()).ok()
            }
        }
    }
}

impl From<Value> for Body {
    fn from(v: Value) -> Self {
        Self::Tree(v)
    }
}

/// Compact JSON text written by `serde_json` from a value of ours: valid, with no
/// whitespace outside its strings and no control character inside them (the two
/// properties [`JsonText::write_pretty_escaped`] relies on). Only [`JsonText::of`]
/// makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonText(String);

impl JsonText {
    /// `v` serialized (an error only for a map whose keys are not strings).
    pub fn of<T: Serialize + ?Sized>(v: &T) -> Result<Self, serde_json::Error> {
        serde_json::to_string(v).map(Self)
    }

    /// `null`.
    pub fn null() -> Self {
        Self("null".to_owned())
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text's bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }

    /// Its size in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Never: the shortest JSON text is one byte.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The text parsed back into a tree.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// Appends the text as `serde_json::to_writer_pretty` writes the same value (two
    /// spaces an indent, `": "` after a key, `{}` and `[]` when empty), escaped as the
    /// inside of a JSON string. Outside strings the compact text holds only structure,
    /// numbers and literals, none of which needs escaping; inside them, only `"` and `\`
    /// can occur that do (control characters are already escaped); the new lines this
    /// writes are written as `\n`.
    pub fn write_pretty_escaped(&self, out: &mut Vec<u8>) {
        let b = self.0.as_bytes();
        out.reserve(b.len() + b.len() / 2);
        let mut depth = 0usize;
        let mut run = 0;
        let mut i = 0;
        let newline = |out: &mut Vec<u8>, depth: usize| {
            out.extend_from_slice(b"\\n");
            out.resize(out.len() + 2 * depth, b' ');
        };
        while i < b.len() {
            match b[i] {
                b'"' => {
                    out.extend_from_slice(&b[run..i]);
                    out.extend_from_slice(b"\\\"");
                    i += 1;
                    run = i;
                    // Inside the string: `\` and `"` are escaped again; an escaped quote
                    // does not end it. Strings are most of a body: found by `memchr`.
                    while i < b.len() {
                        i = memchr::memchr2(b'"', b'\\', &b[i..]).map_or(b.len(), |at| i + at);
                        if b.get(i) != Some(&b'\\') {
                            break;
                        }
                        out.extend_from_slice(&b[run..i]);
                        out.extend_from_slice(b"\\\\");
                        // The escaped character: a quote or a backslash needs its own
                        // escape; the others (`n`, `u`, ...) are plain.
                        i += 1;
                        run = i;
                        if let Some(&e @ (b'"' | b'\\')) = b.get(i) {
                            out.extend_from_slice(&[b'\\', e]);
                            i += 1;
                            run = i;
                        }
                    }
                    out.extend_from_slice(&b[run..i]);
                    out.extend_from_slice(b"\\\"");
                    // Past the closing quote (a text of ours always has one).
                    i = (i + 1).min(b.len());
                    run = i;
                }
                open @ (b'{' | b'[') => {
                    let close = if open == b'{' { b'}' } else { b']' };
                    if b.get(i + 1) == Some(&close) {
                        i += 2;
                        continue;
                    }
                    out.extend_from_slice(&b[run..=i]);
                    depth += 1;
                    newline(out, depth);
                    i += 1;
                    run = i;
                }
                b'}' | b']' => {
                    out.extend_from_slice(&b[run..i]);
                    depth = depth.saturating_sub(1);
                    newline(out, depth);
                    run = i;
                    i += 1;
                }
                b',' => {
                    out.extend_from_slice(&b[run..=i]);
                    newline(out, depth);
                    i += 1;
                    run = i;
                }
                b':' => {
                    out.extend_from_slice(&b[run..=i]);
                    out.push(b' ');
                    i += 1;
                    run = i;
                }
                _ => i += 1,
            }
        }
        out.extend_from_slice(&b[run..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_text_bodys_member_is_read_without_the_rest() {
        let v = json!({ "data": [{ "meta": 1 }], "meta": { "page": 2 } });
        let text = Body::Text(JsonText::of(&v).unwrap());
        assert_eq!(text.member("meta"), Some(json!({ "page": 2 })));
        assert_eq!(text.member("none"), None);
        assert_eq!(Body::Tree(v.clone()).member("meta"), text.member("meta"));
        assert_eq!(text.into_value(), v);
    }
}
