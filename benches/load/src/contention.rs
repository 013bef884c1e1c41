//! `dunning-load versus --store postgres://...`: the two-organization write-contention
//! row. Two replicas of the product on one PostgreSQL schema, one client each, creating
//! debtors one after another: replica A for the demo organization, replica B for
//! `acme`, side by side for the same seconds. Meanwhile a third connection samples
//! `pg_stat_activity` every 2 ms and counts the samples in which some backend of the
//! database waits on a lock (`wait_event_type = 'Lock'`: advisory, row, transaction).
//!
//! Each organization has one writer, so a wait can only be one organization's write
//! waiting on the other's: the product's claim is 0 such samples (writes are serialized
//! per organization, never per database), and the row prints the count, not a verdict,
//! with each wait's event and the head of the waiting statement (`extend` in `INSERT
//! INTO events`: PostgreSQL's relation extension lock, which two inserts into one table
//! share, `docs/sharding.md`).
//!
//! `dunning-load contention --store URL [--secs N]` runs this row alone.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use dunning_domain::store::postgres::PostgresStore;
use postgres::{Client, NoTls};

use crate::versus::{ACME_OWNER, DEMO_OWNER, check, spawn_product, writes, wrk};

/// A fresh schema in the database at a URL, migrated, dropped with this value; the
/// product's servers reach it through [`Scratch::url`].
pub(crate) struct Scratch {
    _store: PostgresStore,
    url: String,
}

impl Scratch {
    pub(crate) fn new(url: &str) -> io::Result<Self> {
        let store = PostgresStore::scratch(url)
            .map_err(|e| io::Error::other(format!("--store {url}: a scratch schema: {e}")))?;
        let schema = store
            .scratch_schema()
            .ok_or_else(|| io::Error::other("a scratch store has a schema"))?
            .to_owned();
        // libpq's `options` parameter: every table in the schema. Commits wait for the
        // disk, as in production (the scratch store's own connections do not).
        let sep = if url.contains('?') { '&' } else { '?' };
        let url = format!("{url}{sep}options=-c%20search_path%3D{schema}");
        Ok(Self { _store: store, url })
    }

    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

/// What the sampler saw.
#[derive(Default)]
struct Samples {
    taken: u64,
    waiting: u64,
    /// The waits seen, by `wait_event` (`advisory`, `extend`, ...) and the waiting
    /// statement's head: samples of each.
    events: std::collections::BTreeMap<String, u64>,
}

/// Samples `pg_stat_activity` of the database at `url` until `stop`.
fn sample(url: &str, stop: &AtomicBool) -> io::Result<Samples> {
    let mut client = Client::connect(url, NoTls).map_err(io::Error::other)?;
    let query = client
        .prepare(
            "SELECT wait_event, query FROM pg_stat_activity \
             WHERE datname = current_database() AND pid <> pg_backend_pid() \
             AND wait_event_type = 'Lock'",
        )
        .map_err(io::Error::other)?;
    let mut seen = Samples::default();
    while !stop.load(Ordering::SeqCst) {
        let rows = client.query(&query, &[]).map_err(io::Error::other)?;
        seen.taken += 1;
        if !rows.is_empty() {
            seen.waiting += 1;
            for row in rows {
                let event: Option<String> = row.get(0);
                let query: Option<String> = row.get(1);
                let key = format!(
                    "{} in `{}`",
                    event.unwrap_or_default(),
                    statement(query.as_deref().unwrap_or_default())
                );
                *seen.events.entry(key).or_default() += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Ok(seen)
}

/// `dunning-load contention --store URL [--secs N]`: the row alone (20 s by default,
/// twice `versus`' run), with the product binary beside this one.
pub(crate) fn standalone(args: &[String]) -> io::Result<()> {
    let value = |name: &str| crate::versus::value_of(args, name);
    let url = value("--store")
        .ok_or_else(|| io::Error::other("usage: dunning-load contention --store URL [--secs N]"))?;
    let secs = match value("--secs") {
        Some(s) => s
            .parse()
            .map_err(|_| io::Error::other(format!("--secs {s}: not a number of seconds")))?,
        None => 20,
    };
    let product = std::env::current_exe()?.with_file_name("kobana-dunning");
    let (server_cpu, load_cpu) = crate::versus::placement();
    run(&product, url, server_cpu, load_cpu, secs)
}

/// The head of a waiting backend's statement, enough to name its table
/// (`INSERT INTO events`): a relation-extension lock is released before `pg_locks`
/// can be read beside `pg_stat_activity`, the statement stays.
fn statement(query: &str) -> &str {
    let head = query.split('(').next().unwrap_or_default().trim();
    head.get(..head.len().min(40)).unwrap_or(head)
}

/// Runs the row for `secs` and prints its table.
pub(crate) fn run(
    bin: &Path,
    url: &str,
    server_cpu: Option<usize>,
    load_cpu: Option<usize>,
    secs: u64,
) -> io::Result<()> {
    let scratch = Scratch::new(url)?;
    let a = spawn_product(
        bin,
        server_cpu,
        "replica A",
        Some(scratch.url()),
        DEMO_OWNER,
        "tokio",
    )?;
    let b = spawn_product(
        bin,
        server_cpu,
        "replica B",
        Some(scratch.url()),
        ACME_OWNER,
        "tokio",
    )?;
    let dir = std::env::temp_dir().join(format!("dunning-contention-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut plan = Vec::new();
    for (k, (server, org)) in [(&a, DEMO_OWNER.0), (&b, ACME_OWNER.0)]
        .into_iter()
        .enumerate()
    {
        let token = server.token.as_deref().unwrap_or_default();
        let scenario = writes(k, org, token);
        check(server.addr, &scenario.sample)?;
        let path = dir.join(format!("w{k}.lua"));
        std::fs::write(&path, &scenario.script)?;
        plan.push((org, server.addr, path, 700_000_000 + 100_000_000 * k as u64));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (url, stop) = (url.to_owned(), Arc::clone(&stop));
        std::thread::spawn(move || sample(&url, &stop))
    };
    let clients: Vec<_> = plan
        .iter()
        .map(|(_, addr, path, arg)| {
            let (addr, path, arg) = (*addr, path.clone(), *arg);
            std::thread::spawn(move || wrk(load_cpu, 1, addr, &path, secs, arg))
        })
        .collect();
    let runs: Vec<_> = clients
        .into_iter()
        .map(|c| {
            c.join()
                .unwrap_or_else(|_| Err(io::Error::other("wrk thread")))
        })
        .collect();
    stop.store(true, Ordering::SeqCst);
    let seen = sampler
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("sampler thread")))?;
    drop((a, b));
    drop(scratch);
    let _ = std::fs::remove_dir_all(&dir);

    println!();
    println!(
        "two organizations' writers on one PostgreSQL database, {secs} s: one client each \
         (wrk -c1) creating debtors through its own replica"
    );
    println!();
    println!("| organization | debtors_create/s | p50 (µs) | p99 (µs) | errors |");
    println!("|---|---:|---:|---:|---:|");
    for ((org, ..), run) in plan.iter().zip(runs) {
        let run = run?;
        println!(
            "| {org} | {:.0} | {:.0} | {:.0} | {} |",
            run.rps, run.p50_us, run.p99_us, run.errors
        );
    }
    println!();
    println!(
        "lock waits between them: {} of {} `pg_stat_activity` samples ({:.1} %){}",
        seen.waiting,
        seen.taken,
        100.0 * seen.waiting as f64 / seen.taken.max(1) as f64,
        if seen.events.is_empty() {
            String::new()
        } else {
            format!(
                ", on {}",
                seen.events
                    .into_iter()
                    .map(|(wait, n)| format!("{wait} ×{n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::statement;

    #[test]
    fn a_wait_is_named_by_its_statements_head() {
        let insert = "INSERT INTO events (org, id, created_at, doc) VALUES ($1, $2, $3, $4)";
        assert_eq!(statement(insert), "INSERT INTO events");
        let long = format!("SELECT {} FROM charges", "x".repeat(60));
        assert_eq!(statement(&long).len(), 40);
        // A cut inside a character keeps the whole head rather than panic.
        let wide = format!("{}é and more", "x".repeat(39));
        assert_eq!(statement(&wide), wide);
        assert_eq!(statement(""), "");
    }
}
