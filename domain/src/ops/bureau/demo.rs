//! Demo bureau records.

use dunning_core::Output;

use super::negativate::negativate;
use crate::error::DomainError;
use crate::op::Op;

/// Demo: negativates one overdue charge of a debtor with an e-mail (the record waits for
/// its notice window), for [`crate::ops::agreements::seed_demo`].
pub fn seed_demo_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    negativate(op)
}
