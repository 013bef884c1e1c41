//! `x-mcp-header` annotations: validated once at registration, read at every `tools/call`.
//!
//! A property annotated `"x-mcp-header": "Region"` must be mirrored by the client as
//! `Mcp-Param-Region`. The five constraints are checked when the tool is
//! registered, so an invalid annotation is a startup error naming the tool rather than a
//! tool that silently vanishes from every conforming client's list.

use serde_json::Value;

/// The JSON type an annotated property carries (`number` is not allowed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `type: string`.
    String,
    /// `type: integer`, within ±(2^53−1).
    Integer,
    /// `type: boolean`.
    Boolean,
}

/// One annotated property of a tool's `inputSchema`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Binding {
    /// The annotation value: the header is `Mcp-Param-{name}`.
    pub name: String,
    /// The chain of `properties` keys from the root to the property.
    pub path: Vec<String>,
    /// The property's type.
    pub kind: Kind,
}

/// Largest integer a mirrored header may carry (2^53 − 1).
pub const MAX_SAFE_INTEGER: i64 = (1 << 53) - 1;

/// Schema keywords whose values are subschemas (or maps/arrays of them), other than
/// `properties`. An annotation reached through any of them is invalid.
const SUBSCHEMA_KEYWORDS: &[&str] = &[
    "items",
    "prefixItems",
    "contains",
    "additionalProperties",
    "patternProperties",
    "dependentSchemas",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "$defs",
    "definitions",
];

/// Finds and validates every annotation of `schema`. `Err` says what is wrong and where.
pub fn bindings(schema: &Value) -> Result<Vec<Binding>, String> {
    let mut out = Vec::new();
    if schema.get("x-mcp-header").is_some() {
        return Err("x-mcp-header on the schema root (only properties may carry it)".into());
    }
    walk(schema, Some(&mut Vec::new()), "", &mut out)?;
    for (i, a) in out.iter().enumerate() {
        if out[..i]
            .iter()
            .any(|b| b.name.eq_ignore_ascii_case(&a.name))
        {
            return Err(format!(
                "x-mcp-header \"{}\" is not unique (case-insensitively)",
                a.name
            ));
        }
    }
    Ok(out)
}

/// Visits one schema node. `chain` is `Some(path)` while the node is reachable from the
/// root through `properties` keys only.
fn walk(
    node: &Value,
    chain: Option<&mut Vec<String>>,
    pointer: &str,
    out: &mut Vec<Binding>,
) -> Result<(), String> {
    let Value::Object(map) = node else {
        return Ok(());
    };
    let mut chain = chain;
    if let Some(props) = map.get("properties").and_then(Value::as_object) {
        for (key, sub) in props {
            let ptr = format!("{pointer}/properties/{key}");
            match chain.as_deref_mut() {
                Some(path) => {
                    path.push(key.clone());
                    if let Some(ann) = sub.get("x-mcp-header") {
                        out.push(check(ann, sub, path, &ptr)?);
                    }
                    walk(sub, Some(path), &ptr, out)?;
                    path.pop();
                }
                None => {
                    if sub.get("x-mcp-header").is_some() {
                        return Err(unreachable_at(&ptr));
                    }
                    walk(sub, None, &ptr, out)?;
                }
            }
        }
    }
    for kw in SUBSCHEMA_KEYWORDS {
        let Some(v) = map.get(*kw) else { continue };
        let children: Vec<(String, &Value)> = match v {
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("{pointer}/{kw}/{i}"), s))
                .collect(),
            Value::Object(m)
                if matches!(
                    *kw,
                    "patternProperties" | "dependentSchemas" | "$defs" | "definitions"
                ) =>
            {
                m.iter()
                    .map(|(k, s)| (format!("{pointer}/{kw}/{k}"), s))
                    .collect()
            }
            other => vec![(format!("{pointer}/{kw}"), other)],
        };
        for (ptr, sub) in children {
            if sub.get("x-mcp-header").is_some() {
                return Err(unreachable_at(&ptr));
            }
            walk(sub, None, &ptr, out)?;
        }
    }
    Ok(())
}

fn unreachable_at(ptr: &str) -> String {
    format!("x-mcp-header at {ptr} is not reachable from the root through properties only")
}

fn check(ann: &Value, prop: &Value, path: &[String], ptr: &str) -> Result<Binding, String> {
    let Some(name) = ann.as_str() else {
        return Err(format!("x-mcp-header at {ptr} must be a string"));
    };
    if name.is_empty() {
        return Err(format!("x-mcp-header at {ptr} is empty"));
    }
    if !name.bytes().all(is_tchar) {
        return Err(format!(
            "x-mcp-header \"{}\" at {ptr} is not an HTTP token",
            name.escape_default()
        ));
    }
    let kind = match prop.get("type").and_then(Value::as_str) {
        Some("string") => Kind::String,
        Some("integer") => Kind::Integer,
        Some("boolean") => Kind::Boolean,
        _ => {
            return Err(format!(
                "x-mcp-header \"{name}\" at {ptr} must annotate a property of type string, integer or boolean"
            ));
        }
    };
    Ok(Binding {
        name: name.to_owned(),
        path: path.to_vec(),
        kind,
    })
}

/// RFC 9110 `tchar`.
pub fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl Binding {
    /// The argument value at this binding's path, if present and not `null`.
    pub fn value<'a>(&self, args: &'a Value) -> Option<&'a Value> {
        let mut v = args;
        for key in &self.path {
            v = v.as_object()?.get(key)?;
        }
        (!v.is_null()).then_some(v)
    }

    /// Whether a decoded header text agrees with the body value.
    ///
    /// `None` when the body value is not of the annotated type: schema validation will
    /// refuse the call with a precise `VALIDATION_ERROR`, which helps the caller more.
    pub fn agrees(&self, header: &str, value: &Value) -> Option<bool> {
        match self.kind {
            Kind::String => value.as_str().map(|s| s == header),
            Kind::Boolean => value
                .as_bool()
                .map(|b| header == if b { "true" } else { "false" }),
            Kind::Integer => {
                let body = integer_value(value)?;
                Some(parse_integer(header) == Some(body))
            }
        }
    }
}

/// A JSON number with an integral value (`42`, `42.0`), as i64.
fn integer_value(v: &Value) -> Option<i64> {
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    let f = v.as_f64()?;
    (f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64).then_some(f as i64)
}

/// A decimal integer header value (`-7`, `42`); nothing else.
fn parse_integer(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 16 {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(schema: Value) -> String {
        bindings(&schema).unwrap_err()
    }

    #[test]
    fn accepts_top_level_and_nested_properties_chain() {
        let s = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "target":{"type":"object","properties":{"zone":{"type":"integer","x-mcp-header":"Zone"}}}
        }});
        let b = bindings(&s).unwrap();
        assert_eq!(b.len(), 2);
        assert_eq!(b[1].path, vec!["target".to_owned(), "zone".to_owned()]);
        assert_eq!(b[1].kind, Kind::Integer);
    }

    #[test]
    fn rejects_each_constraint() {
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":""}}})).contains("empty")
        );
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":"A B"}}}))
                .contains("token")
        );
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":"A:B"}}}))
                .contains("token")
        );
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":"Ré"}}}))
                .contains("token")
        );
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":"A\tB"}}}))
                .contains("token")
        );
        assert!(err(json!({"properties":{"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"REGION"}}})).contains("unique"));
        assert!(
            err(json!({"properties":{"a":{"type":"number","x-mcp-header":"A"}}})).contains("type")
        );
        assert!(
            err(json!({"properties":{"a":{"type":["string","null"],"x-mcp-header":"A"}}}))
                .contains("type")
        );
        assert!(err(json!({"properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}})).contains("reachable"));
        assert!(
            err(json!({"properties":{"a":{"anyOf":[{"type":"string","x-mcp-header":"A"}]}}}))
                .contains("reachable")
        );
        assert!(
            err(json!({"$defs":{"x":{"type":"string","x-mcp-header":"A"}}})).contains("reachable")
        );
        assert!(
            err(json!({"items":{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}}))
                .contains("reachable")
        );
        assert!(err(json!({"x-mcp-header":"A","type":"object"})).contains("root"));
        assert!(
            err(json!({"properties":{"a":{"type":"string","x-mcp-header":7}}})).contains("string")
        );
    }

    #[test]
    fn a_standard_suffix_is_a_fine_name() {
        let s = json!({"properties":{"m":{"type":"string","x-mcp-header":"Method"}}});
        assert_eq!(bindings(&s).unwrap()[0].name, "Method");
    }

    #[test]
    fn agreement_rules() {
        let b = |kind| Binding {
            name: "X".into(),
            path: vec!["x".into()],
            kind,
        };
        assert_eq!(b(Kind::Integer).agrees("42", &json!(42.0)), Some(true));
        assert_eq!(b(Kind::Integer).agrees("42", &json!(42)), Some(true));
        assert_eq!(b(Kind::Integer).agrees("-7", &json!(-7)), Some(true));
        assert_eq!(b(Kind::Integer).agrees("042x", &json!(42)), Some(false));
        assert_eq!(b(Kind::Integer).agrees("42", &json!("42")), None);
        assert_eq!(b(Kind::Boolean).agrees("true", &json!(true)), Some(true));
        assert_eq!(b(Kind::Boolean).agrees("True", &json!(true)), Some(false));
        assert_eq!(b(Kind::String).agrees("a b", &json!("a b")), Some(true));
        assert_eq!(b(Kind::String).value(&json!({"x": null})), None);
    }
}
