//! The PostgreSQL store: the same tables as SQLite (one per [`Kind`], `(org, id,
//! created_at, doc, <indexed columns>)`), behind the same [`Store`]/[`Tx`], on the
//! `tokio-postgres` client driven on the caller's thread and an `r2d2` pool (the `Store` trait
//! is synchronous; `postgres/session.rs`).
//!
//! Semantics, as on SQLite:
//!
//! - `read` is a consistent snapshot: `REPEATABLE READ READ ONLY`.
//! - `write` and `rehearse` of one organization run one at a time, and writes of
//!   different organizations side by side: a write first takes transaction-level
//!   advisory locks by its [`WriteScope`] (`store/scope.rs`), in one statement before
//!   anything else: the schema's key shared and its organization's key exclusive
//!   (`Org`), the grants' key exclusive (`Grants`), the schema's key shared (`Sweep`),
//!   or the schema's key exclusive (`All`, which so waits for every writer). The domain
//!   relies on one writer per organization: an event's `sequence` is `max + 1`
//!   (`Op::event`), the debtor's aggregates are read-modify-write deltas
//!   (`ops::aggregates`), outbox claims are read-then-write, all inside one
//!   organization. The transaction is `READ COMMITTED`, so each statement sees every
//!   writer that committed before the locks were granted (a `REPEATABLE READ` snapshot
//!   would be taken by the lock's own statement, before the wait). With no concurrent
//!   writer in its scope, that is serializable for what the scope lets it write. Unique
//!   constraints back it where a race would corrupt: idempotency keys (primary key,
//!   first write wins) and events' `(org, sequence)`.
//! - `write` commits on `Ok` and rolls back otherwise; `rehearse` always rolls back.
//!
//! Migrations are literal SQL under `migrations/postgres/`, numbered like SQLite's (the
//! same version is the same schema), applied at open in one transaction under another
//! advisory lock (two processes starting at once migrate once) and recorded in
//! `schema_migrations`. A database whose version is newer than this binary knows is
//! refused.

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Once};
use std::time::Duration;

use bytes::BytesMut;
use postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use postgres::{Client, NoTls};
use sha2::{Digest, Sha256};
use tokio_postgres::Config;

use super::{
    ColumnType, MemberEpoch, Store, StoreError, Tx, WriteScope,
    sql::{Arg, Cell, Dialect, Driver, Memory, SqlTx},
};
use crate::error::DomainError;

/// Versioned migrations, frozen like SQLite's (`sqlite::MIGRATIONS`): a released one
/// never changes, a change of [`Kind::columns`] takes a new file here and there
/// (`the_frozen_schema_has_every_declared_column` fails on both stores until then).
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/postgres/0001_entities.sql")),
    (2, include_str!("migrations/postgres/0002_tallies.sql")),
    (
        3,
        include_str!("migrations/postgres/0003_charges_by_debtor.sql"),
    ),
    (4, include_str!("migrations/postgres/0004_oauth_grants.sql")),
    (
        5,
        include_str!("migrations/postgres/0005_members_notify.sql"),
    ),
    (
        6,
        include_str!("migrations/postgres/0006_provider_messages.sql"),
    ),
    (
        7,
        include_str!("migrations/postgres/0007_money_centavos.sql"),
    ),
    (
        8,
        include_str!("migrations/postgres/0008_members_notify_table_schema.sql"),
    ),
    (
        9,
        include_str!("migrations/postgres/0009_tallies_own_schema.sql"),
    ),
    (
        10,
        include_str!("migrations/postgres/0010_debtor_names.sql"),
    ),
];

/// The schema version this binary knows.
pub const SCHEMA_VERSION: i32 = MIGRATIONS[MIGRATIONS.len() - 1].0;

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => Self(format!("postgres: {}: {}", db.code().code(), db.message())),
            None => Self(format!("postgres: {e}")),
        }
    }
}

impl From<r2d2::Error> for StoreError {
    fn from(e: r2d2::Error) -> Self {
        Self(format!("postgres pool: {e}"))
    }
}

/// PostgreSQL store.
pub struct PostgresStore {
    pool: r2d2::Pool<Manager>,
    /// Each organization's writers on this replica, sharing a transaction when they
    /// queue (`postgres/group.rs`).
    groups: group::Groups,
    /// Round trips so far, counted so that tests hold them minimal (`round_trips.rs`).
    trips: Arc<RoundTrips>,
    /// Connections of reads ahead, on the adapter's runtime (`postgres/ahead.rs`).
    ahead: Arc<ahead::Pool>,
    /// The writers' lock keys of this schema ([`WriteScope`]).
    keys: LockKeys,
    /// A schema of its own to drop with the store (tests).
    scratch: Option<String>,
    /// Membership changes: this process's writes, and the others' as notified
    /// ([`members`]; the listener starts at the first question).
    members: Arc<MemberEpoch>,
    listening: Once,
    /// What sessions connect with (the pool's, the listener's, `exclusively`'s).
    config: Config,
    /// When its tables were last analyzed ([`statistics`]).
    statistics: statistics::Statistics,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("connections", &self.pool.max_size())
            .field("scratch", &self.scratch)
            .finish_non_exhaustive()
    }
}

fn parse_url(url: &str) -> Result<Config, StoreError> {
    url.parse::<Config>()
        .map_err(|e| StoreError(format!("postgres: bad URL: {e}")))
}

/// A blocking client of `config`, for what runs outside the pool (migrations,
/// `exclusively`, the membership listener, a scratch schema's creation and drop).
fn blocking(config: &Config) -> Result<Client, postgres::Error> {
    postgres::Config::from(config.clone()).connect(NoTls)
}

/// A name safe to splice into SQL as an identifier.
fn check_ident(name: &str) -> Result<(), StoreError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(StoreError(format!(
            "postgres: schema name {name:?} is not a plain identifier"
        )))
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user@host:port/db`), migrating the database when
    /// behind, with a pool of at most `connections`.
    pub fn open(url: &str, connections: u32) -> Result<Self, StoreError> {
        Self::with_config(parse_url(url)?, connections, None)
    }

    /// Like [`PostgresStore::open`], with every table in `schema` (which must exist):
    /// several stores in one database.
    pub fn open_in_schema(url: &str, schema: &str, connections: u32) -> Result<Self, StoreError> {
        check_ident(schema)?;
        let mut config = parse_url(url)?;
        config.options(format!("-c search_path={schema}"));
        Self::with_config(config, connections, None)
    }

    /// A fresh schema of its own in the database at `url`, named by the database
    /// (`t_` and a random UUID), migrated, and dropped when the store is: every test
    /// its own store, as `SqliteStore::in_memory` gives on SQLite.
    pub fn scratch(url: &str) -> Result<Self, StoreError> {
        // Nothing of a scratch store outlives the test: no commit waits for the disk.
        let fast = "-c synchronous_commit=off";
        let mut admin = blocking(parse_url(url)?.options(fast))?;
        let row = admin.query_one(
            "SELECT 't_' || replace(gen_random_uuid()::text, '-', '')",
            &[],
        )?;
        let schema: String = row.get(0);
        admin.batch_execute(&format!("CREATE SCHEMA {schema}"))?;
        let mut config = parse_url(url)?;
        config.options(format!("-c search_path={schema} {fast}"));
        match Self::with_config(config, 4, Some(schema.clone())) {
            Ok(s) => Ok(s),
            Err(e) => {
                let _ = admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE"));
                Err(e)
            }
        }
    }

    fn with_config(
        mut config: Config,
        connections: u32,
        scratch: Option<String>,
    ) -> Result<Self, StoreError> {
        with_option(&mut config, GENERIC_PLANS);
        // The first connection migrates and fails fast when the server is not there;
        // the pool opens the others on demand.
        let mut first = blocking(&config)?;
        migrate(&mut first)?;
        let schema: String = first.query_one("SELECT current_schema()", &[])?.get(0);
        let pool = r2d2::Pool::builder()
            .max_size(connections.max(1))
            .min_idle(Some(0))
            .connection_timeout(CONNECTION_WAIT)
            .test_on_check_out(false)
            .build_unchecked(Manager {
                config: config.clone(),
            });
        let trips = Arc::new(RoundTrips::default());
        Ok(Self {
            pool,
            groups: group::Groups::default(),
            ahead: Arc::new(ahead::Pool::new(
                config.clone(),
                connections,
                Arc::clone(&trips),
            )),
            trips,
            keys: LockKeys::of(&schema),
            scratch,
            members: Arc::default(),
            listening: Once::new(),
            config,
            statistics: statistics::Statistics::default(),
        })
    }

    /// Runs `f` while holding a session-level advisory lock of this schema: what
    /// processes starting together must do once (seeding the demo data when the database
    /// has no organization) is done by the first, and the others find it done. `f` uses
    /// the store as usual (other connections).
    ///
    /// The lock is held on a connection of its own, outside the pool, and closed at the
    /// end: a session lock lives until it is unlocked or its session ends, so closing the
    /// session releases it on every path, a panic in `f` included. A pooled connection
    /// would go back to the pool still holding it, and every later start would wait.
    pub fn exclusively<R>(&self, f: impl FnOnce() -> R) -> Result<R, StoreError> {
        let mut session = blocking(&self.config)?;
        session.batch_execute(
            "SELECT pg_advisory_lock(hashtextextended('dunning-init:' || current_schema(), 0))",
        )?;
        let out = f();
        // Dropping `session` closes it (and so unlocks) on unwinding too; closing it here
        // says when it fails.
        session.close()?;
        Ok(out)
    }

    /// The scratch schema this store drops when dropped ([`PostgresStore::scratch`]).
    pub fn scratch_schema(&self) -> Option<&str> {
        self.scratch.as_deref()
    }

    fn conn(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        Ok(self.pool.get()?)
    }

    /// The statements that open a write of `scope`, sent with its first statement
    /// ([`Unsent`]): `READ COMMITTED`, and its scope's locks taken before anything else
    /// of it runs (the domain assumes one writer per organization: `max + 1` sequences,
    /// checks then inserts). A read's frame is [`READ_FRAME`].
    fn write_frame(&self, scope: WriteScope<'_>) -> String {
        format!(
            "START TRANSACTION ISOLATION LEVEL READ COMMITTED; {}",
            self.keys.statement(scope)
        )
    }

    /// A pooled connection for a transaction of `access`, its frame not sent yet: it goes
    /// with the first statement ([`Unsent`]), so a transaction that runs none (a read
    /// with all it needs kept, `kept.rs`) costs no round trip, and one that does pays no
    /// round trip of its own for `BEGIN` and its locks.
    fn begin(&self, access: Access<'_>) -> Result<Open, StoreError> {
        let frame = match access {
            Access::Read => Cow::Borrowed(READ_FRAME),
            Access::Write { scope, .. } => Cow::Owned(self.write_frame(scope)),
        };
        Ok(Open {
            conn: self.conn()?,
            unsent: Unsent::opening(frame),
            memory: Memory::default(),
            read: matches!(access, Access::Read),
            ended: false,
        })
    }

    /// Runs `f` in one transaction ([`PostgresStore::begin`]), counted in
    /// [`PostgresStore::round_trips`]. A read always commits (when it began); a write
    /// commits only when `f` succeeded and `commit` says so, its last writes sent with
    /// its `COMMIT`.
    fn in_transaction(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        access: Access<'_>,
    ) -> Result<(), DomainError> {
        let mut open = self.begin(access)?;
        let (out, members) = open.run(f, self);
        let commit = match access {
            Access::Write { commit, .. } => commit && out.is_ok(),
            Access::Read => true,
        };
        open.end(self, commit)?;
        if commit && members {
            // At once for this process; the others hear the trigger's NOTIFY.
            self.members.bump();
        }
        out
    }
}

/// What every session of the store sets: each prepared statement is run with its
/// generic plan, made once per session (and again when its tables' statistics change),
/// never planned again for its arguments.
///
/// Left to itself (`plan_cache_mode = auto`) PostgreSQL plans a statement for its
/// arguments five times, then keeps the generic plan only if its estimated cost is no
/// more than those custom plans' average; the store's statements are filtered by the
/// organization first, whose rows are skewed (one organization has most of them), so the
/// generic plan never won and every execution was planned anew. Planning was most of
/// PostgreSQL's CPU per charges page (766-927 µs a page, against 229-317 with generic
/// plans, same binary, alternated; `docs/decisions.md`, "Generic plans"). Every statement
/// of the store leads with `org = $1` on an index that starts with `org`, which is what
/// a generic plan picks whatever the organization.
const GENERIC_PLANS: &str = "-c plan_cache_mode=force_generic_plan";

/// Adds `option` (`-c name=value`) to the options every session of `config` starts with.
pub(super) fn with_option(config: &mut Config, option: &str) {
    let options = config.get_options().unwrap_or_default();
    config.options(format!("{options} {option}").trim_start());
}

/// How long a transaction waits for a connection (a free one, or a new one connected)
/// before it fails: the pool's, and the reads ahead's (`postgres/ahead.rs`).
const CONNECTION_WAIT: Duration = Duration::from_secs(10);

/// The frame of every read.
const READ_FRAME: &str = "START TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// What a transaction has yet to send. All of it goes with the next statement whose
/// answer is awaited, or with the transaction's end, in one round trip
/// ([`session::Session::pipeline`]): the frame (`BEGIN` and the writers' locks), a
/// group writer's savepoint, and the writes whose answers nobody reads ([`Driver::defer`];
/// their errors surface there, before the writer's outcome is decided).
#[derive(Default)]
struct Unsent {
    /// Simple-protocol text, in order: the frame, a savepoint (a read's frame borrowed).
    text: Cow<'static, str>,
    /// `text` opens the transaction: nothing of it has reached the server.
    opens: bool,
    /// Writes, in order, by SQL text (their statements are looked up when sent, so a
    /// session replaced before the frame prepares them anew).
    writes: Vec<(String, Vec<Arg>)>,
}

/// Deferred writes sent at once past this many, so a long import holds a bounded
/// pipeline in memory.
const WRITES_HELD: usize = 64;

impl Unsent {
    fn opening(frame: Cow<'static, str>) -> Self {
        Self {
            text: frame,
            opens: true,
            writes: Vec::new(),
        }
    }

    /// Adds `text` (a savepoint) after what is unsent.
    fn say(&mut self, text: &str) {
        let all = self.text.to_mut();
        if !all.is_empty() {
            all.push_str("; ");
        }
        all.push_str(text);
    }
}

/// A pooled connection inside a transaction: ended by [`Open::end`], or rolled back when
/// dropped before (an error or a panic in the domain's closure).
struct Open {
    conn: r2d2::PooledConnection<Manager>,
    unsent: Unsent,
    /// What the transaction has read, kept from one writer of a group to the next.
    memory: Memory,
    /// A read: its `COMMIT` is not waited for ([`Open::end`]).
    read: bool,
    ended: bool,
}

impl Open {
    /// The driver of this transaction of `store`.
    fn pg<'a>(&'a mut self, store: &'a PostgresStore) -> Pg<'a> {
        Pg {
            conn: &mut self.conn,
            config: &store.config,
            trips: &store.trips,
            unsent: &mut self.unsent,
        }
    }

    /// The transaction's frame has reached the server: there is something to end.
    fn begun(&self) -> bool {
        !self.unsent.opens
    }

    /// Runs `f` on this transaction of `store` (each statement counted in its round
    /// trips); returns its outcome and whether it wrote a member or an organization.
    /// What `f` deferred is still unsent ([`Open::flush`], [`Open::end`]).
    fn run(
        &mut self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        store: &PostgresStore,
    ) -> (Result<(), DomainError>, bool) {
        let memory = std::mem::take(&mut self.memory);
        let mut t = SqlTx::resume(self.pg(store), memory);
        let out = f(&mut t);
        let members = t.members;
        self.memory = t.memory;
        (out, members)
    }

    /// Sends the deferred writes, if any (with what else is unsent before them).
    fn flush(&mut self, store: &PostgresStore) -> Result<(), StoreError> {
        if self.unsent.writes.is_empty() {
            return Ok(());
        }
        self.pg(store).send(&[], None).map(drop)
    }

    /// Ends the transaction: `COMMIT` after its deferred writes (`commit`), or
    /// `ROLLBACK` without them; a transaction whose frame never left has nothing to end
    /// but what it deferred. A read's `COMMIT` is sent and not waited for: its answers
    /// are in hand, and it holds nothing to keep (a write in a read goes as a write's
    /// would, to be refused as read-only).
    fn end(&mut self, store: &PostgresStore, commit: bool) -> Result<(), StoreError> {
        self.ended = true;
        if !commit {
            self.unsent.writes.clear();
        }
        if !self.begun() && self.unsent.writes.is_empty() {
            return Ok(());
        }
        if self.read && self.unsent.writes.is_empty() {
            self.conn.session.send_unanswered("COMMIT");
            return Ok(());
        }
        let out = self
            .pg(store)
            .send(&[], Some(if commit { "COMMIT" } else { "ROLLBACK" }));
        if commit && out.is_ok() {
            let written = store.trips.written.load(Ordering::Relaxed);
            store.statistics.committed(written, &store.config);
        }
        if out.is_err() && !self.conn.session.is_closed() {
            // A deferred write refused: `COMMIT` in the failed transaction rolled it
            // back, and the session is idle again. Anything else leaves it unknown.
            self.conn.broken |= self
                .conn
                .session
                .pipeline(&[Item::Text("ROLLBACK")])
                .is_err();
        }
        out.map(drop)
    }

    /// Sends `text` (a savepoint's rollback) now.
    fn say_now(&mut self, text: &str) -> Result<(), StoreError> {
        Ok(self.conn.session.pipeline(&[Item::Text(text)]).map(drop)?)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if !self.ended && self.begun() && self.say_now("ROLLBACK").is_err() {
            self.conn.broken = true;
        }
    }
}

/// What a transaction may do.
#[derive(Clone, Copy)]
enum Access<'s> {
    Read,
    Write { scope: WriteScope<'s>, commit: bool },
}

/// The advisory lock keys of one schema's writers. Keys are 64-bit digests of a name
/// that holds the schema, so two stores in one database (tests, clusters) never share a
/// lock, and an organization's key is computed here rather than by the server: the lock
/// statement is plain text with literal integers, sent with the transaction's first
/// round trip and never prepared.
#[derive(Debug)]
struct LockKeys {
    schema: String,
    all: i64,
    grants: i64,
}

impl LockKeys {
    fn of(schema: &str) -> Self {
        Self {
            schema: schema.to_owned(),
            all: lock_key(&format!("dunning-write:{schema}")),
            grants: lock_key(&format!("dunning-grants:{schema}")),
        }
    }

    /// The one statement a write of `scope` starts with.
    fn statement(&self, scope: WriteScope<'_>) -> String {
        let all = self.all;
        match scope {
            WriteScope::Org(org) => {
                let org = lock_key(&format!("dunning-org:{}:{org}", self.schema));
                format!("SELECT pg_advisory_xact_lock_shared({all}), pg_advisory_xact_lock({org})")
            }
            WriteScope::Grants => format!(
                "SELECT pg_advisory_xact_lock_shared({all}), pg_advisory_xact_lock({})",
                self.grants
            ),
            WriteScope::Sweep => format!("SELECT pg_advisory_xact_lock_shared({all})"),
            WriteScope::All => format!("SELECT pg_advisory_xact_lock({all})"),
        }
    }
}

/// The first 8 bytes of SHA-256 of `name`, as PostgreSQL's `bigint` lock key.
fn lock_key(name: &str) -> i64 {
    let digest = Sha256::digest(name.as_bytes());
    let mut first = [0; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

impl Drop for PostgresStore {
    /// Drops a scratch store's schema on a connection of its own, not one of the pool's:
    /// the pool may be exhausted or its connections broken, and a schema left behind
    /// fails CI's sweep. A failure is said on stderr (scratch stores are the tests').
    fn drop(&mut self) {
        let Some(schema) = &self.scratch else { return };
        let drop_it = || -> Result<(), postgres::Error> {
            let mut admin = blocking(&self.config)?;
            admin.batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        };
        if let Err(e) = drop_it() {
            eprintln!("scratch schema {schema} not dropped: {e:?}");
        }
    }
}

/// Applies the pending migrations in one transaction, under an advisory lock of the
/// schema: a second process starting at the same moment waits, then finds them done.
fn migrate(client: &mut Client) -> Result<(), StoreError> {
    let mut tx = client.transaction()?;
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('dunning-migrate:' || current_schema(), 0));
         CREATE TABLE IF NOT EXISTS schema_migrations (
             version integer PRIMARY KEY,
             applied_at timestamptz NOT NULL DEFAULT now())",
    )?;
    let current: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
            &[],
        )?
        .get(0);
    if current > SCHEMA_VERSION {
        return Err(StoreError(format!(
            "postgres: the database's schema is at version {current}, newer than this binary \
             knows ({SCHEMA_VERSION}): run the newer binary (or a backup made for this one)"
        )));
    }
    for &(version, sql) in MIGRATIONS {
        if version <= current {
            continue;
        }
        tx.batch_execute(sql)
            .map_err(|e| StoreError(format!("migration {version}: {}", StoreError::from(e))))?;
        tx.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&version],
        )?;
    }
    tx.commit()?;
    Ok(())
}

impl Store for PostgresStore {
    fn read(
        &self,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError> {
        self.in_transaction(f, Access::Read)
    }

    /// An organization's writes are grouped per organization (`postgres/group.rs`);
    /// the others run in a transaction each.
    fn transact(
        &self,
        scope: WriteScope<'_>,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
        commit: bool,
    ) -> Result<(), DomainError> {
        match scope {
            WriteScope::Org(org) => self.grouped_write(org, f, commit),
            _ => self.in_transaction(f, Access::Write { scope, commit }),
        }
    }

    fn ahead(&self) -> Option<Arc<dyn dunning_core::Ahead>> {
        Some(Arc::new(ahead::PgAhead::new(Arc::clone(&self.ahead))))
    }

    /// Without a round trip: `f` reads what the rounds of `ahead` fetched
    /// (`postgres/ahead.rs`); given up, or another store's, a read as [`Store::read`].
    fn read_ahead(
        &self,
        ahead: &dyn dunning_core::Ahead,
        f: &mut dyn FnMut(&mut dyn Tx) -> Result<(), DomainError>,
    ) -> Result<(), DomainError> {
        let any: &dyn std::any::Any = ahead;
        match any.downcast_ref::<ahead::PgAhead>() {
            Some(pg) if !pg.given_up() => f(&mut SqlTx::new(pg.answered())),
            _ => self.read(f),
        }
    }

    fn loaded(&self) {
        let written = self.trips.written.load(Ordering::Relaxed);
        self.statistics.now(written, &self.config);
    }

    fn members_epoch(&self) -> Option<u64> {
        self.listening
            .call_once(|| members::listen(self.config.clone(), &self.keys.schema, &self.members));
        self.members.current()
    }

    fn ping(&self) -> bool {
        self.pool
            .get_timeout(Duration::from_secs(2))
            .is_ok_and(|mut c| c.session.pipeline(&[Item::Text("SELECT 1")]).is_ok())
    }
}

impl PostgresStore {
    /// `(transactions, statements)` run so far: the statements are the domain's own
    /// (each prepare and each execution), the transactions' frames apart.
    pub fn round_trips(&self) -> (u64, u64) {
        (
            self.trips.transactions.load(Ordering::Relaxed),
            self.trips.statements.load(Ordering::Relaxed),
        )
    }

    /// The exchanges with the server so far: what a caller waits for, however many
    /// statements each carried.
    pub fn exchanges(&self) -> u64 {
        self.trips.exchanges.load(Ordering::Relaxed)
    }
}

/// The PostgreSQL driver of the store's one [`SqlTx`]: every statement prepared once
/// per connection and kept (`session.rs`), sent with what the transaction has unsent.
struct Pg<'a> {
    conn: &'a mut Conn,
    /// To open a session in place of one found closed before its transaction began.
    config: &'a Config,
    trips: &'a RoundTrips,
    unsent: &'a mut Unsent,
}

impl ToSql for Arg {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Self::Null => Ok(IsNull::Yes),
            Self::Text(s) => s.to_sql_checked(ty, out),
            Self::Int(n) => n.to_sql_checked(ty, out),
            Self::Json(v) => v.to_sql_checked(ty, out),
            // An array of the column's type (`= ANY($n)`: one statement whatever the
            // list's length).
            Self::List(col, items) => {
                fn each<T>(items: &[Arg], f: impl Fn(&Arg) -> Option<T>) -> Vec<Option<T>> {
                    items.iter().map(f).collect()
                }
                match col {
                    ColumnType::Text => each(items, |a| match a {
                        Self::Text(s) => Some(s.clone()),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                    ColumnType::Integer | ColumnType::Money => each(items, |a| match a {
                        Self::Int(n) => Some(*n),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                    ColumnType::Tags => each(items, |a| match a {
                        Self::Json(v) => Some(v.clone()),
                        _ => None,
                    })
                    .to_sql_checked(ty, out),
                }
            }
        }
    }

    /// Whatever PostgreSQL inferred for the mark: each variant checks its own type
    /// when bound (`to_sql_checked` above).
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl Pg<'_> {
    /// Sends what is unsent, then `last` (statements whose answers are awaited), then
    /// `tail` (a transaction's end), in one exchange; answers each of `last`'s rows and
    /// count.
    ///
    /// The pool hands a connection out without pinging it first (a round trip per
    /// transaction): one found closed here, when this exchange opens the transaction
    /// (nothing of it ran), is replaced in place by a new session and everything sent
    /// once more (`docs/decisions.md`, "PostgreSQL round trips"). Whatever the outcome,
    /// what was unsent is sent or lost with its transaction.
    fn send(
        &mut self,
        last: &[(&str, &[Arg])],
        tail: Option<&str>,
    ) -> Result<Vec<Answer>, StoreError> {
        let opens = self.unsent.opens;
        let out = match self.exchange(last, tail) {
            Err(_) if opens && self.conn.session.is_closed() => {
                self.conn.reopen(self.config)?;
                self.exchange(last, tail)
            }
            other => other,
        };
        if opens {
            self.trips.transactions.fetch_add(1, Ordering::Relaxed);
        }
        *self.unsent = Unsent::default();
        out
    }

    fn exchange(
        &mut self,
        last: &[(&str, &[Arg])],
        tail: Option<&str>,
    ) -> Result<Vec<Answer>, StoreError> {
        let Self {
            conn,
            trips,
            unsent,
            ..
        } = self;
        // A prepare is an exchange of its own, the first time on a session.
        let written = trips.written.load(Ordering::Relaxed);
        let mut prepared = |sql: &str| -> Result<_, StoreError> {
            let (statement, now) = conn.statement(sql, written)?;
            if now {
                trips.prepared();
            }
            Ok(statement)
        };
        let mut statements = Vec::with_capacity(unsent.writes.len() + last.len());
        for (sql, _) in &unsent.writes {
            statements.push(prepared(sql)?);
        }
        for (sql, _) in last {
            statements.push(prepared(sql)?);
        }
        let args = unsent.writes.iter().map(|(_, a)| a.as_slice());
        let args = args.chain(last.iter().map(|&(_, a)| a));
        let mut items = Vec::with_capacity(statements.len() + 2);
        if !unsent.text.is_empty() {
            items.push(Item::Text(&unsent.text));
        }
        items.extend(
            statements
                .iter()
                .zip(args)
                .map(|(s, a)| Item::Statement(s, a)),
        );
        items.extend(tail.map(Item::Text));
        trips.exchange(statements.len());
        let mut answers = conn.session.pipeline(&items)?;
        let rows: u64 = answers[..unsent.writes.len()].iter().map(|a| a.1).sum();
        trips.written.fetch_add(rows, Ordering::Relaxed);
        // The writes' answers first, then `last`'s.
        Ok(answers.split_off(answers.len().saturating_sub(last.len())))
    }

    fn answer(&mut self, sql: &str, args: &[Arg]) -> Result<Answer, StoreError> {
        let answer = self.send(&[(sql, args)], None)?.pop();
        answer.ok_or_else(|| StoreError("postgres: a statement without its answer".into()))
    }
}

/// A row's cells: integers as integers, anything else as its text.
fn cells(row: &tokio_postgres::Row) -> Result<Vec<Cell>, StoreError> {
    (0..row.len())
        .map(|i| {
            Ok(match *row.columns()[i].type_() {
                Type::INT8 => row.try_get::<_, Option<i64>>(i)?.map(Cell::Int),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(i)?
                    .map(|n| Cell::Int(i64::from(n))),
                _ => row.try_get::<_, Option<String>>(i)?.map(Cell::Text),
            }
            .unwrap_or(Cell::Null))
        })
        .collect()
}

impl Driver for Pg<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    fn rows(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<Vec<Cell>>, StoreError> {
        let (rows, _) = self.answer(sql, args)?;
        rows.iter().map(cells).collect()
    }

    fn texts(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<String>, StoreError> {
        let (rows, _) = self.answer(sql, args)?;
        Ok(rows
            .iter()
            .map(|r| r.try_get::<_, String>(0))
            .collect::<Result<_, _>>()?)
    }

    fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, StoreError> {
        Ok(self.answer(sql, args)?.1)
    }

    fn defer(&mut self, sql: &str, args: Vec<Arg>) -> Result<(), StoreError> {
        self.unsent.writes.push((sql.to_owned(), args));
        if self.unsent.writes.len() >= WRITES_HELD {
            self.send(&[], None)?;
        }
        Ok(())
    }
}

/// Tests that need PostgreSQL itself (the schema, the migrations, the snapshot). They
/// run when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step) and say so and
/// pass otherwise; the store's contract (`store::tests`) runs on both stores.
#[cfg(test)]
mod tests;

mod ahead;
mod group;
mod members;
mod session;
mod statistics;
mod trips;

use session::{Answer, Conn, Item, Manager};
#[cfg(test)]
use session::{REPLAN_AFTER, REPLAN_ROWS};
use trips::RoundTrips;
