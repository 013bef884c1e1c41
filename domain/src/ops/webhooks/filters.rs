//! Event filters of a webhook (`*`, a group such as `charge.*`, or an exact code),
//! checked against the published event catalogue.

use serde_json::Value;
use std::collections::HashSet;
use std::sync::OnceLock;

use crate::error::DomainError;

pub(super) fn catalog_codes() -> &'static HashSet<String> {
    static CODES: OnceLock<HashSet<String>> = OnceLock::new();
    CODES.get_or_init(|| {
        crate::mcp::event_catalog()
            .get("events")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.get("code").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    })
}

pub(super) fn groups() -> HashSet<&'static str> {
    catalog_codes()
        .iter()
        .filter_map(|c| c.split_once('.').map(|(g, _)| g))
        .collect()
}

/// Whether an event code is in the published catalogue.
pub fn is_catalog_code(code: &str) -> bool {
    catalog_codes().contains(code)
}

/// Whether `filters` (`*`, `group.*`, exact codes) select `code`.
pub fn filter_matches(filters: &[String], code: &str) -> bool {
    filters.iter().any(|f| {
        f == "*"
            || f == code
            || f.strip_suffix(".*").is_some_and(|group| {
                code.strip_prefix(group)
                    .is_some_and(|rest| rest.starts_with('.'))
            })
    })
}

/// Validates an `events` argument against the catalogue; errors name `events[i]`.
pub(super) fn parse_events(v: &Value) -> Result<Vec<String>, DomainError> {
    let items = v
        .as_array()
        .ok_or_else(|| DomainError::field("events", "must be an array of event codes"))?;
    if items.is_empty() {
        return Err(DomainError::field(
            "events",
            "must list at least one event code, `*` or a group such as charge.*",
        ));
    }
    let groups = groups();
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("events[{i}]");
        let code = item
            .as_str()
            .ok_or_else(|| DomainError::field(&field, "must be a string"))?;
        let valid = code == "*"
            || is_catalog_code(code)
            || code.strip_suffix(".*").is_some_and(|g| groups.contains(g));
        if !valid {
            return Err(DomainError::field(
                &field,
                format!(
                    "{code} is not an event code; see kobana://dunning/events/catalog (wildcards: *, charge.*, ...)"
                ),
            ));
        }
        if !out.iter().any(|c| c == code) {
            out.push(code.to_owned());
        }
    }
    Ok(out)
}
