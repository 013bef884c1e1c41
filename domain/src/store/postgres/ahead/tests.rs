//! Reads ahead on PostgreSQL, with the rounds awaited as an async adapter awaits them
//! (on a multi-threaded runtime of the test's own). Run when `DUNNING_TEST_PG` names a
//! database, as the other PostgreSQL tests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::super::{PostgresStore, blocking, parse_url};
use super::{MISSED, PgAhead, shared};
use crate::store::sql::Driver as _;
use crate::store::{Kind, Query, Store, WriteScope, read, read_ahead, write};
use crate::testing::{PG_VAR, pg_url, polled};
use dunning_core::Ahead;

fn url() -> Option<String> {
    let url = pg_url();
    if url.is_none() {
        eprintln!("{PG_VAR} is not set: skipped (CI runs it on PostgreSQL)");
    }
    url
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

fn charge(id: &str, status: &str) -> serde_json::Value {
    json!({"id": id, "created_at": format!("2026-01-0{id}"), "status": status, "due_date": "2026-02-01"})
}

/// A store with charges 1 to 3 of `org-a`, two of them overdue.
fn store_with_charges(url: &str) -> PostgresStore {
    let s = PostgresStore::scratch(url).unwrap();
    write(&s, WriteScope::Org("org-a"), |tx| {
        for (id, status) in [("1", "overdue"), ("2", "pending"), ("3", "overdue")] {
            tx.put(Kind::Charge, "org-a", &charge(id, status))?;
        }
        Ok(())
    })
    .unwrap();
    s
}

/// What the page of overdue charges reads: their count and their documents.
fn overdue(tx: &mut dyn crate::store::Tx) -> Result<(u64, Vec<String>), crate::DomainError> {
    let q = Query::all().with(crate::store::Cond::In("status", vec![json!("overdue")]));
    let page = tx.page_raw(Kind::Charge, "org-a", &q, None)?;
    Ok((page.total, page.rows))
}

/// Runs `f` with reads ahead until a run misses nothing, awaiting each round on `rt`;
/// its answer and the rounds it took.
fn ahead_until_answered<R>(
    rt: &tokio::runtime::Runtime,
    store: &PostgresStore,
    ahead: &dyn Ahead,
    mut f: impl FnMut(&mut dyn crate::store::Tx) -> Result<R, crate::DomainError>,
) -> (Result<R, crate::DomainError>, u32) {
    loop {
        let out = read_ahead(store, ahead, &mut f);
        match ahead.missed() {
            Some(reads) => rt.block_on(reads),
            None => return (out, ahead.rounds()),
        }
        assert!(ahead.rounds() <= 4, "a call of one page takes a round");
    }
}

/// A page's reads are fetched in one round (its count and its rows in one statement,
/// sent alone: no transaction opened for it), and the run after it answers as a
/// blocking read does; the run before it failed, its read noted.
#[test]
fn a_page_read_ahead_is_one_round_and_the_blocking_reads_answer() {
    let Some(url) = url() else { return };
    let s = store_with_charges(&url);
    let rt = runtime();
    let blocking_answer = read(&s, overdue).unwrap();
    let ahead = s.ahead().expect("PostgreSQL reads ahead");
    let first = read_ahead(&s, &*ahead, overdue);
    assert!(first.unwrap_err().to_string().contains(MISSED));
    let reads = ahead.missed().expect("the page's reads were missed");
    assert!(ahead.missed().is_none(), "handed out once");
    let (t0, x0) = (s.round_trips().0, s.exchanges());
    rt.block_on(reads);
    let transactions = s.round_trips().0 - t0;
    // One exchange, and one more for the statement prepared on the new connection.
    assert_eq!((transactions, s.exchanges() - x0), (0, 2));
    let answer = read_ahead(&s, &*ahead, overdue).unwrap();
    assert!(ahead.missed().is_none());
    assert_eq!(answer, blocking_answer);
    assert_eq!((answer.0, ahead.rounds()), (2, 1));
    // A second call on the connection given back: its statements are prepared already.
    drop(ahead);
    let ahead = s.ahead().unwrap();
    let x0 = s.exchanges();
    let (answer, rounds) = ahead_until_answered(&rt, &s, &*ahead, overdue);
    assert_eq!((answer.unwrap(), rounds), (blocking_answer, 1));
    assert_eq!(s.exchanges() - x0, 1, "one exchange for the page");
}

/// The rounds of one call read one snapshot. The first round reads without a frame;
/// the second opens one and asks the first's statement again, so a charge committed
/// between the two is seen by both reads, and one committed between the second and the
/// third by neither (the frame's snapshot), but by a read after the call.
#[test]
fn the_rounds_of_a_call_read_one_snapshot() {
    let Some(url) = url() else { return };
    let s = store_with_charges(&url);
    let rt = runtime();
    let ahead = s.ahead().unwrap();
    let mut commits = vec!["5", "4"];
    // Each id is committed once, when the run first gets past the read before it.
    let mut commit_once = |id: &'static str| -> Result<(), crate::DomainError> {
        if commits.last() == Some(&id) {
            commits.pop();
            write(&s, WriteScope::Org("org-a"), |w| {
                Ok(w.put(Kind::Charge, "org-a", &charge(id, "overdue"))?)
            })?;
        }
        Ok(())
    };
    let (answer, rounds) = ahead_until_answered(&rt, &s, &*ahead, |tx| {
        let before = tx.count(Kind::Charge, "org-a", &[])?;
        commit_once("4")?;
        let fourth = tx.get_raw(Kind::Charge, "org-a", "4")?;
        commit_once("5")?;
        let fifth = tx.get_raw(Kind::Charge, "org-a", "5")?;
        Ok((before, fourth.is_some(), fifth.is_some()))
    });
    assert_eq!((answer.unwrap(), rounds), ((4, true, false), 3));
    drop(ahead);
    assert_eq!(
        read(&s, |tx| Ok(tx.count(Kind::Charge, "org-a", &[])?)).unwrap(),
        5
    );
}

/// The backend of `ahead`'s connection, asked through it (a round of its own).
fn backend_of(rt: &tokio::runtime::Runtime, ahead: &PgAhead) -> i64 {
    let sql = "SELECT pg_backend_pid()::bigint";
    if ahead.answered().rows(sql, &[]).is_err() {
        rt.block_on(ahead.missed().expect("the pid was missed"));
    }
    pid_read(ahead, sql)
}

/// The state of backend `pid` in `pg_stat_activity`, asked by `probe`.
fn state(probe: &mut postgres::Client, pid: i64) -> String {
    probe
        .query_one(
            "SELECT state FROM pg_stat_activity WHERE pid = $1",
            &[&i32::try_from(pid).unwrap()],
        )
        .unwrap()
        .get(0)
}

/// A call of one round is answered on a shared connection, outside any transaction,
/// and lends none; a call of more rounds asks its first on the shared connection and the
/// others on a connection lent to it, kept in its transaction between them, and given
/// back with the transaction ended (its `COMMIT` not waited for), to serve the next call.
#[test]
fn an_answered_calls_connection_goes_back_outside_its_transaction() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let rt = runtime();
    let mut probe = blocking(&parse_url(&url).unwrap()).unwrap();
    let one_round = PgAhead::new(Arc::clone(&s.ahead));
    let shared = backend_of(&rt, &one_round);
    assert_eq!(
        state(&mut probe, shared),
        "idle",
        "no transaction for one round"
    );
    assert_eq!(super::lock(&s.ahead.idle).len(), 0, "none lent");
    assert_eq!(s.ahead.shared.len(), 1);
    drop(one_round);
    let two_rounds = PgAhead::new(Arc::clone(&s.ahead));
    let sql = "SELECT 1::bigint";
    assert!(two_rounds.answered().rows(sql, &[]).is_err());
    rt.block_on(two_rounds.missed().expect("the first read was missed"));
    let lent = backend_of(&rt, &two_rounds);
    assert_ne!(lent, shared, "the second round on a lent connection");
    assert_eq!(
        state(&mut probe, lent),
        "idle in transaction",
        "held between rounds"
    );
    assert_eq!(state(&mut probe, shared), "idle", "the shared one not held");
    assert_eq!(super::lock(&s.ahead.idle).len(), 0, "lent");
    drop(two_rounds);
    let ended = polled(400, Duration::from_millis(5), || {
        state(&mut probe, lent) == "idle"
    });
    assert!(
        ended,
        "still in its transaction: {}",
        state(&mut probe, lent)
    );
    assert_eq!(super::lock(&s.ahead.idle).len(), 1, "given back");
    let again = PgAhead::new(Arc::clone(&s.ahead));
    assert!(again.answered().rows(sql, &[]).is_err());
    rt.block_on(again.missed().unwrap());
    assert_eq!(backend_of(&rt, &again), lent, "lent again, not a new one");
}

/// A pool of reads ahead of its own, with `connections` to lend and shared connections
/// passed over after `stall` without an answer.
fn pool(url: &str, s: &PostgresStore, connections: u32, stall: Duration) -> Arc<super::Pool> {
    let mut pool = super::Pool::new(parse_url(url).unwrap(), connections, Arc::clone(&s.trips));
    pool.shared.stall = stall;
    Arc::new(pool)
}

/// The first round of `call`, reading `sql` (a backend's pid), spawned on `rt`.
fn first_round(
    rt: &tokio::runtime::Runtime,
    call: &PgAhead,
    sql: &str,
) -> tokio::task::JoinHandle<()> {
    assert!(call.answered().rows(sql, &[]).is_err());
    rt.spawn(call.missed().expect("the read was missed"))
}

/// The pid a call's answered `sql` read.
fn pid_read(call: &PgAhead, sql: &str) -> i64 {
    match call.answered().rows(sql, &[]).unwrap()[0][0] {
        crate::store::sql::Cell::Int(pid) => pid,
        ref other => panic!("a pid: {other:?}"),
    }
}

/// First rounds in flight together are sent on one shared connection (and answered
/// each with its own rows), as many as `DEPTH`; the next one opens a second. None lends
/// a connection.
#[test]
fn first_rounds_in_flight_together_share_a_connection() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let rt = runtime();
    // Eight to lend: two shared. No stall: the statements sleep, one after another.
    let pool = pool(&url, &s, 8, Duration::from_secs(3600));
    let calls: Vec<PgAhead> = (0..=shared::DEPTH)
        .map(|_| PgAhead::new(Arc::clone(&pool)))
        .collect();
    let sql = |i: usize| format!("SELECT pg_backend_pid()::bigint + 0 * {i} FROM pg_sleep(0.01)");
    let rounds: Vec<_> = (calls.iter().enumerate())
        .map(|(i, call)| first_round(&rt, call, &sql(i)))
        .collect();
    for round in rounds {
        rt.block_on(round).unwrap();
    }
    let pids: Vec<i64> = (calls.iter().enumerate())
        .map(|(i, call)| pid_read(call, &sql(i)))
        .collect();
    let on_first = pids.iter().filter(|&&p| p == pids[0]).count();
    assert_eq!(on_first, shared::DEPTH, "{pids:?}");
    assert_eq!(pool.shared.len(), 2);
    assert_eq!(super::lock(&pool.idle).len(), 0, "none lent");
}

/// A first round is not queued behind a statement unanswered for longer than `STALL`:
/// it goes to another shared connection and is answered first. At the cap of shared
/// connections (one, for a pool of one to lend), it waits its turn on the least busy.
#[test]
fn a_slow_statement_holds_up_no_later_first_round() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let rt = runtime();
    let slow_sql = "SELECT pg_backend_pid()::bigint FROM pg_sleep(0.5)";
    for (connections, passed_over) in [(8, true), (1, false)] {
        let pool = pool(&url, &s, connections, shared::STALL);
        // The shared connection opened first, so the slow statement is sent at once.
        let warm = PgAhead::new(Arc::clone(&pool));
        let warm_pid = backend_of(&rt, &warm);
        let slow = PgAhead::new(Arc::clone(&pool));
        let sent = std::time::Instant::now();
        let slow_round = first_round(&rt, &slow, slow_sql);
        std::thread::sleep(shared::STALL * 4);
        let quick = backend_of(&rt, &PgAhead::new(Arc::clone(&pool)));
        // Answered before the slow statement's half second, or after it behind it. (The
        // slow round's task may not have run yet when the quick one is answered behind
        // it: its `is_finished` is no witness.)
        let behind = sent.elapsed() >= Duration::from_millis(500);
        assert_eq!(behind, !passed_over, "{connections}");
        rt.block_on(slow_round).unwrap();
        assert_eq!(pid_read(&slow, slow_sql), warm_pid);
        assert_eq!(quick != warm_pid, passed_over, "{connections}");
        assert_eq!(pool.shared.len(), if passed_over { 2 } else { 1 });
    }
}

/// A first round waits for a shared connection for `CONNECTION_WAIT` at most, its turn
/// to open one included: while another first round is opening one (here the turn held
/// by the test), it fails after the wait, as a call waiting for a lent one does.
#[test]
fn a_first_round_waits_for_a_shared_connection_no_longer_than_the_wait() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let pool = pool(&url, &s, 4, shared::STALL);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let _turn = pool.shared.opening.lock().await;
        tokio::time::pause();
        let waited = tokio::time::Instant::now();
        let asked = [("SELECT 1::bigint".to_owned(), Vec::new())];
        let round = pool.shared.round(&pool, &asked);
        let wait = super::super::CONNECTION_WAIT;
        let Ok(Err(e)) = tokio::time::timeout(wait * 2, round).await else {
            panic!("answered without a connection, or still waiting")
        };
        assert!(e.0.contains("within 10 s"), "{e}");
        let waited = waited.elapsed();
        assert!(
            wait <= waited && waited < wait + Duration::from_millis(10),
            "{waited:?}"
        );
    });
}

/// A shared connection whose backend is gone is dropped, and a later first round opens
/// another and is answered there.
#[test]
fn a_shared_connection_closed_is_replaced() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let rt = runtime();
    let mut probe = blocking(&parse_url(&url).unwrap()).unwrap();
    let gone = backend_of(&rt, &PgAhead::new(Arc::clone(&s.ahead)));
    let killed: bool = probe
        .query_one(
            "SELECT pg_terminate_backend($1)",
            &[&i32::try_from(gone).unwrap()],
        )
        .unwrap()
        .get(0);
    assert!(killed);
    let after = polled(400, Duration::from_millis(5), || {
        let call = PgAhead::new(Arc::clone(&s.ahead));
        let sql = "SELECT pg_backend_pid()::bigint";
        assert!(call.answered().rows(sql, &[]).is_err());
        rt.block_on(call.missed().unwrap());
        // The first round after the kill may still have found the connection open.
        call.answered()
            .rows(sql, &[])
            .is_ok_and(|rows| !matches!(rows[0][0], crate::store::sql::Cell::Int(p) if p == gone))
    });
    assert!(
        after,
        "no first round answered after the backend was killed"
    );
    assert_eq!(s.ahead.shared.len(), 1, "the closed one dropped");
}

/// A round that fails (here a statement the server refuses) is the next run's answer,
/// at the statement, and ends the rounds; a write is refused at once.
#[test]
fn a_failed_round_is_the_next_runs_answer() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let rt = runtime();
    let ahead = PgAhead::new(Arc::clone(&s.ahead));
    let missed = ahead
        .answered()
        .rows("SELECT no_such_column FROM charges", &[]);
    assert!(missed.unwrap_err().0.contains(MISSED));
    rt.block_on(ahead.missed().unwrap());
    let failed = ahead
        .answered()
        .rows("SELECT no_such_column FROM charges", &[]);
    let message = failed.unwrap_err().0;
    assert!(message.contains("no_such_column"), "{message}");
    assert!(ahead.missed().is_none(), "no more rounds");
    let write = ahead.answered().execute("DELETE FROM charges", &[]);
    assert!(write.unwrap_err().0.contains("write"));
    // Nor through a statement that answers rows, which the first round would run
    // outside any `READ ONLY` transaction.
    for sql in [
        "DELETE FROM charges RETURNING id",
        "WITH gone AS (DELETE FROM charges RETURNING id) SELECT id FROM gone",
    ] {
        let fresh = PgAhead::new(Arc::clone(&s.ahead));
        let refused = fresh.answered().rows(sql, &[]);
        assert!(refused.unwrap_err().0.contains("write"), "{sql}");
        assert!(fresh.missed().is_none(), "{sql}: nothing sent");
    }
}

/// A connection of reads ahead cannot write even outside a transaction (a first round
/// sends its statement alone, on a shared connection): PostgreSQL refuses it as in a
/// `READ ONLY` one, on a lent connection and on a shared one alike.
#[test]
fn a_connection_of_reads_ahead_cannot_write() {
    let Some(url) = url() else { return };
    let s = store_with_charges(&url);
    let rt = runtime();
    let refused = rt.block_on(async {
        let lent = s.ahead.get().await.expect("a connection");
        lent.conn.client.execute("DELETE FROM charges", &[]).await
    });
    let code = refused.expect_err("a write on a read-only connection");
    let code = code.as_db_error().map(|e| e.code().clone());
    assert_eq!(
        code,
        Some(tokio_postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION)
    );
    let asked = [("DELETE FROM charges RETURNING id".to_owned(), Vec::new())];
    let shared = rt.block_on(s.ahead.shared.round(&s.ahead, &asked));
    let message = shared.expect_err("a write on a shared connection").0;
    assert!(message.contains("read-only transaction"), "{message}");
    assert_eq!(read(&s, overdue).unwrap().0, 2, "nothing deleted");
}

/// Given up, a run reads the store itself (blocking) and answers at once.
#[test]
fn a_call_given_up_reads_the_store_itself() {
    let Some(url) = url() else { return };
    let s = store_with_charges(&url);
    let ahead = s.ahead().unwrap();
    ahead.give_up();
    let answer = read_ahead(&s, &*ahead, overdue).unwrap();
    assert_eq!(answer.0, 2);
    assert!(ahead.missed().is_none());
    assert_eq!(ahead.rounds(), 0);
}

/// A call waits for a connection of reads ahead while every one is lent, and fails after
/// `CONNECTION_WAIT` as a transaction waiting for the pool does (the clock paused once
/// the first is lent, and moved on by the runtime while nothing else runs).
#[test]
fn a_call_without_a_connection_fails_after_the_wait() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    let pool = super::Pool::new(parse_url(&url).unwrap(), 1, Arc::clone(&s.trips));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let lent = pool.get().await.expect("the one connection");
        // From here the clock moves only when nothing else can run.
        tokio::time::pause();
        let waited = tokio::time::Instant::now();
        let Err(e) = pool.get().await else {
            panic!("a second connection past the bound")
        };
        assert!(e.0.contains("within 10 s"), "{e}");
        // The paused clock moves by whole milliseconds.
        let wait = super::super::CONNECTION_WAIT;
        let waited = waited.elapsed();
        assert!(
            wait <= waited && waited < wait + Duration::from_millis(10),
            "{waited:?}"
        );
        drop(lent);
    });
}

/// A blocking read on a multi-threaded runtime's worker (a call run on the reactor whose
/// principal expired meanwhile reads the store itself) is announced to the runtime
/// (`session::drive`), not refused with a panic for blocking inside a runtime.
#[test]
fn a_blocking_read_on_a_runtime_worker_answers() {
    let Some(url) = url() else { return };
    let s = Arc::new(store_with_charges(&url));
    let rt = runtime();
    let on_worker = Arc::clone(&s);
    let read = rt.spawn(async move { read(&*on_worker, overdue) });
    let (total, rows) = rt
        .block_on(read)
        .expect("the worker did not panic")
        .unwrap();
    assert_eq!((total, rows.len()), (2, 2));
}
