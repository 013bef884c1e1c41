//! An export as stored, and the resources that can be exported (each with its list tool
//! and columns).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::file::Dialect;
use crate::catalog::{Registry, name};
use crate::status::ExportStatus;
use crate::store::Kind;
use crate::tool::ToolSpec;

/// How long a processed file can be downloaded.
pub const DOWNLOAD_TTL_MS: u64 = 24 * 3600 * 1000;
/// Most rows in one export (beyond, the export fails and asks for narrower filters).
pub const MAX_ROWS: u64 = 100_000;
/// Most exports handled per organization, tick and phase.
pub const BATCH: u32 = 10;

/// An export.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Export {
    /// UUID.
    pub id: String,
    /// `charges`, `debtors`, `deliveries`, `agreements` or `credit_bureau_records`.
    pub resource: String,
    /// `csv`.
    pub format: String,
    /// The CSV dialect: `rfc4180` or `pt-BR` ([`Dialect`]).
    #[serde(default = "default_dialect")]
    pub dialect: String,
    /// Filters of the resource's list tool.
    pub filters: Map<String, Value>,
    /// `queued`, `processing`, `processed`, `expired` or `failed`.
    pub status: ExportStatus,
    /// Data rows (header excluded), once processed.
    pub row_count: Option<u64>,
    /// How far the file is, 0 to 100: 0 once the worker took it, 100 when processed. The
    /// file is built in one transaction (one consistent snapshot of the rows), so there
    /// is no step between.
    #[serde(default)]
    pub progress: Option<u8>,
    /// Suggested file name.
    pub file_name: Option<String>,
    /// File size in bytes.
    pub file_size: Option<u64>,
    /// SHA-256 of the file.
    pub sha256: Option<String>,
    /// `/v1` path of the file.
    pub download_path: Option<String>,
    /// The file can be downloaded until then.
    pub download_expires_at: Option<String>,
    /// Who asked for it.
    pub requested_by: String,
    /// When the worker took it.
    pub processing_started_at: Option<String>,
    /// When the file was ready.
    pub processed_at: Option<String>,
    /// When it failed.
    pub failed_at: Option<String>,
    /// Why it failed.
    pub error_message: Option<String>,
    /// When the file was dropped.
    pub expired_at: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
    /// The file (kept while processed; never shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csv: Option<String>,
}

pub(super) fn default_dialect() -> String {
    Dialect::NAMES[0].into()
}

impl Export {
    /// What the API shows (without the file).
    pub fn public(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(m) = v.as_object_mut() {
            m.remove("csv");
        }
        v
    }
}

/// A resource that can be exported.
pub(super) struct Resource {
    pub(super) name: &'static str,
    pub(super) list_tool: &'static str,
    pub(super) kind: Kind,
    pub(super) columns: &'static [&'static str],
    pub(super) with_debtor: bool,
}

pub(super) const RESOURCES: &[Resource] = &[
    Resource {
        name: "charges",
        list_tool: name::CHARGES_LIST,
        kind: Kind::Charge,
        columns: &[
            "id",
            "external_id",
            "debtor_id",
            "description",
            "amount",
            "due_date",
            "original_due_date",
            "payment_method",
            "status",
            "days_overdue",
            "updated_amount",
            "paid_amount",
            "paid_at",
            "paid_via",
            "fine_percentage",
            "interest_percentage",
            "canceled_at",
            "cancellation_reason",
            "ruler_id",
            "dunning_paused_until",
            "agreement_id",
            "negativation_status",
            "protest_status",
            "boleto.line",
            "boleto.our_number",
            "pix.txid",
            "tags",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "debtors",
        list_tool: name::DEBTORS_LIST,
        kind: Kind::Debtor,
        columns: &[
            "id",
            "external_code",
            "person_type",
            "cnpj_cpf",
            "name",
            "nickname",
            "contact_person",
            "birthday",
            "address.street",
            "address.number",
            "address.complement",
            "address.neighborhood",
            "address.city",
            "address.state",
            "address.zipcode",
            "tags",
            "ruler_id",
            "do_not_contact",
            "credit_restriction_blocked",
            "status",
            "archived_at",
            "open_amount",
            "overdue_amount",
            "overdue_count",
            "oldest_due_date",
            "created_at",
            "updated_at",
        ],
        with_debtor: false,
    },
    Resource {
        name: "deliveries",
        list_tool: name::DELIVERIES_LIST,
        kind: Kind::Delivery,
        columns: &[
            "id",
            "charge_id",
            "debtor_id",
            "contact_point_id",
            "step_id",
            "channel",
            "origin",
            "status",
            "scheduled_at",
            "sent_at",
            "delivered_at",
            "read_at",
            "clicked_at",
            "failed_at",
            "error_code",
            "error_message",
            "provider_message_id",
            "attempt",
            "resent_from_id",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "agreements",
        list_tool: name::AGREEMENTS_LIST,
        kind: Kind::Agreement,
        columns: &[
            "id",
            "debtor_id",
            "charge_ids",
            "status",
            "original_amount",
            "fine_waived",
            "interest_waived",
            "discount_amount",
            "discount_percentage",
            "total_amount",
            "down_payment_amount",
            "installments_count",
            "first_due_date",
            "payment_method",
            "expires_at",
            "accepted_at",
            "accepted_by",
            "break_after_days",
            "broken_at",
            "canceled_at",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
    Resource {
        name: "credit_bureau_records",
        list_tool: name::CREDIT_BUREAU_LIST,
        kind: Kind::CreditBureauRecord,
        columns: &[
            "id",
            "charge_id",
            "debtor_id",
            "bureau",
            "status",
            "amount",
            "notice_delivery_id",
            "notice_sent_at",
            "eligible_at",
            "requested_at",
            "included_at",
            "removal_requested_at",
            "removed_at",
            "removal_reason",
            "protocol",
            "error_message",
            "created_at",
            "updated_at",
        ],
        with_debtor: true,
    },
];

pub(super) fn resource(name: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.name == name)
}

/// The list tool `r` pages through, from the registry the operation was lent.
pub(super) fn list_tool<'r>(registry: &'r Registry, r: &Resource) -> Option<&'r ToolSpec> {
    registry.get(r.list_tool)
}

// ---------------------------------------------------------------------------
// The worker
// ---------------------------------------------------------------------------
