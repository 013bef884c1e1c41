//! PKCE (RFC 7636) with `S256` only: `plain` and a missing challenge are refused.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::OAuthError;

/// Checks the challenge of an authorization request: present, method `S256`, and the
/// shape of a base64url SHA-256 (43 characters).
pub fn check_challenge(challenge: Option<&str>, method: Option<&str>) -> Result<(), OAuthError> {
    let challenge = challenge.ok_or(OAuthError::InvalidRequest(
        "code_challenge is required (PKCE)",
    ))?;
    match method {
        Some("S256") => {}
        None | Some("plain") => {
            return Err(OAuthError::InvalidRequest(
                "code_challenge_method must be S256",
            ));
        }
        Some(_) => {
            return Err(OAuthError::InvalidRequest(
                "code_challenge_method must be S256",
            ));
        }
    }
    if challenge.len() != 43 || !challenge.bytes().all(is_b64url) {
        return Err(OAuthError::InvalidRequest(
            "code_challenge is not a base64url SHA-256",
        ));
    }
    Ok(())
}

/// Whether `verifier` (RFC 7636 §4.1: 43–128 unreserved characters) hashes to
/// `challenge`. Compared in constant time.
pub fn verify(verifier: &str, challenge: &str) -> bool {
    let shaped = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~'));
    if !shaped {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

fn is_b64url(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-' || c == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn rfc_7636_example() {
        assert!(verify(VERIFIER, CHALLENGE));
        assert!(!verify(&VERIFIER.replace('d', "e"), CHALLENGE));
        assert!(!verify("short", CHALLENGE));
        assert!(check_challenge(Some(CHALLENGE), Some("S256")).is_ok());
    }

    #[test]
    fn plain_and_missing_are_refused() {
        assert!(check_challenge(Some(CHALLENGE), Some("plain")).is_err());
        assert!(check_challenge(Some(CHALLENGE), None).is_err());
        assert!(check_challenge(None, Some("S256")).is_err());
        assert!(check_challenge(Some("abc"), Some("S256")).is_err());
    }
}
