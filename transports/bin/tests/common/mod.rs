//! Helpers of the end-to-end tests: the built binary on a free loopback port with a
//! private data dir, reached with the shared HTTP/1.1 client over real sockets
//! (`dunning_tests::client`).

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub mod confirm;
pub mod oauth;
pub mod pg;
pub mod trials;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_kobana-dunning");

/// The modern revision.
pub const V2026: &str = "2026-07-28";
/// A legacy revision.
pub const V2025: &str = "2025-06-18";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Where the suite's clock starts when `DUNNING_E2E_CLOCK` is not set: a Thursday, 11:02
/// in São Paulo, inside the demo organization's send window (the busier case: the ruler
/// engine sends at start). CI also runs the suite at a night-time instant.
pub const DEFAULT_CLOCK: &str = "2026-12-03T14:02:00Z";

/// The suite's wall clock minus the real one, in milliseconds: fixed once per test
/// process, so every server, `token` and `demo` started by it (`--clock`) and every time
/// the tests compute agree, whatever the hour or the day the suite runs at.
fn clock_offset_ms() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let text = std::env::var("DUNNING_E2E_CLOCK").unwrap_or_else(|_| DEFAULT_CLOCK.into());
        let start = chrono::DateTime::parse_from_rfc3339(&text)
            .unwrap_or_else(|e| panic!("DUNNING_E2E_CLOCK={text:?}: {e}"))
            .timestamp_millis();
        start - real_ms()
    })
}

fn real_ms() -> i64 {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970");
    i64::try_from(d.as_millis()).expect("milliseconds fit")
}

/// The suite's time now, in milliseconds since the epoch (what the servers read).
pub fn now_ms() -> u64 {
    u64::try_from(real_ms() + clock_offset_ms()).expect("after 1970")
}

/// The suite's time now, in whole seconds.
pub fn now_secs() -> u64 {
    now_ms() / 1000
}

/// `--clock <the suite's time now>@<the real time now>`, for every command of the binary
/// a test runs: every process gets the suite's own offset, exactly, however long it
/// takes to start (a bare instant would make a server that started late lag the suite).
pub fn clock_args() -> [String; 2] {
    let real = real_ms();
    let ms = real + clock_offset_ms();
    let at = chrono::DateTime::from_timestamp_millis(ms).expect("a valid instant");
    [
        "--clock".into(),
        format!(
            "{}@{real}",
            at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        ),
    ]
}

/// A fresh, empty directory under the target's temporary directory.
pub fn scratch(name: &str) -> PathBuf {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("kobana-e2e-{}", std::process::id()))
        .join(format!("{name}-{n}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A data dir seeded once per test process (`demo` on a new dir), copied for each server
/// so that every test starts from the same data without paying for the seeding again;
/// on PostgreSQL, with the seeded tables' rows.
fn template() -> &'static (PathBuf, Option<pg::Dump>) {
    static TEMPLATE: OnceLock<(PathBuf, Option<pg::Dump>)> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        // Leftovers of earlier runs.
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let mine = format!("kobana-e2e-{}", std::process::id());
        if let Ok(entries) = std::fs::read_dir(&root) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                // Only those of processes that are gone: test binaries may run side by
                // side (nextest, or two `cargo test` at once).
                let pid = name.strip_prefix("kobana-e2e-").filter(|_| name != mine);
                if pid.is_some_and(|p| !Path::new("/proc").join(p).exists()) {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
        let dir = scratch("template");
        let demo = |store: &[&str]| {
            let out = Command::new(BIN)
                .args(["demo", "--data-dir"])
                .arg(&dir)
                .args(clock_args())
                .args(store)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "demo: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        // On PostgreSQL the data goes to a schema copied into memory and dropped at once
        // (see `pg`); the directory keeps the keys.
        let dump = match pg::suite_pg() {
            Some(url) => Some(pg::seeded_dump(&url, |store| demo(&["--store", store]))),
            None => {
                demo(&[]);
                None
            }
        };
        (dir, dump)
    })
}

/// A copy of the seeded template: its files and, on PostgreSQL, its data in a fresh
/// schema of the new dir's own.
pub fn seeded_dir(name: &str) -> PathBuf {
    let dir = scratch(name);
    let (template, dump) = template();
    for e in std::fs::read_dir(template).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    if let (Some(url), Some(dump)) = (pg::suite_pg(), dump) {
        pg::restore(&dir, &url, dump);
    }
    dir
}

/// Removes a data dir a test used without a [`Srv`], and its PostgreSQL schema.
pub fn discard(dir: &Path) {
    pg::release(dir);
    let _ = std::fs::remove_dir_all(dir);
}

/// A running `kobana-dunning serve`.
pub struct Srv {
    /// The process.
    pub child: Child,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The development token of the startup banner (empty when the development key is not
    /// trusted, or in JSON mode without `--print-token`).
    pub token: String,
    /// The startup banner (on stderr): its text lines, or its one JSON event.
    pub banner: String,
    /// Everything printed on stdout (nothing, by design).
    pub stdout: Arc<Mutex<String>>,
    /// The data dir.
    pub dir: PathBuf,
    /// The store's URL when the server runs on PostgreSQL (`--store`), for `token`.
    pub store: Option<String>,
    /// Everything logged on stderr so far.
    pub stderr: Arc<Mutex<String>>,
    /// Set once the process's stderr reached its end (every line is in `stderr`).
    stderr_done: Arc<AtomicBool>,
}

impl Srv {
    /// Starts `serve` on `127.0.0.1:0` with a seeded data dir, extra flags and, when
    /// given, a config file with `config`.
    pub fn start(extra: &[&str], config: Option<&str>) -> Self {
        Self::start_in(seeded_dir("srv"), extra, config)
    }

    /// Like [`Srv::start`], on the given data dir.
    pub fn start_in(dir: PathBuf, extra: &[&str], config: Option<&str>) -> Self {
        Self::start_full(dir, "127.0.0.1:0", extra, config, &[])
    }

    /// Like [`Srv::start`], listening on `listen` (e.g. `0.0.0.0:0`).
    pub fn start_on(listen: &str, extra: &[&str], config: Option<&str>) -> Self {
        Self::start_full(seeded_dir("srv"), listen, extra, config, &[])
    }

    /// Like [`Srv::start`], with environment variables (`RUST_LOG` is unset unless given).
    pub fn start_env(extra: &[&str], config: Option<&str>, env: &[(&str, &str)]) -> Self {
        Self::start_full(seeded_dir("srv"), "127.0.0.1:0", extra, config, env)
    }

    fn start_full(
        dir: PathBuf,
        listen: &str,
        extra: &[&str],
        config: Option<&str>,
        env: &[(&str, &str)],
    ) -> Self {
        // On PostgreSQL, the dir's own schema, unless the test names a store itself.
        let store = match extra.iter().position(|a| *a == "--store") {
            Some(i) => extra.get(i + 1).map(|u| (*u).to_owned()),
            None => pg::store_url(&dir),
        };
        let mut cmd = Command::new(BIN);
        cmd.env_remove("RUST_LOG").envs(env.iter().copied());
        cmd.args(["serve", "--listen", listen, "--data-dir"])
            .arg(&dir)
            .args(clock_args())
            .args(extra);
        if let Some(url) = store.as_ref().filter(|_| !extra.contains(&"--store")) {
            cmd.args(["--store", url]);
        }
        if let Some(text) = config {
            let path = dir.join("test-config.toml");
            std::fs::write(&path, text).unwrap();
            cmd.arg("--config").arg(path);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The banner is on stderr, among the log lines: the text lines up to `Ready:`, or
        // the one JSON event whose message is `ready`.
        let stderr = Arc::new(Mutex::new(String::new()));
        let err = child.stderr.take().unwrap();
        let sink = stderr.clone();
        let stderr_done = Arc::new(AtomicBool::new(false));
        let done = stderr_done.clone();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut banner = String::new();
            let mut token = String::new();
            let mut token_next = false;
            let mut ready = false;
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                {
                    let mut s = sink.lock().unwrap();
                    s.push_str(&line);
                    s.push('\n');
                }
                if ready {
                    continue;
                }
                if let Ok(event) = serde_json::from_str::<Value>(&line)
                    && event["message"] == "ready"
                {
                    let token = event["dev_token"].as_str().unwrap_or_default().to_owned();
                    let addr = event["listen"].as_str().unwrap_or_default().to_owned();
                    let _ = tx.send(Some((line.clone(), token, addr)));
                    ready = true;
                    continue;
                }
                if line.starts_with("kobana-dunning ") && line.contains(" listening on ") {
                    banner.clear();
                }
                banner.push_str(&line);
                banner.push('\n');
                if line.starts_with("Ready:") {
                    let addr = banner
                        .lines()
                        .find_map(|l| {
                            l.split_once(" listening on ")
                                .map(|(_, a)| a.trim().to_owned())
                        })
                        .expect("listening line");
                    let _ = tx.send(Some((banner.clone(), token.clone(), addr)));
                    ready = true;
                    continue;
                }
                if token_next {
                    token.clone_from(&line);
                }
                token_next = line.starts_with("Development token");
            }
            done.store(true, Ordering::Release);
            let _ = tx.send(None);
        });
        // Nothing is printed on stdout; whatever is, is kept (and the pipe drained).
        let stdout = Arc::new(Mutex::new(String::new()));
        let mut out = child.stdout.take().unwrap();
        let out_sink = stdout.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                out_sink
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let Ok(Some((banner, token, addr))) = rx.recv_timeout(Duration::from_secs(60)) else {
            let _ = child.kill();
            panic!("server did not start: {}", stderr.lock().unwrap());
        };
        // On PostgreSQL, nothing of the store in the data dir: the suite really runs there.
        assert!(
            store.is_none() || !dir.join("dunning.sqlite3").exists(),
            "a SQLite database beside --store"
        );
        Self {
            child,
            url: format!("http://{addr}"),
            addr,
            token,
            banner,
            stdout,
            dir,
            store,
            stderr,
            stderr_done,
        }
    }

    /// Runs `kobana-dunning token --data-dir <dir> <args>`; returns stdout.
    pub fn mint(&self, args: &[&str]) -> String {
        let mut cmd = Command::new(BIN);
        cmd.arg("token")
            .args(args)
            .arg("--data-dir")
            .arg(&self.dir)
            .args(clock_args());
        if let Some(url) = self.store.as_ref().filter(|_| !args.contains(&"--store")) {
            cmd.args(["--store", url]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "token {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.trim_end().to_owned()
    }

    /// A development token for `/v1` (the API audience) of `person` in `org`.
    pub fn mint_api(&self, org: &str, person: &str) -> String {
        self.mint(&["--org", org, "--person", person, "--audience", "api"])
    }

    /// A raw request.
    pub fn request(
        &self,
        method: &str,
        target: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Resp {
        http(&self.addr, method, target, headers, body)
    }

    /// A JSON-RPC request to the MCP endpoint, in era `version`, with `token`.
    pub fn rpc(&self, token: Option<&str>, version: &str, method: &str, params: Value) -> Resp {
        self.rpc_at("/", token, version, method, params)
    }

    /// Like [`Srv::rpc`], to `target`.
    pub fn rpc_at(
        &self,
        target: &str,
        token: Option<&str>,
        version: &str,
        method: &str,
        params: Value,
    ) -> Resp {
        self.rpc_with(target, token, version, method, params, &[])
    }

    /// Like [`Srv::rpc_at`], with `extra` header fields.
    pub fn rpc_with(
        &self,
        target: &str,
        token: Option<&str>,
        version: &str,
        method: &str,
        mut params: Value,
        extra: &[(&str, &str)],
    ) -> Resp {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if version == V2026 {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": V2026,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "e2e", "version": "1" },
            });
        }
        let body = json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params });
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", version),
        ];
        if let Some(a) = &auth {
            headers.push(("Authorization", a));
        }
        if version == V2026 {
            headers.push(("Mcp-Method", method));
            if let Some(n) = &name {
                headers.push(("Mcp-Name", n));
            }
        }
        headers.extend_from_slice(extra);
        self.request("POST", target, &headers, body.to_string().as_bytes())
    }

    /// `tools/call` of `tool` with `args`.
    pub fn call(&self, token: &str, version: &str, tool: &str, args: Value) -> Resp {
        self.rpc(
            Some(token),
            version,
            "tools/call",
            json!({ "name": tool, "arguments": args }),
        )
    }

    /// Sends SIGTERM and waits (at most 30 s) for the exit status.
    pub fn terminate(&mut self) -> ExitStatus {
        let pid = self.child.id().to_string();
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM {pid}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Its last lines may still be in the pipe: read them all before anyone
                // looks at the log.
                while !self.stderr_done.load(Ordering::Acquire) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return status;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's store, opened beside it as an operator's tool would: the data dir's
    /// SQLite file, or the server's PostgreSQL schema.
    pub fn open_store(&self) -> Arc<dyn dunning_domain::store::Store> {
        use dunning_domain::store::{postgres::PostgresStore, sqlite::SqliteStore};
        match &self.store {
            Some(url) => Arc::new(PostgresStore::open(url, 1).unwrap()),
            None => Arc::new(SqliteStore::open(&self.dir.join("dunning.sqlite3"), 0).unwrap()),
        }
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Sends SIGKILL (no drain, no shutdown code runs), reaps the process and returns its
    /// exit status and the data dir, which is kept (for a restart on it).
    pub fn sigkill(mut self) -> (ExitStatus, PathBuf) {
        // `Child::kill` is SIGKILL on Unix.
        self.child.kill().unwrap();
        let status = self.child.wait().unwrap();
        // `Drop` then removes nothing: the empty path does not exist.
        (status, std::mem::take(&mut self.dir))
    }
}

impl Drop for Srv {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The dir and its schema go together (neither, after `sigkill`: empty path).
        pg::release(&self.dir);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

// The HTTP/1.1 client is the workspace's one (`dunning_tests::client`): `http` for one
// request on a fresh connection, `try_http` for what a client sees of a dying server.
pub use dunning_tests::client::{Resp, http, try_http};

/// Percent-encodes a path segment or query component (unreserved characters pass).
pub fn pct(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A query-string value: scalars as text, arrays comma-separated (how `/v1` types them).
pub fn query_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(query_value).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// Today in São Paulo (UTC−3) by the suite's clock, plus `days`, as `YYYY-MM-DD`.
pub fn date_in(days: i64) -> String {
    let secs = now_secs();
    let local = i64::try_from(secs).expect("seconds fit") - 3 * 3600;
    // Howard Hinnant's civil_from_days.
    let z = local.div_euclid(86_400) + days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// A valid CPF whose nine base digits are `base` (check digits computed by the domain's
/// own rule).
pub fn cpf(base: u32) -> String {
    let digits: Vec<u8> = format!("{base:09}").bytes().map(|b| b - b'0').collect();
    dunning_domain::brazil::document::cpf_from_base(&digits.try_into().unwrap())
}

/// A 2026 `tools/call` over a fresh connection; `None` when the server is gone.
pub fn mcp_call(addr: &str, token: &str, tool: &str, args: &Value) -> Option<Resp> {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": tool, "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V2026,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": { "name": "e2e", "version": "1" },
            },
        },
    });
    let auth = format!("Bearer {token}");
    try_http(
        addr,
        "POST",
        "/",
        &[
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", V2026),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", tool),
            ("Authorization", &auth),
        ],
        body.to_string().as_bytes(),
    )
}

/// The `structuredContent` of a successful tool result, or why it is not one.
pub fn tool_ok(r: &Resp) -> Result<Value, String> {
    let v: Value = serde_json::from_slice(&r.body).map_err(|e| format!("{e}: {}", r.text()))?;
    let result = &v["result"];
    if r.status != 200 || result.is_null() || result["isError"] == true {
        return Err(format!("{} {}", r.status, r.text()));
    }
    Ok(result["structuredContent"].clone())
}
