//! An agreement and its installments as stored, the state machine's moves, and the
//! loading helpers the tools and the worker share.

use serde::{Deserialize, Serialize};

use crate::brazil::money::Money;
use crate::status::{AgreementStatus, ChargeStatus, InstallmentStatus};

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

pub(super) const DAY_MS: u64 = 86_400_000;

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
