//! Startup order and the data dir (`docs/decisions.md`, "Startup and the data dir"): whoever sees the port open can mint a token
//! the server accepts; `token` never creates a key or a database; two servers starting
//! on one new data dir agree on one key and seed the demo data once.

mod common;

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, Srv, V2026, clock_args, scratch};
use serde_json::json;

fn token(dir: &Path, org: &str) -> Output {
    Command::new(BIN)
        .args([
            "token",
            "--org",
            org,
            "--person",
            "ana@demo.example",
            "--data-dir",
        ])
        .arg(dir)
        .args(clock_args())
        .args(common::pg::store_args(dir))
        .output()
        .unwrap()
}

#[test]
fn token_refuses_a_data_dir_the_server_never_initialized_and_creates_nothing() {
    let root = scratch("uninit");
    let missing = root.join("nowhere");
    let empty = root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    for dir in [&missing, &empty] {
        let out = token(dir, "demo");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stdout.is_empty(), "no token printed");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&*dir.to_string_lossy())
                && err.contains("kobana-dunning serve --data-dir"),
            "names the directory and the command to run first: {err}"
        );
    }
    assert!(!missing.exists(), "no directory created");
    assert_eq!(
        std::fs::read_dir(&empty).unwrap().count(),
        0,
        "no key or database created"
    );
    // On PostgreSQL the store named by `--store` is no file of the dir: nothing was
    // seeded in it either.
    for dir in [&missing, &empty] {
        if let Some(url) = common::pg::store_url(dir) {
            let db = dunning_domain::store::postgres::PostgresStore::open(&url, 1).unwrap();
            let orgs = dunning_domain::store::read(&db, |tx| Ok(tx.organizations()?)).unwrap();
            assert!(orgs.is_empty(), "nothing seeded in the store: {orgs:?}");
        }
        common::discard(dir);
    }
    common::discard(&root);
}

/// A free loopback port (bound, then released for the server to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn tokens_minted_the_moment_the_port_opens_are_accepted() {
    let dir = scratch("race");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", &addr, "--data-dir"])
        .arg(&dir)
        .args(clock_args())
        .args(common::pg::store_args(&dir))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A new data dir: the server seeds the demo data and makes its keys first, while
    // four clients poll the port and mint a token as soon as it opens.
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (addr, dir) = (addr.clone(), dir.clone());
            thread::spawn(move || {
                let deadline = Instant::now() + Duration::from_secs(60);
                while TcpStream::connect(&addr).is_err() {
                    assert!(Instant::now() < deadline, "the port never opened");
                    thread::sleep(Duration::from_millis(2));
                }
                let out = token(&dir, "demo");
                assert!(out.status.success(), "{out:?}");
                let t = String::from_utf8(out.stdout).unwrap().trim().to_owned();
                let r = common::http(
                    &addr,
                    "POST",
                    "/",
                    &[
                        ("Authorization", &format!("Bearer {t}")),
                        ("Content-Type", "application/json"),
                        ("Accept", "application/json, text/event-stream"),
                        ("MCP-Protocol-Version", "2025-06-18"),
                    ],
                    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
                        .to_string()
                        .as_bytes(),
                );
                (r.status, r.text())
            })
        })
        .collect();
    let answers: Vec<_> = clients.into_iter().map(|c| c.join()).collect();
    let _ = child.kill();
    let _ = child.wait();
    common::discard(&dir);
    for a in answers {
        let (status, text) = a.expect("client thread");
        assert_eq!(status, 200, "a token minted at once is accepted: {text}");
    }
}

#[test]
fn two_servers_on_one_new_data_dir_share_one_key_and_seed_once() {
    let dir = scratch("twins");
    // One public URL for both, so their tokens name the same audience: each server
    // accepts the other's development token only if they signed with the same key.
    let extra = ["--public-url", "http://127.0.0.1:9"];
    let starts: Vec<_> = (0..2)
        .map(|_| {
            let dir = dir.clone();
            thread::spawn(move || Srv::start_in(dir, &extra, None))
        })
        .collect();
    let mut servers: Vec<Srv> = starts.into_iter().map(|s| s.join().unwrap()).collect();
    let key = std::fs::read(dir.join("dev-signing.key")).unwrap();
    for (me, other) in [(0, 1), (1, 0)] {
        let r = servers[me].call(&servers[other].token, V2026, "dunning_me", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        assert!(r.json()["result"]["isError"].is_null(), "{}", r.text());
    }
    let organizations = servers[0].call(
        &servers[0].token,
        V2026,
        "dunning_debtors_list",
        json!({"per_page": 1}),
    );
    let seeded_once = Srv::start(&[], None);
    let reference = seeded_once.call(
        &seeded_once.token,
        V2026,
        "dunning_debtors_list",
        json!({"per_page": 1}),
    );
    assert_eq!(
        organizations.structured()["meta"]["total"],
        reference.structured()["meta"]["total"],
        "the demo data was seeded once"
    );
    assert_eq!(
        std::fs::read(dir.join("dev-signing.key")).unwrap(),
        key,
        "the key was never replaced"
    );
    // They share the directory: only the last one dropped removes it.
    let mut first = servers.remove(0);
    assert!(first.terminate().success());
    first.dir = std::path::PathBuf::new();
}

/// `demo` re-seeds the demo organizations of the store a server ran on: the data dir's
/// SQLite file, or with `--store` the PostgreSQL schema (what CI's PostgreSQL step
/// runs), and the server restarted on that dir finds the seeded data, not what was
/// written before.
#[test]
fn demo_reseeds_the_store_the_server_runs_on() {
    let count = |s: &Srv| {
        let r = s.call(
            &s.token,
            V2026,
            "dunning_debtors_list",
            json!({"per_page": 1}),
        );
        r.structured()["meta"]["total"].as_u64().unwrap()
    };
    let mut srv = Srv::start(&[], None);
    let seeded = count(&srv);
    let created = srv.call(
        &srv.token,
        V2026,
        "dunning_debtors_create",
        json!({"cnpj_cpf": common::cpf(123_456_789), "name": "Antes do Demo"}),
    );
    let id = created.structured()["id"].as_str().unwrap().to_owned();
    assert_eq!(count(&srv), seeded + 1);
    assert!(srv.terminate().success());

    let mut demo = Command::new(BIN);
    demo.args(["demo", "--data-dir"])
        .arg(&srv.dir)
        .args(clock_args());
    if let Some(url) = &srv.store {
        demo.args(["--store", url]);
    }
    let out = demo.output().unwrap();
    assert!(out.status.success(), "{out:?}");

    let again = Srv::start_in(srv.dir.clone(), &[], None);
    assert_eq!(count(&again), seeded, "the demo data as seeded");
    let got = again.call(
        &again.token,
        V2026,
        "dunning_debtors_get",
        json!({"id": id}),
    );
    assert_eq!(got.json()["result"]["isError"], true, "{}", got.text());
}
