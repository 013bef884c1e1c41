//! The tool handlers, one module per group of the catalogue (`catalog.rs`).
//!
//! A group big enough for a folder has the same files in every folder: `mod.rs` (the
//! module doc with a *Files* section, and the re-exports: nothing else), `tools.rs` (the
//! tool declarations: names, schemas, access, which handler runs), `handlers.rs` (the
//! handler functions and their argument structs), then topic files named after what
//! they hold (`agreement.rs`: the agreement document and its machine; `worker.rs`: the
//! clock-driven part; `demo.rs`: the demo seeding). A small group is one file
//! (`debtors.rs`, `contact_points.rs`, `events.rs`, `summary.rs`, `me.rs`)
//! and says why in its doc. [`aggregates`] is not a group: it is the debtor's computed
//! fields, kept by the charge writes of several groups.

pub mod aggregates;
pub mod agreements;
pub mod bureau;
pub mod charges;
pub mod contact_points;
pub mod debtors;
pub mod deliveries;
pub mod events;
pub mod exports;
pub mod me;
pub mod protests;
pub mod rulers;
pub mod summary;
pub mod webhooks;

use dunning_core::{Principal, UnixTime};

use crate::Domain;
use crate::demo::{Rng, Seeded};
use crate::error::DomainError;

/// A group's demo seeding: runs after debtors exist; `charges` is how many charges the
/// organization should get in total.
pub type DemoHook =
    fn(&Domain, &Principal, UnixTime, &mut Rng, &Seeded, usize) -> Result<(), DomainError>;

/// Demo hooks in dependency order (each group adds its own).
pub const DEMO_HOOKS: &[DemoHook] = &[
    charges::seed_demo,
    agreements::seed_demo,
    // Last: deliveries need charges and contact points.
    rulers::seed_demo,
    // After everything: a webhook, exports and the webhook's deliveries of their events.
    exports::seed_demo,
];
