//! The data directory: the SQLite database, the development keys, and the endpoint the
//! last `serve` published (so `token` mints tokens that server accepts).
//!
//! ```text
//! <data dir>/            0700
//!   dunning.sqlite3      the store (WAL)
//!   dev-signing.key      Ed25519 seed, base64url, 0600 (development tokens)
//!   request-state.key    32 random bytes, base64url, 0600 (requestState sealing)
//!   endpoint.json        {public_url, mcp_path, issuer, mcp_audience, api_audience}
//! ```
//! Keys are created with OS randomness on first use, with `create_new`, so two processes
//! starting on a new directory agree on one key.

use std::fs::{self, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dunning_core::UnixTime;
use dunning_domain::Domain;
use dunning_domain::store::sqlite::SqliteStore;
use dunning_domain::store::{self, Kind, Query};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

/// File name of the database.
pub(crate) const DB_FILE: &str = "dunning.sqlite3";
/// File name of the development signing key.
pub(crate) const DEV_KEY_FILE: &str = "dev-signing.key";
/// File name of the requestState key.
pub(crate) const STATE_KEY_FILE: &str = "request-state.key";
/// File name of the published endpoint.
pub(crate) const ENDPOINT_FILE: &str = "endpoint.json";

/// What a token must name to be accepted by the server of this data dir.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Endpoint {
    /// Public base URL.
    pub(crate) public_url: String,
    /// MCP endpoint path.
    pub(crate) mcp_path: String,
    /// `iss` of development tokens.
    pub(crate) issuer: String,
    /// The MCP resource identifier (`aud` of MCP tokens).
    pub(crate) mcp_audience: String,
    /// The API identifier (`aud` of API tokens).
    pub(crate) api_audience: String,
}

impl Endpoint {
    /// The endpoint of a server at `public_url` (no trailing slash) with `mcp_path`.
    pub(crate) fn new(public_url: &str, mcp_path: &str, issuer: Option<&str>) -> Self {
        let config = dunning_core::Config {
            public_url: public_url.to_owned(),
            mcp_path: mcp_path.to_owned(),
            ..dunning_core::Config::default()
        };
        Self {
            public_url: public_url.to_owned(),
            mcp_path: mcp_path.to_owned(),
            issuer: issuer.unwrap_or(public_url).to_owned(),
            mcp_audience: config.resource(),
            api_audience: format!("{public_url}/v1"),
        }
    }
}

/// An opened data directory.
#[derive(Debug)]
pub(crate) struct DataDir {
    path: PathBuf,
}

impl DataDir {
    /// Creates the directory (0700) if needed.
    pub(crate) fn create(path: &Path) -> Result<Self, String> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            path: path.to_owned(),
        })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the store; seeds the demo data when the database is new. Returns the domain
    /// and whether the database was created now.
    pub(crate) fn open_store(
        &self,
        readers: usize,
        now: UnixTime,
    ) -> Result<(Arc<SqliteStore>, bool), String> {
        let db = self.path.join(DB_FILE);
        let fresh = !db.exists();
        let store =
            SqliteStore::open(&db, readers).map_err(|e| format!("{}: {e}", db.display()))?;
        let store = Arc::new(store);
        if fresh || !has_organizations(&store) {
            let domain = Domain::new(store.clone());
            dunning_domain::demo::seed(&domain, now).map_err(|e| format!("demo data: {e}"))?;
        }
        Ok((store, fresh))
    }

    /// The development signing key (Ed25519 seed), created on first use.
    pub(crate) fn dev_key(&self) -> Result<Zeroizing<[u8; 32]>, String> {
        self.secret(DEV_KEY_FILE)
    }

    /// The data dir's requestState key, created on first use.
    pub(crate) fn state_key(&self) -> Result<Zeroizing<[u8; 32]>, String> {
        self.secret(STATE_KEY_FILE)
    }

    /// Reads a 32-byte secret, or creates it from OS randomness (mode 0600).
    fn secret(&self, name: &str) -> Result<Zeroizing<[u8; 32]>, String> {
        let path = self.path.join(name);
        let shown = || path.display().to_string();
        let mut fresh = Zeroizing::new([0u8; 32]);
        getrandom::fill(&mut fresh[..]).map_err(|e| format!("OS randomness: {e}"))?;
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
        {
            Ok(mut f) => {
                let text = Zeroizing::new(format!("{}\n", URL_SAFE_NO_PAD.encode(&fresh[..])));
                f.write_all(text.as_bytes())
                    .and_then(|()| f.sync_all())
                    .map_err(|e| format!("{}: {e}", shown()))?;
                return Ok(fresh);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: {e}", shown())),
        }
        let text =
            Zeroizing::new(fs::read_to_string(&path).map_err(|e| format!("{}: {e}", shown()))?);
        let bytes = Zeroizing::new(
            URL_SAFE_NO_PAD
                .decode(text.trim())
                .map_err(|_| format!("{}: not a base64url key", shown()))?,
        );
        let mut key = Zeroizing::new([0u8; 32]);
        if bytes.len() != 32 {
            return Err(format!("{}: expected 32 bytes", shown()));
        }
        key.copy_from_slice(&bytes);
        Ok(key)
    }

    /// Publishes the endpoint a running server accepts tokens for.
    pub(crate) fn write_endpoint(&self, e: &Endpoint) -> Result<(), String> {
        let path = self.path.join(ENDPOINT_FILE);
        let tmp = self.path.join(format!("{ENDPOINT_FILE}.tmp"));
        let text = serde_json::to_string_pretty(e).map_err(|e| e.to_string())?;
        fs::write(&tmp, text + "\n")
            .and_then(|()| fs::rename(&tmp, &path))
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The endpoint the last `serve` published, if any.
    pub(crate) fn endpoint(&self) -> Option<Endpoint> {
        let text = fs::read_to_string(self.path.join(ENDPOINT_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }
}

fn has_organizations(store: &Arc<SqliteStore>) -> bool {
    store::read(&**store, |tx| Ok(tx.organizations()?)).is_ok_and(|orgs| !orgs.is_empty())
}

/// Deletes every document of the demo organizations, then seeds them again.
pub(crate) fn reseed(domain: &Domain, now: UnixTime) -> Result<(), String> {
    let orgs = ["demo", "acme"].map(|slug| dunning_domain::demo::stable_id(&format!("org:{slug}")));
    store::write(domain.store(), |tx| {
        for org in &orgs {
            for kind in Kind::ALL.iter().rev() {
                for doc in tx.find(*kind, org, &Query::all())? {
                    if let Some(id) = doc.get("id").and_then(|v| v.as_str()) {
                        tx.delete(*kind, org, id)?;
                    }
                }
            }
        }
        Ok(())
    })
    .map_err(|e| format!("clearing demo data: {e}"))?;
    dunning_domain::demo::seed(domain, now).map_err(|e| format!("demo data: {e}"))
}
