//! The data directory: the SQLite database, the development keys, and the endpoint the
//! last `serve` published (so `token` mints tokens that server accepts).
//!
//! ```text
//! <data dir>/            0700
//!   dunning.sqlite3      the store (WAL)
//!   dev-signing.key      Ed25519 seed, base64url, 0600 (development tokens)
//!   request-state.key    32 random bytes, base64url, 0600 (requestState sealing)
//!   endpoint.json        {public_url, mcp_path, issuer, mcp_audience, api_audience}
//!   store.json           the store the server serves, never its password (`record`)
//!   init.lock            held while a process initializes the directory
//! ```
//!
//! Initialization ([`DataDir::initialize`], by `serve` and `demo`) runs under an
//! exclusive lock on `init.lock`, in this order: database and demo data, then the keys.
//! A second process starting on the same new directory waits for the lock and then
//! finds everything made: the demo data is seeded once. `token` never initializes
//! ([`DataDir::open_initialized`]): on a directory without a database and a development
//! key it refuses, naming the command to run first, unless a server recorded that it
//! runs there (`store.json`, `endpoint.json`): then it says what is missing instead.
//!
//! `token` and `demo` take the store their `--store` names, else the one the server
//! recorded ([`served_store`]), else the directory's SQLite file.
//!
//! Every file is written whole before it gets its name (a unique temporary file,
//! `fsync`, then `link` for keys — which never replaces an existing one — or `rename`
//! for `endpoint.json`), so a reader never sees half a file and two processes never
//! both win a key.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dunning_core::UnixTime;
use dunning_domain::store::Store;
use dunning_domain::store::postgres::PostgresStore;
use dunning_domain::store::sqlite::SqliteStore;
use dunning_domain::{Domain, demo};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

mod record;

pub(crate) use record::StoreRecord;
use record::{PasswordSource, STORE_FILE, without_password};

/// File name of the database.
pub(crate) const DB_FILE: &str = "dunning.sqlite3";
/// File name of the development signing key.
pub(crate) const DEV_KEY_FILE: &str = "dev-signing.key";
/// File name of the requestState key.
pub(crate) const STATE_KEY_FILE: &str = "request-state.key";
/// File name of the published endpoint.
pub(crate) const ENDPOINT_FILE: &str = "endpoint.json";
/// File name of the initialization lock.
pub(crate) const LOCK_FILE: &str = "init.lock";

/// Why a data dir cannot be used as it is.
#[derive(Debug)]
pub(crate) enum DirError {
    /// `token` on a directory that `serve` (or `demo`) never initialized.
    NotInitialized(String),
    /// The store cannot be found without `--store` (its password is only on the
    /// server's command line).
    NeedsStore(String),
    /// Anything else (I/O, a damaged key, the database).
    Other(String),
}

impl From<String> for DirError {
    fn from(e: String) -> Self {
        Self::Other(e)
    }
}

impl std::fmt::Display for DirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NotInitialized(m) | Self::NeedsStore(m) | Self::Other(m) => f.write_str(m),
        }
    }
}

/// A data dir `token` may use ([`DataDir::open_initialized`]).
pub(crate) struct Opened {
    /// The directory.
    pub(crate) dir: DataDir,
    /// Its store.
    pub(crate) store: Arc<dyn Store>,
    /// Its development signing key.
    pub(crate) dev_key: Zeroizing<[u8; 32]>,
}

/// What [`DataDir::initialize`] made or found.
pub(crate) struct Initialized {
    /// The opened store.
    pub(crate) store: Arc<dyn Store>,
    /// Whether this process created the database (and seeded the demo data).
    pub(crate) fresh: bool,
    /// The development signing key, when asked for.
    pub(crate) dev_key: Option<Zeroizing<[u8; 32]>>,
    /// The data dir's requestState key.
    pub(crate) state_key: Zeroizing<[u8; 32]>,
}

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

    /// Makes the directory usable, under the initialization lock: opens the store (seeding
    /// the demo data when it has no organization), then the requestState key and, with
    /// `dev_key`, the development key, each created on first use.
    ///
    /// With `postgres` (a URL) the store is that database instead of the directory's
    /// SQLite file; the demo data is then seeded under the database's own lock
    /// ([`PostgresStore::exclusively`]), so that of several processes started on one
    /// database, whatever their data dirs, only the first seeds it.
    pub(crate) fn initialize(
        &self,
        postgres: Option<&str>,
        readers: usize,
        now: UnixTime,
        dev_key: bool,
    ) -> Result<Initialized, String> {
        let lock_path = self.path.join(LOCK_FILE);
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&lock_path)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        // Released when `lock` is closed (or the process dies).
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| format!("{}: {e}", lock_path.display()))?;
        let (store, fresh): (Arc<dyn Store>, bool) = match postgres {
            Some(url) => {
                // The readers plus the writer and the workers' transactions.
                let connections = u32::try_from(readers).unwrap_or(u32::MAX).saturating_add(4);
                let pg = Arc::new(
                    PostgresStore::open(url, connections).map_err(|e| format!("store: {e}"))?,
                );
                let store: Arc<dyn Store> = pg.clone();
                let seeded = pg
                    .exclusively(|| {
                        demo::seed_if_empty(&Domain::new(store.clone()), now)
                            .map_err(|e| format!("demo data: {e}"))
                    })
                    .map_err(|e| format!("store: {e}"))??;
                (store, seeded)
            }
            None => {
                let db = self.path.join(DB_FILE);
                let fresh = !db.exists();
                let store = SqliteStore::open(&db, readers)
                    .map_err(|e| format!("{}: {e}", db.display()))?;
                let store: Arc<dyn Store> = Arc::new(store);
                demo::seed_if_empty(&Domain::new(store.clone()), now)
                    .map_err(|e| format!("demo data: {e}"))?;
                (store, fresh)
            }
        };
        let state_key = self.secret(STATE_KEY_FILE)?;
        let dev_key = dev_key.then(|| self.secret(DEV_KEY_FILE)).transpose()?;
        drop(lock);
        Ok(Initialized {
            store,
            fresh,
            dev_key,
            state_key,
        })
    }

    /// Opens a directory that `serve` or `demo` initialized, creating nothing: its store
    /// and its development key. The store is `explicit` (`token --store`) when given,
    /// else the one the directory's server recorded ([`served_store`]); on PostgreSQL the
    /// directory needs only the key.
    ///
    /// The refusals never ask to start a server that already runs on the directory: that
    /// is asked only when nothing says a server ever ran there.
    pub(crate) fn open_initialized(
        path: &Path,
        explicit: Option<&str>,
    ) -> Result<Opened, DirError> {
        let dir = Self {
            path: path.to_owned(),
        };
        let postgres = served_store(path, explicit)?;
        let db = path.join(DB_FILE);
        let key = path.join(DEV_KEY_FILE);
        let shown = path.display();
        let recorded = path.join(STORE_FILE).is_file();
        let served = recorded || path.join(ENDPOINT_FILE).is_file();
        if postgres.is_none() && !db.is_file() {
            return Err(DirError::NotInitialized(if recorded {
                format!(
                    "{shown} has no {DB_FILE}, although its server recorded SQLite \
                     ({STORE_FILE}): was the database moved or removed?"
                )
            } else if served {
                format!(
                    "{shown} has no {DB_FILE} and records no store, but a server ran on it \
                     ({ENDPOINT_FILE}): if it runs on PostgreSQL, pass its URL with --store"
                )
            } else {
                format!(
                    "{shown} is not an initialized data dir (no {DB_FILE}); start the server \
                     on it first: kobana-dunning serve --data-dir {shown}"
                )
            }));
        }
        if !key.is_file() {
            return Err(DirError::NotInitialized(if served {
                format!(
                    "{shown} has no development key ({DEV_KEY_FILE}): its server does not \
                     trust development tokens ([auth] dev_key = false); mint tokens with \
                     the authorization server it trusts"
                )
            } else {
                format!(
                    "{shown} is not an initialized data dir (no {DEV_KEY_FILE}); start the \
                     server on it first: kobana-dunning serve --data-dir {shown}"
                )
            }));
        }
        let store: Arc<dyn Store> = match &postgres {
            Some(url) => Arc::new(PostgresStore::open(url, 1).map_err(|e| format!("store: {e}"))?),
            None => {
                Arc::new(SqliteStore::open(&db, 0).map_err(|e| format!("{}: {e}", db.display()))?)
            }
        };
        let seed = dir.read_secret(&key)?;
        Ok(Opened {
            dir,
            store,
            dev_key: seed,
        })
    }

    /// Reads a 32-byte secret, or creates it from OS randomness (mode 0600): written whole
    /// to a temporary file, then linked to its name, which fails if another process got
    /// there first (its key is then read, never replaced).
    fn secret(&self, name: &str) -> Result<Zeroizing<[u8; 32]>, String> {
        let path = self.path.join(name);
        if !path.exists() {
            let mut fresh = Zeroizing::new([0u8; 32]);
            getrandom::fill(&mut fresh[..]).map_err(|e| format!("OS randomness: {e}"))?;
            let text = Zeroizing::new(format!("{}\n", URL_SAFE_NO_PAD.encode(&fresh[..])));
            let tmp = self.write_temporary(name, text.as_bytes())?;
            let linked = fs::hard_link(&tmp, &path);
            let _ = fs::remove_file(&tmp);
            match linked {
                Ok(()) => {
                    self.sync_dir();
                    return Ok(fresh);
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
        self.read_secret(&path)
    }

    fn read_secret(&self, path: &Path) -> Result<Zeroizing<[u8; 32]>, String> {
        let shown = || path.display().to_string();
        let text =
            Zeroizing::new(fs::read_to_string(path).map_err(|e| format!("{}: {e}", shown()))?);
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

    /// Writes `bytes` to a new file of this process only (mode 0600) and syncs it.
    fn write_temporary(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, String> {
        let mut tag = [0u8; 8];
        getrandom::fill(&mut tag).map_err(|e| format!("OS randomness: {e}"))?;
        let tmp = self.path.join(format!(
            ".{name}.{}.{:016x}.tmp",
            std::process::id(),
            u64::from_be_bytes(tag)
        ));
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(format!("{}: {e}", tmp.display()));
        }
        Ok(tmp)
    }

    /// Makes new names in the directory durable (best effort: some file systems refuse).
    fn sync_dir(&self) {
        if let Ok(d) = File::open(&self.path) {
            let _ = d.sync_all();
        }
    }

    /// Publishes the endpoint a running server accepts tokens for (whole, then renamed).
    pub(crate) fn write_endpoint(&self, e: &Endpoint) -> Result<(), String> {
        self.publish(ENDPOINT_FILE, e)
    }

    /// Writes `value` as pretty JSON to `name`: whole to a temporary file, then renamed
    /// over it, the directory synced, so a reader sees the old file or the new one.
    fn publish(&self, name: &str, value: &impl Serialize) -> Result<(), String> {
        let path = self.path.join(name);
        let text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())? + "\n";
        let tmp = self.write_temporary(name, text.as_bytes())?;
        fs::rename(&tmp, &path).map_err(|e| {
            let _ = fs::remove_file(&tmp);
            format!("{}: {e}", path.display())
        })?;
        self.sync_dir();
        Ok(())
    }

    /// The endpoint the last `serve` published, if any.
    pub(crate) fn endpoint(&self) -> Option<Endpoint> {
        let text = fs::read_to_string(self.path.join(ENDPOINT_FILE)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Records the store the server serves (`store.json`, whole, then renamed), so that
    /// `token` and `demo` find it.
    pub(crate) fn write_store_record(&self, r: &StoreRecord) -> Result<(), String> {
        self.publish(STORE_FILE, r)
    }
}

/// The store `token` and `demo` use on the data dir at `path`: `explicit` (their
/// `--store`) when given; else what the directory's server recorded (`store.json`), its
/// password read back from the configuration file it came from; else (`None`) the
/// directory's SQLite file.
pub(crate) fn served_store(
    path: &Path,
    explicit: Option<&str>,
) -> Result<Option<String>, DirError> {
    if let Some(url) = explicit {
        return Ok(Some(url.to_owned()));
    }
    let file = path.join(STORE_FILE);
    let text = match fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DirError::Other(format!("{}: {e}", file.display()))),
    };
    let record: StoreRecord = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a store record ({e}); pass --store", file.display()))?;
    let shown = path.display();
    match record {
        StoreRecord::Sqlite => Ok(None),
        StoreRecord::Postgres {
            url,
            password: None,
        } => Ok(Some(url)),
        StoreRecord::Postgres {
            url,
            password: Some(PasswordSource::ConfigFile(config)),
        } => {
            let from_file = crate::settings::store_in_file(&config).map_err(|e| {
                format!(
                    "the server on {shown} reads its store's password from {}, which \
                     cannot be read ({e}); pass --store",
                    config.display()
                )
            })?;
            match from_file {
                Some(u) if without_password(&u).0 == url => Ok(Some(u)),
                _ => Err(DirError::NeedsStore(format!(
                    "{}: its `store` no longer names the store the server on {shown} \
                     recorded ({url}); pass --store",
                    config.display()
                ))),
            }
        }
        StoreRecord::Postgres {
            url,
            password: Some(PasswordSource::CommandLine),
        } => Err(DirError::NeedsStore(format!(
            "the server on {shown} serves {url} with a password given on its command line, \
             which only it can read: pass the same URL with --store (or give serve the URL in \
             its configuration file, `store = \"...\"`, where token and demo find it)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fresh_dir(name: &str) -> DataDir {
        let path =
            std::env::temp_dir().join(format!("kobana-datadir-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        DataDir::create(&path).unwrap()
    }

    #[test]
    fn racing_creators_agree_on_one_key_and_leave_no_temporary_file() {
        let dir = Arc::new(fresh_dir("race"));
        let keys: Vec<[u8; 32]> = (0..8)
            .map(|_| {
                let dir = dir.clone();
                std::thread::spawn(move || *dir.secret(DEV_KEY_FILE).unwrap())
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] == w[1]), "one key won");
        let names: Vec<String> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, [DEV_KEY_FILE], "no temporary file left");
        let mode = fs::metadata(dir.path().join(DEV_KEY_FILE))
            .unwrap()
            .permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        let _ = fs::remove_dir_all(dir.path());
    }

    fn refusal(dir: &DataDir) -> DirError {
        match DataDir::open_initialized(dir.path(), None) {
            Ok(_) => panic!("opened"),
            Err(e) => e,
        }
    }

    #[test]
    fn only_a_directory_no_server_ran_on_is_told_to_start_one() {
        let dir = fresh_dir("refusals");
        let e = refusal(&dir);
        assert!(matches!(e, DirError::NotInitialized(_)), "{e}");
        assert!(e.to_string().contains("start the server"), "{e}");

        // A server ran there (endpoint.json) but recorded no store.
        let ep = Endpoint::new("http://127.0.0.1:1", "/", None);
        dir.write_endpoint(&ep).unwrap();
        let e = refusal(&dir).to_string();
        assert!(!e.contains("start the server"), "{e}");
        assert!(e.contains("--store"), "{e}");

        // It recorded SQLite, and the file is gone.
        dir.write_store_record(&StoreRecord::Sqlite).unwrap();
        let e = refusal(&dir).to_string();
        assert!(!e.contains("start the server"), "{e}");
        assert!(e.contains("moved or removed"), "{e}");

        // It runs on PostgreSQL with a password only its command line knows.
        let r = StoreRecord::of(Some("postgres://u:pw@127.0.0.1:1/db"), None);
        dir.write_store_record(&r).unwrap();
        let e = refusal(&dir);
        assert!(matches!(e, DirError::NeedsStore(_)), "{e}");
        let e = e.to_string();
        assert!(
            !e.contains("start the server") && !e.contains(":pw@"),
            "{e}"
        );
        assert!(e.contains("--store"), "{e}");

        // Its configuration file now names another store: refused, not guessed.
        let config = dir.path().join("kd.toml");
        fs::write(&config, "store = \"postgres://u:pw@127.0.0.1:1/other\"\n").unwrap();
        let r = StoreRecord::of(Some("postgres://u:pw@127.0.0.1:1/db"), Some(&config));
        dir.write_store_record(&r).unwrap();
        let e = refusal(&dir);
        assert!(matches!(e, DirError::NeedsStore(_)), "{e}");
        assert!(e.to_string().contains("no longer names"), "{e}");
        // The same store: found, with the file's password.
        fs::write(&config, "store = \"postgres://u:pw@127.0.0.1:1/db\"\n").unwrap();
        assert_eq!(
            served_store(dir.path(), None).unwrap().as_deref(),
            Some("postgres://u:pw@127.0.0.1:1/db")
        );
        // `--store` always wins.
        assert_eq!(
            served_store(dir.path(), Some("postgres://x@h/y"))
                .unwrap()
                .as_deref(),
            Some("postgres://x@h/y")
        );
        let _ = fs::remove_dir_all(dir.path());
    }

    #[test]
    fn the_endpoint_is_replaced_whole() {
        let dir = fresh_dir("endpoint");
        for port in [1, 2] {
            let e = Endpoint::new(&format!("http://127.0.0.1:{port}"), "/", None);
            dir.write_endpoint(&e).unwrap();
            assert_eq!(dir.endpoint(), Some(e));
        }
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
        let _ = fs::remove_dir_all(dir.path());
    }
}
