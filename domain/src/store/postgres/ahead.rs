//! Reads ahead on PostgreSQL (`dunning_core::ahead`): a read-only call answered on the
//! adapter's runtime, its statements sent on connections that runtime drives, so no
//! thread sleeps on an exchange and none is handed the call and back.
//!
//! A run of the call reads through [`Answered`], a [`Driver`] that answers each
//! statement from the rounds done so far and notes each one it cannot; the adapter then
//! awaits [`PgAhead`]'s round ([`Ahead::missed`]), which sends every noted statement in
//! one exchange and keeps the rows, and runs the call again.
//!
//! The first round sends its statement alone, outside any transaction, on a connection
//! that first rounds share ([`shared`]): one statement reads one snapshot, and most
//! calls (a page and its total, an entity by id) are answered by it, with no
//! transaction to open and end around it. A call that needs a second round is lent a
//! connection of [`Pool`] and opens its transaction there (`REPEATABLE READ, READ
//! ONLY`, as [`super::READ_FRAME`]), asking again what the first round answered, so the
//! rows its answer is made of all come from the frame's snapshot; the connection stays
//! in that transaction for the next rounds and goes back to the pool when the call is
//! answered, its `COMMIT` sent unanswered ahead of its next user's frame.
//! A round's error (the server gone, a statement refused) is the answer of the next run
//! at its first statement not answered, as a blocking read would have failed there.

use std::fmt;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use dunning_core::{Ahead, Reads};
use futures_util::FutureExt as _;
use futures_util::StreamExt as _;
use futures_util::future::{join, join_all};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_postgres::{Client, Config, NoTls};

use self::shared::Shared;
use super::session::Prepared;
use super::{CONNECTION_WAIT, READ_FRAME, RoundTrips, cells};
use crate::store::StoreError;
use crate::store::sql::{Arg, Cell, Dialect, Driver};

/// Connections of reads ahead, opened as needed up to a bound and kept when idle. Their
/// connections run as tasks of the runtime that awaits the rounds.
pub(super) struct Pool {
    config: Config,
    idle: Mutex<Vec<Conn>>,
    /// One permit per connection lent to a call (those lent and idle together never
    /// outnumber the permits: one is opened only when none is idle).
    lent: Arc<Semaphore>,
    trips: Arc<RoundTrips>,
    /// The connections of first rounds.
    shared: Shared,
}

impl Pool {
    /// Its connections are read-only by default (`default_transaction_read_only`): a
    /// first round runs outside the `READ ONLY` frame, and PostgreSQL, not only the
    /// run's driver, refuses a write there.
    pub(super) fn new(mut config: Config, connections: u32, trips: Arc<RoundTrips>) -> Self {
        super::with_option(&mut config, "-c default_transaction_read_only=on");
        Self {
            config,
            idle: Mutex::default(),
            lent: Arc::new(Semaphore::new(connections.max(1) as usize)),
            trips,
            shared: Shared::new(connections),
        }
    }

    /// An idle connection, or a new one; waits while every permitted one is lent, for
    /// [`CONNECTION_WAIT`] at most, as a transaction waits for one of the pool.
    async fn get(&self) -> Result<Lent, StoreError> {
        within_wait(self.lend()).await
    }

    async fn lend(&self) -> Result<Lent, StoreError> {
        let permit = Arc::clone(&self.lent)
            .acquire_owned()
            .await
            .map_err(|_| StoreError("postgres: the pool of reads ahead is closed".into()))?;
        let idle = lock(&self.idle).pop().filter(|c| !c.client.is_closed());
        let conn = match idle {
            Some(conn) => conn,
            None => Conn::open(&self.config).await?,
        };
        Ok(Lent {
            conn,
            _permit: permit,
        })
    }

    /// Takes back a connection whose transaction has ended (or is ending: its `COMMIT`
    /// queued before anything its next user sends).
    fn put(&self, lent: Lent) {
        if !lent.conn.client.is_closed() {
            lock(&self.idle).push(lent.conn);
        }
    }
}

/// `connecting`'s outcome, or an error once it has taken [`CONNECTION_WAIT`].
async fn within_wait<T>(
    connecting: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(CONNECTION_WAIT, connecting)
        .await
        .unwrap_or_else(|_| {
            Err(StoreError(format!(
                "postgres: no connection for reads ahead within {} s",
                CONNECTION_WAIT.as_secs()
            )))
        })
}

/// One connection of reads ahead and its prepared statements.
struct Conn {
    client: Client,
    /// Locked only to look a statement up or keep one (a shared connection's
    /// exchanges run side by side).
    statements: Mutex<Prepared>,
}

/// A connection lent to one call, with the permit it holds.
struct Lent {
    conn: Conn,
    _permit: OwnedSemaphorePermit,
}

impl Conn {
    /// A new connection, run by a task of the current runtime that ends when its client
    /// is dropped or the server closes it.
    async fn open(config: &Config) -> Result<Self, StoreError> {
        let (client, connection) = config.connect(NoTls).await?;
        tokio::spawn(connection);
        Ok(Self {
            client,
            statements: Mutex::default(),
        })
    }

    /// Sends `statements` in one exchange (after `READ_FRAME` when `opens`), and
    /// answers each one's rows. A statement this connection has not prepared is
    /// prepared first, an exchange of its own, as on a pooled session.
    async fn exchange(
        &self,
        opens: bool,
        statements: &[Asked],
        trips: &RoundTrips,
    ) -> Result<Vec<Rows>, StoreError> {
        let written = trips.written.load(Ordering::Relaxed);
        let mut prepared = Vec::with_capacity(statements.len());
        for (sql, _) in statements {
            let kept = lock(&self.statements).get(sql, written);
            let statement = match kept {
                Some(s) => s,
                None => {
                    let s = self.client.prepare(sql).await?;
                    trips.prepared();
                    lock(&self.statements).keep(sql, s.clone());
                    s
                }
            };
            prepared.push(statement);
        }
        let client = &self.client;
        // Each request is queued when first polled, and `join` polls the frame first,
        // `join_all` the statements in order: one exchange, in this order.
        let frame = async move {
            match opens {
                true => client.batch_execute(READ_FRAME).await,
                false => Ok(()),
            }
        };
        let rows = prepared
            .iter()
            .zip(statements)
            .map(|(s, (_, args))| async move {
                let mut stream = pin!(client.query_raw(s, args.iter()).await?);
                let mut rows = Vec::new();
                while let Some(row) = stream.next().await {
                    rows.push(cells(&row?)?);
                }
                Ok::<_, StoreError>(rows)
            });
        let (framed, answers) = join(frame, join_all(rows)).await;
        trips.exchange(statements.len());
        if opens {
            trips.transactions.fetch_add(1, Ordering::Relaxed);
        }
        framed?;
        answers.into_iter().collect()
    }
}

/// A statement as a run asked for it: its SQL and its arguments.
type Asked = (String, Vec<Arg>);

/// A statement's rows, each as its cells.
type Rows = Vec<Vec<Cell>>;

/// What a call's runs and rounds share.
#[derive(Default)]
struct State {
    /// Every statement fetched so far, with its rows.
    answered: Vec<(Asked, Rows)>,
    /// Statements the last run asked for and did not find.
    missed: Vec<Asked>,
    /// A round's error, answered to the next run.
    failed: Option<StoreError>,
    /// The connection of the call's transaction, between rounds.
    held: Option<Lent>,
    rounds: u32,
    given_up: bool,
}

/// One call's reads ahead ([`super::PostgresStore`]'s `Store::ahead`).
pub(super) struct PgAhead {
    pool: Arc<Pool>,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for PgAhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgAhead")
            .field("rounds", &self.rounds())
            .finish_non_exhaustive()
    }
}

impl PgAhead {
    pub(super) fn new(pool: Arc<Pool>) -> Self {
        Self {
            pool,
            state: Arc::default(),
        }
    }

    /// Whether the call reads the store itself from now on ([`Ahead::give_up`]).
    pub(super) fn given_up(&self) -> bool {
        lock(&self.state).given_up
    }

    /// The driver of a run.
    pub(super) fn answered(&self) -> Answered<'_> {
        Answered(&self.state)
    }
}

impl Ahead for PgAhead {
    fn missed(&self) -> Option<Reads> {
        let mut state = lock(&self.state);
        if state.given_up || state.missed.is_empty() {
            return None;
        }
        let mut missed = std::mem::take(&mut state.missed);
        let first = state.rounds == 0;
        state.rounds += 1;
        let held = state.held.take();
        if held.is_none() && !first {
            // The first round's rows were read outside the frame this round opens: asked
            // again, inside it.
            let again = state.answered.drain(..).map(|(asked, _)| asked);
            missed.splice(0..0, again);
        }
        drop(state);
        let (pool, state) = (Arc::clone(&self.pool), Arc::clone(&self.state));
        Some(Box::pin(async move {
            let outcome = match first {
                true => pool.shared.round(&pool, &missed).await,
                false => {
                    let lent = match held {
                        Some(lent) => Ok((lent, false)),
                        None => pool.get().await.map(|lent| (lent, true)),
                    };
                    match lent {
                        Ok((lent, opens)) => {
                            let rows = lent.conn.exchange(opens, &missed, &pool.trips).await;
                            // A failed exchange ends its transaction: its connection
                            // is not kept.
                            if rows.is_ok() {
                                lock(&state).held = Some(lent);
                            }
                            rows
                        }
                        Err(e) => Err(e),
                    }
                }
            };
            let mut state = lock(&state);
            match outcome {
                Ok(rows) => state.answered.extend(missed.into_iter().zip(rows)),
                Err(e) => state.failed = Some(e),
            }
        }))
    }

    fn rounds(&self) -> u32 {
        lock(&self.state).rounds
    }

    fn give_up(&self) {
        lock(&self.state).given_up = true;
    }
}

impl Drop for PgAhead {
    /// The call is answered (or dropped): its transaction ends, unanswered, and its
    /// connection goes back to the pool.
    fn drop(&mut self) {
        if let Some(lent) = lock(&self.state).held.take() {
            // Queued by the first poll; its answer is read and dropped by the
            // connection's task, before its next user's.
            let _ = lent.conn.client.batch_execute("COMMIT").now_or_never();
            self.pool.put(lent);
        }
    }
}

/// The error of a write asked of a run, whether through `execute` or a statement that
/// answers rows.
fn write_refused() -> StoreError {
    StoreError("postgres: a write in a read ahead".into())
}

/// The message of a run's statement that no round has fetched yet: the run ends with it,
/// and the adapter awaits the round that fetches it.
const MISSED: &str = "postgres: read ahead in the next round";

/// The [`Driver`] of a run with reads ahead: statements answered from the rounds done,
/// the others noted for the next and failed.
pub(super) struct Answered<'a>(&'a Mutex<State>);

impl Answered<'_> {
    /// The rows of `sql`, or the first round's error, or it noted for the next round
    /// and a failure. Only a `SELECT` is read ahead: the first round runs outside the
    /// `READ ONLY` frame, so a statement that writes (`... RETURNING`) is refused here,
    /// as `execute` is.
    fn one(&self, sql: &str, args: &[Arg]) -> Result<Rows, StoreError> {
        if !sql.starts_with("SELECT ") {
            return Err(write_refused());
        }
        let mut state = lock(self.0);
        let found = state
            .answered
            .iter()
            .find(|((s, a), _)| s == sql && a.as_slice() == args);
        if let Some((_, rows)) = found {
            return Ok(rows.clone());
        }
        if let Some(e) = &state.failed {
            return Err(e.clone());
        }
        state.missed.push((sql.to_owned(), args.to_vec()));
        Err(StoreError(MISSED.into()))
    }
}

impl Driver for Answered<'_> {
    const DIALECT: Dialect = Dialect::Postgres;

    fn rows(&mut self, sql: &str, args: &[Arg]) -> Result<Rows, StoreError> {
        self.one(sql, args)
    }

    fn texts(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<String>, StoreError> {
        self.rows(sql, args)?
            .into_iter()
            .map(|row| match row.into_iter().next() {
                Some(Cell::Text(t)) => Ok(t),
                _ => Err(StoreError("postgres: a text column without text".into())),
            })
            .collect()
    }

    fn execute(&mut self, _: &str, _: &[Arg]) -> Result<u64, StoreError> {
        Err(write_refused())
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A run that panicked holding it left rows or notes, never half of one.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

mod shared;
#[cfg(test)]
mod tests;
