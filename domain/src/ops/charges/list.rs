//! `dunning_charges_list`: its filters and sorts, and a page of charges with their
//! debtors' names. The common page (no free text, no sort by the computed days) is one
//! read of the store with the names beside the rows ([`Pointed`]), its rows written
//! once and reused ([`rows`]); free text and `days_overdue` need every match in hand and
//! are filtered and sorted here.

use dunning_core::Output;
use serde::Deserialize;
use std::collections::HashMap;

use super::Charge;
use super::rows::{self, Row};
use crate::args::ListArgs;
use crate::error::DomainError;
use crate::list::{Filter, Listing};
use crate::op::{Op, list};
use crate::ops::debtors::Debtor;
use crate::store::{Kind, Order, Pointed, Query, find, load};

/// The sorts a caller may name (`sort_by`), each on its column in its default order;
/// the first is the list's order when none is named.
const SORTS: &[(&str, &str, Order)] = &[
    ("due_date", "due_date", Order::Asc),
    ("amount", "amount", Order::Desc),
    ("created_at", "created_at", Order::Desc),
];

/// `dunning_charges_list`'s own filter (the rest are [`LISTING`]'s and the list's).
#[derive(Debug, Deserialize)]
pub(super) struct ListFilters {
    q: Option<String>,
}

/// `dunning_charges_list`'s filters. Free text (`q`, which spans the debtor's name) and
/// the computed `days_overdue` sort are done by [`list_charges`] itself.
pub(super) const LISTING: Listing = Listing {
    kind: Kind::Charge,
    filters: &[
        Filter::In("status", "status"),
        Filter::Eq("debtor_id", "debtor_id"),
        Filter::DateRange {
            from: "due_from",
            to: "due_to",
            column: "due_date",
        },
        Filter::DateRange {
            from: "paid_from",
            to: "paid_to",
            column: "paid_at",
        },
        Filter::Eq("payment_method", "payment_method"),
        Filter::MoneyRange {
            min: "min_amount",
            max: "max_amount",
            column: "amount",
        },
        Filter::Eq("ruler_id", "ruler_id"),
        Filter::Tag("tag", "tags"),
    ],
    sorts: SORTS,
};

pub(super) fn list_charges(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let today = op.today();
    let conds = LISTING.conds(op)?;
    let list_args: ListArgs = op.args()?;
    let page = list_args.page();
    let by_days = list_args.sort_by.as_deref() == Some("days_overdue");
    let search = op.args::<ListFilters>()?.q.map(|q| q.to_lowercase());
    if search.is_none() && !by_days {
        let q = Query {
            conds,
            sort: list_args.sort(SORTS),
            limit: Some(page.per_page),
            offset: page.offset(),
        };
        // The debtors' names with the page, not after it.
        let found = op
            .tx
            .page_raw(Kind::Charge, op.org, &q, Some(DEBTOR_NAMES))?;
        let names = named(found.pointed);
        // A read-only call reuses the rows written before from the same inputs.
        let kept = op.memo.map(|memo| &memo.rows.charge_rows);
        let items = rows::page(kept, &found.rows, today, &names)?;
        return Ok(list(items, page, found.total));
    }
    // Free text spans the debtor's name and the computed days need today: both are
    // filtered and sorted here rather than in the store.
    let sort = if by_days {
        ("due_date", Order::Asc)
    } else {
        list_args.sort(SORTS)
    };
    let q = Query {
        conds,
        sort,
        limit: None,
        offset: 0,
    };
    let mut all = find::<Charge>(op.tx, Kind::Charge, op.org, &q)?;
    if let Some(needle) = &search {
        // Each debtor read once, however many of its charges are searched.
        let mut debtors: HashMap<String, Option<Debtor>> = HashMap::new();
        let mut debtor = |op: &mut Op<'_>, id: &str| -> Result<Option<Debtor>, DomainError> {
            if let Some(d) = debtors.get(id) {
                return Ok(d.clone());
            }
            let d = load::<Debtor>(op.tx, Kind::Debtor, op.org, id)?;
            debtors.insert(id.to_owned(), d.clone());
            Ok(d)
        };
        let digits: String = needle.chars().filter(char::is_ascii_alphanumeric).collect();
        let mut kept = Vec::new();
        for c in all {
            let d = debtor(op, &c.debtor_id)?;
            let hit = c.id.contains(needle.as_str())
                || c.description
                    .as_deref()
                    .is_some_and(|s| s.to_lowercase().contains(needle.as_str()))
                || c.external_id
                    .as_deref()
                    .is_some_and(|s| s.to_lowercase().contains(needle.as_str()))
                || d.as_ref().is_some_and(|d| {
                    d.name.to_lowercase().contains(needle.as_str())
                        || (!digits.is_empty()
                            && d.cnpj_cpf.to_lowercase().contains(digits.as_str()))
                });
            if hit {
                kept.push(c);
            }
        }
        all = kept;
    }
    if by_days {
        let desc = list_args.sort_order.as_deref() != Some("asc");
        // Stable sort: ties stay in due-date order.
        all.sort_by_key(|c| {
            let d = super::days_overdue(c, today);
            if desc { -d } else { d }
        });
    }
    let total = all.len() as u64;
    let rows: Vec<Charge> = all
        .into_iter()
        .skip(page.offset() as usize)
        .take(page.per_page as usize)
        .collect();
    let names = debtor_names(op, &rows)?;
    let items = rows
        .iter()
        .map(|c| Row::of(c, today, &names))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(list(items, page, total))
}

/// The debtors' names of a page of charges: the debtors' `name` column (a charge whose
/// debtor is gone has none), read with the page ([`store::Pointed`]) or after it
/// ([`debtor_names`]).
const DEBTOR_NAMES: Pointed = Pointed {
    kind: Kind::Debtor,
    via: "debtor_id",
    column: "name",
};

/// The names of the debtors of `charges` ([`DEBTOR_NAMES`]), in one query however many
/// rows a page has.
fn debtor_names(
    op: &mut Op<'_>,
    charges: &[Charge],
) -> Result<HashMap<String, String>, DomainError> {
    let mut ids: Vec<&str> = charges.iter().map(|c| c.debtor_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let names = op
        .tx
        .column_by_id(DEBTOR_NAMES.kind, op.org, &ids, DEBTOR_NAMES.column)?;
    Ok(named(names))
}

/// Debtor ids to their names, those without one left out.
fn named(pairs: Vec<(String, Option<String>)>) -> HashMap<String, String> {
    pairs
        .into_iter()
        .filter_map(|(id, name)| Some((id, name?)))
        .collect()
}
