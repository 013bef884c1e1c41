//! JSON Schema builders for tool arguments: every argument gets a type and a description.

use serde_json::{Value, json};

/// A string.
pub fn string(desc: &str) -> Value {
    json!({ "type": "string", "description": desc })
}

/// A string with length bounds.
pub fn text(desc: &str, min: u32, max: u32) -> Value {
    json!({ "type": "string", "description": desc, "minLength": min, "maxLength": max })
}

/// An entity id (UUID).
pub fn id(desc: &str) -> Value {
    json!({ "type": "string", "format": "uuid", "description": desc })
}

/// A calendar date `YYYY-MM-DD`.
pub fn date(desc: &str) -> Value {
    json!({ "type": "string", "format": "date", "description": desc })
}

/// An RFC 3339 timestamp.
pub fn datetime(desc: &str) -> Value {
    json!({ "type": "string", "format": "date-time", "description": desc })
}

/// A BRL amount (float, 2 decimals).
pub fn money(desc: &str) -> Value {
    json!({ "type": "number", "minimum": 0, "multipleOf": 0.01, "description": format!("{desc} (BRL, 2 decimals)") })
}

/// A number with bounds.
pub fn number(desc: &str, min: f64, max: f64) -> Value {
    json!({ "type": "number", "minimum": min, "maximum": max, "description": desc })
}

/// An integer with bounds.
pub fn integer(desc: &str, min: i64, max: i64) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "description": desc })
}

/// A boolean.
pub fn boolean(desc: &str) -> Value {
    json!({ "type": "boolean", "description": desc })
}

/// One of fixed strings.
pub fn one_of(desc: &str, values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values, "description": desc })
}

/// A comma-separated list of fixed strings (status filters: `pending,overdue`).
pub fn csv_of(desc: &str, values: &[&str]) -> Value {
    let alternatives = values.join("|");
    json!({
        "type": "string",
        "pattern": format!("^({alternatives})(,({alternatives}))*$"),
        "description": format!("{desc}; one or more of {} separated by commas", values.join(", ")),
    })
}

/// An array.
pub fn array(desc: &str, items: Value) -> Value {
    json!({ "type": "array", "items": items, "description": desc })
}

/// An array with a maximum length.
pub fn array_max(desc: &str, items: Value, max: u32) -> Value {
    json!({ "type": "array", "items": items, "maxItems": max, "description": desc })
}

/// An object with properties (nested objects are loose unless `strict`).
pub fn object(desc: &str, props: &[(&str, Value)], required: &[&str]) -> Value {
    let mut s = dunning_core::catalog::object_schema(props, required, false);
    s["description"] = json!(desc);
    s
}

/// A free-form object.
pub fn any_object(desc: &str) -> Value {
    json!({ "type": "object", "description": desc })
}

/// Output schema of a list: `{data: [item], meta: {page, per_page, total, total_pages}}`.
pub fn list_output(item: Value) -> Value {
    json!({
        "type": "object",
        "properties": {
            "data": { "type": "array", "items": item },
            "meta": {
                "type": "object",
                "properties": {
                    "page": { "type": "integer" },
                    "per_page": { "type": "integer" },
                    "total": { "type": "integer" },
                    "total_pages": { "type": "integer" }
                },
                "required": ["page", "per_page", "total", "total_pages"]
            }
        },
        "required": ["data", "meta"]
    })
}

/// Output schema of one entity with the given required fields.
pub fn entity_output(required: &[&str]) -> Value {
    json!({ "type": "object", "required": required })
}
