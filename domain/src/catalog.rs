//! The catalogue, in one file: every tool group listed once, in the catalogue's order;
//! every tool name as a constant (the groups declare their tools with these, and
//! everything else — resources, completions, exports, demo data — refers to a tool
//! through them, so a renamed tool cannot leave a dangling string behind); the scope
//! names; and the error codes that are the product's own.
//!
//! Resources, resource templates and prompts are views of read tools; they are listed
//! in [`crate::mcp`] ([`crate::mcp::resources`], [`crate::mcp::templates`],
//! [`crate::mcp::prompts`]).

use std::collections::HashMap;

use dunning_core::ScopeNames;

use crate::ops;
use crate::tool::ToolSpec;

/// The OAuth scopes of this resource server : `dunning.read` for reads,
/// previews, simulations and documents; `dunning.write` for debtors, contact points,
/// charges, notifications, agreements, rulers and exports; `dunning.admin` for the
/// credit bureau, protest, webhooks and secrets.
pub const SCOPES: ScopeNames = ScopeNames {
    read: "dunning.read",
    write: "dunning.write",
    admin: "dunning.admin",
};

/// The tool error code of a settlement document asked for something not settled
/// (REST `422`; for a resource, unavailable with this reason).
pub const NOT_SETTLED: &str = "NOT_SETTLED";

/// The tool table: every tool in catalogue order, and an index by name.
///
/// Built once, by [`crate::Domain::new`], and lent to whatever needs a tool other than
/// its own: the dispatcher (by name), the exporter (the list tools it pages through,
/// through [`crate::op::Op::registry`]). No second table exists: a test that needs the
/// catalogue builds a `Registry` of its own.
#[derive(Debug)]
pub struct Registry {
    tools: Vec<ToolSpec>,
    index: HashMap<String, usize>,
}

impl Registry {
    /// Every tool, in catalogue order: the groups in the order they are listed here, the
    /// debtor statement (declared with the charges) right after the debtors.
    pub fn new() -> Self {
        let mut tools = ops::me::tools();
        tools.extend(ops::summary::tools());
        tools.extend(ops::debtors::tools());
        tools.extend(ops::charges::statement_tools());
        tools.extend(ops::contact_points::tools());
        tools.extend(ops::charges::tools());
        tools.extend(ops::bureau::tools());
        tools.extend(ops::protests::tools());
        tools.extend(ops::agreements::tools());
        tools.extend(ops::rulers::tools());
        tools.extend(ops::deliveries::tools());
        tools.extend(ops::exports::tools());
        tools.extend(ops::events::tools());
        tools.extend(ops::webhooks::tools());
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.def.name.clone(), i))
            .collect();
        Self { tools, index }
    }

    /// Every tool, in catalogue order.
    pub fn tools(&self) -> &[ToolSpec] {
        &self.tools
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&ToolSpec> {
        self.index.get(name).map(|&i| &self.tools[i])
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

/// Every tool name.
pub mod name {
    #![allow(missing_docs)] // each constant is its own value
    // The organization and the caller Declared in `ops/me.rs`.
    pub const ME: &str = "dunning_me";
    // The portfolio summary. Declared in `ops/summary.rs`.
    pub const SUMMARY_GET: &str = "dunning_summary_get";
    // Debtors. Declared in `ops/debtors.rs`.
    pub const DEBTORS_LIST: &str = "dunning_debtors_list";
    pub const DEBTORS_GET: &str = "dunning_debtors_get";
    pub const DEBTORS_CREATE: &str = "dunning_debtors_create";
    pub const DEBTORS_UPDATE: &str = "dunning_debtors_update";
    pub const DEBTORS_ARCHIVE: &str = "dunning_debtors_archive";
    // Contact points. Declared in `ops/contact_points.rs`.
    pub const CONTACT_POINTS_LIST: &str = "dunning_contact_points_list";
    pub const CONTACT_POINTS_CREATE: &str = "dunning_contact_points_create";
    pub const CONTACT_POINTS_UPDATE: &str = "dunning_contact_points_update";
    pub const CONTACT_POINTS_DELETE: &str = "dunning_contact_points_delete";
    // Charges (the debtor statement included). Declared in `ops/charges/tools.rs`.
    pub const CHARGES_LIST: &str = "dunning_charges_list";
    pub const CHARGES_GET: &str = "dunning_charges_get";
    pub const CHARGES_CREATE: &str = "dunning_charges_create";
    pub const CHARGES_UPDATE: &str = "dunning_charges_update";
    pub const CHARGES_ISSUE: &str = "dunning_charges_issue";
    pub const CHARGES_DELETE: &str = "dunning_charges_delete";
    pub const CHARGES_CANCEL: &str = "dunning_charges_cancel";
    pub const CHARGES_MARK_PAID: &str = "dunning_charges_mark_paid";
    pub const CHARGES_PAUSE: &str = "dunning_charges_pause";
    pub const CHARGES_RESUME: &str = "dunning_charges_resume";
    pub const CHARGES_TIMELINE: &str = "dunning_charges_timeline";
    pub const CHARGES_SETTLEMENT_LETTER: &str = "dunning_charges_settlement_letter";
    pub const CHARGES_DECIDE: &str = "dunning_charges_decide";
    pub const DEBTORS_STATEMENT: &str = "dunning_debtors_statement";
    // Credit bureau (negativação). Declared in `ops/bureau/tools.rs`.
    pub const CHARGES_NEGATIVATE: &str = "dunning_charges_negativate";
    pub const CREDIT_BUREAU_LIST: &str = "dunning_credit_bureau_list";
    pub const CREDIT_BUREAU_GET: &str = "dunning_credit_bureau_get";
    pub const CREDIT_BUREAU_REMOVE: &str = "dunning_credit_bureau_remove";
    // Protest at the notary. Declared in `ops/protests/tools.rs`.
    pub const CHARGES_PROTEST: &str = "dunning_charges_protest";
    pub const PROTESTS_LIST: &str = "dunning_protests_list";
    pub const PROTESTS_GET: &str = "dunning_protests_get";
    pub const PROTESTS_CANCEL: &str = "dunning_protests_cancel";
    // Agreements (renegotiation). Declared in `ops/agreements/tools.rs`.
    pub const AGREEMENTS_SIMULATE: &str = "dunning_agreements_simulate";
    pub const AGREEMENTS_LIST: &str = "dunning_agreements_list";
    pub const AGREEMENTS_GET: &str = "dunning_agreements_get";
    pub const AGREEMENTS_CREATE: &str = "dunning_agreements_create";
    pub const AGREEMENTS_ACCEPT: &str = "dunning_agreements_accept";
    pub const AGREEMENTS_CANCEL: &str = "dunning_agreements_cancel";
    pub const AGREEMENTS_TERM: &str = "dunning_agreements_term";
    // Dunning rulers. Declared in `ops/rulers/tools.rs`.
    pub const RULERS_LIST: &str = "dunning_rulers_list";
    pub const RULERS_GET: &str = "dunning_rulers_get";
    pub const RULERS_CREATE: &str = "dunning_rulers_create";
    pub const RULERS_UPDATE: &str = "dunning_rulers_update";
    pub const RULERS_ACTIVATE: &str = "dunning_rulers_activate";
    pub const RULERS_PAUSE: &str = "dunning_rulers_pause";
    pub const RULERS_ARCHIVE: &str = "dunning_rulers_archive";
    pub const RULERS_PREVIEW: &str = "dunning_rulers_preview";
    pub const STEPS_CREATE: &str = "dunning_steps_create";
    pub const STEPS_UPDATE: &str = "dunning_steps_update";
    pub const STEPS_DELETE: &str = "dunning_steps_delete";
    // Notifications and deliveries. Declared in `ops/deliveries/tools.rs`.
    pub const CHARGES_NOTIFY: &str = "dunning_charges_notify";
    pub const DELIVERIES_LIST: &str = "dunning_deliveries_list";
    pub const NOTIFICATIONS_CREATE: &str = "dunning_notifications_create";
    pub const DELIVERIES_RESEND: &str = "dunning_deliveries_resend";
    // Exports. Declared in `ops/exports/tools.rs`.
    pub const EXPORTS_CREATE: &str = "dunning_exports_create";
    pub const EXPORTS_GET: &str = "dunning_exports_get";
    pub const EXPORTS_DOWNLOAD: &str = "dunning_exports_download";
    // Events. Declared in `ops/events.rs`.
    pub const EVENTS_LIST: &str = "dunning_events_list";
    // Webhooks and their deliveries. Declared in `ops/webhooks/tools.rs`.
    pub const WEBHOOKS_LIST: &str = "dunning_webhooks_list";
    pub const WEBHOOKS_GET: &str = "dunning_webhooks_get";
    pub const WEBHOOKS_CREATE: &str = "dunning_webhooks_create";
    pub const WEBHOOKS_UPDATE: &str = "dunning_webhooks_update";
    pub const WEBHOOKS_DELETE: &str = "dunning_webhooks_delete";
    pub const WEBHOOKS_TEST: &str = "dunning_webhooks_test";
    pub const WEBHOOKS_ROTATE_SECRET: &str = "dunning_webhooks_rotate_secret";
    pub const WEBHOOK_DELIVERIES_LIST: &str = "dunning_webhook_deliveries_list";
    pub const WEBHOOK_DELIVERIES_GET: &str = "dunning_webhook_deliveries_get";
    pub const WEBHOOK_DELIVERIES_RESEND: &str = "dunning_webhook_deliveries_resend";
}

#[cfg(test)]
mod tests {
    use super::Registry;

    #[test]
    fn the_registry_finds_every_tool_by_its_own_name_and_no_other() {
        let registry = Registry::new();
        for tool in registry.tools() {
            let found = registry.get(&tool.def.name).map(|t| &t.def.name);
            assert_eq!(found, Some(&tool.def.name), "one tool per name");
        }
        assert!(registry.get("dunning_no_such_tool").is_none());
        assert_eq!(
            registry.get(super::name::ME).map(|t| t.def.name.as_str()),
            Some(super::name::ME)
        );
    }
}
