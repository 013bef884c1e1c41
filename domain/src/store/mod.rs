//! The store seen from the domain: a small, portable trait over organization-scoped
//! JSON documents with a few indexed columns per kind.
//!
//! Why documents plus columns: every entity is a typed Rust struct serialized to JSON
//! (the same JSON the API returns), while filtering and sorting use real, indexed columns
//! extracted from that JSON on write. Nothing here is SQLite-specific: the PostgreSQL
//! store ([`postgres`]) implements the same [`Store`]/[`Tx`] with the same tables.
//!
//! Every call takes the organization: there is no way to read or write across
//! organizations, so another organization's id is simply not found.

pub mod postgres;
mod scope;
mod sql;
pub mod sqlite;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dunning_core::Ahead;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::DomainError;

use scope::Scoped;
pub use scope::WriteScope;

/// A failure of the store itself (never the caller's fault).
#[derive(Clone, Debug, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        Self(e.to_string())
    }
}

/// SQL-ish type of an indexed column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Text (ids, statuses, ISO dates and timestamps, which sort lexicographically).
    Text,
    /// Money: whole centavos (`INTEGER`, `bigint`), from the document's BRL number, so
    /// ranges and sums compare exact amounts, never binary fractions.
    Money,
    /// Integer (booleans as 0/1, counters).
    Integer,
    /// A JSON array stored as its text, searched by element (`tags`).
    Tags,
}

/// One indexed column, extracted from the top-level document field of the same name.
#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Field and column name.
    pub name: &'static str,
    /// Its type.
    pub ty: ColumnType,
    /// A value of it names one thing or a handful (a document number, a parent's id):
    /// an equality on it narrows a list to a few rows, so its index beats the sort
    /// order's (see the SQLite store's `find_raw`).
    pub selective: bool,
}

/// A text column whose values identify (a [`Column::selective`] one).
const fn key(name: &'static str) -> Column {
    Column {
        name,
        ty: ColumnType::Text,
        selective: true,
    }
}

const fn text(name: &'static str) -> Column {
    Column {
        name,
        ty: ColumnType::Text,
        selective: false,
    }
}

const fn money(name: &'static str) -> Column {
    Column {
        name,
        ty: ColumnType::Money,
        selective: false,
    }
}

const fn integer(name: &'static str) -> Column {
    Column {
        name,
        ty: ColumnType::Integer,
        selective: false,
    }
}

const fn tags(name: &'static str) -> Column {
    Column {
        name,
        ty: ColumnType::Tags,
        selective: false,
    }
}

/// The kinds of document the store keeps, one table each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Organization (its own `org` is its id).
    Organization,
    /// Dashboard person.
    Member,
    /// Debtor.
    Debtor,
    /// Contact point of a debtor.
    ContactPoint,
    /// Charge.
    Charge,
    /// Ruler (régua).
    Ruler,
    /// Ruler step.
    Step,
    /// Message delivery (notifications and their outbox).
    Delivery,
    /// Audit event.
    Event,
    /// Credit-bureau record (negativação).
    CreditBureauRecord,
    /// Protest.
    Protest,
    /// Agreement (renegotiation).
    Agreement,
    /// Audited decision on a debt.
    Decision,
    /// CSV export.
    Export,
    /// Webhook.
    Webhook,
    /// Webhook delivery (and its outbox).
    WebhookDelivery,
}

impl Kind {
    /// Every kind (migration order).
    pub const ALL: [Self; 16] = [
        Self::Organization,
        Self::Member,
        Self::Debtor,
        Self::ContactPoint,
        Self::Charge,
        Self::Ruler,
        Self::Step,
        Self::Delivery,
        Self::Event,
        Self::CreditBureauRecord,
        Self::Protest,
        Self::Agreement,
        Self::Decision,
        Self::Export,
        Self::Webhook,
        Self::WebhookDelivery,
    ];

    /// Table name.
    pub const fn table(self) -> &'static str {
        match self {
            Self::Organization => "organizations",
            Self::Member => "members",
            Self::Debtor => "debtors",
            Self::ContactPoint => "contact_points",
            Self::Charge => "charges",
            Self::Ruler => "rulers",
            Self::Step => "steps",
            Self::Delivery => "deliveries",
            Self::Event => "events",
            Self::CreditBureauRecord => "credit_bureau_records",
            Self::Protest => "protests",
            Self::Agreement => "agreements",
            Self::Decision => "decisions",
            Self::Export => "exports",
            Self::Webhook => "webhooks",
            Self::WebhookDelivery => "webhook_deliveries",
        }
    }

    /// What an error message calls it.
    pub const fn noun(self) -> &'static str {
        match self {
            Self::Organization => "organization",
            Self::Member => "member",
            Self::Debtor => "debtor",
            Self::ContactPoint => "contact point",
            Self::Charge => "charge",
            Self::Ruler => "ruler",
            Self::Step => "step",
            Self::Delivery => "delivery",
            Self::Event => "event",
            Self::CreditBureauRecord => "credit bureau record",
            Self::Protest => "protest",
            Self::Agreement => "agreement",
            Self::Decision => "decision",
            Self::Export => "export",
            Self::Webhook => "webhook",
            Self::WebhookDelivery => "webhook delivery",
        }
    }

    /// Indexed columns (besides `org`, `id`, `created_at`).
    pub fn columns(self) -> &'static [Column] {
        match self {
            Self::Organization => const { &[key("slug")] },
            Self::Member => const { &[key("email"), text("role")] },
            Self::Debtor => {
                const {
                    &[
                        text("name"),
                        key("cnpj_cpf"),
                        text("status"),
                        key("external_code"),
                        text("ruler_id"),
                        money("overdue_amount"),
                        tags("tags"),
                    ]
                }
            }
            Self::ContactPoint => {
                const {
                    &[
                        key("debtor_id"),
                        text("channel"),
                        text("status"),
                        text("consent"),
                    ]
                }
            }
            Self::Charge => {
                const {
                    &[
                        key("debtor_id"),
                        text("status"),
                        text("due_date"),
                        money("amount"),
                        text("payment_method"),
                        text("paid_at"),
                        text("ruler_id"),
                        key("external_id"),
                        key("agreement_id"),
                        text("description"),
                        tags("tags"),
                    ]
                }
            }
            Self::Ruler => const { &[text("status"), text("name"), integer("is_default")] },
            Self::Step => const { &[key("ruler_id"), integer("position")] },
            Self::Delivery => {
                const {
                    &[
                        key("charge_id"),
                        key("debtor_id"),
                        text("step_id"),
                        text("channel"),
                        text("status"),
                        text("scheduled_at"),
                        key("contact_point_id"),
                    ]
                }
            }
            Self::Event => {
                const {
                    &[
                        // Insertion order within the organization: events of one second (and of
                        // a clock that stepped back) still list in the order they happened.
                        integer("sequence"),
                        text("code"),
                        text("resource_type"),
                        key("resource_id"),
                        text("occurred_at"),
                    ]
                }
            }
            Self::CreditBureauRecord => {
                const {
                    &[
                        key("charge_id"),
                        key("debtor_id"),
                        text("status"),
                        text("bureau"),
                    ]
                }
            }
            Self::Protest => const { &[key("charge_id"), key("debtor_id"), text("status")] },
            Self::Agreement => const { &[key("debtor_id"), text("status")] },
            Self::Decision => const { &[key("charge_id")] },
            Self::Export => const { &[text("status"), text("resource")] },
            Self::Webhook => const { &[integer("active")] },
            Self::WebhookDelivery => {
                const {
                    &[
                        text("webhook_id"),
                        text("status"),
                        text("event_code"),
                        text("next_retry_at"),
                    ]
                }
            }
        }
    }

    /// Whether `name` is a [`Column::selective`] column of this kind.
    pub fn is_selective(self, name: &str) -> bool {
        self.columns().iter().any(|c| c.name == name && c.selective)
    }

    /// Whether `name` is a queryable column of this kind.
    pub fn has_column(self, name: &str) -> bool {
        matches!(name, "id" | "created_at") || self.columns().iter().any(|c| c.name == name)
    }

    /// [`Kind::has_column`] as a store error: a query never names a column the table
    /// lacks (column names go into SQL text, so only known ones may).
    pub(crate) fn check_column(self, name: &str) -> Result<(), StoreError> {
        if self.has_column(name) {
            Ok(())
        } else {
            Err(StoreError(format!("{} has no column {name}", self.table())))
        }
    }

    /// The type of column `name` (`id` and `created_at` are text).
    pub(crate) fn column_type(self, name: &str) -> ColumnType {
        self.columns()
            .iter()
            .find(|c| c.name == name)
            .map_or(ColumnType::Text, |c| c.ty)
    }
}

/// One condition of a query (on indexed columns only).
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    /// `col = value`.
    Eq(&'static str, Value),
    /// `col IN (values)`.
    In(&'static str, Vec<Value>),
    /// `col >= value`.
    Ge(&'static str, Value),
    /// `col <= value`.
    Le(&'static str, Value),
    /// `col IS NULL` (true) or `IS NOT NULL` (false).
    Null(&'static str, bool),
    /// Case-insensitive substring in any of the columns.
    Search(Vec<&'static str>, String),
    /// The `Tags` column contains this element.
    Tag(&'static str, String),
}

/// Sort direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Ascending.
    Asc,
    /// Descending.
    Desc,
}

/// A query over one kind within one organization.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    /// Conditions, all of which must hold.
    pub conds: Vec<Cond>,
    /// Sort column and direction (ties broken by `id`).
    pub sort: (&'static str, Order),
    /// Most rows returned (`None`: all).
    pub limit: Option<u32>,
    /// Rows skipped.
    pub offset: u32,
}

impl Query {
    /// Every document, oldest first.
    pub fn all() -> Self {
        Self {
            conds: Vec::new(),
            sort: ("created_at", Order::Asc),
            limit: None,
            offset: 0,
        }
    }

    /// Adds a condition.
    pub fn with(mut self, c: Cond) -> Self {
        self.conds.push(c);
        self
    }
}

/// An idempotency record: what a keyed write answered the first time.
#[derive(Clone, Debug, PartialEq)]
pub struct Remembered {
    /// Tool name.
    pub tool: String,
    /// Digest of the arguments (without the key).
    pub digest: String,
    /// The result: `{"status": u16, "body": ...}` or an error body.
    pub result: Value,
    /// When it was stored (ms since epoch).
    pub at_ms: u64,
}

/// One transaction. Writes are atomic with everything else done in the same `write`.
pub trait Tx {
    /// The document `id` of `kind` in `org`.
    fn get(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<Value>, StoreError> {
        self.get_raw(kind, org, id)?.map(parse_doc).transpose()
    }
    /// The document `id` of `kind` in `org`, as stored (JSON text): [`load`] deserializes
    /// straight from it, as [`find`] does from [`Tx::find_raw`].
    fn get_raw(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<String>, StoreError>;
    /// Inserts or replaces a document (its `id` and `created_at` fields are required).
    fn put(&mut self, kind: Kind, org: &str, doc: &Value) -> Result<(), StoreError>;
    /// Deletes a document; whether it existed.
    fn delete(&mut self, kind: Kind, org: &str, id: &str) -> Result<bool, StoreError>;
    /// Documents matching `q`.
    fn find(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<Value>, StoreError> {
        self.find_raw(kind, org, q)?
            .iter()
            .map(|text| {
                serde_json::from_str(text)
                    .map_err(|e| StoreError(format!("corrupt {}: {e}", kind.noun())))
            })
            .collect()
    }
    /// Documents matching `q`, as stored (JSON text): typed readers deserialize straight
    /// from it, without a `Value` tree in between.
    fn find_raw(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<String>, StoreError>;
    /// One text column of the documents of `kind` whose ids are `ids`, as `(id, value)`
    /// in no order (a page's debtor names): the column's copy, no document read.
    fn column_by_id(
        &mut self,
        kind: Kind,
        org: &str,
        ids: &[&str],
        column: &'static str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError>;
    /// How many documents match `conds`.
    fn count(&mut self, kind: Kind, org: &str, conds: &[Cond]) -> Result<u64, StoreError>;
    /// A list's page: [`Tx::find_raw`] of `q`, [`Tx::count`] of its conditions and,
    /// when asked, what its rows point to, asked together (one exchange on PostgreSQL,
    /// where none waits for another).
    fn page_raw(
        &mut self,
        kind: Kind,
        org: &str,
        q: &Query,
        pointed: Option<Pointed>,
    ) -> Result<RawPage, StoreError>;
    /// The number of `org`'s next event: one more than the last one stored, or taken in
    /// this transaction. Unique because writes of an organization run one at a time (the
    /// write scope's lock; a unique `(org, sequence)` on PostgreSQL refuses a breach).
    fn next_event_sequence(&mut self, org: &str) -> Result<u64, StoreError>;
    /// Every organization id (for workers that sweep all of them).
    fn organizations(&mut self) -> Result<Vec<String>, StoreError>;
    /// The result stored under an idempotency key.
    fn recall(&mut self, org: &str, key: &str) -> Result<Option<Remembered>, StoreError>;
    /// Stores a result under an idempotency key (first write wins).
    fn remember(&mut self, org: &str, key: &str, r: &Remembered) -> Result<(), StoreError>;
    /// Replaces the result of an idempotency record (a tool's work after its commit).
    fn rewrite_remembered(
        &mut self,
        org: &str,
        key: &str,
        result: &Value,
    ) -> Result<(), StoreError>;
    /// Forgets idempotency records older than `before_ms`.
    fn forget_before(&mut self, before_ms: u64) -> Result<u64, StoreError>;
    /// An authorization-server record (client, code, refresh token, family),
    /// outside any organization.
    fn grant_get(&mut self, kind: &str, id: &str) -> Result<Option<Value>, StoreError>;
    /// Stores (or replaces) an authorization-server record; `expires_ms`: when the sweep
    /// may forget it (`None`: never).
    fn grant_put(
        &mut self,
        kind: &str,
        id: &str,
        doc: &Value,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError>;
    /// Replaces the document of a record, keeping its expiry; whether it existed.
    fn grant_rewrite(&mut self, kind: &str, id: &str, doc: &Value) -> Result<bool, StoreError>;
    /// Forgets the records that expired before `before_ms`.
    fn grant_sweep(&mut self, before_ms: u64) -> Result<u64, StoreError>;
    /// Records that the provider's `message_id` on `channel` is delivery `delivery_id`
    /// of `org` (a provider's status callback names only its own id); a second send
    /// with the same id points it at the newer delivery.
    fn link_message(
        &mut self,
        channel: &str,
        message_id: &str,
        org: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError>;
    /// The organization and delivery of a provider's message id.
    fn message_owner(
        &mut self,
        channel: &str,
        message_id: &str,
    ) -> Result<Option<(String, String)>, StoreError>;
}

/// `s` matched literally inside a `LIKE` pattern (escape character `\`).
pub(crate) fn like_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('%', "\\%")
        .replace('_', "\\_")
}

/// A stored document read back (a driver's text column).
pub(crate) fn parse_doc(text: impl AsRef<str>) -> Result<Value, StoreError> {
    serde_json::from_str(text.as_ref()).map_err(|e| StoreError(format!("corrupt document: {e}")))
}

/// The `id` and `created_at` every stored document carries (the row's key and its first
/// ordering column).
pub(crate) fn identity(doc: &Value) -> Result<(&str, &str), StoreError> {
    let field = |k: &str| {
        doc.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| StoreError(format!("document without {k}")))
    };
    Ok((field("id")?, field("created_at")?))
}

/// A transactional document store shared by every request.
pub trait Store: Send + Sync {
    /// Runs `f` in a read transaction (a consistent snapshot).
    fn read(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError>;
    /// Runs `f` in a write transaction of `scope`, after every writer whose scope
    /// overlaps it ([`WriteScope`]); commits when `f` is `Ok` and `commit` says so,
    /// rolls back otherwise. The one write primitive a store implements; the domain
    /// calls it through [`write`] and [`rehearse`], which hold `f` to its scope.
    fn transact(
        &self,
        scope: WriteScope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError>;
    /// Whether the store answers (`/readyz`).
    fn ping(&self) -> bool;

    /// A fresh [`Ahead`] for one read-only call, when this store can answer a read from
    /// reads done ahead, on the adapter's runtime ([`Store::read_ahead`];
    /// `dunning_core::ahead`). The default: `None`.
    fn ahead(&self) -> Option<Arc<dyn Ahead>> {
        None
    }

    /// [`Store::read`] of a run with reads ahead: `f` reads what earlier rounds of
    /// `ahead` fetched, and a statement they did not fetch fails the run and is noted for
    /// the next round (`ahead` says so to the adapter). Never waits, unless `ahead` was
    /// given up. The default: [`Store::read`].
    fn read_ahead(
        &self,
        ahead: &dyn Ahead,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError> {
        let _ = ahead;
        self.read(f)
    }

    /// Whether a [`Store::read`] started now may wait: for a connection, a lock or the
    /// network. `false` only when the store sees a connection idle at this instant and
    /// a read on it is local work (SQLite's reader connections); the core then runs a
    /// read-only tool where the request is, with no thread crossing. A reader taken in
    /// between costs one wait there, never a wrong answer.
    fn read_may_wait(&self) -> bool {
        true
    }

    /// A number that changes whenever membership (a member or an organization) may have
    /// changed, or `None` when the store cannot tell (then nothing derived from
    /// membership may be reused): see [`MemberEpoch`].
    fn members_epoch(&self) -> Option<u64> {
        None
    }

    /// Looks for membership changes committed by programs this store cannot hear (the
    /// SQLite file written by another process) and moves [`Store::members_epoch`] when
    /// it finds one. A store call, so its caller decides how often: the binary's
    /// authenticator at most every few milliseconds, not at every request.
    fn look_for_member_changes(&self) {}

    /// After a bulk load (the demo's seed): what the store keeps up with its writes in
    /// steps (PostgreSQL's statistics and visibility, `store/postgres/statistics.rs`),
    /// brought up to date before the load is read. The default: nothing to do.
    fn loaded(&self) {}
}

/// Membership changes as far as this process knows: what lets a cache of principals
/// (the binary's authenticator) skip the store and still refuse a removed person at once.
///
/// A write transaction that put or deleted a [`Kind::Member`] or [`Kind::Organization`]
/// bumps the count **after** it commits, so a reader that noted the count before reading
/// the store either read the new rows or sees a different count on its next look. The
/// PostgreSQL store also bumps it on every notification of the other processes' writes
/// (a trigger `NOTIFY`s them), and answers `None` while it is not listening; the SQLite
/// store on a change of its trigger-kept count (another program writing the file).
#[derive(Debug, Default)]
pub struct MemberEpoch {
    changes: AtomicU64,
    /// Whether every change is seen (SQLite: always; PostgreSQL: while `LISTEN`ing).
    watched: AtomicBool,
}

impl MemberEpoch {
    /// A count that sees every change from the start (one process owns the store).
    pub fn watched() -> Self {
        Self {
            changes: AtomicU64::new(0),
            watched: AtomicBool::new(true),
        }
    }

    /// The count, or `None` while changes may go unseen.
    pub fn current(&self) -> Option<u64> {
        // The flag first: a count read after it is at least as new as the flag says.
        if !self.watched.load(Ordering::Acquire) {
            return None;
        }
        Some(self.changes.load(Ordering::Acquire))
    }

    /// Membership may have changed.
    pub fn bump(&self) {
        self.changes.fetch_add(1, Ordering::AcqRel);
    }

    /// Whether changes are seen from now on; a bump either way, since changes may have
    /// gone unseen before.
    pub(crate) fn set_watched(&self, watched: bool) {
        self.bump();
        self.watched.store(watched, Ordering::Release);
        self.bump();
    }
}

/// Whether writing `kind` changes who may do what (what [`MemberEpoch`] counts).
pub(crate) fn changes_membership(kind: Kind) -> bool {
    matches!(kind, Kind::Member | Kind::Organization)
}

/// Runs `f` once in a read transaction and returns what it returns.
pub fn read<R>(
    store: &dyn Store,
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    once(f, |g| store.read(g))
}

/// [`read`] with the reads ahead of `ahead` ([`Store::read_ahead`]).
pub fn read_ahead<R>(
    store: &dyn Store,
    ahead: &dyn Ahead,
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    once(f, |g| store.read_ahead(ahead, g))
}

/// Runs `f` once in a write transaction of `scope` (committed when it returns `Ok`) and
/// returns what it returns. A write outside `scope` fails ([`Scoped`]).
pub fn write<R>(
    store: &dyn Store,
    scope: WriteScope<'_>,
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    scoped(store, scope, true, f)
}

/// Runs `f` once in a write transaction of `scope` that is always rolled back, whatever
/// `f` returns: a dry run sees and checks everything the real call would (the writer's
/// view, its own writes included) and leaves nothing behind.
pub fn rehearse<R>(
    store: &dyn Store,
    scope: WriteScope<'_>,
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    scoped(store, scope, false, f)
}

fn scoped<R>(
    store: &dyn Store,
    scope: WriteScope<'_>,
    commit: bool,
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    once(
        |tx| f(&mut Scoped { tx, scope }),
        |g| store.transact(scope, g, commit),
    )
}

/// Adapts a typed, run-once closure to the store's object-safe callback.
fn once<R>(
    f: impl FnOnce(&mut dyn Tx) -> Result<R, DomainError>,
    run: impl FnOnce(&mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>) -> Result<(), DomainError>,
) -> Result<R, DomainError> {
    let mut f = Some(f);
    let mut out = None;
    run(&mut |tx| {
        let f = f
            .take()
            .ok_or_else(|| StoreError("transaction retried".into()))?;
        out = Some(f(tx)?);
        Ok(())
    })?;
    out.ok_or_else(|| StoreError("transaction produced nothing".into()).into())
}

/// Loads a typed document.
pub fn load<T: DeserializeOwned>(
    tx: &mut dyn Tx,
    kind: Kind,
    org: &str,
    id: &str,
) -> Result<Option<T>, DomainError> {
    match tx.get_raw(kind, org, id)? {
        None => Ok(None),
        Some(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| StoreError(format!("corrupt {} {id}: {e}", kind.noun())).into()),
    }
}

/// Loads a typed document or answers `NOT_FOUND`.
pub fn must<T: DeserializeOwned>(
    tx: &mut dyn Tx,
    kind: Kind,
    org: &str,
    id: &str,
) -> Result<T, DomainError> {
    load(tx, kind, org, id)?.ok_or_else(|| DomainError::not_found(kind.noun(), id))
}

/// Loads typed documents matching a query.
pub fn find<T: DeserializeOwned>(
    tx: &mut dyn Tx,
    kind: Kind,
    org: &str,
    q: &Query,
) -> Result<Vec<T>, DomainError> {
    typed(kind, &tx.find_raw(kind, org, q)?)
}

/// One column of the documents a list's rows point to, read with its page
/// ([`Tx::page_raw`]): of the documents of `kind` whose id is in the rows' `via` column
/// (a page of charges and its debtors' names).
#[derive(Clone, Copy, Debug)]
pub struct Pointed {
    /// What the rows point to.
    pub kind: Kind,
    /// The rows' column that holds its id.
    pub via: &'static str,
    /// Its column read.
    pub column: &'static str,
}

/// A list's page as stored ([`Tx::page_raw`]).
#[derive(Debug, Default, PartialEq)]
pub struct RawPage {
    /// The page's documents, in order.
    pub rows: Vec<String>,
    /// How many documents match, over every page.
    pub total: u64,
    /// `(id, column)` of what the rows point to, when asked: each once, by id.
    pub pointed: Vec<(String, Option<String>)>,
}

/// A list's typed page and how many documents match its conditions ([`Tx::page_raw`]).
pub fn page<T: DeserializeOwned>(
    tx: &mut dyn Tx,
    kind: Kind,
    org: &str,
    q: &Query,
) -> Result<(Vec<T>, u64), DomainError> {
    let RawPage { rows, total, .. } = tx.page_raw(kind, org, q, None)?;
    Ok((typed(kind, &rows)?, total))
}

/// Typed documents of `kind` from their stored texts.
pub fn typed<T: DeserializeOwned>(kind: Kind, texts: &[String]) -> Result<Vec<T>, DomainError> {
    texts.iter().map(|text| typed_one(kind, text)).collect()
}

/// A typed document of `kind` from its stored text.
pub fn typed_one<T: DeserializeOwned>(kind: Kind, text: &str) -> Result<T, DomainError> {
    serde_json::from_str(text)
        .map_err(|e| StoreError(format!("corrupt {}: {e}", kind.noun())).into())
}

/// Saves a typed document.
pub fn save<T: Serialize>(
    tx: &mut dyn Tx,
    kind: Kind,
    org: &str,
    doc: &T,
) -> Result<(), DomainError> {
    let v = serde_json::to_value(doc).map_err(|e| StoreError(e.to_string()))?;
    tx.put(kind, org, &v)?;
    Ok(())
}

/// The frozen-schema check both stores' tests make: `have` (a table's columns as the
/// database reports them, with its type names) holds every column `kind` declares with
/// its type, and nothing else but the four every table has. Changing an entity without a
/// new migration fails here instead of giving new databases a schema old ones never get.
#[cfg(test)]
pub(crate) fn assert_columns_declared(
    kind: Kind,
    have: &[(String, String)],
    db: &str,
    type_name: fn(ColumnType) -> &'static str,
) {
    assert!(!have.is_empty(), "{db}: table {} exists", kind.table());
    for col in kind.columns() {
        let ty = type_name(col.ty);
        assert!(
            have.iter().any(|(n, t)| n == col.name && t == ty),
            "{db}: {}.{} {ty} is declared but no migration creates it",
            kind.table(),
            col.name
        );
    }
    for (name, _) in have {
        let fixed = ["org", "id", "created_at", "doc"].contains(&name.as_str());
        assert!(
            fixed || kind.columns().iter().any(|c| c.name == name),
            "{db}: {}.{name} is in the schema but not declared",
            kind.table()
        );
    }
}
