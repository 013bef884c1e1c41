//! The argument structs against the schemas, and the errors of a read.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{ById, IdReason, ListArgs, Shape, de, fields, shape};
use crate::brazil::money::Money;
use crate::error::DomainError;

#[derive(Debug, Deserialize)]
struct Sample {
    id: String,
    note: Option<String>,
    #[serde(default, deserialize_with = "fields::money")]
    amount: Option<Money>,
    #[serde(default, deserialize_with = "fields::date")]
    due_date: Option<chrono::NaiveDate>,
    #[serde(default, deserialize_with = "fields::patch")]
    label: Option<Option<String>>,
}

fn map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn issue(e: DomainError) -> (String, String) {
    match e {
        DomainError::Validation { message, details } => (message, details[0].issue.clone()),
        other => panic!("not a validation error: {other:?}"),
    }
}

#[test]
fn a_shape_lists_fields_in_order_and_the_required_ones() {
    assert_eq!(
        shape::<Sample>(),
        Shape {
            fields: vec!["id", "note", "amount", "due_date", "label"],
            required: vec!["id"],
        }
    );
    assert_eq!(shape::<ById>().required, ["id"]);
    assert_eq!(shape::<IdReason>().fields, ["id", "reason"]);
    assert_eq!(
        shape::<ListArgs>().fields,
        ["page", "per_page", "sort_by", "sort_order"]
    );
}

#[test]
fn errors_keep_their_words() {
    let read = |v: Value| de::read::<Sample>(&map(v), false).map(drop).map_err(issue);
    assert_eq!(
        read(json!({})).unwrap_err(),
        ("id: is required".into(), "is required".into())
    );
    assert_eq!(
        read(json!({"id": "x", "amount": 1.234})).unwrap_err().1,
        "must be an amount in BRL with at most 2 decimals"
    );
    assert_eq!(
        read(json!({"id": "x", "amount": "1"})).unwrap_err().1,
        "must be a number"
    );
    assert_eq!(
        read(json!({"id": "x", "due_date": "2026-13-01"})).unwrap_err(),
        (
            "due_date: must be a date YYYY-MM-DD".into(),
            "must be a date YYYY-MM-DD".into()
        )
    );
    assert!(read(json!({"id": "x", "other": 1})).is_ok());
    let all = de::read::<Sample>(
        &map(json!({"id": "x", "note": "n", "amount": 1.5, "due_date": "2026-01-02"})),
        false,
    )
    .map_err(issue)
    .unwrap();
    assert_eq!(
        (
            all.id.as_str(),
            all.note.as_deref(),
            all.amount,
            all.due_date
        ),
        (
            "x",
            Some("n"),
            Money::from_brl(1.5),
            chrono::NaiveDate::from_ymd_opt(2026, 1, 2)
        )
    );
    let strict = de::read::<Sample>(
        &map(json!({"id": "x", "b": 1, "a": 2, "idempotency_key": "k"})),
        true,
    );
    match strict.unwrap_err() {
        DomainError::Validation { message, details } => {
            assert_eq!(message, "Unknown fields: b, a");
            assert_eq!(details[0].issue, "unknown field");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_patch_tells_null_from_absent() {
    let read = |v: Value| de::read::<Sample>(&map(v), false).unwrap().label;
    assert_eq!(read(json!({"id": "x"})), None);
    assert_eq!(read(json!({"id": "x", "label": null})), Some(None));
    assert_eq!(
        read(json!({"id": "x", "label": "a"})),
        Some(Some("a".into()))
    );
}

/// How `t`'s argument structs and filters differ from its schema's properties (but the
/// runtime's `idempotency_key`) and required ones, if they do.
fn mismatch(t: &crate::tool::ToolSpec) -> Option<String> {
    let schema = &t.def.input_schema;
    let mut props: Vec<&str> = schema["properties"]
        .as_object()
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    props.retain(|p| *p != "idempotency_key");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields: Vec<&str> = t.reads.iter().flat_map(|s| s.fields.clone()).collect();
    let mut req: Vec<&str> = t.reads.iter().flat_map(|s| s.required.clone()).collect();
    for v in [&mut props, &mut required, &mut fields, &mut req] {
        v.sort_unstable();
        v.dedup();
    }
    (props != fields || required != req).then(|| {
        format!(
            "{}: schema {props:?} required {required:?}; structs {fields:?} required {req:?}",
            t.def.name
        )
    })
}

/// Every tool of the catalogue reads exactly the arguments its schema declares: the
/// union of the structs and filters it names ([`crate::tool::ToolBuilder::args`]) has
/// the schema's properties, and the same ones required.
#[test]
fn every_tool_reads_the_arguments_its_schema_declares() {
    let registry = crate::catalog::Registry::new();
    let tools = registry.tools();
    assert!(tools.len() >= 68, "the whole catalogue");
    let wrong: Vec<String> = tools.iter().filter_map(mismatch).collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The check sees a field on one side only, and a required-ness that differs.
#[test]
fn a_field_on_one_side_only_is_a_mismatch() {
    use crate::schema as s;
    use crate::tool::tool;
    fn run(_: &mut crate::op::Op<'_>) -> Result<dunning_core::Output, DomainError> {
        Ok(dunning_core::Output::NoContent)
    }
    let base = || tool("t", "T", "GET", "/t").read().req("id", s::id("Id"));
    assert_eq!(mismatch(&base().args::<ById>().run(run)), None);
    assert!(
        mismatch(
            &base()
                .arg("extra", s::string("Extra"))
                .args::<ById>()
                .run(run)
        )
        .is_some()
    );
    assert!(mismatch(&base().args::<IdReason>().run(run)).is_some());
    let optional_id = tool("t", "T", "GET", "/t").read().arg("id", s::id("Id"));
    assert!(mismatch(&optional_id.args::<ById>().run(run)).is_some());
}
