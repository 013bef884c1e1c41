//! The tool handlers, one module per group of domain.md §2.

pub mod aggregates;
pub mod agreements;
pub mod bureau;
pub mod charges;
pub mod contact_points;
pub mod debtors;
pub mod deliveries;
pub mod events;
pub mod exports;
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
