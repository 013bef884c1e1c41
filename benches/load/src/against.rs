//! `dunning-load against NAME=URL@TOKEN...`: the product binary itself, already running
//! (one replica on SQLite, one on PostgreSQL, a balanced cluster: `benches/replicas.sh`
//! starts them), each given by its MCP endpoint and a token, measured the same way in
//! interleaved rounds so that the machine's noise lands on all of them alike:
//!
//! * a read: `tools/call dunning_charges_list` (status `overdue`, `per_page` 10);
//! * a write: `tools/call dunning_debtors_create`, every request a new debtor with its own
//!   CPF and idempotency key.
//!
//! A request counts when it is answered `200` without `"isError":true`. Ratios are to
//! the first server named.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Measure, Plan, Requests, load};

/// One server under test.
struct Target {
    name: String,
    addr: SocketAddr,
    host: String,
    path: String,
    token: String,
}

impl Target {
    /// `NAME=http://HOST:PORT/PATH@TOKEN`.
    fn parse(arg: &str) -> io::Result<Self> {
        let bad = || io::Error::other(format!("{arg:?}: want NAME=http://HOST:PORT/PATH@TOKEN"));
        let (name, rest) = arg.split_once('=').ok_or_else(bad)?;
        let (url, token) = rest.rsplit_once('@').ok_or_else(bad)?;
        let rest = url.strip_prefix("http://").ok_or_else(bad)?;
        let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
        let addr = host.to_socket_addrs()?.next().ok_or_else(bad)?;
        Ok(Self {
            name: name.to_owned(),
            addr,
            host: host.to_owned(),
            path: format!("/{path}"),
            token: token.to_owned(),
        })
    }

    /// An era-2026 `tools/call` of `tool` with `args` (a JSON object's text).
    fn call(&self, tool: &str, args: &str) -> Vec<u8> {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"{tool}","arguments":{args}}}}}"#
        );
        format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n\
             Content-Length: {}\r\n\r\n{body}",
            self.path,
            self.host,
            self.token,
            body.len()
        )
        .into_bytes()
    }
}

/// New debtors, each with its own CPF and idempotency key, numbered across every run
/// of this process (each server has its own store, so numbers may repeat across servers).
fn writes(target: &Target) -> Requests {
    static NEXT: AtomicU64 = AtomicU64::new(100_000_000);
    let target = Arc::new(Target {
        name: target.name.clone(),
        addr: target.addr,
        host: target.host.clone(),
        path: target.path.clone(),
        token: target.token.clone(),
    });
    Requests::Each(Arc::new(move || {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let digits: Vec<u8> = format!("{n:09}").bytes().map(|b| b - b'0').collect();
        let base: [u8; 9] = digits.try_into().unwrap_or([1; 9]);
        let cpf = dunning_domain::brazil::document::cpf_from_base(&base);
        target.call(
            "dunning_debtors_create",
            &format!(r#"{{"cnpj_cpf":"{cpf}","name":"Carga {n}","idempotency_key":"load-{n}"}}"#),
        )
    }))
}

/// Runs the comparison and prints its table.
pub(crate) fn run(args: &[String], plan: Plan) -> io::Result<()> {
    let targets: Vec<Target> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .map(|a| Target::parse(a))
        .collect::<io::Result<_>>()?;
    if targets.is_empty() {
        return Err(io::Error::other("no server: NAME=URL@TOKEN ..."));
    }
    println!(
        "dunning-load against: {} keep-alive connections, {} s per run (after 1 s warm-up), \
         median of {} interleaved rounds",
        plan.conns, plan.secs, plan.rounds
    );
    let read = r#"{"status":"overdue","per_page":10}"#;
    let mut results: Vec<[Vec<Measure>; 2]> = targets.iter().map(|_| [vec![], vec![]]).collect();
    for _ in 0..plan.rounds {
        for (t, r) in targets.iter().zip(&mut results) {
            let list: &[u8] = &t.call("dunning_charges_list", read);
            r[0].push(load(t.addr, list, plan)?);
            r[1].push(load(t.addr, writes(t), plan)?);
        }
    }
    let medians: Vec<[Measure; 2]> = results
        .into_iter()
        .map(|runs| runs.map(crate::median))
        .collect();
    println!();
    println!(
        "| server | request | rps | p50 (µs) | p99 (µs) | vs {} | errors |",
        targets[0].name
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    for (k, what) in [
        "dunning_charges_list overdue, per_page 10",
        "dunning_debtors_create",
    ]
    .iter()
    .enumerate()
    {
        let floor = medians[0][k].rps();
        for (t, m) in targets.iter().zip(&medians) {
            crate::row(&t.name, what, &m[k], floor);
        }
    }
    Ok(())
}
