//! Development tokens: `kobana-dunning token` and the token `serve` prints.
//!
//! Tokens are RFC 9068 access tokens signed with the data dir's Ed25519 key, naming the
//! issuer and audiences the last `serve` published in the data dir (`endpoint.json`; a
//! data dir no server ran on gets those of the default `127.0.0.1:8080`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dunning_core::{UnixTime, jwt};
use dunning_domain::org::{self, Member};
use dunning_domain::store;
use serde_json::json;

use crate::cli::AudienceArg;
use crate::datadir::{DataDir, Endpoint};

/// The `client_id` claim of development tokens.
pub(crate) const CLIENT_ID: &str = "kobana-dunning-cli";

/// What to mint.
#[derive(Debug)]
pub(crate) struct Request<'a> {
    /// Organization id (`org` claim).
    pub(crate) org_id: &'a str,
    /// The person (`sub`).
    pub(crate) person: &'a str,
    /// Space-separated scopes.
    pub(crate) scope: &'a str,
    /// Lifetime in seconds (negative: already expired).
    pub(crate) ttl: i64,
    /// Audience.
    pub(crate) audience: AudienceArg,
}

/// Signs a development token.
pub(crate) fn mint(seed: &[u8; 32], endpoint: &Endpoint, r: &Request<'_>, now: UnixTime) -> String {
    let iat = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
    let mut jti = [0u8; 16];
    // A jti only needs to be unique; should the OS refuse entropy, the clock still helps.
    if getrandom::fill(&mut jti).is_err() {
        jti[..8].copy_from_slice(&now.as_millis().to_be_bytes());
    }
    let aud = match r.audience {
        AudienceArg::Mcp => &endpoint.mcp_audience,
        AudienceArg::Api => &endpoint.api_audience,
    };
    let claims = json!({
        "iss": endpoint.issuer,
        "sub": r.person,
        "aud": aud,
        "org": r.org_id,
        "scope": r.scope,
        "client_id": CLIENT_ID,
        "jti": URL_SAFE_NO_PAD.encode(jti),
        "iat": iat,
        "exp": iat.saturating_add(r.ttl),
    });
    jwt::sign_ed25519(&crate::keys::dev_kid(seed), &claims, seed)
}

/// The scopes a role allows, as a token's `scope` claim (`org::role_scopes`).
pub(crate) fn role_scopes(role: &str) -> String {
    org::role_scopes(role).join(" ")
}

/// An organization (by slug or id) and, if the person is in it, the member.
pub(crate) fn lookup(
    store: &dyn store::Store,
    org_ref: &str,
    person: &str,
) -> Result<(String, Option<Member>), String> {
    store::read(store, |tx| {
        let Some(o) = org::find_org(tx, org_ref)? else {
            return Ok(None);
        };
        let m = org::find_member(tx, &o.id, person)?;
        Ok(Some((o.id, m)))
    })
    .map_err(|e| format!("store: {e}"))?
    .ok_or_else(|| format!("no organization {org_ref:?}"))
}

/// The endpoint tokens of `dir` are minted for.
pub(crate) fn endpoint_of(dir: &DataDir) -> Endpoint {
    dir.endpoint()
        .unwrap_or_else(|| Endpoint::new("http://127.0.0.1:8080", "/", None))
}

#[cfg(test)]
mod tests {
    use dunning_core::jwt::{KeySet, Validation};
    use dunning_core::{Audience, jwt::Jwk};

    use super::*;

    #[test]
    fn role_scopes_include_implied() {
        assert_eq!(
            role_scopes("owner"),
            "dunning.read dunning.write dunning.admin"
        );
        assert_eq!(
            role_scopes("admin"),
            "dunning.read dunning.write dunning.admin"
        );
        assert_eq!(role_scopes("operator"), "dunning.read dunning.write");
        assert_eq!(role_scopes("viewer"), "dunning.read");
        assert_eq!(role_scopes("nobody"), "");
    }

    #[test]
    fn minted_tokens_verify() {
        let seed = [3u8; 32];
        let e = Endpoint::new("http://127.0.0.1:9", "/mcp", None);
        let keys = KeySet::new(vec![
            Jwk::ed25519(
                Some(&crate::keys::dev_kid(&seed)),
                &jwt::ed25519_public(&seed),
            )
            .unwrap(),
        ]);
        let v = Validation::new(&e.issuer, &e.mcp_audience, &e.api_audience);
        let now = UnixTime::from_secs(1_800_000_000);
        let r = Request {
            org_id: "o",
            person: "p@x",
            scope: "dunning.read",
            ttl: 60,
            audience: AudienceArg::Mcp,
        };
        let t = mint(&seed, &e, &r, now);
        let c = jwt::verify(&t, &keys, &v, Audience::Mcp, now).unwrap();
        assert_eq!(c.subject, "p@x");
        assert_eq!(c.client_id.as_deref(), Some(CLIENT_ID));
        assert_eq!(e.mcp_audience, "http://127.0.0.1:9/mcp");
        assert!(jwt::verify(&t, &keys, &v, Audience::Api, now).is_err());
        let expired = mint(&seed, &e, &Request { ttl: -3600, ..r }, now);
        assert!(jwt::verify(&expired, &keys, &v, Audience::Mcp, now).is_err());
    }
}
