//! The ceiling on one answer's size (`docs/decisions.md`, "Hardening: domain and core").
//!
//! A read whose answer is unbounded (a statement of a debtor with 6,000 charges was
//! 16.8 MB) costs the server its memory and the event loop of a non-blocking adapter its
//! latency for everyone, and no agent can use such an answer anyway. Lists and the
//! statement are paginated; this is the backstop for whatever is still too big: a read
//! tool's JSON answer over [`MAX_ANSWER_BYTES`] is refused with
//! [`DomainError::TooLarge`] (a `VALIDATION_ERROR` naming the limit and how to narrow the
//! request; for a resource, `-32602` with reason `ANSWER_TOO_LARGE`), instead of being
//! sent.
//!
//! A body written as text (a list page) is measured by its length. A tree is measured
//! before it is serialized, as an upper bound of its compact serialization (strings with their escapes, integers exactly, every float
//! as the 24 bytes of its longest form): one walk, no allocation, no formatting.
//! Files (PDF, CSV) are not capped here: an export is downloaded whole, by design.

use dunning_core::{Body, Output};
use serde_json::Value;

use crate::error::DomainError;

/// Largest JSON answer of a read tool (compact bytes): 4 MiB.
pub const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

/// Refuses `out` when its JSON is larger than `limit` bytes.
pub fn check(out: &Output, limit: usize) -> Result<(), DomainError> {
    let Output::Json { body, .. } = out else {
        return Ok(());
    };
    let size = match body {
        Body::Tree(v) => json_size(v),
        Body::Text(text) => text.len(),
    };
    if size <= limit {
        return Ok(());
    }
    Err(DomainError::TooLarge { size, limit })
}

/// An upper bound of the compact serialization's length of `v`.
pub fn json_size(v: &Value) -> usize {
    match v {
        Value::Null => 4,
        Value::Bool(b) => {
            if *b {
                4
            } else {
                5
            }
        }
        Value::Number(n) => n.as_u64().map_or_else(
            || n.as_i64().map_or(24, |i| digits(i.unsigned_abs()) + 1),
            digits,
        ),
        Value::String(s) => string_size(s),
        Value::Array(items) => {
            2 + items.len().saturating_sub(1) + items.iter().map(json_size).sum::<usize>()
        }
        Value::Object(m) => {
            2 + m.len().saturating_sub(1)
                + m.iter()
                    .map(|(k, v)| string_size(k) + 1 + json_size(v))
                    .sum::<usize>()
        }
    }
}

fn digits(mut n: u64) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

fn string_size(s: &str) -> usize {
    2 + s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\t' | b'\r' | 0x08 | 0x0c => 1,
                0..0x20 => 5,
                _ => 0,
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_estimate_bounds_the_real_size() {
        for v in [
            json!(null),
            json!({"a": [1, -22, 3.25, true, false, null], "b": "x\"y\\z\n\u{1}é"}),
            json!([]),
            json!({}),
            json!({"n": u64::MAX, "m": i64::MIN, "f": 1.0e-300}),
        ] {
            let real = serde_json::to_vec(&v).unwrap().len();
            let est = json_size(&v);
            assert!(est >= real, "{v}: {est} < {real}");
            assert!(est <= real + 48, "{v}: {est} much more than {real}");
        }
    }

    #[test]
    fn over_the_limit_names_it() {
        let out = Output::ok(json!({"data": vec!["x".repeat(100); 20]}));
        assert!(check(&out, 10_000).is_ok());
        match check(&out, 1_000) {
            Err(e @ DomainError::TooLarge { limit: 1_000, .. }) => {
                assert!(e.to_string().contains("limit of 1000 bytes"), "{e}");
            }
            other => panic!("{other:?}"),
        }
    }
}
