//! The agreement tools: schemas and declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::accept::{AcceptArgs, accept, cancel, describe_cancel};
use super::plan::{TermsArgs, simulate};
use super::{
    LISTING, MAX_CHARGES, MAX_INSTALLMENTS, ProposeArgs, STATUSES, create_agreement, get_agreement,
    list_agreements, term,
};
use crate::args::{ById, IdReason};
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolBuilder, ToolSpec, tool};

pub(super) fn agreement_output() -> Value {
    s::entity_output(&[
        "id",
        "debtor_id",
        "charge_ids",
        "status",
        "total_amount",
        "installments",
    ])
}

pub(super) fn terms_args(b: ToolBuilder) -> ToolBuilder {
    b.req("debtor_id", s::id("The debtor"))
        .req("charge_ids", s::array_max("The debtor's overdue or partially paid charges to fold in", s::id("Charge id"), MAX_CHARGES as u32))
        .req("installments_count", s::integer("Number of monthly installments besides the down payment (1 to 12)", 1, MAX_INSTALLMENTS))
        .req("first_due_date", s::date("Due date of the down payment, or of the first installment without one (today or up to 90 days ahead; rolled to a business day)"))
        .arg("discount_percentage", s::number("Discount on the updated amount, percent (at most the organization's max_discount_percentage); waives interest first, then fine, then principal", 0.0, 100.0))
        .arg("down_payment_amount", s::money("Down payment (entrada), due on first_due_date; default none"))
        .arg("payment_method", s::one_of("How the installments are paid (default boleto)", &["boleto", "pix", "bolepix"]))
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    let view = |b: ToolBuilder| b.read().access(Scope::Read, Some("agreements.view"));
    let manage = |b: ToolBuilder| b.access(Scope::Write, Some("agreements.manage"));
    vec![
        terms_args(view(tool(name::AGREEMENTS_SIMULATE, "Simulate an agreement", "POST", "/v1/agreements/simulate")))
            .describe("Computes an agreement's terms without saving anything: for the given overdue charges of one debtor, today's updated amounts (principal, fine, interest), the discount (capped by the organization), the total, and the installment schedule with due dates on business days. All amounts come from the server; the last installment absorbs the rounding. Never re-sum them.")
            .args::<TermsArgs>()
            .output(s::entity_output(&["debtor_id", "updated_amount", "discount_amount", "total_amount", "installments"]))
            .run(simulate),
        view(tool(name::AGREEMENTS_LIST, "List agreements", "GET", "/v1/agreements"))
            .describe("Lists agreements, newest first. Filters: `status` (CSV), `debtor_id`.")
            .arg("status", s::csv_of("Agreement status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's agreements"))
            .list(&["created_at"])
            .filters(LISTING.filters)
            .output(s::list_output(agreement_output()))
            .run(list_agreements),
        view(tool(name::AGREEMENTS_GET, "Get an agreement", "GET", "/v1/agreements/{id}"))
            .describe("One agreement with its charges, amounts and installments (each with its charge and current status).")
            .req("id", s::id("Agreement id"))
            .args::<ById>()
            .output(agreement_output())
            .run(get_agreement),
        terms_args(manage(tool(name::AGREEMENTS_CREATE, "Propose an agreement", "POST", "/v1/agreements")))
            .describe("Proposes an agreement (status proposed) with the terms dunning_agreements_simulate computes. Nothing changes on the charges until it is accepted. `expires_at` (default 7 days, at most the first due date) bounds the acceptance; `notify_debtor` sends the debtor a message about the proposal (outbound limit applies). The term (termo de acordo) is available at once, with a draft watermark.")
            .arg("expires_at", s::datetime("Last moment the proposal may be accepted (a date means the end of that day)"))
            .arg("notify_debtor", s::boolean("Send the debtor a message about the proposal (default false)"))
            .arg("break_after_days", s::integer("Days an installment may be overdue before the agreement breaks (default 30)", 1, 90))
            .args::<ProposeArgs>()
            .args::<TermsArgs>()
            .output(agreement_output())
            .run(create_agreement),
        manage(tool(name::AGREEMENTS_ACCEPT, "Accept an agreement", "POST", "/v1/agreements/{id}/accept"))
            .describe("Records the acceptance of a proposed agreement: generates the installment charges (pending, with boleto/Pix), moves the original charges to renegotiated (their dunning stops) and requests the removal of their credit-bureau registrations. Refused once the proposal expired. Repeating the call changes nothing.")
            .idempotent()
            .req("id", s::id("Agreement id"))
            .arg("accepted_by", s::one_of("Who accepted (default operator, on the debtor's behalf)", &["debtor", "operator"]))
            .arg("accepted_at", s::datetime("When it was accepted (default now; not in the future)"))
            .args::<AcceptArgs>()
            .output(agreement_output())
            .run(accept),
        manage(tool(name::AGREEMENTS_CANCEL, "Cancel an agreement", "POST", "/v1/agreements/{id}/cancel"))
            .describe("Cancels a proposed agreement, or an accepted one that has no payment yet: its installment charges are canceled and the original charges return to dunning (overdue). An active agreement (with payments) cannot be canceled (CONFLICT). Repeating the call changes nothing.")
            .destructive()
            .idempotent()
            .req("id", s::id("Agreement id"))
            .arg("reason", s::text("Why", 1, 500))
            .args::<IdReason>()
            .output(agreement_output())
            .confirm(describe_cancel)
            .run(cancel),
        tool(name::AGREEMENTS_TERM, "Agreement term (PDF)", "GET", "/v1/agreements/{id}/term-pdf")
            .describe("The agreement term (termo de acordo e confissão de dívida) as a PDF: parties, confessed debt, discount, payment plan and default clause. Until the agreement is accepted every page carries a draft watermark (MINUTA). Returns the file's descriptor, not its bytes.")
            .read()
            .access(Scope::Read, Some("documents.view"))
            .req("id", s::id("Agreement id"))
            .args::<ById>()
            .output(s::entity_output(&["content_type", "byte_size", "download_path"]))
            .run(term),
    ]
}
