//! Every key the binary holds, and where each comes from:
//!
//! * **verification keys** ([`TrustedKeys`]): the development key's public half and/or the
//!   configured JWKS (a file, or a URL fetched through [`crate::outbound::jwks`] at
//!   startup and by the refresher thread, [`spawn_refresher`]); swapped whole, shared by
//!   the authenticator ([`crate::auth`]) and the refresher;
//! * **the development key** ([`dev_kid`]): the data dir's Ed25519 seed, which signs the
//!   development tokens ([`crate::token`]) and the embedded authorization server's;
//! * **requestState keys** ([`state_keys`]): the configured ones, else the data dir's
//!   own.
//!
//! The files themselves (created once, `0600`) are [`crate::datadir`]'s.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use dunning_core::jwt::{self, Jwk, KeySet};
use dunning_core::{Keys as StateKeys, StateKey, UnixTime};
use zeroize::Zeroizing;

use crate::outbound::jwks;
use crate::settings::{JwksSource, Settings};
use crate::telemetry::metrics as metric;

/// The current verification keys, swapped whole when the JWKS is refreshed.
#[derive(Debug, Default)]
pub(crate) struct TrustedKeys {
    current: RwLock<Arc<KeySet>>,
    /// Unix ms of the last time a failed signature asked for an early refresh.
    nudged_at: AtomicU64,
    /// An early refresh was asked for and not yet done.
    wanted: AtomicBool,
}

impl TrustedKeys {
    /// A holder with `keys`.
    pub(crate) fn new(keys: KeySet) -> Self {
        Self {
            current: RwLock::new(Arc::new(keys)),
            nudged_at: AtomicU64::new(0),
            wanted: AtomicBool::new(false),
        }
    }

    /// The key set in force.
    pub(crate) fn get(&self) -> Arc<KeySet> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the key set; whether it changed.
    pub(crate) fn set(&self, keys: KeySet) -> bool {
        let mut cur = self.current.write().unwrap_or_else(PoisonError::into_inner);
        let changed = cur.version() != keys.version();
        *cur = Arc::new(keys);
        changed
    }

    /// A token failed its signature check: the refresher may fetch the JWKS early (a key
    /// rotation it has not seen yet). At most once per `min_ms`; whether this call won.
    pub(crate) fn nudge(&self, now: UnixTime, min_ms: u64) -> bool {
        let now = now.as_millis();
        let last = self.nudged_at.load(Ordering::Relaxed);
        let won = now.saturating_sub(last) >= min_ms
            && self
                .nudged_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok();
        if won {
            self.wanted.store(true, Ordering::Release);
        }
        won
    }

    /// Whether an early refresh was asked for since the last call.
    pub(crate) fn take_wanted(&self) -> bool {
        self.wanted.swap(false, Ordering::AcqRel)
    }
}

/// The `kid` of the development key: its RFC 7638 thumbprint.
pub(crate) fn dev_kid(seed: &[u8; 32]) -> String {
    jwt::ed25519_thumbprint(&jwt::ed25519_public(seed))
}

/// The verification keys at startup: the development key and/or the configured JWKS.
pub(crate) fn initial(s: &Settings, dev_seed: Option<&[u8; 32]>) -> Result<KeySet, String> {
    let dev = dev_seed.map(dev_key_set).transpose()?.unwrap_or_default();
    let jwks = match &s.auth.jwks {
        None => return Ok(dev),
        Some(JwksSource::File(path)) => read_jwks_file(path)?,
        Some(JwksSource::Url(url)) => {
            let mut last = String::new();
            let mut got = None;
            for attempt in 0..3 {
                if attempt > 0 {
                    thread::sleep(Duration::from_secs(1));
                }
                match jwks::fetch(url) {
                    Ok(k) => {
                        got = Some(k);
                        break;
                    }
                    Err(e) => last = e,
                }
            }
            match got {
                Some(k) => k,
                None if !dev.is_empty() => {
                    tracing::error!(url = %url, error = %last, "JWKS unavailable; only the development key is trusted until it is fetched");
                    return Ok(dev);
                }
                None => return Err(format!("JWKS {url}: {last}")),
            }
        }
    };
    for why in jwks.skipped() {
        tracing::warn!(reason = %why, "JWKS key skipped");
    }
    metric::jwks_refreshed();
    Ok(jwks.merged(&dev))
}

fn dev_key_set(seed: &[u8; 32]) -> Result<KeySet, String> {
    let public = jwt::ed25519_public(seed);
    let jwk = Jwk::ed25519(Some(&dev_kid(seed)), &public).map_err(|e| e.to_string())?;
    Ok(KeySet::new(vec![jwk]))
}

fn read_jwks_file(path: &Path) -> Result<KeySet, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    KeySet::from_jwks(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// Refetches the JWKS every `period`, or early when a failed signature asked for it.
pub(crate) fn spawn_refresher(
    keys: Arc<TrustedKeys>,
    url: String,
    dev_seed: Option<[u8; 32]>,
    period: Duration,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    let dev_seed = dev_seed.map(Zeroizing::new);
    thread::Builder::new()
        .name("jwks-refresh".into())
        .spawn(move || {
            let mut last = Instant::now();
            while !stop.load(Ordering::Acquire) {
                thread::sleep(Duration::from_millis(200));
                if last.elapsed() < period && !keys.take_wanted() {
                    continue;
                }
                last = Instant::now();
                match jwks::fetch(&url) {
                    Ok(k) => {
                        metric::jwks_refreshed();
                        let k = match dev_seed.as_deref().map(dev_key_set) {
                            Some(Ok(dev)) => k.merged(&dev),
                            _ => k,
                        };
                        if keys.set(k) {
                            tracing::info!(url = %url, "JWKS changed");
                        }
                    }
                    Err(e) => {
                        metric::jwks_failed();
                        tracing::warn!(url = %url, error = %e, "JWKS refresh failed; keeping the current keys");
                    }
                }
            }
        })
        .unwrap_or_else(|e| panic!("spawning the JWKS refresher: {e}"))
}

/// The requestState keys: the configured ones (first seals), else the data dir's own.
pub(crate) fn state_keys(s: &Settings, own: Zeroizing<[u8; 32]>) -> Result<StateKeys, String> {
    if s.confirmation.keys.is_empty() {
        return Ok(StateKeys {
            request_state: vec![StateKey {
                id: "d1".into(),
                secret: Zeroizing::new(own.to_vec()),
            }],
        });
    }
    let mut out = Vec::new();
    for k in &s.confirmation.keys {
        let secret = match (&k.secret, &k.file) {
            (Some(b64), None) => decode_secret(b64.trim())
                .ok_or_else(|| format!("[confirmation] key {:?}: not base64", k.id))?,
            (None, Some(path)) => {
                Zeroizing::new(std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?)
            }
            _ => return Err(format!("[confirmation] key {:?}: secret or file", k.id)),
        };
        if secret.len() < 32 {
            return Err(format!("[confirmation] key {:?}: at least 32 bytes", k.id));
        }
        out.push(StateKey {
            id: k.id.clone(),
            secret,
        });
    }
    Ok(StateKeys { request_state: out })
}

fn decode_secret(text: &str) -> Option<Zeroizing<Vec<u8>>> {
    [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
        .iter()
        .find_map(|e| e.decode(text).ok())
        .map(Zeroizing::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nudge_is_rate_limited() {
        let k = TrustedKeys::new(KeySet::default());
        assert!(!k.take_wanted());
        assert!(k.nudge(UnixTime::from_secs(100), 30_000));
        assert!(k.take_wanted());
        assert!(!k.take_wanted());
        assert!(!k.nudge(UnixTime::from_secs(110), 30_000));
        assert!(!k.take_wanted());
        assert!(k.nudge(UnixTime::from_secs(131), 30_000));
    }
}
