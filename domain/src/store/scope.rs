//! What a write transaction may touch ([`WriteScope`]), and the one place that holds it
//! to that ([`Scoped`]).
//!
//! A store serializes writers only as far as their scopes overlap. On SQLite that is
//! all of them anyway (one writer connection, group commit); on PostgreSQL two
//! organizations' writers never wait on each other, while every invariant the domain
//! keeps by reading before writing stays inside one organization and so behind that
//! organization's lock: an event's `sequence` (`max + 1`), a debtor's aggregate deltas,
//! outbox and delivery claims, idempotency keys and confirmation nonces. A write that
//! strays out of its scope is refused here, on both stores, before it reaches SQL: a
//! write of organization B under A's lock would race B's own writers.

use serde_json::Value;

use super::{Cond, Kind, Pointed, Query, RawPage, Remembered, StoreError, Tx};

/// What one write transaction may write, and so which writers it must wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteScope<'a> {
    /// One organization's documents and idempotency records: every tool call and every
    /// worker op. Waits only for writers of the same organization (and [`Self::All`]).
    Org(&'a str),
    /// The authorization server's records (clients, codes, refresh tokens), which are
    /// outside every organization: a refresh token's rotation reads then writes, so
    /// these serialize among themselves.
    Grants,
    /// Forgetting expired idempotency records: one statement, nothing read first, so
    /// it waits for nobody but [`Self::All`].
    Sweep,
    /// Anything (demo data seeded or reset, tests): waits for every writer and holds
    /// them all off until it commits.
    All,
}

impl WriteScope<'_> {
    fn refuse(self, what: &str) -> StoreError {
        StoreError(format!("a write scoped to {self:?} may not write {what}"))
    }

    fn org(self, org: &str) -> Result<(), StoreError> {
        match self {
            Self::Org(o) if o == org => Ok(()),
            Self::All => Ok(()),
            _ => Err(self.refuse(&format!("organization {org:?}"))),
        }
    }

    fn grants(self) -> Result<(), StoreError> {
        match self {
            Self::Grants | Self::All => Ok(()),
            _ => Err(self.refuse("authorization records")),
        }
    }

    fn sweep(self) -> Result<(), StoreError> {
        match self {
            Self::Sweep | Self::All => Ok(()),
            _ => Err(self.refuse("expired idempotency records")),
        }
    }
}

/// A [`Tx`] that lets through the writes its [`WriteScope`] allows. Reads pass whatever
/// they read (a write transaction may look up another organization, e.g. by slug);
/// they see what was committed, as any read does.
pub(super) struct Scoped<'t, 's> {
    pub(super) tx: &'t mut dyn Tx,
    pub(super) scope: WriteScope<'s>,
}

impl Tx for Scoped<'_, '_> {
    fn get_raw(&mut self, kind: Kind, org: &str, id: &str) -> Result<Option<String>, StoreError> {
        self.tx.get_raw(kind, org, id)
    }
    fn put(&mut self, kind: Kind, org: &str, doc: &Value) -> Result<(), StoreError> {
        self.scope.org(org)?;
        self.tx.put(kind, org, doc)
    }
    fn delete(&mut self, kind: Kind, org: &str, id: &str) -> Result<bool, StoreError> {
        self.scope.org(org)?;
        self.tx.delete(kind, org, id)
    }
    fn find(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<Value>, StoreError> {
        self.tx.find(kind, org, q)
    }
    fn find_raw(&mut self, kind: Kind, org: &str, q: &Query) -> Result<Vec<String>, StoreError> {
        self.tx.find_raw(kind, org, q)
    }
    fn column_by_id(
        &mut self,
        kind: Kind,
        org: &str,
        ids: &[&str],
        column: &'static str,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        self.tx.column_by_id(kind, org, ids, column)
    }
    fn count(&mut self, kind: Kind, org: &str, conds: &[Cond]) -> Result<u64, StoreError> {
        self.tx.count(kind, org, conds)
    }
    fn page_raw(
        &mut self,
        kind: Kind,
        org: &str,
        q: &Query,
        pointed: Option<Pointed>,
    ) -> Result<RawPage, StoreError> {
        self.tx.page_raw(kind, org, q, pointed)
    }
    fn next_event_sequence(&mut self, org: &str) -> Result<u64, StoreError> {
        self.scope.org(org)?;
        self.tx.next_event_sequence(org)
    }
    fn organizations(&mut self) -> Result<Vec<String>, StoreError> {
        self.tx.organizations()
    }
    fn recall(&mut self, org: &str, key: &str) -> Result<Option<Remembered>, StoreError> {
        self.tx.recall(org, key)
    }
    fn remember(&mut self, org: &str, key: &str, r: &Remembered) -> Result<(), StoreError> {
        self.scope.org(org)?;
        self.tx.remember(org, key, r)
    }
    fn rewrite_remembered(
        &mut self,
        org: &str,
        key: &str,
        result: &Value,
    ) -> Result<(), StoreError> {
        self.scope.org(org)?;
        self.tx.rewrite_remembered(org, key, result)
    }
    fn forget_before(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        self.scope.sweep()?;
        self.tx.forget_before(before_ms)
    }
    fn grant_get(&mut self, kind: &str, id: &str) -> Result<Option<Value>, StoreError> {
        self.tx.grant_get(kind, id)
    }
    fn grant_put(
        &mut self,
        kind: &str,
        id: &str,
        doc: &Value,
        expires_ms: Option<u64>,
    ) -> Result<(), StoreError> {
        self.scope.grants()?;
        self.tx.grant_put(kind, id, doc, expires_ms)
    }
    fn grant_rewrite(&mut self, kind: &str, id: &str, doc: &Value) -> Result<bool, StoreError> {
        self.scope.grants()?;
        self.tx.grant_rewrite(kind, id, doc)
    }
    fn grant_sweep(&mut self, before_ms: u64) -> Result<u64, StoreError> {
        self.scope.grants()?;
        self.tx.grant_sweep(before_ms)
    }
    fn link_message(
        &mut self,
        channel: &str,
        message_id: &str,
        org: &str,
        delivery_id: &str,
    ) -> Result<(), StoreError> {
        self.scope.org(org)?;
        self.tx.link_message(channel, message_id, org, delivery_id)
    }
    fn message_owner(
        &mut self,
        channel: &str,
        message_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        self.tx.message_owner(channel, message_id)
    }
}
