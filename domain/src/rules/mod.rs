//! Business rules that are pure functions: documents, calendar, money, text.

pub mod calendar;
pub mod document;
pub mod money;
pub mod text;
