//! A deterministic [`Authenticate`]: a fixed table of opaque tokens.
//!
//! | token | subject | org | scope | permissions | audience |
//! |---|---|---|---|---|---|
//! | `tok-owner` | `ana@demo.example` | `demo` | admin (all three) | all | MCP |
//! | `tok-admin` | `dora@demo.example` | `demo` | admin (all three) | all | MCP |
//! | `tok-reader` | `bruno@demo.example` | `demo` | `dunning.read` only | all | MCP |
//! | `tok-noperm` | `caio@demo.example` | `demo` | admin (all three) | views only | MCP |
//! | `tok-acme` | `carla@acme.example` | `acme` | admin (all three) | all | MCP |
//! | `tok-limited` | `rate@demo.example` | `demo` | admin (all three) | all | MCP (always over the rate limit: [`crate::TestLimiter`]) |
//! | `tok-api` | `ana@demo.example` | `demo` | admin | all | REST API only |
//! | `tok-expired` | - | - | - | - | refused: [`AuthError::Expired`] |
//!
//! Any other token is [`AuthError::Malformed`].

use std::collections::BTreeSet;

use dunning_core::UnixTime;
use dunning_core::auth::{AuthError, Authenticate};
use dunning_core::principal::{Audience, Principal, Scope};

/// Every dashboard permission the test domain checks.
pub const ALL_PERMISSIONS: [&str; 5] = [
    "charges.view",
    "charges.edit",
    "charges.cancel",
    "exports.create",
    "webhooks.view",
];

/// The view permissions (what `tok-noperm`'s person holds).
pub const VIEW_PERMISSIONS: [&str; 2] = ["charges.view", "webhooks.view"];

/// When every test token expires: 2027-01-01T00:00:00Z.
pub const EXPIRES_AT: UnixTime = UnixTime::from_secs(1_798_761_600);

/// The fixed token table.
#[derive(Clone, Copy, Debug, Default)]
pub struct TestAuth;

fn principal(
    subject: &str,
    org: &str,
    scope: Scope,
    permissions: &[&str],
    audience: Audience,
) -> Principal {
    Principal {
        subject: subject.into(),
        organization: org.into(),
        scope: Some(scope),
        scopes: Scope::ALL
            .into_iter()
            .filter(|s| *s <= scope)
            .map(|s| crate::registry::SCOPES.name(s).to_owned())
            .collect(),
        permissions: permissions
            .iter()
            .map(|p| (*p).to_owned())
            .collect::<BTreeSet<_>>()
            .into(),
        expires_at: EXPIRES_AT,
        audience,
    }
}

impl TestAuth {
    /// The principal a token stands for, whatever audience is asked.
    pub fn lookup(token: &str) -> Result<Principal, AuthError> {
        let all = &ALL_PERMISSIONS[..];
        Ok(match token {
            "tok-owner" => principal("ana@demo.example", "demo", Scope::Admin, all, Audience::Mcp),
            "tok-admin" => principal(
                "dora@demo.example",
                "demo",
                Scope::Admin,
                all,
                Audience::Mcp,
            ),
            "tok-reader" => principal(
                "bruno@demo.example",
                "demo",
                Scope::Read,
                all,
                Audience::Mcp,
            ),
            "tok-noperm" => principal(
                "caio@demo.example",
                "demo",
                Scope::Admin,
                &VIEW_PERMISSIONS,
                Audience::Mcp,
            ),
            "tok-acme" => principal(
                "carla@acme.example",
                "acme",
                Scope::Admin,
                all,
                Audience::Mcp,
            ),
            "tok-limited" => principal(
                "rate@demo.example",
                "demo",
                Scope::Admin,
                all,
                Audience::Mcp,
            ),
            "tok-api" => principal("ana@demo.example", "demo", Scope::Admin, all, Audience::Api),
            "tok-expired" => return Err(AuthError::Expired),
            _ => return Err(AuthError::Malformed),
        })
    }
}

impl Authenticate for TestAuth {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        let p = Self::lookup(token)?;
        if p.audience != audience {
            return Err(AuthError::Audience);
        }
        if now >= p.expires_at {
            return Err(AuthError::Expired);
        }
        Ok(p)
    }

    /// A fixed table of tokens: pure computation.
    fn may_block(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: UnixTime = UnixTime::from_millis(1_796_126_400_000);

    #[test]
    fn table() {
        let a = TestAuth;
        let owner = a.authenticate("tok-owner", Audience::Mcp, NOW).unwrap();
        assert_eq!(
            owner.scopes,
            ["dunning.read", "dunning.write", "dunning.admin"]
        );
        let reader = a.authenticate("tok-reader", Audience::Mcp, NOW).unwrap();
        assert_eq!(reader.scopes, ["dunning.read"]);
        assert_eq!(
            a.authenticate("tok-api", Audience::Mcp, NOW),
            Err(AuthError::Audience)
        );
        assert!(a.authenticate("tok-api", Audience::Api, NOW).is_ok());
        assert_eq!(
            a.authenticate("tok-expired", Audience::Mcp, NOW),
            Err(AuthError::Expired)
        );
        assert_eq!(
            a.authenticate("nope", Audience::Mcp, NOW),
            Err(AuthError::Malformed)
        );
    }
}
