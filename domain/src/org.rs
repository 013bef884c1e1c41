//! Organizations, members, roles and permissions: the documents and the
//! lookups that authentication needs ([`find_org`], [`find_member`]).
//!
//! Not a tool group, so it sits at the crate root rather than under `ops/`: the
//! authenticator ([`crate::Domain::membership`]) and every group read it, and it declares
//! no tool (the one tool about the caller, `dunning_me`, is [`crate::ops::me`]).

use std::collections::BTreeSet;

use dunning_core::Scope;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::error::DomainError;
use crate::store::{Cond, Kind, Query, Tx, find, load};

/// Every dashboard permission.
pub const PERMISSIONS: [&str; 21] = [
    "dashboard.view",
    "debtors.view",
    "debtors.manage",
    "charges.view",
    "charges.manage",
    "charges.decide",
    "notifications.view",
    "notifications.send",
    "agreements.view",
    "agreements.manage",
    "rulers.view",
    "rulers.manage",
    "credit_bureau.view",
    "credit_bureau.manage",
    "protest.view",
    "protest.manage",
    "documents.view",
    "exports.create",
    "webhooks.manage",
    "settings.manage",
    "members.manage",
];

/// The permissions a role grants.
pub fn role_permissions(role: &str) -> Vec<&'static str> {
    let viewer = |p: &&str| p.ends_with(".view");
    match role {
        "viewer" => PERMISSIONS.iter().copied().filter(viewer).collect(),
        "operator" => PERMISSIONS
            .iter()
            .copied()
            .filter(|p| {
                viewer(p)
                    || matches!(
                        *p,
                        "debtors.manage"
                            | "charges.manage"
                            | "notifications.send"
                            | "agreements.manage"
                            | "exports.create"
                    )
            })
            .collect(),
        "admin" => PERMISSIONS
            .iter()
            .copied()
            .filter(|p| *p != "members.manage")
            .collect(),
        "owner" => PERMISSIONS.to_vec(),
        _ => Vec::new(),
    }
}

/// The strongest scope a role may hold (a token minted without `--scope`).
pub fn role_scope(role: &str) -> Option<Scope> {
    match role {
        "viewer" => Some(Scope::Read),
        "operator" => Some(Scope::Write),
        "admin" | "owner" => Some(Scope::Admin),
        _ => None,
    }
}

/// The scopes a role allows: its strongest scope and every one it implies, weakest
/// first, by their wire names (nothing for an unknown role). What a development token
/// and the authorize page grant a member, and what the tests act with.
pub fn role_scopes(role: &str) -> Vec<String> {
    let Some(top) = role_scope(role) else {
        return Vec::new();
    };
    Scope::ALL
        .iter()
        .filter(|s| **s <= top)
        .map(|&s| crate::catalog::SCOPES.name(s).to_owned())
        .collect()
}

/// Organization settings that business rules read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Days between the negativação notice and the inclusion (default 10).
    pub negativation_notice_days: u32,
    /// Largest agreement discount (percent).
    pub max_discount_percentage: f64,
    /// Whether a charge may have an active negativação and an active protest at once.
    pub allow_negativation_with_protest: bool,
    /// Outbound messages per minute.
    pub outbound_per_minute: u32,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            negativation_notice_days: 10,
            max_discount_percentage: 30.0,
            allow_negativation_with_protest: false,
            outbound_per_minute: 60,
        }
    }
}

/// An organization.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Organization {
    /// UUID.
    pub id: String,
    /// Short handle used by `--org` (`demo`, `acme`).
    pub slug: String,
    /// Legal name.
    pub name: String,
    /// CNPJ (digits).
    pub cnpj: String,
    /// Always `America/Sao_Paulo`.
    pub timezone: String,
    /// Rule settings.
    #[serde(default)]
    pub settings: Settings,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

/// A dashboard person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Member {
    /// UUID.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Login e-mail (the token's `sub`).
    pub email: String,
    /// `owner`, `admin`, `operator` or `viewer`.
    pub role: String,
    /// Explicit grants beyond the role.
    #[serde(default)]
    pub permissions: Vec<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

impl Member {
    /// Role permissions plus explicit grants.
    pub fn effective_permissions(&self) -> BTreeSet<String> {
        role_permissions(&self.role)
            .into_iter()
            .map(str::to_owned)
            .chain(self.permissions.iter().cloned())
            .collect()
    }
}

/// Finds an organization by id or slug.
pub fn find_org(tx: &mut dyn Tx, reference: &str) -> Result<Option<Organization>, DomainError> {
    if let Some(o) = load::<Organization>(tx, Kind::Organization, reference, reference)? {
        return Ok(Some(o));
    }
    for id in tx.organizations()? {
        let q = Query::all().with(Cond::Eq("slug", json!(reference)));
        if let Some(o) = find::<Organization>(tx, Kind::Organization, &id, &q)?
            .into_iter()
            .next()
        {
            return Ok(Some(o));
        }
    }
    Ok(None)
}

/// Finds a member of `org` by e-mail or id: one query, since an id (a UUID) never has
/// the `@` every e-mail address has.
pub fn find_member(
    tx: &mut dyn Tx,
    org: &str,
    subject: &str,
) -> Result<Option<Member>, DomainError> {
    if !subject.contains('@') {
        return load::<Member>(tx, Kind::Member, org, subject);
    }
    let q = Query::all().with(Cond::Eq("email", json!(subject.to_ascii_lowercase())));
    Ok(find::<Member>(tx, Kind::Member, org, &q)?
        .into_iter()
        .next())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Domain;
    use crate::demo::{seed_org, stable_id};
    use dunning_core::UnixTime;

    /// A member is found by its e-mail (any case) or by its id; a subject that is
    /// neither finds nobody.
    #[test]
    fn a_member_is_found_by_email_or_by_id() {
        let domain = Domain::new(crate::testing::store());
        let now = UnixTime::from_secs(1_800_000_000);
        let org = seed_org(&domain, "demo", "Demo", "11222333000181", now).unwrap();
        let id = stable_id("member:demo:ana@demo.example");
        crate::store::read(domain.store(), |tx| {
            for subject in ["ana@demo.example", "ANA@demo.example", id.as_str()] {
                let m = find_member(tx, &org, subject)?.expect(subject);
                assert_eq!(
                    (m.id.as_str(), m.email.as_str()),
                    (id.as_str(), "ana@demo.example")
                );
            }
            for nobody in ["nobody@demo.example", "ana", "0000"] {
                assert!(find_member(tx, &org, nobody)?.is_none(), "{nobody}");
            }
            Ok(())
        })
        .unwrap();
    }

    /// A read-only call after an organization's settings changed reads the new ones:
    /// the write moved the epoch its kept settings were read under.
    #[test]
    fn a_read_after_a_settings_change_sees_it() {
        let domain = Domain::new(crate::testing::store());
        let now = UnixTime::from_secs(1_800_000_000);
        let org = seed_org(&domain, "demo", "Demo", "11222333000181", now).unwrap();
        let read = |domain: &Domain| {
            let epoch = domain.members_epoch();
            crate::store::read(domain.store(), |tx| {
                domain.read_settings(tx, &org, epoch, now)
            })
            .unwrap()
        };
        assert_eq!(read(&domain), Settings::default());
        assert_eq!(read(&domain), Settings::default(), "kept");
        crate::store::write(domain.store(), crate::store::WriteScope::Org(&org), |tx| {
            let mut o: Organization = crate::store::must(tx, Kind::Organization, &org, &org)?;
            o.settings.max_discount_percentage = 50.0;
            crate::store::save(tx, Kind::Organization, &org, &o)
        })
        .unwrap();
        assert_eq!(read(&domain).max_discount_percentage, 50.0);
    }
}
