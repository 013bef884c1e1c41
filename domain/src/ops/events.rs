//! The audit trail (`dunning_events_list`): every change writes an event in the
//! same transaction ([`crate::op::Op::event`]); this lists them.
//!
//! One file rather than a group folder: the group is small enough that its document,
//! declarations and handlers read best together (one list tool); past about 600 lines it becomes
//! a folder of the usual shape (see [`crate::ops`]).

use crate::catalog::name;
use crate::list::{Filter, Listing};
use dunning_core::{Output, Scope};
use serde::Deserialize;
use serde_json::json;

use crate::error::DomainError;
use crate::op::Op;
use crate::schema as s;
use crate::store::{Cond, Kind, Order};
use crate::tool::{ToolSpec, tool};

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::EVENTS_LIST, "List events", "GET", "/v1/events")
            .describe("The organization's audit trail, newest first: what changed (code such as charge.paid or delivery.sent), on which resource, when, by whom, with the changed fields. Filters: code (exact, a comma-separated list, or a prefix such as charge.*), resource_type, resource_id, and from/to on the time it happened.")
            .read()
            .access(Scope::Read, Some("dashboard.view"))
            .arg("code", s::text("Event code: exact (charge.paid), several separated by commas, or a prefix ending in .* (charge.*)", 1, 500))
            .arg("resource_type", s::text("Resource type, e.g. charge, debtor, delivery, ruler", 1, 50))
            .arg("resource_id", s::id("Only events about this resource"))
            .arg("from", s::string("Happened at or after (date YYYY-MM-DD or RFC 3339)"))
            .arg("to", s::string("Happened at or before (date YYYY-MM-DD, inclusive, or RFC 3339)"))
            .list(&["occurred_at"])
            .args::<CodeFilter>()
            .filters(LISTING.filters)
            .output(s::list_output(s::entity_output(&["id", "code", "resource_type", "resource_id", "occurred_at"])))
            .run(list_events),
    ]
}

/// `occurred_at` sorts by the insertion sequence: the same order, without ties.
const SORTS: &[(&str, &str, Order)] = &[("occurred_at", "sequence", Order::Desc)];

/// `dunning_events_list`: the code filter is built by hand (a prefix or a set).
const LISTING: Listing = Listing {
    kind: Kind::Event,
    filters: &[
        Filter::Eq("resource_type", "resource_type"),
        Filter::Eq("resource_id", "resource_id"),
        Filter::TimeRange {
            from: "from",
            to: "to",
            column: "occurred_at",
        },
    ],
    sorts: SORTS,
};

/// `dunning_events_list`'s own filter (the rest are [`LISTING`]'s).
#[derive(Debug, Deserialize)]
struct CodeFilter {
    code: Option<String>,
}

fn list_events(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    let CodeFilter { code } = op.args()?;
    if let Some(code) = &code {
        let codes: Vec<&str> = code
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        match codes.as_slice() {
            [] => return Err(DomainError::field("code", "must name an event code")),
            [one] if one.ends_with(".*") || *one == "*" => {
                let prefix = one.trim_end_matches('*');
                if !prefix.is_empty() {
                    conds.push(Cond::Ge("code", json!(prefix)));
                    conds.push(Cond::Le("code", json!(format!("{prefix}\u{10FFFF}"))));
                }
            }
            many => {
                if let Some(bad) = many.iter().find(|c| c.contains('*')) {
                    return Err(DomainError::field(
                        "code",
                        format!("{bad}: a prefix (.*) can only be given alone"),
                    ));
                }
                conds.push(Cond::In("code", many.iter().map(|c| json!(c)).collect()));
            }
        }
    }
    LISTING.run_with(op, conds)
}
