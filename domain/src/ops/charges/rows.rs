//! A charges page's rows, each written once and reused while what it is written from
//! stays the same.
//!
//! Why: a row of a page is a function of three things only, the stored document's text,
//! its debtor's name and the day it is read on ([`View::of`] and [`View::named`]), and
//! parsing the document and writing the view was about two fifths of a page's CPU.
//! Agents ask for the same pages again and again (the overdue list, polled), and a
//! charge changes rarely against that.
//!
//! The rule, in order: a row is kept by its document's whole text, with the name and the
//! day it was written for; it is reused only when the text is equal (compared whole, the
//! hash only finds it) and so are the name and the day. So a reused row is byte for byte
//! what writing it again would give, on any replica, whatever changed elsewhere: a
//! changed charge has another text and is written again, and its old row is left to the
//! bound. At most [`MAX_ROWS`] rows are kept (about 3 KB each: the text and the row);
//! a full map starts again, as `kept.rs`'s do. Only read-only calls keep rows
//! (`Op::memo`); every other caller writes its rows.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use chrono::NaiveDate;
use dunning_core::JsonText;
use foldhash::quality::FixedState;
use serde::Serialize;

use super::{Charge, View};
use crate::error::DomainError;
use crate::store::{self, Kind, StoreError};

/// The most rows kept.
const MAX_ROWS: usize = 8_192;

/// One row of a page, written.
#[derive(Debug)]
pub(crate) struct Row {
    /// Its debtor, read from the document when the row was written.
    debtor_id: String,
    /// The debtor's name it was written with.
    name: Option<String>,
    /// The day it was written for.
    today: NaiveDate,
    text: JsonText,
}

/// A row is its text, as it is, in the page's answer.
impl Serialize for Row {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.text.serialize(s)
    }
}

impl Row {
    /// `charge` as of `today`, with the name `names` gives its debtor.
    pub(crate) fn of(
        charge: &Charge,
        today: NaiveDate,
        names: &HashMap<String, String>,
    ) -> Result<Self, DomainError> {
        let name = names.get(charge.debtor_id.as_str());
        let view = View::of(charge, today).named(name.map(String::as_str));
        let text = JsonText::of(&view).map_err(|e| StoreError(e.to_string()))?;
        Ok(Self {
            debtor_id: charge.debtor_id.clone(),
            name: name.cloned(),
            today,
            text,
        })
    }

    /// Whether this row is what writing it for `today` and `names` would give (its
    /// document being the same).
    fn holds(&self, today: NaiveDate, names: &HashMap<String, String>) -> bool {
        self.today == today && names.get(&self.debtor_id) == self.name.as_ref()
    }
}

/// Rows kept by their document's text. The text's hash is seeded from the entropy lent
/// to the domain (`Domain::lend_entropy`), so that which texts collide cannot be known
/// from outside; the domain reads no RNG of its own.
#[derive(Debug)]
pub(crate) struct Rows {
    map: RwLock<HashMap<Box<str>, Arc<Row>, FixedState>>,
}

impl Default for Rows {
    fn default() -> Self {
        Self::seeded(0)
    }
}

impl Rows {
    /// No rows, their texts hashed with `seed`.
    pub(crate) fn seeded(seed: u64) -> Self {
        Self {
            map: RwLock::new(HashMap::with_hasher(FixedState::with_seed(seed))),
        }
    }

    /// The row of the stored charge `doc` as of `today` with `names`: the kept one when
    /// it holds, else written from the document and kept.
    pub(crate) fn row(
        &self,
        doc: &str,
        today: NaiveDate,
        names: &HashMap<String, String>,
    ) -> Result<Arc<Row>, DomainError> {
        let found = self
            .map
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(doc)
            .filter(|row| row.holds(today, names))
            .cloned();
        if let Some(row) = found {
            return Ok(row);
        }
        let row = Arc::new(Row::of(&parse(doc)?, today, names)?);
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_ROWS && !map.contains_key(doc) {
            map.clear();
        }
        map.insert(doc.into(), Arc::clone(&row));
        Ok(row)
    }
}

/// The rows of a page of stored charges `docs` as of `today` with `names`: kept ones
/// reused and new ones kept, with `kept`; all written, without.
pub(crate) fn page(
    kept: Option<&Rows>,
    docs: &[String],
    today: NaiveDate,
    names: &HashMap<String, String>,
) -> Result<Vec<Arc<Row>>, DomainError> {
    docs.iter()
        .map(|doc| match kept {
            Some(kept) => kept.row(doc, today, names),
            None => Ok(Arc::new(Row::of(&parse(doc)?, today, names)?)),
        })
        .collect()
}

/// A stored charge's document.
fn parse(doc: &str) -> Result<Charge, DomainError> {
    store::typed_one(Kind::Charge, doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, d).unwrap()
    }

    /// A stored charge of `debtor` described as `what`.
    fn doc(debtor: &str, what: &str) -> String {
        let c = Charge {
            id: format!("c-{what}"),
            debtor_id: debtor.to_owned(),
            description: Some(what.to_owned()),
            due_date: "2026-12-02".to_owned(),
            ..Charge::default()
        };
        serde_json::to_string(&c).unwrap()
    }

    fn names(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(id, name)| ((*id).to_owned(), (*name).to_owned()))
            .collect()
    }

    /// What writing the row anew gives.
    fn written(doc: &str, today: NaiveDate, names: &HashMap<String, String>) -> String {
        let c = parse(doc).unwrap();
        let name = names.get(&c.debtor_id).map(String::as_str);
        JsonText::of(&View::of(&c, today).named(name))
            .unwrap()
            .as_str()
            .to_owned()
    }

    /// A row is reused while its document, its debtor's name and the day are the same,
    /// and written again when any of the three changes; it is always what writing it
    /// anew gives.
    #[test]
    fn a_kept_row_is_reused_only_while_its_document_name_and_day_hold() {
        let rows = Rows::default();
        let ana = names(&[("d1", "Ana")]);
        let first = doc("d1", "first");
        let a = rows.row(&first, day(7), &ana).unwrap();
        assert_eq!(a.text.as_str(), written(&first, day(7), &ana));
        let again = rows.row(&first, day(7), &ana).unwrap();
        assert!(Arc::ptr_eq(&a, &again), "the same inputs: the kept row");

        let changed = doc("d1", "changed");
        let renamed = names(&[("d1", "Ana Souza")]);
        for (text, today, names, what) in [
            (&changed, day(7), &ana, "another document"),
            (&first, day(7), &renamed, "another name"),
            (&first, day(7), &HashMap::new(), "the debtor gone"),
            (&first, day(8), &ana, "another day"),
        ] {
            let row = rows.row(text, today, names).unwrap();
            assert!(!Arc::ptr_eq(&a, &row), "{what}: written again");
            assert_eq!(row.text.as_str(), written(text, today, names), "{what}");
        }
        let fresh = rows.row(&first, day(7), &ana).unwrap();
        assert_eq!(fresh.text.as_str(), a.text.as_str());
    }

    /// At most [`MAX_ROWS`] rows are kept: a full map starts again.
    #[test]
    fn a_full_map_starts_again() {
        let rows = Rows::default();
        let none = HashMap::new();
        for i in 0..MAX_ROWS {
            rows.row(&doc("d", &i.to_string()), day(7), &none).unwrap();
        }
        let len = || rows.map.read().unwrap().len();
        assert_eq!(len(), MAX_ROWS);
        rows.row(&doc("d", "one more"), day(7), &none).unwrap();
        assert_eq!(len(), 1);
    }

    /// A document that is not a charge is an error, not a row.
    #[test]
    fn a_corrupt_document_is_an_error() {
        let rows = Rows::default();
        assert!(
            rows.row("{\"amount\":\"x\"}", day(7), &HashMap::new())
                .is_err()
        );
        assert!(rows.row("not json", day(7), &HashMap::new()).is_err());
    }
}
