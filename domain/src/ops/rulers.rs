//! Tools of the `rulers` group (domain.md §2). Not built yet.

use crate::spec::ToolSpec;

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    Vec::new()
}
