use super::*;
use crate::store::{Kind, Query, read, write};
use crate::testing::{PG_VAR, pg_url, polled};
use serde_json::Value;
use serde_json::json;

fn url() -> Option<String> {
    let url = pg_url();
    if url.is_none() {
        eprintln!("{PG_VAR} is not set: skipped (CI runs it on PostgreSQL)");
    }
    url
}

/// An empty schema of its own (dropped at the end), for tests that migrate by hand.
struct Schema {
    admin: Client,
    name: String,
    url: String,
}

impl Schema {
    fn new(url: &str) -> Self {
        let mut admin = blocking(&parse_url(url).unwrap()).unwrap();
        let name: String = admin
            .query_one(
                "SELECT 't_' || replace(gen_random_uuid()::text, '-', '')",
                &[],
            )
            .unwrap()
            .get(0);
        admin
            .batch_execute(&format!("CREATE SCHEMA {name}"))
            .unwrap();
        Self {
            admin,
            name,
            url: url.to_owned(),
        }
    }

    fn client(&self) -> Client {
        client_in(&self.url, &self.name)
    }
}

fn client_in(url: &str, schema: &str) -> Client {
    let mut c = parse_url(url).unwrap();
    c.options(format!("-c search_path={schema}"));
    blocking(&c).unwrap()
}

impl Drop for Schema {
    fn drop(&mut self) {
        let _ = self
            .admin
            .batch_execute(&format!("DROP SCHEMA {} CASCADE", self.name));
    }
}

/// An entity's indexed columns ([`Kind::columns`]) must be in the frozen PostgreSQL
/// schema with their type, and nothing else: the twin of SQLite's test.
#[test]
fn the_frozen_schema_has_every_declared_column() {
    let Some(url) = url() else { return };
    let schema = Schema::new(&url);
    let mut c = schema.client();
    migrate(&mut c).expect("the migrations run");
    for kind in Kind::ALL {
        let have: Vec<(String, String)> = c
            .query(
                "SELECT column_name::text, data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1",
                &[&kind.table()],
            )
            .expect("columns")
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        crate::store::assert_columns_declared(kind, &have, "PostgreSQL", |ty| match ty {
            ColumnType::Text => "text",
            ColumnType::Tags => "jsonb",
            ColumnType::Integer | ColumnType::Money => "bigint",
        });
    }
    // Text compares bytewise, as on SQLite.
    let collations: Vec<String> = c
        .query(
            "SELECT DISTINCT COALESCE(collation_name::text, '?') FROM information_schema.columns \
             WHERE table_schema = current_schema() AND data_type = 'text'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(collations, ["C"]);
}

/// Two processes starting at once on a new database: one migrates, the other waits
/// for it and finds nothing to do (without the lock, the second's `CREATE TABLE`
/// fails or the versions are recorded twice).
#[test]
fn migrations_run_once_even_when_started_together() {
    let Some(url) = url() else { return };
    let schema = Schema::new(&url);
    let (url, name) = (&schema.url, &schema.name);
    let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| migrate(&mut client_in(url, name))))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in results {
        r.expect("every starter succeeds");
    }
    migrate(&mut schema.client()).expect("a later start is a no-op");
    let versions: Vec<i32> = schema
        .client()
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

/// A database migrated by a newer binary is refused with a clear error, and left
/// as it was.
#[test]
fn a_database_newer_than_the_binary_is_refused() {
    let Some(url) = url() else { return };
    let schema = Schema::new(&url);
    migrate(&mut schema.client()).unwrap();
    let newer = SCHEMA_VERSION + 1;
    schema
        .client()
        .execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&newer],
        )
        .unwrap();
    let err = PostgresStore::open_in_schema(&url, &schema.name, 1)
        .expect_err("a newer schema is refused");
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("version {newer}")) && msg.contains("newer than this binary knows"),
        "{msg}"
    );
    let n: i64 = schema
        .client()
        .query_one("SELECT COUNT(*) FROM schema_migrations", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, i64::from(newer));
}

/// `read` is one snapshot: a write committed while a read runs is not seen by it,
/// and a read after the commit sees it.
#[test]
fn a_read_is_one_snapshot() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let doc = |id: &str| json!({"id": id, "created_at": "2026-01-01", "status": "pending"});
    write(&s, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Charge, "a", &doc("1"))?)
    })
    .unwrap();
    let (before, during) = read(&s, |tx| {
        let before = tx.count(Kind::Charge, "a", &[])?;
        write(&s, WriteScope::All, |w| {
            Ok(w.put(Kind::Charge, "a", &doc("2"))?)
        })?;
        let during = (
            tx.count(Kind::Charge, "a", &[])?,
            tx.get(Kind::Charge, "a", "2")?.is_some(),
        );
        Ok((before, during))
    })
    .unwrap();
    assert_eq!((before, during), (1, (1, false)));
    assert_eq!(
        read(&s, |tx| Ok(tx.count(Kind::Charge, "a", &[])?)).unwrap(),
        2
    );
    // And it is read-only.
    let err = read(&s, |tx| Ok(tx.put(Kind::Charge, "a", &doc("3"))?)).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
}

/// A document comes back exactly as written (key order, number spelling): `doc` is
/// `json`, not `jsonb`, so an event's `data` lists as the tool wrote it.
#[test]
fn documents_come_back_byte_for_byte() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let text = r#"{"id":"1","created_at":"2026-01-01","zeta":1,"alpha":{"b":2,"a":1.50},"tags":["b","a"]}"#;
    let doc: Value = serde_json::from_str(text).unwrap();
    write(&s, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Debtor, "a", &doc)?)
    })
    .unwrap();
    let raw = read(&s, |tx| {
        Ok(tx.find_raw(Kind::Debtor, "a", &Query::all())?)
    })
    .unwrap();
    assert_eq!(raw, [doc.to_string()]);
}

/// The scratch schema is gone once its store is.
#[test]
fn a_scratch_schema_is_dropped_with_its_store() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let name = s.scratch.clone().unwrap();
    assert!(s.ping());
    drop(s);
    let mut admin = blocking(&parse_url(&url).unwrap()).unwrap();
    let n: i64 = admin
        .query_one(
            "SELECT COUNT(*) FROM pg_namespace WHERE nspname = $1",
            &[&name],
        )
        .unwrap()
        .get(0);
    assert_eq!(n, 0);
}

/// Another process's write to a member reaches this store's members epoch within a
/// second (migration 5's trigger, the listener), and this store's own write at once.
#[test]
fn member_writes_move_the_epoch_across_stores() {
    let Some(url) = url() else { return };
    let a = PostgresStore::scratch(&url).unwrap();
    let schema = a.scratch_schema().unwrap().to_owned();
    let b = PostgresStore::open_in_schema(&url, &schema, 2).unwrap();
    let before = crate::testing::watched_epoch(|| b.members_epoch());
    let own = a.members_epoch();
    let doc = json!({"id": "m1", "created_at": "2026-01-01T00:00:00Z", "email": "x@y.z", "role": "viewer"});
    write(&a, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Member, "org1", &doc)?)
    })
    .unwrap();
    if let (Some(o), Some(now)) = (own, a.members_epoch()) {
        assert_ne!(o, now, "this store's own write moves its epoch at once");
    }
    let mut waits = 0;
    while b.members_epoch() == Some(before) {
        waits += 1;
        assert!(
            waits < 200,
            "no notification within 200 sleeps of 5 ms (≈ 1 s)"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    // Other kinds do not.
    let settled = loop {
        let e = b.members_epoch();
        std::thread::sleep(Duration::from_millis(100));
        if e == b.members_epoch() {
            break e;
        }
    };
    let debtor = json!({"id": "d1", "created_at": "2026-01-01T00:00:00Z", "name": "D"});
    write(&a, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Debtor, "org1", &debtor)?)
    })
    .unwrap();
    // Nor do another schema's members (the channel is the database's).
    let other = PostgresStore::scratch(&url).unwrap();
    write(&other, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Member, "org1", &doc)?)
    })
    .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(b.members_epoch(), settled);
    // An operator's statement on this schema's table from a session whose search path is
    // elsewhere does (the payload is the table's schema, not the writer's).
    let mut admin = blocking(&parse_url(&url).unwrap()).unwrap();
    admin
        .batch_execute(&format!("TRUNCATE {schema}.members"))
        .unwrap();
    let mut waits = 0;
    while b.members_epoch() == settled {
        waits += 1;
        assert!(
            waits < 200,
            "the operator's truncate was not heard within ≈ 1 s"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `exclusively` must release its lock on every path: a panic inside it leaves the next
/// caller (another store, as another process would be) free to take it at once.
#[test]
fn exclusively_releases_its_lock_when_its_closure_panics() {
    let Some(url) = url() else { return };
    let store = Arc::new(PostgresStore::scratch(&url).unwrap());
    let schema = store.scratch_schema().unwrap().to_owned();
    let inner = Arc::clone(&store);
    let panicked = std::thread::spawn(move || {
        inner
            .exclusively::<()>(|| panic!("seeding failed"))
            .unwrap();
    })
    .join();
    assert!(panicked.is_err(), "the closure's panic reaches the caller");
    // Another store on the same schema, with a lock timeout: it gets the lock or says so.
    let other = PostgresStore::open_in_schema(&url, &schema, 2).unwrap();
    let mut probe = client_in(&url, &schema);
    probe.batch_execute("SET lock_timeout = '2s'").unwrap();
    let held: i64 = probe
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = \
             (hashtextextended('dunning-init:' || current_schema(), 0) & 4294967295)::oid",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(held, 0, "no session still holds the init lock");
    assert_eq!(other.exclusively(|| 7).unwrap(), 7);
}

/// A second store on `first`'s schema, as another replica on the same database is.
fn replica(url: &str, first: &PostgresStore) -> PostgresStore {
    PostgresStore::open_in_schema(url, first.scratch_schema().unwrap(), 4).unwrap()
}

/// Holds a write of `scope` open on `store` (after it put one event) until `release`
/// is sent; `held` is sent once the transaction holds its locks and has written.
fn hold_open(
    store: Arc<PostgresStore>,
    scope_org: Option<&'static str>,
    held: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Receiver<()>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let scope = scope_org.map_or(WriteScope::All, WriteScope::Org);
        write(&*store, scope, |tx| {
            let org = scope_org.unwrap_or("a");
            tx.put(Kind::Event, org, &event("held", 1))?;
            // A statement answered: the frame (its locks) and the deferred write are in.
            tx.count(Kind::Event, org, &[])?;
            held.send(()).unwrap();
            // Bounded: a test that fails must not hang the suite.
            let _ = release.recv_timeout(Duration::from_secs(30));
            Ok(())
        })
        .unwrap();
    })
}

fn event(id: &str, sequence: u64) -> Value {
    json!({"id": id, "created_at": "2026-01-01T00:00:00Z", "sequence": sequence})
}

/// Writes `n` events of organization `a`, numbered on from `from`, in one write.
fn grow_events(store: &PostgresStore, from: u64, n: u64) {
    write(store, WriteScope::Org("a"), |tx| {
        for i in from..from + n {
            tx.put(Kind::Event, "a", &event(&format!("e{i}"), i + 1))?;
        }
        Ok(())
    })
    .unwrap();
}

/// Runs `f` on its own thread; whether it finished within `limit`.
fn finishes_within(limit: Duration, f: impl FnOnce() + Send + 'static) -> bool {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    finished.recv_timeout(limit).is_ok()
}

/// Whether some session of this database waits for an advisory lock, within `limit`.
fn someone_waits(url: &str, limit: Duration) -> bool {
    let mut probe = blocking(&parse_url(url).unwrap()).unwrap();
    let step = Duration::from_millis(20);
    let tries = u32::try_from(limit.as_millis() / step.as_millis()).unwrap_or(u32::MAX);
    polled(tries, step, || {
        let waiting: i64 = probe
            .query_one(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted \
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                &[],
            )
            .unwrap()
            .get(0);
        waiting > 0
    })
}

/// Organization A's write transaction is held open on one replica while organization
/// B's write commits through another: writes of different organizations never wait on
/// each other.
#[test]
fn another_organizations_write_commits_while_one_is_held_open() {
    let Some(url) = url() else { return };
    let a = Arc::new(PostgresStore::scratch(&url).unwrap());
    let b = Arc::new(replica(&url, &a));
    let (held, is_held) = std::sync::mpsc::channel();
    let (release, released) = std::sync::mpsc::channel();
    let holder = hold_open(Arc::clone(&a), Some("org-a"), held, released);
    is_held.recv_timeout(Duration::from_secs(10)).unwrap();
    let other = Arc::clone(&b);
    let committed = finishes_within(Duration::from_secs(10), move || {
        write(&*other, WriteScope::Org("org-b"), |tx| {
            Ok(tx.put(Kind::Event, "org-b", &event("b1", 1))?)
        })
        .unwrap();
    });
    let seen = read(&*b, |tx| Ok(tx.count(Kind::Event, "org-b", &[])?)).unwrap();
    release.send(()).unwrap();
    holder.join().unwrap();
    assert!(
        committed,
        "organization B's write waited for A's open transaction"
    );
    assert_eq!(seen, 1, "B's write is committed while A's is still open");
}

/// Two writers of one organization on two replicas: the second waits for the first to
/// commit, and then sees its write (what `max + 1` sequences rely on). A write of every
/// organization (`All`) waits too.
#[test]
fn writers_of_one_organization_and_of_all_wait_for_an_open_one() {
    let Some(url) = url() else { return };
    let a = Arc::new(PostgresStore::scratch(&url).unwrap());
    let b = Arc::new(replica(&url, &a));
    for scope in [WriteScope::Org("org-a"), WriteScope::All] {
        let (held, is_held) = std::sync::mpsc::channel();
        let (release, released) = std::sync::mpsc::channel();
        let holder = hold_open(Arc::clone(&a), Some("org-a"), held, released);
        is_held.recv_timeout(Duration::from_secs(10)).unwrap();
        let (seen_tx, seen) = std::sync::mpsc::channel();
        let other = Arc::clone(&b);
        let waiter = std::thread::spawn(move || {
            write(&*other, scope, |tx| {
                let n = tx.count(Kind::Event, "org-a", &[])?;
                seen_tx.send(n).unwrap();
                tx.delete(Kind::Event, "org-a", "held")?;
                Ok(())
            })
            .unwrap();
        });
        assert!(
            someone_waits(&url, Duration::from_secs(10)),
            "{scope:?} waits"
        );
        assert!(
            seen.try_recv().is_err(),
            "{scope:?} ran while org-a's write was open"
        );
        release.send(()).unwrap();
        holder.join().unwrap();
        waiter.join().unwrap();
        assert_eq!(
            seen.recv().unwrap(),
            1,
            "{scope:?} sees the committed write"
        );
    }
}

/// Per-organization event sequences stay gapless and unique when writers of two
/// organizations run at once through two replicas, each reading `max + 1` as `Op::event`
/// does (the unique `(org, sequence)` index would refuse a duplicate).
#[test]
fn concurrent_writers_keep_each_organizations_sequence() {
    let Some(url) = url() else { return };
    let a = Arc::new(PostgresStore::scratch(&url).unwrap());
    let b = Arc::new(replica(&url, &a));
    const EACH: u64 = 15;
    let mut workers = Vec::new();
    for (n, org) in ["org-a", "org-b", "org-a", "org-b"].into_iter().enumerate() {
        let store = Arc::clone(if n % 2 == 0 { &a } else { &b });
        workers.push(std::thread::spawn(move || {
            for i in 0..EACH {
                write(&*store, WriteScope::Org(org), |tx| {
                    let next = tx.next_event_sequence(org)?;
                    Ok(tx.put(Kind::Event, org, &event(&format!("{n}-{i}"), next))?)
                })
                .unwrap();
            }
        }));
    }
    for w in workers {
        w.join().unwrap();
    }
    for org in ["org-a", "org-b"] {
        let mut seqs: Vec<u64> = read(&*a, |tx| Ok(tx.find(Kind::Event, org, &Query::all())?))
            .unwrap()
            .iter()
            .filter_map(|e| e.get("sequence").and_then(Value::as_u64))
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=2 * EACH).collect::<Vec<_>>(), "{org}");
    }
}

/// Migration 7 turns the `double precision` amounts of a database written before it
/// into whole centavos (`bigint`), and leaves the documents as they were.
#[test]
fn money_columns_become_whole_centavos() {
    let Some(url) = url() else { return };
    let schema = Schema::new(&url);
    let mut c = schema.client();
    c.batch_execute(
        "CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
    )
    .unwrap();
    for &(version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v < 7) {
        c.batch_execute(sql).unwrap();
        c.execute(
            "INSERT INTO schema_migrations (version) VALUES ($1)",
            &[&version],
        )
        .unwrap();
    }
    let doc = r#"{"id":"c1","created_at":"2026-01-01","amount":150.1}"#;
    c.execute(
        "INSERT INTO charges (org, id, created_at, doc, amount) VALUES ('o', 'c1', '2026-01-01', $1::text::json, 150.1)",
        &[&doc],
    )
    .unwrap();
    migrate(&mut c).unwrap();
    let row = c
        .query_one("SELECT amount, doc::text FROM charges WHERE id = 'c1'", &[])
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 15010);
    assert_eq!(row.get::<_, String>(1), doc);
}

/// A scratch store, and a replica of it with a pool of one connection (the one the
/// test watches).
fn one_connection(url: &str) -> (PostgresStore, PostgresStore) {
    let first = PostgresStore::scratch(url).unwrap();
    let one = PostgresStore::open_in_schema(url, first.scratch_schema().unwrap(), 1).unwrap();
    (first, one)
}

/// The backend that holds `org`'s writer lock of `schema` now (asked from `probe`).
fn holder_of(probe: &mut Client, schema: &str, org: &str) -> i32 {
    let key = lock_key(&format!("dunning-org:{schema}:{org}"));
    probe
        .query_one(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND mode = 'ExclusiveLock' \
             AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid",
            &[&key],
        )
        .unwrap()
        .get(0)
}

/// Writes event `e1` of `org-a` through `store`'s one connection; the backend's pid (it
/// holds the organization's lock while the write runs).
fn write_e1(store: &PostgresStore, probe: &mut Client, schema: &str) -> i32 {
    let mut pid = 0;
    write(store, WriteScope::Org("org-a"), |tx| {
        tx.put(Kind::Event, "org-a", &event("e1", 1))?;
        tx.count(Kind::Event, "org-a", &[])?;
        pid = holder_of(probe, schema, "org-a");
        Ok(())
    })
    .unwrap();
    pid
}

/// The pool hands connections out without a ping (`PostgresStore::begin`): one closed
/// while idle (a restarted server, a killed backend) is found at the transaction's
/// first round trip, before anything of it ran, and the transaction runs on a new one.
#[test]
fn a_pooled_connection_closed_while_idle_is_replaced_before_anything_runs() {
    let Some(url) = url() else { return };
    let (first, store) = one_connection(&url);
    let schema = first.scratch_schema().unwrap().to_owned();
    let mut probe = blocking(&parse_url(&url).unwrap()).unwrap();
    let pid = write_e1(&store, &mut probe, &schema);
    let killed: bool = probe
        .query_one("SELECT pg_terminate_backend($1, 5000)", &[&pid])
        .unwrap()
        .get(0);
    assert!(killed, "the pool's one connection ({pid}) is gone");
    let seen = read(&store, |tx| Ok(tx.count(Kind::Event, "org-a", &[])?)).unwrap();
    assert_eq!(seen, 1, "the read ran on a new connection");
    write(&store, WriteScope::Org("org-a"), |tx| {
        tx.put(Kind::Event, "org-a", &event("e2", 2))?;
        tx.count(Kind::Event, "org-a", &[])?;
        assert_ne!(holder_of(&mut probe, &schema, "org-a"), pid);
        Ok(())
    })
    .unwrap();
}

/// A read's `COMMIT` is sent and not waited for (`Open::end`): the server ends the
/// read's transaction all the same (its snapshot is not held by an idle pooled session),
/// and the session's next transactions, a read and a write, run as usual; a read of one
/// statement is one exchange.
#[test]
fn a_reads_commit_unwaited_ends_its_transaction() {
    let Some(url) = url() else { return };
    let (first, store) = one_connection(&url);
    let schema = first.scratch_schema().unwrap().to_owned();
    let mut probe = blocking(&parse_url(&url).unwrap()).unwrap();
    let pid = write_e1(&store, &mut probe, &schema);
    let x0 = store.exchanges();
    let seen = read(&store, |tx| Ok(tx.count(Kind::Event, "org-a", &[])?)).unwrap();
    assert_eq!((seen, store.exchanges() - x0), (1, 1));
    let state = |probe: &mut Client| -> String {
        probe
            .query_one("SELECT state FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .unwrap()
            .get(0)
    };
    // The COMMIT is on its way when `read` returns.
    let idle = polled(400, Duration::from_millis(5), || {
        state(&mut probe) == "idle"
    });
    assert!(
        idle,
        "the read's transaction is still open: {}",
        state(&mut probe)
    );
    write(&store, WriteScope::Org("org-a"), |tx| {
        tx.put(Kind::Event, "org-a", &event("e2", 2))?;
        tx.count(Kind::Event, "org-a", &[])?;
        assert_eq!(
            holder_of(&mut probe, &schema, "org-a"),
            pid,
            "the same session"
        );
        Ok(())
    })
    .unwrap();
    let seen = read(&store, |tx| Ok(tx.count(Kind::Event, "org-a", &[])?)).unwrap();
    assert_eq!(seen, 2);
}

/// A write whose closure panics is rolled back, and its connection goes back to the
/// pool with no transaction open: the next write on it commits on its own.
#[test]
fn a_write_that_panics_leaves_its_connection_clean() {
    let Some(url) = url() else { return };
    let (first, store) = one_connection(&url);
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = write(
            &store,
            WriteScope::Org("org-a"),
            |tx| -> Result<(), DomainError> {
                tx.put(Kind::Event, "org-a", &event("lost", 1))?;
                panic!("a bug in the middle of a write");
            },
        );
    }));
    assert!(panicked.is_err());
    write(&store, WriteScope::Org("org-a"), |tx| {
        Ok(tx.put(Kind::Event, "org-a", &event("kept", 1))?)
    })
    .unwrap();
    // Seen from another replica: committed, and alone.
    let ids = read(&first, |tx| {
        Ok(tx
            .find(Kind::Event, "org-a", &Query::all())?
            .into_iter()
            .map(|e| e["id"].as_str().unwrap_or_default().to_owned())
            .collect::<Vec<_>>())
    })
    .unwrap();
    assert_eq!(ids, ["kept"]);
}

/// An operator's row written or deleted from a session whose search path is elsewhere
/// (the schema named in the statement) is counted in the store's own tallies.
#[test]
fn an_operators_write_from_another_search_path_is_tallied_in_its_schema() {
    let Some(url) = url() else { return };
    let store = PostgresStore::scratch(&url).unwrap();
    let schema = store.scratch_schema().unwrap().to_owned();
    let mut operator = blocking(&parse_url(&url).unwrap()).unwrap();
    operator.batch_execute("SET search_path = public").unwrap();
    let debtors =
        |store: &PostgresStore| read(store, |tx| Ok(tx.count(Kind::Debtor, "a", &[])?)).unwrap();
    operator
        .batch_execute(&format!(
            "INSERT INTO {schema}.debtors (org, id, created_at, doc, name) \
             VALUES ('a', 'd1', '2026-01-01', '{{\"id\":\"d1\"}}', 'Ana'), \
                    ('a', 'd2', '2026-01-01', '{{\"id\":\"d2\"}}', 'Bia')"
        ))
        .unwrap();
    assert_eq!(debtors(&store), 2);
    operator
        .batch_execute(&format!("DELETE FROM {schema}.debtors WHERE id = 'd1'"))
        .unwrap();
    assert_eq!(debtors(&store), 1);
}

/// A read's frame goes out with its first statement: a read that runs none opens no
/// transaction and costs no round trip, and its connection is clean for the next one; a
/// read that runs one is one transaction.
#[test]
fn a_read_that_runs_no_statement_costs_no_round_trip() {
    let Some(url) = url() else { return };
    let (_first, store) = one_connection(&url);
    let before = store.round_trips();
    let answer = read(&store, |_tx| Ok(42)).unwrap();
    assert_eq!(answer, 42);
    assert_eq!(store.round_trips(), before, "nothing sent");
    let n = read(&store, |tx| Ok(tx.count(Kind::Event, "org-a", &[])?)).unwrap();
    assert_eq!(n, 0);
    let (t, _) = store.round_trips();
    assert_eq!(t, before.0 + 1, "one transaction");
    // The same pooled connection, in no transaction: a write on it commits on its own.
    write(&store, WriteScope::Org("org-a"), |tx| {
        Ok(tx.put(Kind::Event, "org-a", &event("e1", 1))?)
    })
    .unwrap();
    read(&store, |_tx| Ok(())).unwrap();
    let n = read(&store, |tx| Ok(tx.count(Kind::Event, "org-a", &[])?)).unwrap();
    assert_eq!(n, 1);
}

mod plans;
