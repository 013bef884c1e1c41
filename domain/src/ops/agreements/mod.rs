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
//! Here: the documents and the state machine. Beside: `tools` (declarations), `plan`
//! (the payment plan: simulation and its arguments), `handlers` (list, get, create), `accept` (accept and
//! cancel), `worker`, `term_pdf` (the PDF) and `demo`.

use crate::brazil::money::Money;
use crate::status::{AgreementStatus, ChargeStatus, InstallmentStatus};

use serde::{Deserialize, Serialize};

mod accept;
mod demo;
mod handlers;
mod plan;
mod term_pdf;
mod tools;
mod worker;

pub use demo::*;
pub use handlers::*;
pub use term_pdf::*;
pub use tools::tools;
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
