//! The authentication hook (step 5 of the processing order).
//!
//! The core extracts the bearer token and asks an [`Authenticate`] implementation for a
//! [`Principal`]. Verification is pure given keys and `now`; caching verified tokens is
//! state, so it lives in the implementation, not in the core.

use crate::env::UnixTime;
use crate::principal::{Audience, Principal};

/// Why a request was not authenticated. Logged as the request's reason, and sent as the
/// `error_description` of the `401` challenge (RFC 6750 §3): the texts hold no token and
/// no claim value, only what kind of failure it was.
///
/// Fine-grained on purpose: an operator reading a `401` must see *which* check
/// failed (an expired token and a wrong audience call for different fixes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization` header (the challenge then carries no error, RFC 6750 §3.1).
    #[error("no token: the request has no Authorization header")]
    NoToken,
    /// An `Authorization` header that is not one `Bearer <token>`.
    #[error("malformed Authorization header: expected one 'Bearer <token>'")]
    NotBearer,
    /// Not a well-formed JWT (three base64url parts, JSON header and payload, no `crit`).
    #[error("malformed token: not a well-formed JWT")]
    Malformed,
    /// The header's `alg` is not EdDSA, ES256 or RS256, or not the algorithm of the key
    /// its `kid` names.
    #[error("bad signature: alg not accepted (EdDSA, ES256 or RS256, matching the key)")]
    Algorithm,
    /// The header's `kid` names no key of the key set (or, without `kid`, no single key
    /// fits the algorithm).
    #[error("unknown kid: no key of the JWKS matches the token's kid")]
    UnknownKey,
    /// The signature does not verify with the key.
    #[error("bad signature: the signature does not verify with the key")]
    Signature,
    /// The header's `typ` is `JWT` or absent, not `at+jwt` (RFC 9068 §4), while
    /// `require_at_jwt` is on. Keycloak and Entra ID write `JWT`, an Okta custom
    /// authorization server writes none.
    #[error(
        "typ is not 'at+jwt': set [auth] require_at_jwt = false to accept access tokens with typ 'JWT' or none (Keycloak, Entra ID, Okta)"
    )]
    Typ,
    /// The header's `typ` is neither `at+jwt` nor `JWT` (an ID token, say): refused
    /// whatever `require_at_jwt` says.
    #[error("typ is neither 'at+jwt' nor 'JWT' (not an access token?)")]
    WrongTyp,
    /// `exp` (plus the leeway) is past.
    #[error("token expired (exp is past, beyond the leeway)")]
    Expired,
    /// `nbf` or `iat` is in the future (beyond the leeway): a clock skew, or a bad issuer.
    #[error("token not yet valid (nbf or iat in the future, beyond the leeway)")]
    NotYetValid,
    /// `exp` is further past `iat` (or now) than the maximum lifetime allows.
    #[error("token lifetime over the maximum ([auth] max_token_lifetime_secs)")]
    Lifetime,
    /// `iss` is not the configured issuer.
    #[error("wrong issuer: iss is not the configured [auth] issuer")]
    Issuer,
    /// `aud` does not name this resource (the MCP endpoint or the REST API).
    #[error("wrong audience: aud does not name this resource")]
    Audience,
    /// A required claim (`exp`, `sub`, `org`, `scope`, or those `[auth] subject_claim`,
    /// `org_claim` and `scope_claim` name) missing or of the wrong type.
    #[error("bad claims: exp, or the person, organization or scope claim, missing or malformed")]
    Claims,
    /// The person is not (or no longer) a member of the organization.
    #[error("not a member of the organization")]
    NotMember,
    /// Membership could not be looked up (the store failed).
    #[error("membership lookup failed (store error)")]
    Lookup,
}

impl AuthError {
    /// A short, stable name of the failed check (`expired`, `audience`, ...): a label
    /// value from a closed set, for metrics, where the `Display` text is for people.
    pub fn kind(self) -> &'static str {
        match self {
            Self::NoToken => "no_token",
            Self::NotBearer => "not_bearer",
            Self::Malformed => "malformed",
            Self::Algorithm => "algorithm",
            Self::UnknownKey => "unknown_kid",
            Self::Signature => "signature",
            Self::Typ => "typ_not_at_jwt",
            Self::WrongTyp => "wrong_typ",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::Lifetime => "lifetime",
            Self::Issuer => "issuer",
            Self::Audience => "audience",
            Self::Claims => "claims",
            Self::NotMember => "not_member",
            Self::Lookup => "lookup",
        }
    }

    /// Whether the client sent a token (the challenge then says `error="invalid_token"`).
    pub fn token_sent(self) -> bool {
        self != Self::NoToken
    }
}

/// Turns a bearer token into a principal.
pub trait Authenticate: Send + Sync {
    /// Verifies `token` for `audience` at `now`.
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError>;

    /// Whether authenticating may wait on something other than the CPU (the product's
    /// looks people up in the store): see [`crate::Dispatch::may_block`].
    fn may_block(&self) -> bool {
        true
    }

    /// Whether authenticating this very `token` may wait (a finer [`Authenticate::may_block`]):
    /// an authenticator that remembers who a token belongs to answers `false` while it
    /// does, so the requests that need nothing else (`server/discover`, `tools/list`) stay
    /// on an async adapter's reactor. A `false` that turns stale between the question and
    /// [`Authenticate::authenticate`] costs one blocking call on the reactor, no error.
    fn may_block_for(&self, token: &str, audience: Audience, now: UnixTime) -> bool {
        let _ = (token, audience, now);
        self.may_block()
    }
}

/// RFC 6750's b64token characters, as a table: a JWT is hundreds of them at every
/// request, and a test per byte (a `str::contains`, then a chain of ranges) showed in
/// the profiles.
const B64TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
        b += 1;
    }
    t
};

/// Extracts the token from an `Authorization` header value: `Bearer <b64token>`.
///
/// `Ok(None)`: no header. `Err(())`: a header that is not a usable bearer token
/// (answered `401` with `error="invalid_token"`, since the client did send something).
#[allow(clippy::result_unit_err)]
pub fn bearer<'a>(values: &[&'a [u8]]) -> Result<Option<&'a str>, ()> {
    match values {
        [] => Ok(None),
        [one] => {
            let s = one.trim_ascii();
            let space = s.iter().position(|&b| b == b' ').ok_or(())?;
            let (scheme, token) = (&s[..space], s[space + 1..].trim_ascii_start());
            if !scheme.eq_ignore_ascii_case(b"bearer")
                || token.is_empty()
                || !token.iter().all(|&b| B64TOKEN[usize::from(b)])
            {
                return Err(());
            }
            // b64token characters are ASCII: the token is text, borrowed from the head.
            std::str::from_utf8(token).map(Some).map_err(|_| ())
        }
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_token_is_made_of_b64token_characters_only() {
        let allowed = |c: u8| c.is_ascii_alphanumeric() || b"-._~+/=".contains(&c);
        for c in 0..=255u8 {
            let header = [b"Bearer ab".as_slice(), &[c], b"cd"].concat();
            let got = bearer(&[&header]);
            if allowed(c) {
                let want = String::from_utf8(vec![b'a', b'b', c, b'c', b'd']).unwrap();
                assert_eq!(got, Ok(Some(want.as_str())), "byte {c}");
            } else {
                assert_eq!(got, Err(()), "byte {c}");
            }
        }
        assert_eq!(bearer(&[]), Ok(None));
        assert_eq!(bearer(&[b"bearer  tok"]), Ok(Some("tok")));
        assert_eq!(bearer(&[b"Basic tok"]), Err(()));
        assert_eq!(bearer(&[b"Bearer "]), Err(()));
        assert_eq!(bearer(&[b"Bearer a", b"Bearer b"]), Err(()));
    }

    /// Around the scheme and the token, only ASCII whitespace is trimmed (of which a
    /// field value holds spaces and tabs: the codec refuses the rest); a non-ASCII space
    /// (NBSP, U+3000) or another control character is part of the token, which is then
    /// not a b64token, and the header is refused.
    #[test]
    fn only_ascii_whitespace_is_trimmed_around_a_bearer_token() {
        assert_eq!(bearer(&[b" \tBearer \t tok \t"]), Ok(Some("tok")));
        for around in [
            "\u{a0}".as_bytes(),
            "\u{3000}".as_bytes(),
            b"\x0b".as_slice(),
            b"\x00".as_slice(),
        ] {
            let before = [b"Bearer ".as_slice(), around, b"tok"].concat();
            let after = [b"Bearer tok".as_slice(), around].concat();
            assert_eq!(bearer(&[&before]), Err(()), "{around:?} before");
            assert_eq!(bearer(&[&after]), Err(()), "{around:?} after");
        }
    }
}
