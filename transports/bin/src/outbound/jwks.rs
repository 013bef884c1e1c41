//! The JWKS fetch: one bounded GET of the configured `jwks_url`. When it runs (startup,
//! every refresh period, early after a failed signature) is [`crate::keys`]'s.

use std::time::Duration;

use dunning_core::jwt::KeySet;

/// The largest JWKS document read.
const MAX_JWKS_BYTES: u64 = 1024 * 1024;

/// Fetches and parses a JWKS document (bounded time and size).
pub(crate) fn fetch(url: &str) -> Result<KeySet, String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let bytes = agent
        .get(url)
        .header("Accept", "application/jwk-set+json, application/json")
        .call()
        .map_err(|e| e.to_string())?
        .body_mut()
        .with_config()
        .limit(MAX_JWKS_BYTES)
        .read_to_vec()
        .map_err(|e| e.to_string())?;
    KeySet::from_jwks(&bytes).map_err(|e| e.to_string())
}
