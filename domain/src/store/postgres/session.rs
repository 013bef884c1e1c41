//! One pooled PostgreSQL session, and the one way anything is sent on it: a
//! [`Session::pipeline`] of simple-protocol text and prepared statements, written
//! together and answered together, one round trip for all (`docs/decisions.md`,
//! "PostgreSQL pipelining").
//!
//! The store's API is synchronous, so the session is a `tokio-postgres` client driven on
//! the calling thread by a runtime of its own, as the blocking `postgres` crate does; it
//! is driven here rather than there because that crate waits for each statement's
//! answer before it sends the next, and a transaction's frame, a writer's savepoint and
//! the writes whose answers nobody reads need not wait for anything.

use std::collections::HashMap;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;

use futures_util::StreamExt as _;
use futures_util::future::join_all;
use tokio::runtime::Runtime;
use tokio_postgres::tls::NoTlsStream;
use tokio_postgres::{Client, Config, Connection, Error, NoTls, Row, Socket, Statement};

use super::{Arg, StoreError};

/// Prepared statements kept per connection; past this many the cache is emptied (the
/// query shapes are finite, this only bounds a surprise).
const STATEMENTS_KEPT: usize = 512;

/// Executions after which a connection prepares its statements again.
///
/// PostgreSQL keeps a prepared statement's generic plan for the session, until the
/// table's statistics change, and makes it from the table's size when it is planned.
/// Planned on a nearly empty table (a new database, before autovacuum's first
/// `ANALYZE`), a page's `id IN (...)` lookup scanned the whole organization for every
/// row once the table had grown: `dunning_charges_list` fell from 2,000 to 250 req/s
/// after 4,500 debtors were created, and stayed there. Re-prepared every this many
/// executions, such a plan lasts seconds under load, for one extra round trip per
/// statement shape each time (`docs/decisions.md`, "PostgreSQL round trips").
pub(super) const REPLAN_AFTER: u64 = 5_000;

/// Rows written through the store since a connection's statements were prepared, past
/// which they are prepared again: at least this many, and more than were written before
/// (so plans follow a table's growth in doubling steps). Executions alone
/// ([`REPLAN_AFTER`]) left a generic plan made on a nearly empty table in place for
/// thousands of executions after the table grew: the charges' page with its debtors'
/// names fell from 3,000 to 150 requests/s after 25,000 debtors were created, and came
/// back at once on a fresh session (`docs/decisions.md`, "PostgreSQL pipelining").
pub(super) const REPLAN_ROWS: u64 = 1_000;

/// Whether the store's rows written, `written`, have grown a step past `since` (the
/// count when plans were last made, or statistics gathered): more than [`REPLAN_ROWS`]
/// since, and more than there were then.
pub(super) fn grown(written: u64, since: u64) -> bool {
    written.saturating_sub(since) > REPLAN_ROWS.max(since)
}

/// One item of a [`Session::pipeline`].
pub(super) enum Item<'a> {
    /// Simple-protocol text, answered with nothing (a frame, a savepoint, `COMMIT`).
    Text(&'a str),
    /// A prepared statement and its arguments, answered with its rows and how many rows
    /// it changed.
    Statement(&'a Statement, &'a [Arg]),
}

/// A statement's answer: its rows, and how many rows it changed.
pub(super) type Answer = (Vec<Row>, u64);

/// A client, its connection, and the runtime that drives both while the caller waits.
pub(super) struct Session {
    runtime: Runtime,
    client: Client,
    connection: Connection<Socket, NoTlsStream>,
    /// The connection said it ended (it must not be polled again).
    ended: bool,
}

impl Session {
    pub(super) fn connect(config: &Config) -> Result<Self, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError(format!("postgres: a session's runtime: {e}")))?;
        let (client, connection) = runtime.block_on(config.connect(NoTls))?;
        Ok(Self {
            runtime,
            client,
            connection,
            ended: false,
        })
    }

    pub(super) fn is_closed(&self) -> bool {
        self.ended || self.client.is_closed()
    }

    pub(super) fn prepare(&mut self, sql: &str) -> Result<Statement, Error> {
        self.run(|client| Box::pin(client.prepare(sql)))
    }

    /// Runs the future `make` builds on the client to its end, the connection driven.
    fn run<'s, T>(
        &'s mut self,
        make: impl FnOnce(&'s Client) -> Pin<Box<dyn Future<Output = Result<T, Error>> + 's>>,
    ) -> Result<T, Error> {
        let Self {
            runtime,
            client,
            connection,
            ended,
        } = self;
        drive(runtime, connection, ended, make(client))
    }

    /// Sends every item of `items` in order without waiting between them, then waits for
    /// all their answers: one answer per [`Item::Statement`], in order. The first error
    /// is the answer (in a transaction, what followed it failed because of it).
    pub(super) fn pipeline(&mut self, items: &[Item<'_>]) -> Result<Vec<Answer>, Error> {
        type Each<'f> = Pin<Box<dyn Future<Output = Result<Option<Answer>, Error>> + 'f>>;
        // `join_all` polls its futures in order, so their requests are queued to the
        // connection in order, before it writes any.
        let all = self.run(|client| {
            let each: Vec<Each<'_>> = items
                .iter()
                .map(|item| -> Each<'_> {
                    match *item {
                        Item::Text(text) => {
                            Box::pin(async move { client.batch_execute(text).await.map(|()| None) })
                        }
                        Item::Statement(statement, args) => Box::pin(async move {
                            let rows = client.query_raw(statement, args.iter()).await?;
                            let mut rows = pin!(rows);
                            let mut out = Vec::new();
                            while let Some(row) = rows.next().await {
                                out.push(row?);
                            }
                            Ok(Some((out, rows.rows_affected().unwrap_or(0))))
                        }),
                    }
                })
                .collect();
            Box::pin(async { Ok(join_all(each).await) })
        })?;
        let mut answers = Vec::with_capacity(all.len());
        for one in all {
            if let Some(answer) = one? {
                answers.push(answer);
            }
        }
        Ok(answers)
    }

    /// Sends `text` and does not wait for its answer, which the next exchange reads and
    /// drops: a read's `COMMIT`, which has nothing to keep (the server releases the
    /// snapshot when it reads it) and whose failure would change nothing the caller
    /// holds; a session that closed meanwhile is found at its next transaction's frame.
    pub(super) fn send_unanswered(&mut self, text: &str) {
        let _ = self.run(|client| {
            Box::pin(async move {
                // Queued by its first poll; the yield lets the connection write it. The
                // request is dropped after, and its answer, once read, goes nowhere.
                let mut request = pin!(client.batch_execute(text));
                poll_fn(|cx| {
                    let _ = request.as_mut().poll(cx);
                    Poll::Ready(())
                })
                .await;
                tokio::task::yield_now().await;
                Ok(())
            })
        });
    }
}

/// Runs `future` to its end on `runtime`, driving `connection` (which writes what the
/// future queues and reads its answers) at every wake.
///
/// Called where a multi-threaded runtime runs its tasks (a read on an async adapter's
/// reactor that found a principal expired, say: a call read ahead authenticates again
/// at each run, `dunning_core::ahead`), the wait is announced to it first
/// (`block_in_place`: its other tasks move to another thread while this one blocks):
/// blocking a runtime's thread inside another runtime is refused with a panic.
fn drive<T>(
    runtime: &Runtime,
    connection: &mut Connection<Socket, NoTlsStream>,
    ended: &mut bool,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let on_worker = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if on_worker {
        return tokio::task::block_in_place(|| block(runtime, connection, ended, future));
    }
    block(runtime, connection, ended, future)
}

/// [`drive`] on a thread free to block.
fn block<T>(
    runtime: &Runtime,
    connection: &mut Connection<Socket, NoTlsStream>,
    ended: &mut bool,
    future: impl Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    let mut future = pin!(future);
    runtime.block_on(poll_fn(|cx| {
        while !*ended {
            match connection.poll_message(cx) {
                // Notices and notifications: a pooled session asks for neither.
                Poll::Ready(Some(Ok(_))) => {}
                Poll::Ready(Some(Err(e))) => {
                    *ended = true;
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(None) => *ended = true,
                Poll::Pending => break,
            }
        }
        future.as_mut().poll(cx)
    }))
}

/// One pooled connection and its prepared statements.
pub(super) struct Conn {
    pub(super) session: Session,
    statements: Prepared,
    /// A transaction of it could not be ended: the pool drops it rather than hand out a
    /// session in an unknown state.
    pub(super) broken: bool,
}

/// One connection's prepared statements, by SQL text (a pooled [`Conn`]'s, and a
/// connection's of reads ahead, `ahead.rs`).
#[derive(Default)]
pub(super) struct Prepared {
    kept: HashMap<String, Statement>,
    /// Executions since `kept` was last emptied ([`REPLAN_AFTER`]).
    uses: u64,
    /// The store's rows written when `kept` was last emptied ([`REPLAN_ROWS`]).
    written: u64,
}

impl Conn {
    /// Replaces a session found closed by a new one, with none of the old statements.
    pub(super) fn reopen(&mut self, config: &Config) -> Result<(), StoreError> {
        self.session = Session::connect(config)?;
        self.statements = Prepared::default();
        Ok(())
    }

    /// The prepared statement for `sql` on this connection, and whether it was prepared
    /// now (a round trip of its own); `written` is the store's rows written so far.
    pub(super) fn statement(
        &mut self,
        sql: &str,
        written: u64,
    ) -> Result<(Statement, bool), Error> {
        if let Some(s) = self.statements.get(sql, written) {
            return Ok((s, false));
        }
        let s = self.session.prepare(sql)?;
        self.statements.keep(sql, s.clone());
        Ok((s, true))
    }
}

impl Prepared {
    /// The statement kept for `sql`, if any, counted as one use; every statement is
    /// forgotten first when they have been used [`REPLAN_AFTER`] times or the store's
    /// rows written (`written`) have [`grown`] since they were prepared.
    pub(super) fn get(&mut self, sql: &str, written: u64) -> Option<Statement> {
        self.uses += 1;
        if self.uses > REPLAN_AFTER || grown(written, self.written) {
            self.kept.clear();
            self.uses = 1;
            self.written = written;
        }
        self.kept.get(sql).cloned()
    }

    /// Keeps `statement`, prepared for `sql` ([`STATEMENTS_KEPT`] at most).
    pub(super) fn keep(&mut self, sql: &str, statement: Statement) {
        if self.kept.len() >= STATEMENTS_KEPT {
            self.kept.clear();
        }
        self.kept.insert(sql.to_owned(), statement);
    }
}

/// Opens connections for the pool (`r2d2_postgres` hands out a bare `Client`, with no
/// room for a statement cache; this is the same twenty lines with one).
pub(super) struct Manager {
    pub(super) config: Config,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = StoreError;

    fn connect(&self) -> Result<Conn, StoreError> {
        Ok(Conn {
            session: Session::connect(&self.config)?,
            statements: Prepared::default(),
            broken: false,
        })
    }

    /// Only asked with `test_on_check_out`, which is off ([`super::PostgresStore`]).
    fn is_valid(&self, conn: &mut Conn) -> Result<(), StoreError> {
        Ok(conn.session.pipeline(&[Item::Text("")]).map(drop)?)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        conn.broken || conn.session.is_closed()
    }
}
