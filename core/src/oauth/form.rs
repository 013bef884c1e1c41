//! `application/x-www-form-urlencoded` parameters, and the sealed authorization request
//! the consent page carries (its CSRF token).
//!
//! The page's form holds the whole authorization request sealed (HMAC-SHA256 under the
//! `requestState` keys, with a label of its own so a confirmation state can never open
//! as a form and the reverse), with an expiry and a nonce; the same nonce is set in a
//! `SameSite=Strict`, `HttpOnly` cookie on the page's answer. A submission is honoured
//! only when the seal opens, is not expired, and the cookie's nonce equals the sealed
//! one: a forged, tampered, stale or cross-site submission is refused before anything
//! is looked at.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use super::OAuthError;
use crate::config::Keys;

/// Longest query string or form body read.
pub const MAX_FORM: usize = 16 * 1024;
/// Longest sealed request accepted.
const MAX_SEALED: usize = 8 * 1024;
const VERSION: &str = "a1";
const LABEL: &[u8] = b"oauth authorize form\0";

/// Decoded parameters, in order. Repeated names are refused (RFC 6749 §3.1).
#[derive(Debug, Default)]
pub struct Params(Vec<(String, String)>);

impl Params {
    /// Parses `s`; `None` when it is malformed, too long or repeats a name.
    pub fn parse(s: &str) -> Result<Self, OAuthError> {
        if s.len() > MAX_FORM {
            return Err(OAuthError::InvalidRequest("parameters too long"));
        }
        let mut out: Vec<(String, String)> = Vec::new();
        for pair in s.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = crate::pct::decode(k, true)
                .ok_or(OAuthError::InvalidRequest("malformed parameters"))?;
            let v = crate::pct::decode(v, true)
                .ok_or(OAuthError::InvalidRequest("malformed parameters"))?;
            if out.iter().any(|(n, _)| *n == k) {
                return Err(OAuthError::InvalidRequest("a parameter is repeated"));
            }
            out.push((k, v));
        }
        Ok(Self(out))
    }

    /// The value of `name`; an empty value counts as absent (RFC 6749 §3.1).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.as_str())
    }
}

/// Percent-encodes `s` for a query string or form value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The authorization request as the page carries it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// Client id.
    #[serde(rename = "c")]
    pub client_id: String,
    /// Redirect URI as requested (validated against the registration).
    #[serde(rename = "r")]
    pub redirect_uri: String,
    /// PKCE S256 challenge.
    #[serde(rename = "p")]
    pub challenge: String,
    /// `state`, returned as is.
    #[serde(rename = "s", skip_serializing_if = "Option::is_none", default)]
    pub state: Option<String>,
    /// Scopes asked (known to the server).
    #[serde(rename = "o")]
    pub scopes: Vec<String>,
    /// The resource (token audience).
    #[serde(rename = "a")]
    pub resource: String,
    /// Expiry of the page, ms since the epoch.
    #[serde(rename = "e")]
    pub expires_at: u64,
    /// The CSRF nonce, also in the cookie.
    #[serde(rename = "n")]
    pub nonce: String,
}

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &[u8], signed: &str) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(LABEL);
    m.update(signed.as_bytes());
    m
}

/// Seals `p` under the first key; `None` without keys.
pub fn seal(keys: &Keys, p: &Pending) -> Option<String> {
    let key = keys.request_state.first()?;
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(p).ok()?);
    let signed = format!("{VERSION}.{}.{payload}", key.id);
    let tag = mac(&key.secret, &signed).finalize().into_bytes();
    Some(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag)))
}

/// Opens a sealed request (any key); `None` when malformed or tampered.
pub fn open(keys: &Keys, sealed: &str) -> Option<Pending> {
    if sealed.len() > MAX_SEALED {
        return None;
    }
    let (signed, tag) = sealed.rsplit_once('.')?;
    let mut parts = signed.splitn(3, '.');
    let (version, kid, payload) = (parts.next()?, parts.next()?, parts.next()?);
    if version != VERSION {
        return None;
    }
    let key = keys.request_state.iter().find(|k| k.id == kid)?;
    let tag = URL_SAFE_NO_PAD.decode(tag).ok()?;
    mac(&key.secret, signed).verify_slice(&tag).ok()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending() -> Pending {
        Pending {
            client_id: "c".into(),
            redirect_uri: "http://127.0.0.1:9/cb".into(),
            challenge: "x".into(),
            state: Some("s t".into()),
            scopes: vec!["dunning.read".into()],
            resource: "http://127.0.0.1:8080".into(),
            expires_at: 5,
            nonce: "n".into(),
        }
    }

    #[test]
    fn seal_opens_and_any_flipped_byte_is_refused() {
        let keys = Keys::single(b"0123456789abcdef0123456789abcdef");
        let s = seal(&keys, &pending()).unwrap();
        assert_eq!(open(&keys, &s), Some(pending()));
        for i in 0..s.len() {
            let mut b = s.clone().into_bytes();
            b[i] ^= 1;
            if let Ok(t) = String::from_utf8(b) {
                assert_eq!(open(&keys, &t), None, "byte {i}");
            }
        }
        let other = Keys::single(b"another key, another key, anothe");
        assert_eq!(open(&other, &s), None);
    }

    #[test]
    fn params() {
        let p = Params::parse("a=1&b=x%20y+z&c=").unwrap();
        assert_eq!(p.get("a"), Some("1"));
        assert_eq!(p.get("b"), Some("x y z"));
        assert_eq!(p.get("c"), None);
        assert!(Params::parse("a=1&a=2").is_err());
        assert!(Params::parse("a=%zz").is_err());
        assert_eq!(encode("a b&c/é"), "a%20b%26c%2F%C3%A9");
    }
}
