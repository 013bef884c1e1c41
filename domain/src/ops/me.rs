//! `dunning_me`: who the token belongs to (the person, the organization, the
//! permissions and scopes in force). One tool, so one small file: its declaration and
//! its handler side by side.

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
    user: User<'a>,
    organization: &'a OrgCard,
    permissions: &'a std::collections::BTreeSet<String>,
    scopes: &'a [String],
    token: Token,
}

#[derive(Serialize)]
struct User<'a> {
    id: &'a str,
    name: &'a str,
    email: &'a str,
}

#[derive(Serialize)]
struct Token {
    kind: &'static str,
    expires_at: String,
}

/// What `dunning_me` shows of the organization: its settings are neither parsed nor
/// copied (most of the stored document, read at every call).
#[derive(Deserialize, Serialize)]
struct OrgCard {
    id: String,
    name: String,
    cnpj: String,
    timezone: String,
}

fn me(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let org = load::<OrgCard>(op.tx, Kind::Organization, op.org, op.org)?
        .ok_or_else(|| DomainError::not_found("organization", op.org))?;
    let member = find_member(op.tx, op.org, &op.principal.subject)?;
    let (id, name, email) = member
        .map(|m| (m.id, m.name, m.email))
        .unwrap_or_else(|| (String::new(), op.principal.subject.clone(), String::new()));
    let kind = match op.principal.audience {
        dunning_core::Audience::Mcp => "mcp",
        dunning_core::Audience::Api => "api",
    };
    Ok(ok(Me {
        user: User {
            id: &id,
            name: &name,
            email: &email,
        },
        organization: &org,
        permissions: &op.principal.permissions,
        scopes: &op.principal.scopes,
        token: Token {
            kind,
            expires_at: crate::brazil::calendar::timestamp(op.principal.expires_at),
        },
    }))
}
