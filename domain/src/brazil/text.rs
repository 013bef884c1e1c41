//! Text fields carry no control characters.
//!
//! A NUL, BEL or ESC stored in a debtor's name comes back raw in every answer, in the
//! CSV exports a spreadsheet opens and in the messages sent to debtors, where it can
//! truncate, ring or drive a terminal. So every string argument of a write, nested ones
//! included, is checked before anything runs: a C0 control (U+0000..U+001F) other than
//! tab and line feed is a `VALIDATION_ERROR` naming each offending field. Line feed
//! stays (multi-line descriptions, addresses); CR does not (line endings are `\n`).

use dunning_core::FieldIssue;
use serde_json::{Map, Value};

use crate::error::DomainError;

/// Whether `c` is refused in a text field.
pub fn is_refused_control(c: char) -> bool {
    c.is_ascii_control() && c != '\t' && c != '\n' && c != '\u{7f}'
}

/// Refuses control characters in any string of `args` (dotted paths; `[i]` for array
/// items), naming every offending field at once.
pub fn refuse_controls(args: &Map<String, Value>) -> Result<(), DomainError> {
    let mut issues = Vec::new();
    for (k, v) in args {
        walk(k, v, &mut issues);
    }
    if issues.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = issues.iter().map(|i| i.field.as_str()).collect();
    Err(DomainError::Validation {
        message: format!(
            "Control characters are not allowed in: {}",
            names.join(", ")
        ),
        details: issues,
    })
}

fn walk(path: &str, v: &Value, issues: &mut Vec<FieldIssue>) {
    match v {
        Value::String(s) => {
            if let Some(c) = s.chars().find(|&c| is_refused_control(c)) {
                issues.push(FieldIssue {
                    field: path.to_owned(),
                    issue: format!(
                        "contains the control character U+{:04X}; only tab and newline are allowed",
                        u32::from(c)
                    ),
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(&format!("{path}[{i}]"), item, issues);
            }
        }
        Value::Object(m) => {
            for (k, item) in m {
                walk(&format!("{path}.{k}"), item, issues);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> Vec<String> {
        match refuse_controls(v.as_object().unwrap()) {
            Ok(()) => Vec::new(),
            Err(DomainError::Validation { details, .. }) => {
                details.into_iter().map(|d| d.field).collect()
            }
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn nul_bel_esc_cr_refused_tab_newline_kept() {
        for bad in ["a\u{0}b", "ding\u{7}", "\u{1b}[31mred", "a\rb", "\u{1f}"] {
            assert_eq!(check(json!({ "name": bad })), ["name"], "{bad:?}");
        }
        for good in [
            "Maria\tSilva",
            "linha 1\nlinha 2",
            "São Paulo – ç",
            "",
            "\u{7f}",
        ] {
            assert!(check(json!({ "name": good })).is_empty(), "{good:?}");
        }
    }

    #[test]
    fn nested_fields_are_named() {
        let v = json!({
            "name": "ok",
            "address": { "street": "Rua\u{0}", "city": "ok" },
            "tags": ["ok", "b\u{7}"],
            "amount": 10.5,
        });
        assert_eq!(check(v), ["address.street", "tags[1]"]);
    }
}
