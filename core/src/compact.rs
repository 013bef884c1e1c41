//! Compact JSON text of a value, byte for byte as `serde_json::to_string` writes it.
//!
//! Why: a list page is mostly short strings (field names, ids, dates), and
//! `serde_json` escapes a string by looking each byte up in a table before copying it:
//! that walk was a sixth of a charges page's CPU. Here a string is first checked whole,
//! a word (eight bytes) at a time, for a byte that needs an escape (none does in almost
//! every string of ours), then copied in one piece; numbers are written by `serde_json`'s own
//! formatter, so they read the same.
//!
//! What this writer does not write the same way on its own (a raw value, bytes, 128-bit
//! integers, map keys other than strings, characters and integers, an error raised by a
//! value's `Serialize`) it declines ([`Declined`]), and [`to_string`] hands the whole value
//! to `serde_json` instead: the text is `serde_json`'s in every case (property test
//! `the_text_is_serde_jsons`).

use std::fmt;
use std::io::Cursor;

use serde::ser::{self, Serialize};
use serde_json::ser::{CompactFormatter, Formatter};

/// `v` as compact JSON text, exactly `serde_json::to_string(v)`.
pub(crate) fn to_string<T: Serialize + ?Sized>(v: &T) -> Result<String, serde_json::Error> {
    let mut w = Writer::new(String::with_capacity(128));
    match v.serialize(&mut w) {
        Ok(()) => Ok(w.text),
        Err(Declined) => serde_json::to_string(v),
    }
}

/// The text so far.
struct Writer {
    text: String,
    /// Inside a [`JsonText`](crate::JsonText) ([`JSON_TEXT`]), which holds its raw
    /// value and nothing else: that struct has no key, comma or brace of its own, and
    /// its one string is copied as it is.
    verbatim: bool,
}

/// A value this writer leaves to `serde_json` ([`to_string`]).
#[derive(Debug)]
struct Declined;

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("left to serde_json")
    }
}

impl std::error::Error for Declined {}

impl ser::Error for Declined {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Self
    }
}

/// The name `serde_json` gives a raw value's struct, which its serializer copies as is.
pub(crate) const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// The newtype a [`JsonText`](crate::JsonText) is serialized as, around its text as a raw
/// value: `serde_json` copies the text as it is, and so does this writer, for this
/// newtype's raw value only. Another raw value may hold white space, which a
/// [`JsonText`](crate::JsonText) never does, so it is still left to `serde_json`.
pub(crate) const JSON_TEXT: &str = "$dunning_core::JsonText";

impl Writer {
    fn new(text: String) -> Self {
        Self {
            text,
            verbatim: false,
        }
    }

    /// A string's quoted, escaped text.
    fn string(&mut self, s: &str) {
        self.text.push('"');
        if needs_escape(s.as_bytes()) {
            escape(&mut self.text, s);
        } else {
            self.text.push_str(s);
        }
        self.text.push('"');
    }

    /// A number, as `serde_json`'s compact formatter writes it.
    fn number(
        &mut self,
        write: impl FnOnce(&mut Cursor<&mut [u8]>) -> std::io::Result<()>,
    ) -> Result<(), Declined> {
        let mut buf = [0u8; 40];
        let mut cursor = Cursor::new(&mut buf[..]);
        write(&mut cursor).map_err(|_| Declined)?;
        let n = usize::try_from(cursor.position()).map_err(|_| Declined)?;
        let text = std::str::from_utf8(&buf[..n]).map_err(|_| Declined)?;
        self.text.push_str(text);
        Ok(())
    }

    fn open(&mut self, c: char) -> Compound<'_> {
        self.text.push(c);
        Compound {
            w: self,
            first: true,
        }
    }

    /// `{"variant":` before a variant's content (closed by [`Compound::end_variant`]).
    fn variant(&mut self, variant: &str) -> &mut Self {
        self.text.push('{');
        self.string(variant);
        self.text.push(':');
        self
    }
}

/// Whether a string holds a byte JSON escapes: a control character, `"` or `\`. Read
/// eight bytes at a time, as one word: a byte below 0x20 or equal to one of the two
/// shows in the word's high bits without a branch per byte. The last word overlaps the
/// one before it; a string shorter than a word is read as one, padded with spaces.
fn needs_escape(b: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Whether some byte of `w` is below `n` (`n` at most 0x80).
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGHS != 0;
    // Every word given is eight bytes; were one not, it would read as all zero bytes,
    // which need an escape: the string would take the escaping path, never skip it.
    let special = |w: &[u8]| {
        let w = u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
        below(w, 0x20)
            | below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1)
    };
    if b.len() < 8 {
        let mut word = [b' '; 8];
        word[..b.len()].copy_from_slice(b);
        return special(&word);
    }
    b.chunks_exact(8).any(special) || special(&b[b.len() - 8..])
}

/// Appends `s` escaped as `serde_json` escapes: `\"`, `\\`, the short escapes of
/// backspace, form feed, new line, carriage return and tab, and `\u00xx` (lowercase) for
/// the other control characters.
fn escape(out: &mut String, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut run = 0;
    for (i, b) in s.bytes().enumerate() {
        let short = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[run..i]);
        if short.is_empty() {
            out.push_str("\\u00");
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        } else {
            out.push_str(short);
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
}

/// An object or array being written.
struct Compound<'a> {
    w: &'a mut Writer,
    first: bool,
}

impl Compound<'_> {
    fn comma(&mut self) {
        if !self.first {
            self.w.text.push(',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Declined> {
        self.comma();
        v.serialize(&mut *self.w)
    }

    fn field<T: Serialize + ?Sized>(&mut self, key: &str, v: &T) -> Result<(), Declined> {
        if self.w.verbatim {
            return v.serialize(&mut *self.w);
        }
        self.comma();
        self.w.string(key);
        self.w.text.push(':');
        v.serialize(&mut *self.w)
    }

    fn close(self, c: char) -> Result<(), Declined> {
        if self.w.verbatim {
            return Ok(());
        }
        self.w.text.push(c);
        Ok(())
    }

    /// Closes a variant's content and the object around it.
    fn end_variant(self, c: char) -> Result<(), Declined> {
        self.w.text.push(c);
        self.w.text.push('}');
        Ok(())
    }
}

/// The narrower integers, written as their widest kind.
macro_rules! widened {
    ($($name:ident($ty:ty) => $wide:ident($wty:ty)),* $(,)?) => {
        $(fn $name(self, v: $ty) -> Result<(), Declined> {
            self.$wide(<$wty>::from(v))
        })*
    };
}

impl<'a> ser::Serializer for &'a mut Writer {
    type Ok = ();
    type Error = Declined;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Declined> {
        self.text.push_str(if v { "true" } else { "false" });
        Ok(())
    }

    widened!(
        serialize_i8(i8) => serialize_i64(i64),
        serialize_i16(i16) => serialize_i64(i64),
        serialize_i32(i32) => serialize_i64(i64),
        serialize_u8(u8) => serialize_u64(u64),
        serialize_u16(u16) => serialize_u64(u64),
        serialize_u32(u32) => serialize_u64(u64),
    );

    fn serialize_i64(self, v: i64) -> Result<(), Declined> {
        self.number(|c| CompactFormatter.write_i64(c, v))
    }

    fn serialize_u64(self, v: u64) -> Result<(), Declined> {
        self.number(|c| CompactFormatter.write_u64(c, v))
    }

    fn serialize_f32(self, v: f32) -> Result<(), Declined> {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        self.number(|c| CompactFormatter.write_f32(c, v))
    }

    fn serialize_f64(self, v: f64) -> Result<(), Declined> {
        if !v.is_finite() {
            return self.serialize_unit();
        }
        self.number(|c| CompactFormatter.write_f64(c, v))
    }

    fn serialize_char(self, v: char) -> Result<(), Declined> {
        self.string(v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Declined> {
        if self.verbatim {
            self.text.push_str(v);
        } else {
            self.string(v);
        }
        Ok(())
    }

    fn serialize_bytes(self, _: &[u8]) -> Result<(), Declined> {
        Err(Declined)
    }

    fn serialize_none(self) -> Result<(), Declined> {
        self.serialize_unit()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Declined> {
        v.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Declined> {
        self.text.push_str("null");
        Ok(())
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Declined> {
        self.serialize_unit()
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Declined> {
        self.string(variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<(), Declined> {
        if name != JSON_TEXT {
            return v.serialize(self);
        }
        self.verbatim = true;
        let done = v.serialize(&mut *self);
        self.verbatim = false;
        done
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<(), Declined> {
        v.serialize(&mut *self.variant(variant))?;
        self.text.push('}');
        Ok(())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, Declined> {
        Ok(self.open('['))
    }

    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, Declined> {
        Ok(self.open('['))
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, Declined> {
        Ok(self.open('['))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Declined> {
        Ok(self.variant(variant).open('['))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, Declined> {
        Ok(self.open('{'))
    }

    fn serialize_struct(self, name: &'static str, _: usize) -> Result<Compound<'a>, Declined> {
        match (name == RAW_VALUE, self.verbatim) {
            // A JsonText's raw value: its one field, the text, written with no key or
            // brace around it (`verbatim`).
            (true, true) => Ok(Compound {
                w: self,
                first: true,
            }),
            (false, false) => Ok(self.open('{')),
            // Another raw value may hold white space; nothing else is inside a JsonText.
            _ => Err(Declined),
        }
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, Declined> {
        Ok(self.variant(variant).open('{'))
    }
}

/// The array kinds: `serde`'s names for an element differ, what is written does not. A
/// variant's array is closed with the object around it.
macro_rules! array {
    ($($kind:ident::$add:ident => $end:ident),* $(,)?) => {
        $(impl ser::$kind for Compound<'_> {
            type Ok = ();
            type Error = Declined;

            fn $add<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Declined> {
                self.element(v)
            }

            fn end(self) -> Result<(), Declined> {
                self.$end(']')
            }
        })*
    };
}

array!(
    SerializeSeq::serialize_element => close,
    SerializeTuple::serialize_element => close,
    SerializeTupleStruct::serialize_field => close,
    SerializeTupleVariant::serialize_field => end_variant,
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Declined;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Declined> {
        self.comma();
        key.serialize(Key(&mut *self.w))
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), Declined> {
        self.w.text.push(':');
        v.serialize(&mut *self.w)
    }

    fn end(self) -> Result<(), Declined> {
        self.close('}')
    }
}

/// The object kinds with fields named by the type: a struct's, and a variant's (closed
/// with the object around it).
macro_rules! object {
    ($($kind:ident => $end:ident),* $(,)?) => {
        $(impl ser::$kind for Compound<'_> {
            type Ok = ();
            type Error = Declined;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                v: &T,
            ) -> Result<(), Declined> {
                self.field(key, v)
            }

            fn end(self) -> Result<(), Declined> {
                self.$end('}')
            }
        })*
    };
}

object!(SerializeStruct => close, SerializeStructVariant => end_variant);

/// A map's key: a string, a character, or an integer written as a string (as
/// `serde_json` writes them); any other key is declined.
struct Key<'a>(&'a mut Writer);

/// The key kinds [`Key`] declines.
macro_rules! declined {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), Declined> {
            Err(Declined)
        })*
    };
}

/// The integer keys [`Key`] writes as strings, as `serde_json` does.
macro_rules! quoted {
    ($($name:ident($ty:ty)),* $(,)?) => {
        $(fn $name(self, v: $ty) -> Result<(), Declined> {
            self.quoted(|w| w.$name(v))
        })*
    };
}

impl Key<'_> {
    fn quoted(
        self,
        write: impl FnOnce(&mut Writer) -> Result<(), Declined>,
    ) -> Result<(), Declined> {
        self.0.text.push('"');
        write(self.0)?;
        self.0.text.push('"');
        Ok(())
    }
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = Declined;
    type SerializeSeq = ser::Impossible<(), Declined>;
    type SerializeTuple = ser::Impossible<(), Declined>;
    type SerializeTupleStruct = ser::Impossible<(), Declined>;
    type SerializeTupleVariant = ser::Impossible<(), Declined>;
    type SerializeMap = ser::Impossible<(), Declined>;
    type SerializeStruct = ser::Impossible<(), Declined>;
    type SerializeStructVariant = ser::Impossible<(), Declined>;

    fn serialize_str(self, v: &str) -> Result<(), Declined> {
        self.0.string(v);
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), Declined> {
        self.0.serialize_char(v)
    }

    quoted!(
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
    );

    declined!(
        serialize_bool(bool),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Declined> {
        Err(Declined)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), Declined> {
        Err(Declined)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Declined> {
        Err(Declined)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Declined> {
        Err(Declined)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Declined> {
        Err(Declined)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Declined> {
        Err(Declined)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Declined> {
        Err(Declined)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Declined> {
        Err(Declined)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Declined> {
        Err(Declined)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Declined> {
        Err(Declined)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde::Serialize;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    fn same<T: Serialize + ?Sized>(v: &T) {
        assert_eq!(
            to_string(v).map_err(|e| e.to_string()),
            serde_json::to_string(v).map_err(|e| e.to_string())
        );
    }

    /// Any value: nested objects and arrays, empty ones, numbers of every kind, and
    /// strings (and keys) of the characters `text` (a regex class) allows. Also the pretty
    /// text's strategy (`body.rs`).
    pub(crate) fn any_value(text: &'static str) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            text.prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                proptest::collection::vec((text, inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Control characters, the two that need an escape, and text past ASCII.
    const TEXT: &str = "[a-z\"\\\\/\\u{0}-\\u{1f}\\u{7f}\\u{80}é😀 ]{0,40}";

    proptest! {
        #[test]
        fn the_text_is_serde_jsons(v in any_value(TEXT), f in any::<f32>(), c in any::<char>()) {
            // Written here, not left to serde_json.
            let mut w = Writer::new(String::new());
            prop_assert!(v.serialize(&mut w).is_ok());
            prop_assert_eq!(w.text, serde_json::to_string(&v).unwrap());
            prop_assert_eq!(to_string(&f).unwrap(), serde_json::to_string(&f).unwrap());
            prop_assert_eq!(to_string(&c).unwrap(), serde_json::to_string(&c).unwrap());
        }
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(u8),
        Tuple(i8, String),
        Struct { a: Option<u16>, b: Vec<()> },
    }

    #[derive(Serialize)]
    struct Flat {
        id: &'static str,
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        gone: Option<u8>,
    }

    #[derive(Serialize)]
    struct Newtype(Vec<Shape>);

    #[derive(Serialize)]
    struct Unit;

    struct Failing;

    impl Serialize for Failing {
        fn serialize<S: ser::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
            Err(ser::Error::custom("no"))
        }
    }

    /// Every shape `serde` has, those this writer declines among them: the same text, or
    /// the same error.
    #[test]
    fn every_shape_is_written_as_serde_json_writes_it() {
        let shapes = Newtype(vec![
            Shape::Unit,
            Shape::Newtype(7),
            Shape::Tuple(-1, "t\u{1}".into()),
            Shape::Struct {
                a: None,
                b: vec![(), ()],
            },
            Shape::Struct {
                a: Some(3),
                b: vec![],
            },
        ]);
        same(&shapes);
        same(&(
            1u8,
            'x',
            Unit,
            f64::NAN,
            f32::INFINITY,
            -0.0f64,
            1e300,
            5e-324,
        ));
        let rest: BTreeMap<String, Value> =
            [("k\"".to_owned(), json!([{}, []]))].into_iter().collect();
        same(&Flat {
            id: "i",
            rest,
            gone: None,
        });
        let int_keys: BTreeMap<i32, u8> = [(-3, 1), (40, 2)].into_iter().collect();
        same(&int_keys);
        let char_keys: BTreeMap<char, bool> = [('a', true)].into_iter().collect();
        same(&char_keys);
        let bool_keys: BTreeMap<bool, u8> = [(true, 1)].into_iter().collect();
        same(&bool_keys);
        let unit_keys: BTreeMap<(), u8> = [((), 1)].into_iter().collect();
        same(&unit_keys);
        same(&serde_json::value::RawValue::from_string("{ \"raw\" : 1 }".into()).unwrap());
        same(&json!({ "raw": serde_json::value::RawValue::from_string("[1, 2]".into()).unwrap() }));
        same(&Bytes(&[0, 255, 16]));
        same(&(u128::MAX, i128::MIN));
        same(&vec![Failing]);
        // Those are left to serde_json: declined here.
        for declined in [
            Bytes(&[1]).serialize(&mut Writer::new(String::new())),
            (u128::MAX,).serialize(&mut Writer::new(String::new())),
            Failing.serialize(&mut Writer::new(String::new())),
        ] {
            assert!(declined.is_err());
        }
        same(&"\u{8}\u{c}\n\r\t\"\\/\u{1f}\u{7f}");
    }

    /// A `JsonText` inside a value is copied as it is, here (not declined) and by
    /// `serde_json`, and a string after it is escaped again; any other raw value is
    /// still declined, since it may hold white space.
    #[test]
    fn a_json_text_inside_a_value_is_copied_as_it_is() {
        #[derive(Serialize)]
        struct Page<'a> {
            data: Vec<&'a crate::JsonText>,
            after: &'a str,
        }
        let row = crate::JsonText::of(&json!({"a": [1, "x\"y"], "b": null})).unwrap();
        let page = Page {
            data: vec![&row, &row],
            after: "q\"",
        };
        let expected =
            r#"{"data":[{"a":[1,"x\"y"],"b":null},{"a":[1,"x\"y"],"b":null}],"after":"q\""}"#;
        let mut w = Writer::new(String::new());
        assert!(page.serialize(&mut w).is_ok(), "written here");
        assert_eq!(w.text, expected);
        assert_eq!(serde_json::to_string(&page).unwrap(), expected);
        assert_eq!(
            serde_json::to_value(&page).unwrap(),
            serde_json::from_str::<Value>(expected).unwrap()
        );
        let spaced = serde_json::value::RawValue::from_string("[1, 2]".into()).unwrap();
        assert!(spaced.serialize(&mut Writer::new(String::new())).is_err());
    }

    /// Bytes as a byte-buffer type serializes them (`serialize_bytes`; a `Vec<u8>` is a
    /// sequence of numbers instead).
    struct Bytes(&'static [u8]);

    impl Serialize for Bytes {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_bytes(self.0)
        }
    }
}
