//! The authentication hook (spec §10, step 5 of §15).
//!
//! The core extracts the bearer token and asks an [`Authenticate`] implementation for a
//! [`Principal`]. Verification is pure given keys and `now`; caching verified tokens is
//! state, so it lives in the implementation, not in the core.

use crate::env::UnixTime;
use crate::principal::{Audience, Principal};

/// Why a token was refused. Logged, never sent: the client only sees `invalid_token`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Not a well-formed token.
    #[error("malformed token")]
    Malformed,
    /// Signature, key id or algorithm not accepted.
    #[error("bad signature")]
    Signature,
    /// Expired, or not yet valid.
    #[error("token not valid at this time")]
    Time,
    /// Wrong issuer or audience.
    #[error("token not issued for this resource")]
    Audience,
    /// Missing or malformed claims.
    #[error("bad claims")]
    Claims,
    /// The person is no longer a member of the organization.
    #[error("not a member")]
    NotMember,
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
}

/// Extracts the token from an `Authorization` header value: `Bearer <b64token>`.
///
/// `Ok(None)`: no header. `Err(())`: a header that is not a usable bearer token
/// (answered `401` with `error="invalid_token"`, since the client did send something).
#[allow(clippy::result_unit_err)]
pub fn bearer(values: &[&[u8]]) -> Result<Option<String>, ()> {
    match values {
        [] => Ok(None),
        [one] => {
            let s = std::str::from_utf8(one).map_err(|_| ())?.trim();
            let (scheme, token) = s.split_once(' ').ok_or(())?;
            let token = token.trim_start();
            let b64 = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
            if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() || !token.chars().all(b64)
            {
                return Err(());
            }
            Ok(Some(token.to_owned()))
        }
        _ => Err(()),
    }
}
