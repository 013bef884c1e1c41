//! `dunning_me`: who the token belongs to (the person, the organization, the
//! permissions and scopes in force). One tool, so one small file: its declaration and
//! its handler side by side.

use std::sync::Arc;

use dunning_core::{Output, Scope};
use serde::{Deserialize, Serialize};

use crate::catalog::name;
use crate::error::DomainError;
use crate::op::{Op, ok};
use crate::org::find_member;
use crate::schema;
use crate::store::{Kind, load};
use crate::tool::{ToolSpec, tool};

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool(name::ME, "Who am I", "GET", "/v1/me")
            .describe("Who the token belongs to: the person, the organization (id, name, CNPJ, time zone), the dashboard permissions and OAuth scopes in force, and when the token expires. Call it first when you do not know who the token is.")
            .read()
            .access(Scope::Read, None)
            .output(schema::object(
                "The caller",
                &[
                    ("user", schema::any_object("The person")),
                    ("organization", schema::any_object("The organization")),
                    ("permissions", schema::array("Dashboard permissions", schema::string("permission"))),
                    ("scopes", schema::array("OAuth scopes", schema::string("scope"))),
                    ("token", schema::any_object("Token kind and expiry")),
                ],
                &["user", "organization", "permissions", "scopes", "token"],
            ))
            .run(me),
    ]
}

/// `dunning_me`'s answer, in its fields' order: written straight from what the call
/// read, no tree.
#[derive(Serialize)]
struct Me<'a> {
    user: &'a User,
    organization: &'a OrgCard,
    permissions: &'a std::collections::BTreeSet<String>,
    scopes: &'a [String],
    token: Token,
}

#[derive(Debug, Serialize)]
struct User {
    id: String,
    name: String,
    email: String,
}

#[derive(Serialize)]
struct Token {
    kind: &'static str,
    expires_at: String,
}

/// What `dunning_me` shows of the organization: its settings are neither parsed nor
/// copied (most of the stored document).
#[derive(Debug, Deserialize, Serialize)]
struct OrgCard {
    id: String,
    name: String,
    cnpj: String,
    timezone: String,
}

/// The caller's person and organization as the store has them: the same at every call
/// of a token, so kept under the rule of `kept.rs` (the part of the answer that is not
/// the token's).
#[derive(Debug)]
pub(crate) struct Caller {
    user: User,
    organization: OrgCard,
}

fn me(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let caller = caller(op)?;
    let kind = match op.principal.audience {
        dunning_core::Audience::Mcp => "mcp",
        dunning_core::Audience::Api => "api",
    };
    Ok(ok(Me {
        user: &caller.user,
        organization: &caller.organization,
        permissions: &op.principal.permissions,
        scopes: &op.principal.scopes,
        token: Token {
            kind,
            expires_at: crate::brazil::calendar::timestamp(op.principal.expires_at),
        },
    }))
}

/// The caller, kept or read (and then kept, when the call has a [`crate::kept::Memo`]).
fn caller(op: &mut Op<'_>) -> Result<Arc<Caller>, DomainError> {
    let key = (op.org.to_owned(), op.principal.subject.clone());
    if let Some(memo) = op.memo
        && let Some(kept) = memo.rows.callers.get(&key, memo.epoch, op.now)
    {
        return Ok(kept);
    }
    let organization = load::<OrgCard>(op.tx, Kind::Organization, op.org, op.org)?
        .ok_or_else(|| DomainError::not_found("organization", op.org))?;
    let user = match find_member(op.tx, op.org, &op.principal.subject)? {
        Some(m) => User {
            id: m.id,
            name: m.name,
            email: m.email,
        },
        None => User {
            id: String::new(),
            name: op.principal.subject.clone(),
            email: String::new(),
        },
    };
    let caller = Arc::new(Caller { user, organization });
    if let Some(memo) = op.memo {
        memo.rows
            .callers
            .put(key, Arc::clone(&caller), memo.epoch, op.now);
    }
    Ok(caller)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::org::{Member, Organization};
    use crate::store::{self, Kind, WriteScope};
    use crate::testing::Bed;

    /// The caller is kept between calls while the members epoch holds, and a rename of
    /// the person or of the organization is in the very next answer (the write moved
    /// the epoch), on whichever store the tests run.
    #[test]
    fn a_kept_caller_gives_way_to_a_rename() {
        let mut bed = Bed::demo();
        crate::testing::watched_epoch(|| bed.domain.members_epoch());
        let ana = bed.ana();
        let first = bed.ok(&ana, "dunning_me", json!({}));
        let (org, subject) = (ana.organization.clone(), ana.subject.clone());
        let kept = |bed: &Bed| {
            let epoch = bed.domain.members_epoch()?;
            let key = (org.clone(), subject.clone());
            bed.domain.kept.callers.get(&key, epoch, bed.now)
        };
        assert!(kept(&bed).is_some(), "kept after the first call");
        assert_eq!(
            bed.ok(&ana, "dunning_me", json!({})),
            first,
            "the same answer"
        );
        let rename = |bed: &Bed, kind: Kind, id: &str, name: &str| {
            store::write(bed.domain.store(), WriteScope::Org(&org), |tx| {
                let mut doc: serde_json::Value = store::must(tx, kind, &org, id)?;
                doc["name"] = json!(name);
                store::save(tx, kind, &org, &doc)
            })
            .unwrap();
        };
        let person = first["user"]["id"].as_str().unwrap().to_owned();
        rename(&bed, Kind::Member, &person, "Ana Renomeada");
        let after = bed.ok(&ana, "dunning_me", json!({}));
        assert_eq!(after["user"]["name"], "Ana Renomeada");
        rename(&bed, Kind::Organization, &org, "Demo Renomeada");
        let after = bed.ok(&ana, "dunning_me", json!({}));
        assert_eq!(after["organization"]["name"], "Demo Renomeada");
        assert_eq!(after["user"]["name"], "Ana Renomeada");
        // The types the rows are read as still read them.
        store::read(bed.domain.store(), |tx| {
            assert!(store::load::<Member>(tx, Kind::Member, &org, &person)?.is_some());
            assert!(store::load::<Organization>(tx, Kind::Organization, &org, &org)?.is_some());
            Ok(())
        })
        .unwrap();
    }
}
