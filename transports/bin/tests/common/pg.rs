//! The PostgreSQL of the suites: `DUNNING_TEST_PG` names a database (CI's
//! PostgreSQL step sets it).
//!
//! With it, every data dir the helpers hand a server gets a store of its own in that
//! database: a fresh schema (`t_` and a UUID, so CI's sweep finds what a killed run left),
//! migrated, registered under the dir's path. Every command the helpers run on that dir
//! (`serve`, `token`, `demo`) gets `--store <url in that schema>`, so a server restarted
//! on the same dir finds the same data, as it finds the same SQLite file without it. The
//! schema goes with the dir: [`release`] (run when a `Srv` drops and removes the dir)
//! drops both. Without the variable nothing is registered and everything runs on SQLite.
//!
//! The seeded template (`demo` once per test process) is seeded in a schema of its own,
//! copied into memory table by table (`COPY TO STDOUT`) and dropped at once: a static is
//! never dropped, and CI fails on any schema left behind. Each seeded dir then gets a
//! fresh schema filled from that copy (`COPY FROM STDIN`), the same data the SQLite file
//! copy gives, for a fraction of the seeding's time.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use dunning_domain::store::postgres::PostgresStore;
use postgres::{Client, NoTls};

/// The database to run on, when one is named; says that the test is skipped otherwise
/// (the PostgreSQL-only suites: `postgres_store`, `cluster`).
pub fn pg_url() -> Option<String> {
    let url = suite_pg();
    if url.is_none() {
        eprintln!("DUNNING_TEST_PG is not set: skipped (CI runs it on PostgreSQL)");
    }
    url
}

/// The database every helper-started server runs on, when `DUNNING_TEST_PG` names one.
pub fn suite_pg() -> Option<String> {
    std::env::var("DUNNING_TEST_PG")
        .ok()
        .filter(|u| !u.trim().is_empty())
}

/// `url` with every table in `schema` (libpq's `options` parameter).
pub fn in_schema(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

/// A fresh, migrated schema of the suite's database, dropped with this value.
pub struct Schema {
    db: PostgresStore,
    url: String,
}

impl Schema {
    /// A new schema in the database at `url`. Its URL also turns `synchronous_commit`
    /// off, as `PostgresStore::scratch` does for its own connections: nothing of it
    /// outlives the test, so no commit needs to wait for the disk. A commit is still a
    /// commit for every other connection, and a server killed mid-transaction still
    /// loses only what it had not committed (what `durability` checks): only a crash of
    /// PostgreSQL itself could lose the last commits, which no test does.
    pub fn fresh(url: &str) -> Self {
        let db = PostgresStore::scratch(url)
            .unwrap_or_else(|e| panic!("DUNNING_TEST_PG={url}: a scratch schema: {e}"));
        let schema = db.scratch_schema().expect("a scratch store's schema");
        let url = format!("{}%20-c%20synchronous_commit%3Doff", in_schema(url, schema));
        Self { db, url }
    }

    /// The URL of the store in this schema (`--store`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The store in this schema.
    pub fn store(&self) -> &PostgresStore {
        &self.db
    }
}

/// The schemas of the data dirs, by path.
fn registry() -> &'static Mutex<HashMap<PathBuf, Schema>> {
    static DIRS: OnceLock<Mutex<HashMap<PathBuf, Schema>>> = OnceLock::new();
    DIRS.get_or_init(Mutex::default)
}

/// The store URL of `dir` on PostgreSQL (a fresh, empty schema the first time the dir
/// is asked about), `None` on SQLite.
pub fn store_url(dir: &Path) -> Option<String> {
    let url = suite_pg()?;
    let mut dirs = registry().lock().unwrap_or_else(|e| e.into_inner());
    let schema = dirs
        .entry(dir.to_owned())
        .or_insert_with(|| Schema::fresh(&url));
    Some(schema.url().to_owned())
}

/// `["--store", <url>]` for a command run on `dir` (nothing on SQLite).
pub fn store_args(dir: &Path) -> Vec<String> {
    store_url(dir).map_or_else(Vec::new, |u| vec!["--store".into(), u])
}

/// Gives `dir` the schema `schema` (a seeded copy).
fn adopt(dir: &Path, schema: Schema) {
    let mut dirs = registry().lock().unwrap_or_else(|e| e.into_inner());
    dirs.insert(dir.to_owned(), schema);
}

/// Drops the schema of `dir`, if it has one (its dir is being removed).
pub fn release(dir: &Path) {
    let schema = registry()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(dir);
    drop(schema);
}

/// Every table of a seeded schema as `COPY` text, but `schema_migrations` (the fresh copy
/// migrated itself) and `tallies` (its triggers count the copied rows again, as they
/// counted the seeded ones).
pub struct Dump(Vec<(String, Vec<u8>)>);

fn connect(url: &str) -> Client {
    Client::connect(url, NoTls).unwrap_or_else(|e| panic!("{url}: {e}"))
}

fn tables(client: &mut Client) -> Vec<String> {
    client
        .query(
            "SELECT table_name::text FROM information_schema.tables
             WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
               AND table_name NOT IN ('schema_migrations', 'tallies') ORDER BY 1",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
}

/// Runs `seed` with the URL of a new schema, copies its tables into memory and drops
/// it.
pub fn seeded_dump(url: &str, seed: impl FnOnce(&str)) -> Dump {
    let schema = Schema::fresh(url);
    seed(schema.url());
    let mut client = connect(schema.url());
    let mut dump = Vec::new();
    for table in tables(&mut client) {
        let mut rows = Vec::new();
        client
            .copy_out(&format!("COPY {table} TO STDOUT"))
            .unwrap()
            .read_to_end(&mut rows)
            .unwrap();
        dump.push((table, rows));
    }
    Dump(dump)
}

/// Gives `dir` a fresh schema holding the rows of `dump`.
pub fn restore(dir: &Path, url: &str, dump: &Dump) {
    let schema = Schema::fresh(url);
    let mut client = connect(schema.url());
    let mut tx = client.transaction().unwrap();
    for (table, rows) in &dump.0 {
        let mut w = tx.copy_in(&format!("COPY {table} FROM STDIN")).unwrap();
        w.write_all(rows).unwrap();
        w.finish().unwrap();
    }
    tx.commit().unwrap();
    adopt(dir, schema);
}
