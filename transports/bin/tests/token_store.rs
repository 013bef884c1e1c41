//! `token` and `demo` find the PostgreSQL store of the server running on their data dir
//! without `--store`: `serve` records it in the data dir (`store.json`), never with its
//! password; a password is read back from the configuration file `serve` took it from,
//! and one given on `serve`'s command line makes `token` ask for `--store`, never to
//! start a server. Runs when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step),
//! each server on a fresh schema dropped at the end; says so and passes otherwise.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::pg::{Schema, pg_url};
use common::{BIN, V2026, clock_args, http, scratch};
use serde_json::{Value, json};

/// The password put in the store's URL (PostgreSQL's trust authentication ignores it);
/// it must appear in no file of the data dir and no message.
const PASSWORD: &str = "kd-pw-5e1f";

/// `url` with `PASSWORD` as its user's password.
fn with_password(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (user, host) = rest.split_once('@').expect("a user in DUNNING_TEST_PG");
    format!("{scheme}://{user}:{PASSWORD}@{host}")
}

/// `kobana-dunning ARGS --data-dir DIR --clock ...`, nothing else (no `--store`).
fn run(cmd: &str, dir: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg(cmd)
        .args(args)
        .arg("--data-dir")
        .arg(dir)
        .args(clock_args())
        .output()
        .unwrap()
}

/// `serve` on a free loopback port with exactly `args`; its address once it is ready.
struct Served(Child, String);

impl Served {
    fn start(dir: &Path, args: &[&str]) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir)
            .args(clock_args())
            .args(args)
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut addr = None;
        let mut seen = String::new();
        while Instant::now() < deadline {
            let Some(Ok(line)) = lines.next() else { break };
            if let Some((_, a)) = line.split_once(" listening on ") {
                addr = Some(a.trim().to_owned());
            }
            seen.push_str(&line);
            seen.push('\n');
            if line.starts_with("Ready:") {
                break;
            }
        }
        let Some(addr) = addr.filter(|_| seen.contains("Ready:")) else {
            let _ = child.kill();
            panic!("serve did not start: {seen}");
        };
        // The rest of its log is drained, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Self(child, addr)
    }

    /// `dunning_me` with `token`: the member's email.
    fn me(&self, token: &str) -> Value {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "dunning_me", "arguments": {}, "_meta": {
                "io.modelcontextprotocol/protocolVersion": V2026,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "e2e", "version": "1" },
            }},
        });
        let bearer = format!("Bearer {token}");
        let r = http(
            &self.1,
            "POST",
            "/",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", V2026),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "dunning_me"),
                ("Authorization", &bearer),
            ],
            body.to_string().as_bytes(),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        r.structured()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// No file of `dir` holds the password.
fn assert_no_password_in(dir: &Path) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        if let Ok(text) = std::fs::read_to_string(e.path()) {
            assert!(
                !text.contains(PASSWORD),
                "{} holds the password",
                e.path().display()
            );
        }
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mint(dir: &Path) -> Output {
    run(
        "token",
        dir,
        &["--org", "demo", "--person", "ana@demo.example"],
    )
}

#[test]
fn token_and_demo_find_the_store_of_a_postgres_server_without_store() {
    let Some(url) = pg_url() else { return };
    let schema = Schema::fresh(&url);
    let dir = scratch("pg-record");
    let srv = Served::start(&dir, &["--store", schema.url()]);

    let out = mint(&dir);
    assert!(out.status.success(), "token: {}", stderr(&out));
    let token = String::from_utf8(out.stdout).unwrap();
    assert_eq!(srv.me(token.trim())["user"]["email"], "ana@demo.example");

    let out = run("demo", &dir, &[]);
    assert!(out.status.success(), "demo: {}", stderr(&out));
    assert!(stderr(&out).contains("PostgreSQL"), "{}", stderr(&out));
    assert!(
        !dir.join("dunning.sqlite3").exists(),
        "demo re-seeded PostgreSQL, not a new SQLite file"
    );
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_password_is_read_back_from_the_configuration_file_and_never_recorded() {
    let Some(url) = pg_url() else { return };
    let schema = Schema::fresh(&url);
    let dir = scratch("pg-record-file");
    // Outside the data dir, as /etc/kobana-dunning/config.toml would be.
    let etc = scratch("pg-record-etc");
    let config = etc.join("kd.toml");
    std::fs::write(
        &config,
        format!("store = \"{}\"\n", with_password(schema.url())),
    )
    .unwrap();
    let srv = Served::start(&dir, &["--config", config.to_str().unwrap()]);
    assert_no_password_in(&dir);
    let record = std::fs::read_to_string(dir.join("store.json")).unwrap();
    assert!(record.contains("config_file"), "{record}");

    let out = mint(&dir);
    assert!(out.status.success(), "token: {}", stderr(&out));
    let token = String::from_utf8(out.stdout).unwrap();
    assert_eq!(srv.me(token.trim())["user"]["email"], "ana@demo.example");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&etc);
}

#[test]
fn a_password_on_serves_command_line_makes_token_ask_for_store_not_for_a_server() {
    let Some(url) = pg_url() else { return };
    let schema = Schema::fresh(&url);
    let dir = scratch("pg-record-flag");
    let secret_url = with_password(schema.url());
    let srv = Served::start(&dir, &["--store", &secret_url]);
    assert_no_password_in(&dir);

    let out = mint(&dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let said = stderr(&out);
    assert!(said.contains("--store"), "{said}");
    assert!(!said.contains("start the server"), "{said}");
    assert!(!said.contains(PASSWORD), "{said}");

    // With the URL it mints, as before.
    let out = run(
        "token",
        &dir,
        &[
            "--org",
            "demo",
            "--person",
            "ana@demo.example",
            "--store",
            &secret_url,
        ],
    );
    assert!(out.status.success(), "token --store: {}", stderr(&out));
    let token = String::from_utf8(out.stdout).unwrap();
    assert_eq!(srv.me(token.trim())["user"]["email"], "ana@demo.example");
    drop(srv);
    let _ = std::fs::remove_dir_all(&dir);
}
