//! Agreements (acordo / renegociação; domain.md §1, tools #34–#40): a debtor's overdue
//! charges folded into a new payment plan.
//!
//! ## Terms (computed by the server, in centavos)
//! For each charge, its updated amount today splits into open principal, fine and
//! interest (payments settle principal first). The discount (`discount_percentage`, at
//! most the organization's `max_discount_percentage`, rule 8) applies to the updated
//! total and waives interest first, then fine, then principal (`interest_waived`,
//! `fine_waived`). `total_amount = updated_amount − discount_amount`. An optional
//! `down_payment_amount` (entrada) is due on `first_due_date`; the rest is split into
//! `installments_count` (1–12) monthly installments — from `first_due_date` without a
//! down payment, from a month later with one —, each due date rolled to the next bank
//! business day; the last installment absorbs the rounding.
//!
//! ## Machine (domain §1.1)
//! `proposed → accepted → active → completed`; `proposed → expired | canceled`;
//! `accepted | active → broken`; `accepted → canceled`.
//! - [`accept`]: generates the installment charges (`pending`, with `agreement_id`),
//!   moves the originals to `renegotiated` (`charge.renegotiated`) and asks the credit
//!   bureau to remove their registrations ([`crate::ops::bureau::settle_for_agreement`]).
//! - cancel: a proposal is just canceled; an accepted agreement's installments are
//!   canceled and the originals return to dunning (`overdue`, or `partially_paid` when
//!   they had payments). An agreement with payments (`active`) cannot be canceled.
//! - [`check_broken`] (worker tick): `proposed` past `expires_at` → `expired`; first
//!   payment → `active`; every installment paid → `completed`; an installment overdue
//!   more than `break_after_days` (default 30) → `broken`: the remaining installments are
//!   canceled and the unpaid balance returns to dunning as a new charge due today.
//!
//! Events: `agreement.{proposed,accepted,completed,broken,canceled,expired}`, plus
//! `agreement.activated` for the first payment (no catalogue code).
//!
//! The agreement term (termo de acordo e confissão de dívida) is a PDF drawn here with
//! `pdf-writer` and the text helpers of [`crate::documents`]; until the agreement is
//! accepted every page carries a "MINUTA" watermark (rule 8).
//!
//! Here: the documents, the state machine and the tool declarations. Beside: `plan`
//! (the payment plan: simulation and its arguments), `handlers` (list, get, create), `accept` (accept and
//! cancel), `worker`, `term_pdf` (the PDF) and `demo`.

use accept::{AcceptArgs, accept, cancel, describe_cancel};
use plan::{TermsArgs, simulate};

use crate::brazil::money::Money;
use crate::catalog::name;
use crate::status::{AgreementStatus, ChargeStatus, InstallmentStatus};

use dunning_core::Scope;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::args::{ById, IdReason};
use crate::schema as s;
use crate::tool::{ToolBuilder, ToolSpec, tool};

mod accept;
mod demo;
mod handlers;
mod plan;
mod term_pdf;
mod worker;

pub use demo::*;
pub use handlers::*;
pub use term_pdf::*;
pub use worker::*;

/// Every agreement status.
pub const STATUSES: &[&str] = AgreementStatus::NAMES;
/// Agreements that hold their charges.
pub const OPEN: &[AgreementStatus] = AgreementStatus::OPEN;
/// Most charges in one agreement.
pub const MAX_CHARGES: usize = 50;
/// Most installments (besides the down payment).
pub const MAX_INSTALLMENTS: i64 = 12;
/// Default `break_after_days`.
pub const BREAK_AFTER_DAYS: u32 = 30;
/// The first due date is at most this many days ahead.
pub const MAX_FIRST_DUE_DAYS: i64 = 90;
/// Default validity of a proposal (days), capped by the first due date.
pub const DEFAULT_VALIDITY_DAYS: u64 = 7;
/// Watermark of a term not yet accepted.
pub const DRAFT_WATERMARK: &str = "MINUTA — SEM VALOR";

const DAY_MS: u64 = 86_400_000;

/// One charge folded into an agreement, as it stood when the terms were computed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChargePart {
    /// The charge.
    pub charge_id: String,
    /// Its description (or external id).
    pub description: Option<String>,
    /// Its due date.
    pub due_date: String,
    /// Its status then.
    pub status: ChargeStatus,
    /// Its amount (BRL).
    pub amount: Money,
    /// Paid so far (BRL).
    pub paid_amount: Money,
    /// Principal still owed (BRL).
    pub principal: Money,
    /// Fine owed (BRL).
    pub fine: Money,
    /// Interest owed (BRL).
    pub interest: Money,
    /// Everything owed (BRL).
    pub updated_amount: Money,
    /// Days after the effective due date.
    pub days_overdue: i64,
}

/// One payment of the plan.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Installment {
    /// 1-based position (the down payment, when there is one, is number 1).
    pub number: u32,
    /// `down_payment` or `installment`.
    pub kind: String,
    /// Amount (BRL).
    pub amount: Money,
    /// Due date (a bank business day).
    pub due_date: String,
    /// The charge generated on acceptance.
    pub charge_id: Option<String>,
    /// `scheduled` until accepted, then the charge's status.
    pub status: InstallmentStatus,
    /// Paid so far on its charge (BRL).
    pub paid_amount: Money,
}

/// An agreement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Agreement {
    /// UUID.
    pub id: String,
    /// The debtor.
    pub debtor_id: String,
    /// The charges folded in.
    pub charge_ids: Vec<String>,
    /// Status (see the module docs).
    pub status: AgreementStatus,
    /// The charges as they stood when proposed.
    pub charges: Vec<ChargePart>,
    /// Open principal of the charges (BRL).
    pub original_amount: Money,
    /// Fines owed (BRL).
    pub fine_amount: Money,
    /// Interest owed (BRL).
    pub interest_amount: Money,
    /// Everything owed before the discount (BRL).
    pub updated_amount: Money,
    /// Part of the discount that waives fines (BRL).
    pub fine_waived: Money,
    /// Part of the discount that waives interest (BRL).
    pub interest_waived: Money,
    /// Discount (BRL).
    pub discount_amount: Money,
    /// Discount (percent of the updated amount).
    pub discount_percentage: f64,
    /// What the debtor pays under the agreement (BRL).
    pub total_amount: Money,
    /// Down payment (entrada, BRL; 0 when none).
    pub down_payment_amount: Money,
    /// Installments besides the down payment.
    pub installments_count: u32,
    /// First due date.
    pub first_due_date: String,
    /// `boleto`, `pix` or `bolepix`.
    pub payment_method: String,
    /// The plan.
    pub installments: Vec<Installment>,
    /// The proposal can be accepted until then.
    pub expires_at: String,
    /// Whether the debtor was told about the proposal.
    pub notify_debtor: bool,
    /// The delivery that told the debtor.
    pub notification_delivery_id: Option<String>,
    /// Why the debtor could not be told.
    pub notification_skipped: Option<String>,
    /// When accepted.
    pub accepted_at: Option<String>,
    /// `debtor` or `operator`.
    pub accepted_by: Option<String>,
    /// Who recorded the acceptance.
    pub accepted_by_user: Option<String>,
    /// When the first payment came.
    pub activated_at: Option<String>,
    /// Days an installment may be overdue before the agreement breaks.
    pub break_after_days: u32,
    /// When broken.
    pub broken_at: Option<String>,
    /// The charge carrying the unpaid balance of a broken agreement.
    pub balance_charge_id: Option<String>,
    /// When every installment was paid.
    pub completed_at: Option<String>,
    /// When the proposal expired.
    pub expired_at: Option<String>,
    /// When canceled.
    pub canceled_at: Option<String>,
    /// Why canceled.
    pub cancellation_reason: Option<String>,
    /// Where the term (PDF) is served.
    pub term_url: String,
    /// Who proposed it.
    pub created_by: String,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

fn agreement_output() -> Value {
    s::entity_output(&[
        "id",
        "debtor_id",
        "charge_ids",
        "status",
        "total_amount",
        "installments",
    ])
}

fn terms_args(b: ToolBuilder) -> ToolBuilder {
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
