//! The store behind the core's embedded authorization server
//! ([`dunning_core::oauth::Backend`]): the people who may sign in (every member of every
//! organization, with the scopes their role allows) and the server's records (clients,
//! codes, refresh tokens, families) in the `oauth_grants` table, so they survive a
//! restart and, on PostgreSQL, are shared by replicas.

use std::sync::Arc;

use dunning_core::UnixTime;
use dunning_core::oauth::{Backend, GrantKind, Person};
use serde_json::Value;

use crate::org::{self, Member, Organization};
use crate::store::{self, Kind, Query, Store, WriteScope};

/// The store as the authorization server's backend.
#[derive(Clone)]
pub struct OAuthStore {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for OAuthStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthStore").finish_non_exhaustive()
    }
}

impl OAuthStore {
    /// A backend over `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Forgets the records that expired before `now` (codes, refresh tokens); how many.
    pub fn sweep(&self, now: UnixTime) -> Result<u64, String> {
        store::write(&*self.store, WriteScope::Grants, |tx| {
            Ok(tx.grant_sweep(now.as_millis())?)
        })
        .map_err(|e| e.to_string())
    }
}

impl Backend for OAuthStore {
    /// The `demo` organization first (the development token's), then the others by
    /// creation and name; each one's members strongest role first, then by name.
    fn people(&self) -> Result<Vec<Person>, String> {
        let rank = |role: &str| match role {
            "owner" => 0,
            "admin" => 1,
            "operator" => 2,
            "viewer" => 3,
            _ => 4,
        };
        store::read(&*self.store, |tx| {
            let mut orgs = Vec::new();
            for org_id in tx.organizations()? {
                if let Some(o) =
                    store::load::<Organization>(tx, Kind::Organization, &org_id, &org_id)?
                {
                    orgs.push(o);
                }
            }
            orgs.sort_by(|a, b| {
                (a.slug != "demo", &a.created_at, &a.name).cmp(&(
                    b.slug != "demo",
                    &b.created_at,
                    &b.name,
                ))
            });
            let mut out = Vec::new();
            for o in orgs {
                let mut members: Vec<Member> = store::find(tx, Kind::Member, &o.id, &Query::all())?;
                members.sort_by(|a, b| (rank(&a.role), &a.name).cmp(&(rank(&b.role), &b.name)));
                for m in members {
                    out.push(Person {
                        organization: o.id.clone(),
                        organization_name: o.name.clone(),
                        scopes: org::role_scopes(&m.role),
                        login: m.email,
                        name: m.name,
                        role: m.role,
                    });
                }
            }
            Ok(out)
        })
        .map_err(|e| e.to_string())
    }

    fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: &Value,
        expires: Option<UnixTime>,
    ) -> Result<(), String> {
        store::write(&*self.store, WriteScope::Grants, |tx| {
            Ok(tx.grant_put(kind.as_str(), id, doc, expires.map(UnixTime::as_millis))?)
        })
        .map_err(|e| e.to_string())
    }

    fn get(&self, kind: GrantKind, id: &str) -> Result<Option<Value>, String> {
        store::read(&*self.store, |tx| Ok(tx.grant_get(kind.as_str(), id)?))
            .map_err(|e| e.to_string())
    }

    fn update(
        &self,
        kind: GrantKind,
        id: &str,
        f: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Result<Option<Value>, String> {
        store::write(&*self.store, WriteScope::Grants, |tx| {
            let Some(old) = tx.grant_get(kind.as_str(), id)? else {
                return Ok(None);
            };
            if let Some(new) = f(&old) {
                tx.grant_rewrite(kind.as_str(), id, &new)?;
            }
            Ok(Some(old))
        })
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing;

    /// Records survive in the store, `update` is a compare-and-set, the sweep forgets
    /// only what expired.
    #[test]
    fn records_update_and_sweep() {
        let b = OAuthStore::new(testing::store());
        let t = UnixTime::from_secs(1_000);
        b.put(GrantKind::Code, "h1", &json!({"used": false}), Some(t))
            .unwrap();
        b.put(GrantKind::Client, "c1", &json!({"client_id": "c1"}), None)
            .unwrap();
        let mark = |d: &Value| (d["used"] == false).then(|| json!({"used": true}));
        let first = b.update(GrantKind::Code, "h1", &mut { mark }).unwrap();
        assert_eq!(first, Some(json!({"used": false})));
        let second = b.update(GrantKind::Code, "h1", &mut { mark }).unwrap();
        assert_eq!(
            second,
            Some(json!({"used": true})),
            "the second take sees it used"
        );
        assert_eq!(
            b.update(GrantKind::Code, "nope", &mut { mark }).unwrap(),
            None
        );
        assert_eq!(b.sweep(UnixTime::from_secs(999)).unwrap(), 0);
        assert_eq!(b.sweep(UnixTime::from_secs(1_001)).unwrap(), 1);
        assert_eq!(b.get(GrantKind::Code, "h1").unwrap(), None);
        assert!(
            b.get(GrantKind::Client, "c1").unwrap().is_some(),
            "clients never expire"
        );
    }

    #[test]
    fn people_are_the_members_with_their_role_scopes() {
        let store = testing::store();
        crate::demo::seed(
            &crate::Domain::new(store.clone()),
            UnixTime::from_secs(1_800_000_000),
        )
        .unwrap();
        let people = OAuthStore::new(store).people().unwrap();
        let ana = people
            .iter()
            .find(|p| p.login == "ana@demo.example")
            .unwrap();
        assert_eq!(
            ana.scopes,
            ["dunning.read", "dunning.write", "dunning.admin"]
        );
        assert!(
            people.iter().any(|p| p.scopes == ["dunning.read"]),
            "a viewer"
        );
    }
}
