//! Brazilian business rules that are pure functions: documents, calendar, money.

pub mod calendar;
pub mod document;
pub mod money;
