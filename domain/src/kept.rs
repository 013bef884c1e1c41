//! What read-only calls keep between them of the rows membership is made of
//! (organizations and members): every call's organization settings, and the caller's
//! person and organization that `dunning_me` shows. Each was one or two statements of a
//! call that has a handful, and the same rows at every call.
//!
//! The rule is the principal cache's (`transports/bin/src/auth.rs`): an entry is used
//! only while [`crate::Domain::members_epoch`] keeps the value it had **before** the
//! rows were read. The epoch is asked once per call, before its read transaction's first
//! statement (which takes the snapshot), and that one value is the call's
//! ([`Memo::epoch`]). Every write to an organization or a member moves it after its
//! commit (here at once; on PostgreSQL on the other replicas too, by a trigger's
//! `NOTIFY`), so a change is seen by the next call here and within milliseconds
//! elsewhere; a store that cannot tell (`None`) keeps nothing. Writes always read the
//! store: they decide under their organization's lock. [`TTL_MS`] is a safety net on
//! top; a map is cleared when it holds [`MAX_KEPT`] entries.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, PoisonError, RwLock};

use dunning_core::UnixTime;

use crate::ops::me::Caller;
use crate::org::Settings;

/// How long a kept value is used at most, whatever the epoch says.
const TTL_MS: u64 = 60_000;

/// The most entries a map keeps.
const MAX_KEPT: usize = 10_000;

/// Values by key, each with the epoch it was read under.
#[derive(Debug)]
pub(crate) struct Kept<K, V> {
    map: RwLock<HashMap<K, Entry<V>>>,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    /// The epoch before the value was read.
    epoch: u64,
    read_at_ms: u64,
}

impl<K, V> Default for Kept<K, V> {
    fn default() -> Self {
        Self {
            map: RwLock::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash, V: Clone> Kept<K, V> {
    /// The value of `key` if it was read under `epoch` less than [`TTL_MS`] before `now`.
    pub(crate) fn get<Q>(&self, key: &Q, epoch: u64, now: UnixTime) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let map = self.map.read().unwrap_or_else(PoisonError::into_inner);
        let e = map.get(key)?;
        let fresh = now.as_millis().saturating_sub(e.read_at_ms) < TTL_MS;
        (e.epoch == epoch && fresh).then(|| e.value.clone())
    }

    /// Keeps `value` of `key`, read after the epoch was `epoch`, at `now`.
    pub(crate) fn put(&self, key: K, value: V, epoch: u64, now: UnixTime) {
        let mut map = self.map.write().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= MAX_KEPT && !map.contains_key(&key) {
            map.clear();
        }
        let read_at_ms = now.as_millis();
        map.insert(
            key,
            Entry {
                value,
                epoch,
                read_at_ms,
            },
        );
    }
}

/// Everything kept, one map per kind of value.
#[derive(Debug, Default)]
pub(crate) struct KeptRows {
    /// By organization id.
    pub(crate) settings: Kept<String, Settings>,
    /// By (organization id, the token's subject).
    pub(crate) callers: Kept<(String, String), Arc<Caller>>,
    /// A charges page's rows, written. Not under the epoch: a row is reused only when
    /// everything it is written from is the same (`ops/charges/rows.rs`).
    pub(crate) charge_rows: crate::ops::charges::Rows,
}

/// A read-only call's access to [`KeptRows`], under the epoch asked before its first
/// statement.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Memo<'a> {
    pub(crate) rows: &'a KeptRows,
    pub(crate) epoch: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept value holds while the epoch does and not past [`TTL_MS`]; another key's is
    /// not mixed in; a full map starts again.
    #[test]
    fn a_kept_value_holds_while_the_epoch_does_and_not_past_its_ttl() {
        let kept: Kept<String, Settings> = Kept::default();
        let now = UnixTime::from_secs(1_800_000_000);
        let custom = Settings {
            max_discount_percentage: 50.0,
            ..Settings::default()
        };
        kept.put("o1".into(), custom.clone(), 7, now);
        assert_eq!(kept.get("o1", 7, now), Some(custom.clone()));
        assert_eq!(
            kept.get("o1", 8, now),
            None,
            "membership or an organization changed"
        );
        assert_eq!(kept.get("o2", 7, now), None);
        let late = UnixTime::from_millis(now.as_millis() + TTL_MS);
        assert_eq!(kept.get("o1", 7, late), None, "past the safety net");
        for i in 0..MAX_KEPT {
            kept.put(format!("x{i}"), Settings::default(), 7, now);
        }
        assert_eq!(kept.get("o1", 7, now), None, "cleared when full");
        assert_eq!(kept.map.read().unwrap().len(), 1);
    }
}
