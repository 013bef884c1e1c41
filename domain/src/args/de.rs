//! The one path from a call's arguments (a JSON object) to a tool's argument struct, and
//! the one way to read back what a struct declares ([`shape`]).
//!
//! Fields are read in the struct's declared order, each from its own value, so the
//! first offending field (in that order) names the error; keys the struct does not
//! declare are ignored, or refused all at once when the read is strict. A field's error
//! is a `VALIDATION_ERROR` on that field whose issue is the deserializer's message: the
//! helpers of [`super::fields`] word theirs as the handlers always have; a required field
//! that is absent is `is required`.

use std::cell::{Cell, RefCell};
use std::fmt;

use dunning_core::FieldIssue;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::DomainError;

/// The error of an argument read: the domain error it answers with.
#[derive(Debug)]
pub(crate) struct ArgError(pub(crate) DomainError);

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ArgError {}

impl de::Error for ArgError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self(DomainError::Validation {
            message: msg.to_string(),
            details: Vec::new(),
        })
    }

    fn missing_field(field: &'static str) -> Self {
        Self(DomainError::field(field, "is required"))
    }
}

/// Reads `T` from `args`; `strict` refuses keys `T` does not declare (besides
/// `idempotency_key`, which every write accepts and the runtime reads).
pub(crate) fn read<T: DeserializeOwned>(
    args: &Map<String, Value>,
    strict: bool,
) -> Result<T, DomainError> {
    T::deserialize(Args { args, strict }).map_err(|e| e.0)
}

/// Refuses the keys of `args` outside `known`, naming each.
pub(crate) fn refuse_unknown(args: &Map<String, Value>, known: &[&str]) -> Result<(), DomainError> {
    let unknown: Vec<FieldIssue> = args
        .keys()
        .filter(|k| !known.contains(&k.as_str()) && k.as_str() != "idempotency_key")
        .map(|k| FieldIssue {
            field: k.clone(),
            issue: "unknown field".into(),
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = unknown.iter().map(|i| i.field.as_str()).collect();
    Err(DomainError::Validation {
        message: format!("Unknown fields: {}", names.join(", ")),
        details: unknown,
    })
}

struct Args<'a> {
    args: &'a Map<String, Value>,
    strict: bool,
}

impl<'de> de::Deserializer<'de> for Args<'de> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ArgError> {
        self.deserialize_struct("", &[], visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        if self.strict {
            refuse_unknown(self.args, fields).map_err(ArgError)?;
        }
        visitor.visit_map(Present {
            args: self.args,
            fields: fields.iter(),
            value: None,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The declared fields present in the arguments, in declared order.
struct Present<'a> {
    args: &'a Map<String, Value>,
    fields: std::slice::Iter<'static, &'static str>,
    value: Option<(&'static str, &'a Value)>,
}

impl<'de> MapAccess<'de> for Present<'de> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        for &field in self.fields.by_ref() {
            if let Some(v) = self.args.get(field) {
                self.value = Some((field, v));
                return seed.deserialize(field.into_deserializer()).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, ArgError> {
        let (field, value) = self
            .value
            .take()
            .ok_or_else(|| <ArgError as de::Error>::custom("a value without its key"))?;
        seed.deserialize(value)
            .map_err(|e| ArgError(DomainError::field(field, e.to_string())))
    }
}

/// What an argument struct declares: its fields, and which of them it cannot do
/// without (every field but an `Option`, which an absent key leaves `None`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// The fields, in declared order.
    pub fields: Vec<&'static str>,
    /// The required fields, in declared order.
    pub required: Vec<&'static str>,
}

/// The [`Shape`] of `T`, read through `T`'s own `Deserialize`: its field list from the
/// `deserialize_struct` call, and for each field whether the first thing it asks of its
/// value is an option.
pub fn shape<T: DeserializeOwned>() -> Shape {
    let fields = field_names::<T>();
    let mut out = Shape {
        fields: fields.to_vec(),
        required: Vec::new(),
    };
    for &field in fields {
        let optional = RefCell::new(None);
        let _ = T::deserialize(Probe {
            fields: &Cell::new(&[][..]),
            one: Some((field, &optional)),
        });
        if *optional.borrow() != Some(true) {
            out.required.push(field);
        }
    }
    out
}

/// The fields `T` declares, from its `deserialize_struct` call alone: what a strict read
/// needs on every call, without [`shape`]'s probe of each field.
pub(crate) fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let fields = Cell::new(&[][..]);
    let _ = T::deserialize(Probe {
        fields: &fields,
        one: None,
    });
    fields.get()
}

/// A deserializer that records a struct's fields and, with `one`, offers that one field
/// a value that records whether it was asked for as an option, then fails.
struct Probe<'p> {
    fields: &'p Cell<&'static [&'static str]>,
    one: Option<(&'static str, &'p RefCell<Option<bool>>)>,
}

fn stop() -> ArgError {
    <ArgError as de::Error>::custom("probe")
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
        Err(stop())
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ArgError> {
        self.fields.set(fields);
        match self.one {
            Some((field, optional)) => visitor.visit_map(OneField {
                field: Some(field),
                optional,
            }),
            None => Err(stop()),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct OneField<'p> {
    field: Option<&'static str>,
    optional: &'p RefCell<Option<bool>>,
}

impl<'de> MapAccess<'de> for OneField<'_> {
    type Error = ArgError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ArgError> {
        match self.field.take() {
            Some(f) => seed.deserialize(f.into_deserializer()).map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, ArgError> {
        seed.deserialize(Asked(self.optional))
    }
}

/// Records whether its first request is an option.
struct Asked<'p>(&'p RefCell<Option<bool>>);

impl<'de> de::Deserializer<'de> for Asked<'_> {
    type Error = ArgError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
        self.0.borrow_mut().get_or_insert(false);
        Err(stop())
    }

    fn deserialize_option<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ArgError> {
        self.0.borrow_mut().get_or_insert(true);
        Err(stop())
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}
