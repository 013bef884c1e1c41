//! `dunning-conformance-server [--listen ADDR] [--token TOKEN]`: serves the conformance
//! suite's fixtures ([`dunning_conformance_server::Fixtures`]) on our core with the
//! blocking adapter, and prints its URL on the first line of stdout once listening.
//!
//! A test binary, not the product. Every request must carry `Authorization: Bearer TOKEN`
//! (default `conformance`); the suite sends none, so run it behind `dunning-peer-proxy`.

use std::hash::{BuildHasher, RandomState};
use std::io::Write;
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use dunning_conformance_server::{FixedToken, Fixtures};
use dunning_core::{Config, Keys, Server};
use dunning_runtime::{NoopObserver, Options};

fn usage() -> ExitCode {
    eprintln!("usage: dunning-conformance-server [--listen 127.0.0.1:0] [--token conformance]");
    ExitCode::from(2)
}

/// A per-run sealing secret: std's randomly seeded hasher is enough for a test server.
fn secret() -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    for i in 0u64..4 {
        out.extend_from_slice(&RandomState::new().hash_one(i).to_le_bytes());
    }
    out
}

fn main() -> ExitCode {
    let mut listen = "127.0.0.1:0".to_owned();
    let mut token = "conformance".to_owned();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match (a.as_str(), args.next()) {
            ("--listen", Some(v)) => listen = v,
            ("--token", Some(v)) => token = v,
            _ => return usage(),
        }
    }
    let listener = match TcpListener::bind(&listen) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("dunning-conformance-server: cannot listen on {listen}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dunning-conformance-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config = Config {
        public_url: format!("http://{addr}"),
        authorization_servers: vec![format!("http://{addr}")],
        loopback: addr.ip().is_loopback(),
        server_name: "dunning-conformance-server".into(),
        server_title: "kobana-dunning conformance fixtures".into(),
        instructions: "Fixtures of the MCP conformance suite, served by the kobana-dunning core."
            .into(),
        ..Config::default()
    };
    let server = match Server::new(config, Keys::single(&secret()), Fixtures, FixedToken(token)) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            eprintln!("dunning-conformance-server: invalid catalog: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("http://{addr}/");
    let _ = std::io::stdout().flush();
    let opts = Options::default();
    let stop = Arc::new(AtomicBool::new(false));
    match dunning_blocking::serve(listener, server, opts, Arc::new(NoopObserver), stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dunning-conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}
