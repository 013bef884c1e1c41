//! Sealed `requestState` for confirming destructive tools.
//!
//! The state is attacker-controlled input when it comes back, so it is sealed:
//! `v1.<key id>.<payload>.<mac>`, payload and MAC in unpadded base64url, the MAC an
//! HMAC-SHA256 under a key shared by all replicas over `v1.<key id>.<payload>` (so the
//! version and key id are bound too). The payload binds the tool, a canonical digest of
//! the arguments, the caller (`sub` and `org`), issue and expiry times and a nonce.
//! Opening checks the MAC in constant time before looking at anything inside.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::Keys;

type HmacSha256 = Hmac<Sha256>;

const VERSION: &str = "v1";
/// Longest state accepted before any work is done on it.
pub const MAX_STATE_LEN: usize = 4096;

/// What a sealed state binds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Tool name.
    #[serde(rename = "t")]
    pub tool: String,
    /// Hex SHA-256 of the canonical arguments.
    #[serde(rename = "d")]
    pub args_digest: String,
    /// Token subject.
    #[serde(rename = "s")]
    pub subject: String,
    /// Token organization.
    #[serde(rename = "o")]
    pub organization: String,
    /// Issue time, ms since the epoch.
    #[serde(rename = "i")]
    pub issued_at: u64,
    /// Expiry, ms since the epoch.
    #[serde(rename = "e")]
    pub expires_at: u64,
    /// Random nonce (hex); the confirmed call's idempotency key.
    #[serde(rename = "n")]
    pub nonce: String,
}

/// Why a state did not open. All of them are a `-32602` to the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    /// Not of the `v1.kid.payload.mac` shape, or too long.
    #[error("malformed")]
    Malformed,
    /// A version this server does not seal.
    #[error("unknown version")]
    Version,
    /// No key with that id.
    #[error("unknown key")]
    UnknownKey,
    /// The MAC does not verify (tampered).
    #[error("integrity check failed")]
    Mac,
}

fn mac_for(secret: &[u8], signed: &str) -> HmacSha256 {
    // HMAC accepts keys of any length.
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(signed.as_bytes());
    mac
}

/// Seals `claims` under the first key of `keys`. `None` when no key is configured.
pub fn seal(keys: &Keys, claims: &Claims) -> Option<String> {
    let key = keys.request_state.first()?;
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(claims).ok()?);
    let signed = format!("{VERSION}.{}.{payload}", key.id);
    let tag = mac_for(&key.secret, &signed).finalize().into_bytes();
    Some(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag)))
}

/// Opens a state sealed by any key of `keys`. Binding checks are the caller's.
pub fn open(keys: &Keys, state: &str) -> Result<Claims, StateError> {
    if state.len() > MAX_STATE_LEN {
        return Err(StateError::Malformed);
    }
    let (signed, tag) = state.rsplit_once('.').ok_or(StateError::Malformed)?;
    let mut parts = signed.splitn(3, '.');
    let (Some(version), Some(kid), Some(payload)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(StateError::Malformed);
    };
    if version != VERSION {
        return Err(StateError::Version);
    }
    let key = keys
        .request_state
        .iter()
        .find(|k| k.id == kid)
        .ok_or(StateError::UnknownKey)?;
    let tag = URL_SAFE_NO_PAD
        .decode(tag)
        .map_err(|_| StateError::Malformed)?;
    mac_for(&key.secret, signed)
        .verify_slice(&tag)
        .map_err(|_| StateError::Mac)?;
    let bytes = URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| StateError::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| StateError::Malformed)
}

/// Hex SHA-256 of the canonical form of `args` (keys sorted at every level).
pub fn args_digest(args: &Map<String, Value>) -> String {
    let mut canon = Vec::with_capacity(128);
    write_canonical_map(&mut canon, args);
    let digest = Sha256::digest(&canon);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn write_canonical_map(out: &mut Vec<u8>, m: &Map<String, Value>) {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    out.push(b'{');
    for (i, k) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::jsonrpc::write_json(out, k);
        out.push(b':');
        write_canonical(out, &m[k]);
    }
    out.push(b'}');
}

fn write_canonical(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Object(m) => write_canonical_map(out, m),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(out, item);
            }
            out.push(b']');
        }
        other => crate::jsonrpc::write_json(out, other),
    }
}

/// A nonce from the request's entropy (128 bits, hex).
pub fn nonce(entropy: &[u8; 32]) -> String {
    entropy[..16].iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims() -> Claims {
        Claims {
            tool: "t".into(),
            args_digest: args_digest(json!({"b":1,"a":[{"y":1,"x":2}]}).as_object().unwrap()),
            subject: "ana".into(),
            organization: "demo".into(),
            issued_at: 1,
            expires_at: 2,
            nonce: "00".into(),
        }
    }

    #[test]
    fn round_trip_and_rotation() {
        let old = Keys::single(b"old-key");
        let s = seal(&old, &claims()).unwrap();
        assert_eq!(open(&old, &s).unwrap(), claims());
        let mut rotated = Keys::single(b"new-key");
        rotated.request_state[0].id = "k2".into();
        rotated.request_state.push(old.request_state[0].clone());
        assert_eq!(open(&rotated, &s).unwrap(), claims(), "old key still opens");
        assert_eq!(open(&Keys::single(b"other"), &s), Err(StateError::Mac));
    }

    #[test]
    fn digest_ignores_key_order_only() {
        let a = json!({"a":1,"b":{"c":2,"d":3}});
        let b = json!({"b":{"d":3,"c":2},"a":1});
        let c = json!({"a":1,"b":{"c":2,"d":4}});
        assert_eq!(
            args_digest(a.as_object().unwrap()),
            args_digest(b.as_object().unwrap())
        );
        assert_ne!(
            args_digest(a.as_object().unwrap()),
            args_digest(c.as_object().unwrap())
        );
    }

    #[test]
    fn refusals() {
        let k = Keys::single(b"k");
        assert_eq!(open(&k, "garbage"), Err(StateError::Malformed));
        assert_eq!(open(&k, "v2.k1.e30.AAAA"), Err(StateError::Version));
        assert_eq!(open(&k, "v1.zz.e30.AAAA"), Err(StateError::UnknownKey));
        assert_eq!(
            open(&k, &"v".repeat(MAX_STATE_LEN + 1)),
            Err(StateError::Malformed)
        );
    }
}
