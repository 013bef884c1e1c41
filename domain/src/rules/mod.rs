//! Business rules that are pure functions: documents, calendar, money and how a charge
//! grows with time, text.

pub mod calendar;
pub mod document;
pub mod growth;
pub mod money;
pub mod text;
