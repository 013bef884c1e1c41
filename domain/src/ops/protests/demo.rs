//! Demo: protests one charge.

use dunning_core::Output;

use super::handlers::protest;
use crate::error::DomainError;
use crate::op::Op;

/// Demo: protests one charge (the tool's handler).
pub fn seed_demo_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    protest(op)
}
