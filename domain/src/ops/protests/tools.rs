//! The protest tools: schemas and declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::handlers::{
    CancelArgs, LISTING, ProtestArgs, cancel, describe_cancel, describe_protest, get_protest,
    list_protests, protest,
};
use super::{MAX_DOCUMENTS, STATUSES, TITLE_TYPES};
use crate::args::ById;
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolSpec, tool};

pub(super) fn protest_output() -> Value {
    s::entity_output(&[
        "id",
        "charge_id",
        "debtor_id",
        "status",
        "title_type",
        "amount",
    ])
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::CHARGES_PROTEST, "Protest a charge", "POST", "/v1/charges/{id}/protest")
            .describe("Sends an overdue charge to a notary for protest (Lei 9.492/1997), backed by a protestable title and at least one proof-of-debt document. Refused unless the charge is overdue and undisputed (a dispute tag, custom_data.disputed, or dunning paused for a dispute); inside the consumer's 7-day withdrawal window of a distance sale (CDC art. 49); and while the charge has an active negativação, unless the organization allows both. The notary intimates the debtor, who has 3 business days to pay there.")
            .destructive()
            .access(Scope::Admin, Some("protest.manage"))
            .req("id", s::id("Charge id"))
            .req("title_type", s::one_of("The protestable title backing the charge", TITLE_TYPES))
            .req("document_ids", s::array_max("Proof of the debt: references of the documents (invoice, delivery receipt, contract) sent to the notary, at least one", s::text("document reference", 1, 200), MAX_DOCUMENTS as u32))
            .args::<ProtestArgs>()
            .output(protest_output())
            .confirm(describe_protest)
            .run(protest),
        tool(name::PROTESTS_LIST, "List protests", "GET", "/v1/protests")
            .describe("Lists protests, newest first. Filters: `status` (CSV), `debtor_id`, `charge_id`.")
            .read()
            .access(Scope::Read, Some("protest.view"))
            .arg("status", s::csv_of("Protest status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's protests"))
            .arg("charge_id", s::id("Only this charge's protests"))
            .list(&["created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(protest_output()))
            .run(list_protests),
        tool(name::PROTESTS_GET, "Get a protest", "GET", "/v1/protests/{id}")
            .describe("One protest: title, notary, protocol, costs, intimation, payment deadline at the notary and outcome.")
            .read()
            .access(Scope::Read, Some("protest.view"))
            .req("id", s::id("Protest id"))
            .args::<ById>()
            .output(protest_output())
            .run(get_protest),
        tool(name::PROTESTS_CANCEL, "Withdraw or cancel a protest", "POST", "/v1/protests/{id}/cancel")
            .describe("`mode=withdraw` (desistência) stops a protest not yet protested (requested, sent_to_notary or intimated). `mode=cancel` cancels a title already protested and needs the creditor's consent letter (carta de anuência): pass `consent_letter: true`. Anything else is a CONFLICT naming the status. Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .access(Scope::Admin, Some("protest.manage"))
            .req("id", s::id("Protest id"))
            .req("mode", s::one_of("withdraw (before protest) or cancel (after protest)", &["withdraw", "cancel"]))
            .arg("reason", s::text("Why", 1, 500))
            .arg("consent_letter", s::boolean("The creditor's consent letter (carta de anuência) is issued; required by mode=cancel"))
            .args::<CancelArgs>()
            .output(protest_output())
            .confirm(describe_cancel)
            .run(cancel),
    ]
}
