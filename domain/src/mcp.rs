//! Resources, templates, prompts and completions (spec §14). Each resource is a
//! read-only view of a tool handler. Filled as the entities land.

use std::collections::BTreeMap;

use dunning_core::{
    CompletionRef, Contents, Ctx, PromptDef, ResourceDef, ResourceError, ResourceRead, TemplateDef,
};
use serde_json::Value;

use crate::Domain;

/// Fixed-URI resources.
pub fn resources() -> Vec<ResourceDef> {
    Vec::new()
}

/// Resource templates.
pub fn templates() -> Vec<TemplateDef> {
    Vec::new()
}

/// Prompts.
pub fn prompts() -> Vec<PromptDef> {
    Vec::new()
}

/// Reads a resource.
pub fn read(_domain: &Domain, _read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
    Err(ResourceError::NotFound)
}

/// Builds a prompt.
pub fn prompt(
    _domain: &Domain,
    name: &str,
    _args: &BTreeMap<String, String>,
    _ctx: Ctx<'_>,
) -> Result<(Option<String>, Vec<Value>), String> {
    Err(format!("Unknown prompt: {name}"))
}

/// Completion values.
pub fn complete(
    _domain: &Domain,
    _reference: CompletionRef<'_>,
    _argument: &str,
    _value: &str,
    _context: &BTreeMap<String, String>,
    _ctx: Ctx<'_>,
) -> Vec<String> {
    Vec::new()
}
