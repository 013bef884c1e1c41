//! The `X-Kobana-Signature` header: HMAC-SHA256 over `<t>.<body>`, one `v1` per secret
//! in force.

use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::hex;
use crate::op::Op;

pub(super) type HmacSha256 = Hmac<Sha256>;

pub(super) fn mac(secret: &str, t: u64, body: &str) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes any key");
    m.update(t.to_string().as_bytes());
    m.update(b".");
    m.update(body.as_bytes());
    m
}

/// Hex HMAC-SHA256 of `"<t>." + body` under `secret`.
pub fn sign(secret: &str, t: u64, body: &str) -> String {
    hex(&mac(secret, t, body).finalize().into_bytes())
}

/// The `X-Kobana-Signature` value: `t=<t>,v1=<hex>` with one `v1` per secret.
pub fn signature_header(secrets: &[&str], t: u64, body: &str) -> String {
    let mut h = format!("t={t}");
    for s in secrets {
        h.push_str(",v1=");
        h.push_str(&sign(s, t, body));
    }
    h
}

/// What a receiver does: whether some `v1` of `header` is the HMAC of `body` under
/// `secret` (constant-time comparison). Returns the signed `t` when it is.
pub fn verify(header: &str, secret: &str, body: &str) -> Option<u64> {
    let mut t = None;
    let mut sigs = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<u64>().ok(),
            Some(("v1", v)) => sigs.push(v),
            _ => {}
        }
    }
    let t = t?;
    sigs.iter()
        .any(|sig| {
            let Some(bytes) = unhex(sig) else {
                return false;
            };
            mac(secret, t, body).verify_slice(&bytes).is_ok()
        })
        .then_some(t)
}

pub(super) fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

pub(super) fn new_secret(op: &mut Op<'_>) -> String {
    // The operation's entropy (32 fresh bytes from the OS per request, lent by the
    // transport), drawn apart from the ids so that no id tells anything of a secret.
    format!("whsec_{}", hex(&op.entropy()))
}

pub(super) fn last4(secret: &str) -> String {
    secret
        .get(secret.len().saturating_sub(4)..)
        .unwrap_or_default()
        .to_owned()
}
