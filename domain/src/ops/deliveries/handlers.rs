//! The handlers of the delivery tools that read: the list (the sending ones, notify, bulk
//! and resend, are in `send`; the status callbacks in `status`).

use dunning_core::Output;

use crate::error::DomainError;
use crate::list::{Filter, Listing};
use crate::op::Op;
use crate::store::{Kind, Order};

pub(super) const SORTS: &[(&str, &str, Order)] = &[
    ("scheduled_at", "scheduled_at", Order::Desc),
    ("created_at", "created_at", Order::Desc),
];

/// `dunning_deliveries_list`.
pub(super) const LISTING: Listing = Listing {
    kind: Kind::Delivery,
    filters: &[
        Filter::In("status", "status"),
        Filter::In("channel", "channel"),
        Filter::Eq("charge_id", "charge_id"),
        Filter::Eq("debtor_id", "debtor_id"),
        Filter::Eq("step_id", "step_id"),
        Filter::TimeRange {
            from: "from",
            to: "to",
            column: "scheduled_at",
        },
    ],
    sorts: SORTS,
};

pub(super) fn list_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    LISTING.run(op)
}
