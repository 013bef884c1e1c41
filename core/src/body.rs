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

/// Compact JSON text of a value of ours, as `serde_json` writes it (`crate::compact`):
/// valid, with no whitespace outside its strings and no control character inside them
/// (the two properties [`JsonText::write_pretty_escaped`] relies on). Only
/// [`JsonText::of`] makes one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonText(String);

/// Written as it is, inside another value: by `serde_json` (as a raw value) and by
/// [`JsonText::of`] (`crate::compact`), so a value rendered once can be part of many
/// answers (a list's rows) without being parsed or written again.
impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The text as `serde_json`'s raw value is serialized: one field in a struct, both
        /// with its private name.
        struct Raw<'a>(&'a str);

        impl Serialize for Raw<'_> {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                use serde::ser::SerializeStruct;
                let mut raw = s.serialize_struct(crate::compact::RAW_VALUE, 1)?;
                raw.serialize_field(crate::compact::RAW_VALUE, self.0)?;
                raw.end()
            }
        }

        s.serialize_newtype_struct(crate::compact::JSON_TEXT, &Raw(&self.0))
    }
}

impl JsonText {
    /// `v` serialized (an error only for a map whose keys are not strings).
    pub fn of<T: Serialize + ?Sized>(v: &T) -> Result<Self, serde_json::Error> {
        crate::compact::to_string(v).map(Self)
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
    ///
    /// Why it copies in fixed-size pieces: a page is a few hundred short tokens (keys,
    /// ids, dates, numbers) between structure, and copying each with a copy of its own
    /// length, and each indent with a fill, cost a library call per token, most of the
    /// re-indenting's time. A token of up to [`SHORT`] bytes, and a line break with its
    /// indent, is copied as a block of constant size and the buffer cut back to its end.
    pub fn write_pretty_escaped(&self, out: &mut Vec<u8>) {
        let b = self.0.as_bytes();
        out.reserve(b.len() + b.len() / 2);
        let mut depth = 0usize;
        let mut i = 0;
        while let Some(&c) = b.get(i) {
            match c {
                b'"' => {
                    out.extend_from_slice(b"\\\"");
                    i += 1;
                    // Inside the string: `\` and `"` are escaped again; an escaped quote
                    // does not end it.
                    loop {
                        let end =
                            memchr::memchr2(b'"', b'\\', &b[i..]).map_or(b.len(), |at| i + at);
                        copy(out, b, i, end);
                        i = end;
                        match b.get(i) {
                            Some(b'\\') => {
                                out.extend_from_slice(b"\\\\");
                                i += 1;
                                // The escaped character: a quote or a backslash needs its
                                // own escape; the others (`n`, `u`, ...) are plain.
                                if let Some(&e @ (b'"' | b'\\')) = b.get(i) {
                                    out.extend_from_slice(&[b'\\', e]);
                                    i += 1;
                                }
                            }
                            _ => break,
                        }
                    }
                    out.extend_from_slice(b"\\\"");
                    // Past the closing quote (a text of ours always has one).
                    i += 1;
                }
                open @ (b'{' | b'[') => {
                    let close = if open == b'{' { b'}' } else { b']' };
                    if b.get(i + 1) == Some(&close) {
                        out.extend_from_slice(&[open, close]);
                        i += 2;
                        continue;
                    }
                    out.push(open);
                    depth += 1;
                    newline(out, depth);
                    i += 1;
                }
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    newline(out, depth);
                    out.push(c);
                    i += 1;
                }
                b',' => {
                    out.push(b',');
                    newline(out, depth);
                    i += 1;
                }
                b':' => {
                    out.extend_from_slice(b": ");
                    i += 1;
                }
                _ => {
                    // A number or a literal: up to the structure after it.
                    let start = i;
                    while b
                        .get(i)
                        .is_some_and(|c| !matches!(c, b',' | b'}' | b']' | b':' | b'"'))
                    {
                        i += 1;
                    }
                    copy(out, b, start, i);
                }
            }
        }
    }
}

/// Tokens this long or shorter are copied as one block of this size ([`copy`]).
const SHORT: usize = 32;

/// A line break written as the inside of a JSON string (`\n`), then the indent of the
/// deepest level [`newline`] writes in one block.
const BREAK: [u8; 2 + 2 * 31] = {
    let mut a = [b' '; 2 + 2 * 31];
    a[0] = b'\\';
    a[1] = b'n';
    a
};

/// Appends an escaped line break and the indent of `depth` levels.
fn newline(out: &mut Vec<u8>, depth: usize) {
    let len = out.len() + 2 + 2 * depth;
    if 2 + 2 * depth <= BREAK.len() {
        out.extend_from_slice(&BREAK);
        out.truncate(len);
    } else {
        out.extend_from_slice(b"\\n");
        out.resize(len, b' ');
    }
}

/// Appends `b[from..to]`: when it is short and `b` holds a block of [`SHORT`] bytes from
/// `from`, as that block, cut back to the token's end.
fn copy(out: &mut Vec<u8>, b: &[u8], from: usize, to: usize) {
    let block = b
        .get(from..from + SHORT)
        .and_then(|s| <&[u8; SHORT]>::try_from(s).ok());
    match block {
        Some(block) if to - from <= SHORT => {
            let len = out.len() + (to - from);
            out.extend_from_slice(block);
            out.truncate(len);
        }
        _ => out.extend_from_slice(&b[from..to]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// `v`'s pretty text as [`JsonText::write_pretty_escaped`] writes it.
    fn pretty_escaped(v: &Value) -> String {
        let mut out = Vec::new();
        JsonText::of(v).unwrap().write_pretty_escaped(&mut out);
        String::from_utf8(out).unwrap()
    }

    /// The same as `serde_json` writes it: its pretty text, as the inside of the JSON
    /// string it writes of that text.
    fn serde_jsons(v: &Value) -> String {
        let string = serde_json::to_string(&serde_json::to_string_pretty(v).unwrap()).unwrap();
        string[1..string.len() - 1].to_owned()
    }

    /// Strings of the characters that need an escape, structure and long runs (over a
    /// copied block's length).
    const TEXT: &str = "[a-z\"\\\\{}\\[\\],: \\n\\t\\u{1}\\u{7f}é😀]{0,40}";

    proptest! {
        /// The re-indented text is `serde_json`'s pretty text of the same value, as the
        /// inside of the JSON string `serde_json` writes of it.
        #[test]
        fn the_pretty_text_is_serde_jsons(v in crate::compact::tests::any_value(TEXT)) {
            prop_assert_eq!(pretty_escaped(&v), serde_jsons(&v));
        }
    }

    /// The edges of the blocks [`write_pretty_escaped`](JsonText::write_pretty_escaped)
    /// copies: tokens of every length around [`SHORT`], at the end of the text or not,
    /// and levels deeper than one block of indent ([`BREAK`]).
    #[test]
    fn tokens_and_indents_of_every_length_are_written_whole() {
        let mut values = Vec::new();
        for n in 0..=2 * SHORT + 2 {
            let s = "x".repeat(n);
            let q = format!("{}\"{}", "y".repeat(n), "z".repeat(n % 5));
            values.push(json!(s));
            values.push(json!({ s.clone(): q, "k": [s.clone(), 1] }));
            values.push(json!([q, s.clone()]));
            values.push(Value::from("9".repeat(n.max(1)).parse::<f64>().unwrap()));
        }
        let mut deep = json!(1);
        for _ in 0..40 {
            deep = json!([deep, {}]);
        }
        values.push(deep);
        for v in values {
            assert_eq!(pretty_escaped(&v), serde_jsons(&v));
        }
    }

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
