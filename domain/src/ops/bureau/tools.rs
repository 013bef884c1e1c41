//! The credit bureau tools: schemas and declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::negativate::{NegativateArgs, describe_negativate, negativate};
use super::{
    BUREAUS, LISTING, MAX_NOTICE_DAYS, REMOVAL_REASONS, RemoveArgs, STATUSES, describe_remove,
    get_record, list_records, remove,
};
use crate::args::ById;
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolSpec, tool};

pub(super) fn record_output() -> Value {
    s::entity_output(&["id", "charge_id", "debtor_id", "bureau", "status", "amount"])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::CHARGES_NEGATIVATE, "Negativate a charge", "POST", "/v1/charges/{id}/negativate")
            .describe("Starts the registration of an overdue charge's debtor with a credit bureau (negativação). Refused unless the charge is overdue and undisputed, the debtor is not credit_restriction_blocked, the debt is at most 5 years old (CDC art. 43 §1), the charge has no active protest (unless the organization allows both) and the debtor has a valid e-mail or postal address. The prior written notice (CDC art. 43 §2) is sent now; the bureau is asked to include the debt only after `eligible_at` (notice + notice_days, at least the organization's setting, default 10 days), if the charge is still unpaid.")
            .destructive()
            .access(Scope::Admin, Some("credit_bureau.manage"))
            .req("id", s::id("Charge id"))
            .req("bureau", s::one_of("Credit bureau", BUREAUS))
            .arg("notice_days", s::integer("Days between the notice and the inclusion (default and minimum: the organization's negativation_notice_days)", 1, MAX_NOTICE_DAYS))
            .args::<NegativateArgs>()
            .output(record_output())
            .confirm(describe_negativate)
            .run(negativate),
        tool(name::CREDIT_BUREAU_LIST, "List credit-bureau records", "GET", "/v1/credit-bureau-records")
            .describe("Lists negativação records, newest first. Filters: `status` (CSV), `bureau`, `debtor_id`, `charge_id`.")
            .read()
            .access(Scope::Read, Some("credit_bureau.view"))
            .arg("status", s::csv_of("Record status", STATUSES))
            .arg("bureau", s::one_of("Credit bureau", BUREAUS))
            .arg("debtor_id", s::id("Only this debtor's records"))
            .arg("charge_id", s::id("Only this charge's records"))
            .list(&["created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(record_output()))
            .run(list_records),
        tool(name::CREDIT_BUREAU_GET, "Get a credit-bureau record", "GET", "/v1/credit-bureau-records/{id}")
            .describe("One negativação record: notice (delivery, when sent, eligible_at), request, inclusion, removal and the bureau's protocol.")
            .read()
            .access(Scope::Read, Some("credit_bureau.view"))
            .req("id", s::id("Credit-bureau record id"))
            .args::<ById>()
            .output(record_output())
            .run(get_record),
        tool(name::CREDIT_BUREAU_REMOVE, "Remove a credit-bureau record", "POST", "/v1/credit-bureau-records/{id}/remove")
            .describe("Takes a debtor off the bureau's files: an included record becomes removal_requested (the bureau confirms with removed); a record still waiting for its notice window is canceled before anything reaches the bureau. A record being requested, rejected or failed cannot be removed (CONFLICT). Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("credit_bureau.manage"))
            .req("id", s::id("Credit-bureau record id"))
            .req("reason", s::one_of("Why", REMOVAL_REASONS))
            .args::<RemoveArgs>()
            .output(record_output())
            .confirm(describe_remove)
            .run(remove),
    ]
}
