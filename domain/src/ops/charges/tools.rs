//! The charge tools and the debtor statement tool: schemas and
//! declarations.

use dunning_core::Scope;
use serde_json::Value;

use super::{STATUSES, draft, handlers, list, statement};
use crate::args::{ById, IdReason};
use crate::catalog::name;
use crate::schema as s;
use crate::tool::{ToolSpec, tool};

pub(super) fn charge_output() -> Value {
    s::entity_output(&[
        "id",
        "debtor_id",
        "amount",
        "due_date",
        "status",
        "days_overdue",
        "updated_amount",
    ])
}

pub(super) fn discount_schema() -> Value {
    s::object(
        "Early-payment discount",
        &[
            (
                "type",
                s::one_of(
                    "fixed (BRL) or percentage (of the amount)",
                    &["fixed", "percentage"],
                ),
            ),
            ("value", s::number("BRL amount or percentage", 0.01, 1e11)),
            (
                "until",
                s::date("Last day the discount applies (default and at most: the due date)"),
            ),
        ],
        &["type", "value"],
    )
}

pub(super) fn id_arg(b: crate::tool::ToolBuilder) -> crate::tool::ToolBuilder {
    b.req("id", s::id("Charge id"))
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    let manage = |b: crate::tool::ToolBuilder| b.access(Scope::Write, Some("charges.manage"));
    vec![
        tool(name::CHARGES_LIST, "List charges", "GET", "/v1/charges")
            .describe("Lists charges with their server-computed `days_overdue` and `updated_amount` (fine + pro-rata interest, or discount, as of today). Filters combine: `status` (CSV, e.g. `pending,overdue`), `debtor_id`, due and payment date ranges, `payment_method`, amount range, `ruler_id`, `tag`, free-text `q` (description, external id, debtor name or document).")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .arg("status", s::csv_of("Charge status", STATUSES))
            .arg("debtor_id", s::id("Only this debtor's charges"))
            .arg("due_from", s::date("Due on or after"))
            .arg("due_to", s::date("Due on or before"))
            .arg("paid_from", s::date("Paid on or after"))
            .arg("paid_to", s::date("Paid on or before"))
            .arg("payment_method", s::one_of("Payment method", &["boleto", "pix", "bolepix"]))
            .arg("min_amount", s::money("Amount at least"))
            .arg("max_amount", s::money("Amount at most"))
            .arg("ruler_id", s::id("Only charges on this ruler"))
            .arg("tag", s::text("Only charges carrying this tag", 1, 50))
            .arg("q", s::text("Search in description, external id, debtor name and CPF/CNPJ", 1, 100))
            .list(&["due_date", "amount", "days_overdue", "created_at"])
            .args::<list::ListFilters>()
            .filters(list::LISTING.filters)
            .output(s::list_output(charge_output()))
            .run(list::list_charges),
        id_arg(tool(name::CHARGES_GET, "Get a charge", "GET", "/v1/charges/{id}"))
            .describe("One charge with its boleto/Pix codes, payments, and the server-computed `days_overdue`, `updated_amount` and `amount_breakdown` as of today.")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .args::<ById>()
            .output(charge_output())
            .run(handlers::get_charge),
        manage(tool(name::CHARGES_CREATE, "Create a charge", "POST", "/v1/charges"))
            .describe("Creates and registers a charge for an active debtor: a boleto (47-digit line, 44-digit barcode), a Pix with due date (txid and BR Code) or both (`bolepix`). The due date may not be in the past; a consumer's (CPF) fine is capped at 2% (CDC art. 52 §1); interest is monthly, charged pro rata by day after the due date rolled to the next business day. `draft: true` keeps it unregistered.")
            .req("debtor_id", s::id("The debtor who owes it"))
            .req("amount", s::money("Amount"))
            .req("due_date", s::date("Due date, today or later"))
            .req("payment_method", s::one_of("How the debtor pays", &["boleto", "pix", "bolepix"]))
            .arg("description", s::text("What is being charged", 1, 500))
            .arg("fine_percentage", s::number("Late fine, percent of the amount, charged once (at most 2 for a natural person)", 0.0, 100.0))
            .arg("interest_percentage", s::number("Late interest, percent per month, charged pro rata by day on the open principal (at most 1 for a natural person)", 0.0, 100.0))
            .arg("discount", discount_schema())
            .arg("ruler_id", s::id("Ruler (régua) for this charge; default: the debtor's or the organization's"))
            .arg("external_id", s::text("Your own id for this charge (unique)", 1, 100))
            .arg("tags", s::array("Tags", s::text("tag", 1, 50)))
            .arg("custom_data", s::any_object("Free-form data kept with the charge"))
            .arg("draft", s::boolean("Keep as an unregistered draft (no boleto/Pix yet); a draft can be deleted"))
            .args::<handlers::CreateArgs>()
            .output(charge_output())
            .run(handlers::create_charge),
        id_arg(manage(tool(name::CHARGES_UPDATE, "Update a charge", "PATCH", "/v1/charges/{id}")))
            .describe("Changes due date, amount, description, ruler or tags of a pending or overdue charge (CONFLICT otherwise). A new due date may not be in the past; re-dating an overdue charge to a future date makes it pending again. The boleto and Pix codes are regenerated for the new amount and date.")
            .idempotent()
            .arg("due_date", s::date("New due date, today or later"))
            .arg("amount", s::money("New amount"))
            .arg("description", s::text("What is being charged", 1, 500))
            .arg("ruler_id", s::id("Ruler (régua) for this charge"))
            .arg("tags", s::array("Tags (replace the current ones)", s::text("tag", 1, 50)))
            .args::<handlers::UpdateArgs>()
            .output(charge_output())
            .run(handlers::update_charge),
        id_arg(manage(tool(name::CHARGES_ISSUE, "Issue a draft charge", "POST", "/v1/charges/{id}/issue")))
            .describe("Issues a draft charge (draft -> pending): registers it now (boleto and/or Pix, per its payment method), optionally on a new due date (today or later; required when the draft's own has passed), and dunning follows it from then on. The debtor must be active. Issuing a pending charge again changes nothing; other statuses are a CONFLICT.")
            .idempotent()
            .arg("due_date", s::date("New due date, today or later (default: the draft's)"))
            .args::<draft::IssueArgs>()
            .output(charge_output())
            .run(draft::issue_draft),
        id_arg(manage(tool(name::CHARGES_DELETE, "Delete a draft charge", "DELETE", "/v1/charges/{id}")))
            .describe("Deletes a draft charge. Registered charges cannot be deleted, only canceled (CONFLICT).")
            .destructive()
            .idempotent()
            .args::<ById>()
            .confirm(handlers::describe_delete)
            .run(handlers::delete_charge),
        id_arg(manage(tool(name::CHARGES_CANCEL, "Cancel a charge", "POST", "/v1/charges/{id}/cancel")))
            .describe("Cancels a pending, overdue or partially paid charge: its boleto/Pix stop being payable and every ruler step stops. Paid, renegotiated or written-off charges cannot be canceled (CONFLICT).")
            .destructive()
            .idempotent()
            .arg("reason", s::text("Why the charge is canceled", 1, 500))
            .args::<IdReason>()
            .output(charge_output())
            .confirm(handlers::describe_cancel)
            .run(handlers::cancel_charge),
        id_arg(manage(tool(name::CHARGES_MARK_PAID, "Mark a charge as paid", "POST", "/v1/charges/{id}/mark-paid")))
            .describe("Records a payment received outside the bank/Pix flow (or confirms one). Without `paid_amount` the charge is paid in full at its updated amount on `paid_at`; a smaller amount leaves it `partially_paid`. Stops dunning when fully paid.")
            .destructive()
            .idempotent()
            .arg("paid_at", s::datetime("When it was paid (default now; a date means that day; not in the future)"))
            .arg("paid_amount", s::money("Amount received (default: the whole updated amount)"))
            .arg("paid_via", s::one_of("How it was paid (default manual)", &["boleto", "pix", "manual"]))
            .arg("note", s::text("Note kept with the payment", 1, 500))
            .args::<handlers::PaidArgs>()
            .output(charge_output())
            .confirm(handlers::describe_mark_paid)
            .run(handlers::mark_paid),
        id_arg(manage(tool(name::CHARGES_PAUSE, "Pause dunning of a charge", "POST", "/v1/charges/{id}/pause")))
            .describe("Pauses the ruler's messages and actions for an open charge, until a date (inclusive) or until resumed. Interest keeps accruing.")
            .idempotent()
            .arg("until", s::date("Last day of the pause (default: until resumed)"))
            .arg("reason", s::text("Why dunning is paused", 1, 500))
            .args::<handlers::PauseArgs>()
            .output(charge_output())
            .run(handlers::pause_charge),
        id_arg(manage(tool(name::CHARGES_RESUME, "Resume dunning of a charge", "POST", "/v1/charges/{id}/resume")))
            .describe("Resumes the ruler for a paused charge.")
            .idempotent()
            .args::<ById>()
            .output(charge_output())
            .run(handlers::resume_charge),
        id_arg(tool(name::CHARGES_TIMELINE, "Timeline of a charge", "GET", "/v1/charges/{id}/events"))
            .describe("The audit events of a charge, oldest first: creation, changes, overdue, payments, pauses, decisions, cancellation.")
            .read()
            .access(Scope::Read, Some("charges.view"))
            .arg("code", s::text("Only these event codes, comma-separated (e.g. charge.paid,charge.overdue)", 1, 500))
            .list(&["occurred_at"])
            .args::<handlers::TimelineArgs>()
            .output(s::list_output(s::entity_output(&["id", "code", "occurred_at"])))
            .run(handlers::timeline),
        id_arg(tool(name::CHARGES_SETTLEMENT_LETTER, "Settlement letter of a charge", "GET", "/v1/charges/{id}/settlement-pdf"))
            .describe("The settlement letter (carta de quitação, Código Civil arts. 319–320) of a fully paid charge, or of a renegotiated charge whose agreement was completed, as a PDF; NOT_SETTLED otherwise. Always the same document for the same charge. Returns the file's descriptor, not its bytes.")
            .read()
            .access(Scope::Read, Some("documents.view"))
            .args::<ById>()
            .output(s::entity_output(&["content_type", "byte_size", "download_path"]))
            .run(statement::settlement_letter),
        id_arg(tool(name::CHARGES_DECIDE, "Decide on a debt", "POST", "/v1/charges/{id}/decision"))
            .describe("Records an operator's audited decision on a charge: continue, negotiate, negativate, protest, write_off, send_to_legal or suspend. `write_off` moves an overdue charge to written_off; `suspend` and `send_to_legal` pause dunning; `negativate` and `protest` need an overdue charge and are carried out by their own tools.")
            .destructive()
            .access(Scope::Write, Some("charges.decide"))
            .req("decision", s::one_of("The decision", handlers::DECISIONS))
            .req("reason", s::text("Why (kept in the audit trail)", 3, 1000))
            .args::<handlers::DecideArgs>()
            .output(s::entity_output(&["decision", "charge"]))
            .confirm(handlers::describe_decide)
            .run(handlers::decide),
    ]
}

/// The debtor statement tool: [`crate::catalog::Registry::new`] lists it right after the debtor
/// tools, in catalogue order.
pub fn statement_tools() -> Vec<ToolSpec> {
    vec![
        tool(name::DEBTORS_STATEMENT, "Debtor statement", "GET", "/v1/debtors/{id}/statement")
            .describe("A debtor's statement (extrato) as of a date: open, paid and renegotiated charges with their updated amounts on that date, and the totals computed by the server over every charge (never re-sum them). The charges come a page at a time (`page`, `per_page`, at most 100; `meta` says how many there are). `format=pdf` returns the PDF's descriptor instead.")
            .read()
            .access(Scope::Read, Some("debtors.view"))
            .req("id", s::id("Debtor id"))
            .arg("as_of", s::date("Date of the updated amounts (default today)"))
            .arg("format", s::one_of("json (default) or pdf", &["json", "pdf"]))
            .arg("page", s::integer("Page of charges (json), from 1; the totals always cover every charge", 1, 1_000_000))
            .arg("per_page", s::integer("Charges per page (json), 1 to 100 (default 100)", 1, 100))
            .args::<statement::StatementArgs>()
            .output(s::any_object("The statement, or the PDF's descriptor"))
            .run(statement::debtor_statement),
    ]
}
