//! The tool handlers, one module per group of domain.md §2.

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
