//! The domain's one error enum, and its one mapping to a tool error and its REST status.

use dunning_core::{FieldIssue, ToolError, ToolErrorCode};

use crate::store::StoreError;

/// Everything a domain operation can refuse or fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DomainError {
    /// Schema or business validation; names every offending field.
    #[error("{message}")]
    Validation {
        /// Summary.
        message: String,
        /// Offending fields.
        details: Vec<FieldIssue>,
    },
    /// No such id in the caller's organization.
    #[error("{what} {id} not found")]
    NotFound {
        /// Entity kind, e.g. `charge`.
        what: &'static str,
        /// The id asked for.
        id: String,
    },
    /// Invalid state transition or conflicting state.
    #[error("{0}")]
    Conflict(String),
    /// The person's permission does not allow it.
    #[error("{0}")]
    Forbidden(String),
    /// An `idempotency_key` reused with different arguments.
    #[error("idempotency_key {0} was already used with different arguments")]
    IdempotencyConflict(String),
    /// The user declined the confirmation (or its declined state came back).
    #[error("{0}")]
    ConfirmationDeclined(String),
    /// A read's answer over the ceiling ([`crate::ceiling`]): a `VALIDATION_ERROR`
    /// naming the limit (field `per_page`); for a resource, unavailable with reason
    /// `ANSWER_TOO_LARGE`.
    #[error(
        "Answer too large: about {size} bytes, over the limit of {limit} bytes for one answer; \
         ask for less (page and per_page, a narrower filter or date range)"
    )]
    TooLarge {
        /// Estimated size of the answer, in bytes.
        size: usize,
        /// The limit, in bytes.
        limit: usize,
    },
    /// A settlement document for something not settled.
    #[error("{0}")]
    NotSettled(String),
    /// A per-organization outbound limit.
    #[error("outbound message limit reached; retry in {retry_after_ms} ms")]
    RateLimited {
        /// When to retry.
        retry_after_ms: u64,
    },
    /// The store failed (a bug or an outage; never the caller's fault).
    #[error("store: {0}")]
    Store(#[from] StoreError),
}

impl DomainError {
    /// A validation error on one field.
    pub fn field(field: &str, issue: impl Into<String>) -> Self {
        let issue = issue.into();
        Self::Validation {
            message: format!("{field}: {issue}"),
            details: vec![FieldIssue {
                field: field.to_owned(),
                issue,
            }],
        }
    }

    /// An invalid transition of `what` from `from` to `to` (spec: CONFLICT naming the states).
    pub fn transition(
        what: &str,
        id: &str,
        from: impl std::fmt::Display,
        to: impl std::fmt::Display,
    ) -> Self {
        Self::Conflict(format!(
            "invalid_transition: {what} {id} is {from} and cannot become {to}"
        ))
    }

    /// Not found.
    pub fn not_found(what: &'static str, id: &str) -> Self {
        Self::NotFound {
            what,
            id: id.to_owned(),
        }
    }
}

impl From<DomainError> for ToolError {
    fn from(e: DomainError) -> Self {
        let message = e.to_string();
        match e {
            DomainError::Validation { details, .. } => Self::validation(message, details),
            DomainError::NotFound { .. } => Self::new(ToolErrorCode::NotFound, message),
            DomainError::Conflict(_) => Self::new(ToolErrorCode::Conflict, message),
            DomainError::Forbidden(_) => Self::new(ToolErrorCode::Forbidden, message),
            DomainError::IdempotencyConflict(_) => {
                Self::new(ToolErrorCode::IdempotencyConflict, message)
            }
            DomainError::ConfirmationDeclined(_) => {
                Self::new(ToolErrorCode::ConfirmationDeclined, message)
            }
            DomainError::TooLarge { limit, .. } => Self::validation(
                message,
                vec![FieldIssue {
                    field: "per_page".into(),
                    issue: format!("the answer would exceed the limit of {limit} bytes"),
                }],
            ),
            DomainError::NotSettled(_) => Self::new(
                ToolErrorCode::Unavailable(crate::catalog::NOT_SETTLED),
                message,
            ),
            DomainError::RateLimited { retry_after_ms } => Self {
                retry_after_ms: Some(retry_after_ms),
                ..Self::new(ToolErrorCode::RateLimited, message)
            },
            DomainError::Store(e) => Self::new(ToolErrorCode::Internal, format!("store: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_failure_keeps_its_cause_for_the_log() {
        let e = ToolError::from(DomainError::Store(StoreError("database is locked".into())));
        assert_eq!(e.code, ToolErrorCode::Internal);
        assert_eq!(e.message, "store: database is locked");
        assert_eq!(
            e.reason().as_deref(),
            Some("internal error: store: database is locked")
        );
    }
}
