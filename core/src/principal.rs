//! Who is calling: what the authentication hook yields and every method filters by.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::env::UnixTime;

/// OAuth scope level of this resource server. Hierarchical: admin ⊃ write ⊃ read; the wire names are the dispatcher's ([`ScopeNames`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Reads, previews, simulations, documents.
    Read,
    /// Changes.
    Write,
    /// Administration: what touches third parties or secrets.
    Admin,
}

impl Scope {
    /// Every scope, weakest first.
    pub const ALL: [Self; 3] = [Self::Read, Self::Write, Self::Admin];
}

/// The wire names of the three scope levels. They are the product's words, so they come
/// with the dispatcher's [`crate::Catalog`]; the core only orders the levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeNames {
    /// Name of [`Scope::Read`].
    pub read: &'static str,
    /// Name of [`Scope::Write`].
    pub write: &'static str,
    /// Name of [`Scope::Admin`].
    pub admin: &'static str,
}

impl Default for ScopeNames {
    /// Generic names, for a dispatcher that has none of its own.
    fn default() -> Self {
        Self {
            read: "read",
            write: "write",
            admin: "admin",
        }
    }
}

impl ScopeNames {
    /// The wire name of `scope`.
    pub const fn name(&self, scope: Scope) -> &'static str {
        match scope {
            Scope::Read => self.read,
            Scope::Write => self.write,
            Scope::Admin => self.admin,
        }
    }

    /// The level a wire name stands for; unknown names are `None` (and ignored by callers).
    pub fn parse(&self, name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|&s| self.name(s) == name)
    }

    /// Every name, weakest first.
    pub fn all(&self) -> [&'static str; 3] {
        Scope::ALL.map(|s| self.name(s))
    }
}

/// Which token audience a request was authenticated for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Audience {
    /// The MCP endpoint.
    Mcp,
    /// The `/v1` REST API.
    Api,
}

/// The authenticated caller of one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// Token subject: the person (member) id or e-mail.
    pub subject: String,
    /// Organization id from the token; every query is scoped by it.
    pub organization: String,
    /// The strongest scope granted (admin implies write implies read); `None` = no scope.
    pub scope: Option<Scope>,
    /// The scopes exactly as granted (for `dunning_me`).
    pub scopes: Vec<String>,
    /// Dashboard permissions of the person (e.g. `charges.view`); shared with the
    /// membership they were read from, so a principal made per request copies none.
    pub permissions: Arc<BTreeSet<String>>,
    /// When the token expires.
    pub expires_at: UnixTime,
    /// Which audience the token was issued for.
    pub audience: Audience,
}

impl Principal {
    /// Whether the granted scopes cover `needed`.
    pub fn has_scope(&self, needed: Scope) -> bool {
        self.scope.is_some_and(|s| s >= needed)
    }

    /// Whether the person holds `permission` (`None` = no permission needed).
    pub fn has_permission(&self, permission: Option<&str>) -> bool {
        permission.is_none_or(|p| self.permissions.contains(p))
    }

    /// Whether both scope and permission allow a primitive guarded by `access`.
    pub fn may(&self, access: &Access) -> bool {
        self.has_scope(access.scope) && self.has_permission(access.permission.as_deref())
    }
}

/// What a tool, resource, template or prompt requires of its caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// The OAuth scope needed.
    pub scope: Scope,
    /// The dashboard permission needed, if any.
    pub permission: Option<String>,
}

impl Access {
    /// Read scope, no permission.
    pub fn read() -> Self {
        Self {
            scope: Scope::Read,
            permission: None,
        }
    }

    /// The given scope and permission.
    pub fn new(scope: Scope, permission: &str) -> Self {
        Self {
            scope,
            permission: Some(permission.to_owned()),
        }
    }
}
