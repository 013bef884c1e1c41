//! Brazilian rules that are pure functions: CPF/CNPJ documents, the bank calendar
//! (holidays, business days), money in centavos and how a charge grows with time, text.
//!
//! Named after what it holds, the country's rules, so it is not confused with
//! `rules.md` (the business rules for agents, served as a resource) or `ops/rulers/`
//! (the dunning schedules, réguas).

pub mod calendar;
pub mod document;
pub mod growth;
pub mod money;
pub mod text;
