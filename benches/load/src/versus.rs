//! `dunning-load versus`: the product binary beside bare hyper, rmcp and tower-mcp, in
//! one run.
//!
//! ```text
//! cargo build --release -p kobana-dunning -p dunning-load
//! (cd benches/peers && CARGO_TARGET_DIR=../../target/peers cargo build --release)
//! target/release/dunning-load versus [--quick] [--before PATH/kobana-dunning]
//! ```
//!
//! Servers, each a child process pinned to CPU 0 (`taskset`, when the machine has two
//! CPUs or more), with `wrk` (one thread, 32 keep-alive connections) pinned to CPU 1:
//!
//! * bare hyper 1.x answering a fixed `200`: the floor, 1.00;
//! * rmcp and tower-mcp (`benches/peers`), one `echo` tool each, stateless, JSON
//!   responses, asked `tools/call echo`;
//! * `kobana-dunning serve` (tokio, a fresh data dir with the demo data, rate limits off,
//!   a token of the demo owner minted by `kobana-dunning token`), asked `server/discover`,
//!   `tools/list` (as it is, and in gzip as the SDK clients ask for it),
//!   `tools/call dunning_me`, `dunning_charges_list` (overdue, per_page 10)
//!   and `dunning_debtors_create` (a new debtor and idempotency key per request);
//! * the same binary on the mio and the blocking adapters (`--transport`), asked
//!   `server/discover`, `dunning_me` and the charges page: every adapter's p99/p50;
//! * with `--store URL`, a replica on PostgreSQL (a scratch schema) asked the page and
//!   the create, then the two organizations' write contention (`contention.rs`);
//! * with `--before PATH`, another build of the product asked the same (before/after in
//!   one run).
//!
//! While a server is measured the other servers are stopped (`SIGSTOP`, then `SIGCONT`):
//! all are pinned to CPU 0, and an idle one's timers would land in the measured one's
//! tail.
//!
//! Every request is era 2026 with its mirrored headers. Each scenario is first sent once
//! and its answer checked (`200`, no `"isError":true`, in gzip when asked); then every round runs every
//! scenario once (1 s warm-up, then the measured run), and the median round is printed
//! with its ratio to bare hyper of the same round set, and every round's p99/p50 (in
//! the order run) beside the median round's. Loopback only; every run bounded.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::contention;

/// The adapters besides tokio, asked the protocol path, a call and a page.
const OTHER_ADAPTERS: [&str; 2] = ["mio", "blocking"];

/// Connections `wrk` keeps busy (the issue's figure).
const CONNS: usize = 32;

/// The era-2026 `_meta` every request carries.
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// One measured run of `wrk`.
pub(crate) struct Run {
    pub(crate) rps: f64,
    pub(crate) p50_us: f64,
    pub(crate) p99_us: f64,
    pub(crate) errors: u64,
    /// The server's CPU time (user + system) per request, in µs: what it spends on one,
    /// whatever the machine does meanwhile (`/proc/PID/stat`, 10 ms ticks).
    cpu_us: f64,
}

/// The CPU time of process `pid` so far, in µs (Linux; `0` elsewhere).
fn cpu_time_us(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    // After the command name (in parentheses, which may hold spaces): state is field 3,
    // utime and stime fields 14 and 15, in clock ticks (100 per second on Linux).
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) * 10_000.0
}

/// A child server: killed (if still running) when dropped.
pub(crate) struct Child2 {
    child: Child,
    pub(crate) addr: SocketAddr,
    /// The bearer token, for the product.
    pub(crate) token: Option<String>,
    _dir: Option<TempDir>,
}

impl Drop for Child2 {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // EOF: the bench children stop on it
        let _ = self.child.kill(); // the product: SIGKILL is fine, its dir is scratch
        let _ = self.child.wait();
    }
}

/// A scratch directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `taskset -c <cpu>` before `program` when pinning, else `program` alone.
fn pinned(cpu: Option<usize>, program: &Path) -> Command {
    match cpu {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(c.to_string()).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

/// A child that prints `PORT <n>` first (dunning-load's and dunning-peers' children).
fn spawn_port_child(mut cmd: Command) -> io::Result<Child2> {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| io::Error::other("no stdout"))?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    let port: u16 = line
        .trim()
        .strip_prefix("PORT ")
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| io::Error::other(format!("bad child line {line:?}")))?;
    Ok(Child2 {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        token: None,
        _dir: None,
    })
}

/// A free loopback port (bound, then released: the product binds it right after).
fn free_port() -> io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Who a product's token is for: the demo organization's owner, or the other
/// organization's (`acme`).
pub(crate) const DEMO_OWNER: (&str, &str) = ("demo", "ana@demo.example");
pub(crate) const ACME_OWNER: (&str, &str) = ("acme", "carla@acme.example");

/// `kobana-dunning serve` on a new data dir (demo data, seeded by the first server of a
/// store), rate limits off, on `store` (a PostgreSQL URL) or SQLite in the dir, with the
/// network adapter `transport`, and a token of `owner` (organization, person).
pub(crate) fn spawn_product(
    bin: &Path,
    cpu: Option<usize>,
    label: &str,
    store: Option<&str>,
    owner: (&str, &str),
    transport: &str,
) -> io::Result<Child2> {
    let tag: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let dir = std::env::temp_dir().join(format!("dunning-versus-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let dir = TempDir(dir);
    let config = dir.0.join("off.toml");
    std::fs::write(&config, "[rate_limit]\nenabled = false\n")?;
    let port = free_port()?;
    let err = std::fs::File::create(dir.0.join("serve.err"))?;
    let store_args: Vec<&str> = store.map(|url| vec!["--store", url]).unwrap_or_default();
    let child = pinned(cpu, bin)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(&dir.0)
        .arg("--config")
        .arg(&config)
        .args(&store_args)
        .args(["--transport", transport])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()?;
    let mut server = Child2 {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], port)),
        token: None,
        _dir: None,
    };
    let start = Instant::now();
    loop {
        let log = std::fs::read_to_string(dir.0.join("serve.err")).unwrap_or_default();
        if log.contains("Ready:") || log.contains("\"message\":\"ready\"") {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) || server.child.try_wait()?.is_some() {
            return Err(io::Error::other(format!("{label} did not start: {log}")));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = Command::new(bin)
        .args(["token", "--org", owner.0, "--person", owner.1, "--data-dir"])
        .arg(&dir.0)
        .args(&store_args)
        .output()?;
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if token.is_empty() {
        return Err(io::Error::other(format!(
            "{label}: no token: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    server.token = Some(token);
    server._dir = Some(dir);
    Ok(server)
}

/// One request to measure: the `wrk` script that sends it, and a sample of its bytes
/// for the first check.
pub(crate) struct Scenario {
    server: usize,
    label: String,
    request: &'static str,
    /// Lua for `wrk -s`.
    pub(crate) script: String,
    /// One request, sent and checked before measuring.
    pub(crate) sample: Vec<u8>,
}

/// The Lua string literal of `s`.
fn lua(s: &str) -> String {
    format!("{s:?}")
}

/// The head `wrk` sends (besides `Host` and `Content-Length`), as Lua assignments.
fn lua_headers(headers: &[(&str, String)]) -> String {
    headers
        .iter()
        .map(|(n, v)| format!("wrk.headers[{}] = {}\n", lua(n), lua(v)))
        .collect()
}

/// The era-2026 headers of `method` (and `tool`), with `token` when given.
fn headers(method: &str, tool: Option<&str>, token: Option<&str>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(t) = tool {
        h.push(("Mcp-Name", t.to_owned()));
    }
    if let Some(t) = token {
        h.push(("Authorization", format!("Bearer {t}")));
    }
    h
}

/// The JSON-RPC body of `method` (`tools/call` of `tool` with `args`).
fn body(method: &str, tool: Option<(&str, &str)>) -> String {
    let params = match tool {
        Some((name, args)) => format!(r#"{{{META},"name":"{name}","arguments":{args}}}"#),
        None => format!("{{{META}}}"),
    };
    format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#)
}

/// Raw bytes of one request, for the check.
fn raw(headers: &[(&str, String)], body: &str) -> Vec<u8> {
    let mut out = String::from("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    out.into_bytes()
}

/// A fixed request.
fn fixed(
    server: usize,
    label: &str,
    request: &'static str,
    method: &str,
    tool: Option<(&str, &str)>,
    token: Option<&str>,
) -> Scenario {
    let h = headers(method, tool.map(|t| t.0), token);
    let b = body(method, tool);
    let script = format!(
        "wrk.method = \"POST\"\nwrk.body = {}\n{}",
        lua(&b),
        lua_headers(&h)
    );
    Scenario {
        server,
        label: label.to_owned(),
        request,
        script,
        sample: raw(&h, &b),
    }
}

/// The `tools/list` row asked as the SDK clients ask (`fetch`, `httpx`).
const GZIP_LIST: &str = "tools/list, Accept-Encoding: gzip";

/// `scenario` with `Accept-Encoding: gzip, deflate`; its check wants a gzip answer.
fn gzip(mut scenario: Scenario) -> Scenario {
    const FIELD: &str = "Accept-Encoding: gzip, deflate\r\n";
    scenario
        .script
        .push_str("wrk.headers[\"Accept-Encoding\"] = \"gzip, deflate\"\n");
    let at = scenario
        .sample
        .windows(2)
        .position(|w| w == b"\r\n")
        .map_or(0, |p| p + 2);
    scenario.sample.splice(at..at, FIELD.bytes());
    scenario
}

/// `dunning_debtors_create`, a new debtor (valid CPF, own idempotency key) per request;
/// numbers start at the script's argument, so runs never repeat one.
pub(crate) fn writes(server: usize, label: &str, token: &str) -> Scenario {
    let h = headers("tools/call", Some("dunning_debtors_create"), Some(token));
    let head = lua_headers(&h);
    let prefix = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{META},"name":"dunning_debtors_create","arguments":"#
    );
    // The CPF check digits as `dunning_domain::brazil::document::cpf_from_base`.
    let script = format!(
        r#"{head}
local n = 0
function init(args) n = tonumber(args[1]) end
local prefix = {prefix}
function request()
  n = n + 1
  local s = string.format("%09d", n)
  local d = {{}}
  for i = 1, 9 do d[i] = tonumber(s:sub(i, i)) end
  for _, k in ipairs({{9, 10}}) do
    local sum = 0
    for i = 1, k do sum = sum + d[i] * (k + 2 - i) end
    local r = (sum * 10) % 11
    if r == 10 then r = 0 end
    d[k + 1] = r
  end
  local cpf = s .. d[10] .. d[11]
  local args = string.format('{{"cnpj_cpf":"%s","name":"Carga %d","idempotency_key":"versus-%d"}}', cpf, n, n)
  return wrk.format("POST", "/", nil, prefix .. args .. "}}}}")
end
"#,
        prefix = lua(&prefix)
    );
    let base: [u8; 9] = [2, 9, 9, 9, 9, 9, 9, 9, 1];
    let cpf = dunning_domain::brazil::document::cpf_from_base(&base);
    let b = format!(
        r#"{prefix}{{"cnpj_cpf":"{cpf}","name":"Carga 0","idempotency_key":"versus-check"}}}}}}"#
    );
    Scenario {
        server,
        label: label.to_owned(),
        request: "tools/call dunning_debtors_create",
        script,
        sample: raw(&h, &b),
    }
}

/// Sends `sample` once and checks the answer: `200`, no tool error.
pub(crate) fn check(addr: SocketAddr, sample: &[u8]) -> io::Result<()> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    s.write_all(sample)?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 65536];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .split("\r\n")
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let asked_gzip = String::from_utf8_lossy(sample).contains("Accept-Encoding: gzip");
    let gzipped = text
        .to_ascii_lowercase()
        .contains("\r\ncontent-encoding: gzip\r\n");
    if !text.starts_with("HTTP/1.1 200")
        || text.contains("\"isError\":true")
        || asked_gzip != gzipped
    {
        let cut: String = text.chars().take(600).collect();
        return Err(io::Error::other(format!("check failed: {cut}")));
    }
    Ok(())
}

/// Sends `sig` (`-STOP`, `-CONT`) to `pids` with kill(1).
fn signal(pids: &[u32], sig: &str) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg(sig)
        .args(pids.iter().map(u32::to_string))
        .status();
}

/// Runs `wrk` on `script` against `addr` for `secs`.
pub(crate) fn wrk(
    cpu: Option<usize>,
    conns: usize,
    addr: SocketAddr,
    script: &Path,
    secs: u64,
    arg: u64,
) -> io::Result<Run> {
    let out = pinned(cpu, Path::new("wrk"))
        .args([
            "-t1",
            "-c",
            &conns.to_string(),
            "-d",
            &format!("{secs}s"),
            "--latency",
        ])
        .arg("--timeout")
        .arg("10s")
        .arg("-s")
        .arg(script)
        .arg(format!("http://{addr}/"))
        .arg("--")
        .arg(arg.to_string())
        .output()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    parse_wrk(&text).ok_or_else(|| {
        io::Error::other(format!(
            "wrk output not understood: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ))
    })
}

/// `Requests/sec`, the 50 % and 99 % latencies and the errors of a `wrk --latency` report.
fn parse_wrk(text: &str) -> Option<Run> {
    let us = |v: &str| -> Option<f64> {
        let v = v.trim();
        let (num, mult) = if let Some(n) = v.strip_suffix("us") {
            (n, 1.0)
        } else if let Some(n) = v.strip_suffix("ms") {
            (n, 1e3)
        } else if let Some(n) = v.strip_suffix('s') {
            (n, 1e6)
        } else {
            return None;
        };
        num.parse::<f64>().ok().map(|x| x * mult)
    };
    let mut run = Run {
        rps: 0.0,
        p50_us: 0.0,
        p99_us: 0.0,
        errors: 0,
        cpu_us: 0.0,
    };
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("Requests/sec:") {
            run.rps = v.trim().parse().ok()?;
        } else if let Some(v) = line.strip_prefix("50%") {
            run.p50_us = us(v)?;
        } else if let Some(v) = line.strip_prefix("99%") {
            run.p99_us = us(v)?;
        } else if let Some(v) = line.strip_prefix("Non-2xx or 3xx responses:") {
            run.errors += v.trim().parse::<u64>().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Socket errors:") {
            run.errors += v
                .split(',')
                .filter_map(|p| p.split_whitespace().last()?.parse::<u64>().ok())
                .sum::<u64>();
        }
    }
    (run.rps > 0.0).then_some(run)
}

/// Where the other binaries are: beside this one (`target/release`), and the peers
/// under `target/peers/release` (their own workspace).
fn sibling(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    exe.parent().unwrap_or_else(|| Path::new(".")).join(name)
}

/// The CPUs of the servers and of the load (`taskset`), when the machine has two or
/// more and `taskset` is there; `(None, None)` runs both unpinned.
pub(crate) fn placement() -> (Option<usize>, Option<usize>) {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 && Command::new("taskset").arg("-V").output().is_ok() {
        (Some(0), Some(1))
    } else {
        (None, None)
    }
}

/// The argument after `name` in `args` (`--store URL`), if any.
pub(crate) fn value_of<'a>(args: &'a [String], name: &str) -> Option<&'a String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
}

/// Runs the comparison and prints its table.
pub(crate) fn run(args: &[String]) -> io::Result<()> {
    let quick = args.iter().any(|a| a == "--quick");
    let (secs, rounds) = if quick { (2, 1) } else { (5, 3) };
    let value = |name: &str| value_of(args, name);
    let flag = |name: &str| value(name).map(PathBuf::from);
    let product = flag("--product").unwrap_or_else(|| sibling("kobana-dunning"));
    let before = flag("--before");
    let store = value("--store").cloned();
    let peers = flag("--peers").unwrap_or_else(|| {
        sibling("dunning-peers")
            .parent()
            .and_then(Path::parent)
            .unwrap_or_else(|| Path::new("."))
            .join("peers/release/dunning-peers")
    });
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let (server_cpu, load_cpu) = placement();
    let pin = server_cpu.is_some();
    println!(
        "dunning-load versus: wrk -t1 -c{CONNS}, {secs} s per run after 1 s warm-up, median of \
         {rounds} interleaved rounds, loopback, {cpus} CPUs, {}",
        if pin {
            "each server on CPU 0, wrk on CPU 1"
        } else {
            "not pinned"
        }
    );

    let mut servers: Vec<(String, Child2)> = Vec::new();
    let mut me = Command::new("taskset");
    let exe = std::env::current_exe()?;
    let mut hyper_cmd = pinned(server_cpu, &exe);
    hyper_cmd.args(["serve", "hyper"]);
    servers.push(("bare hyper 1.x".into(), spawn_port_child(hyper_cmd)?));
    for (label, kind) in [("rmcp 3.11.0", "rmcp"), ("tower-mcp 0.25.0", "tower-mcp")] {
        let mut cmd = pinned(server_cpu, &peers);
        cmd.args(["serve", kind]);
        servers.push((label.into(), spawn_port_child(cmd)?));
    }
    servers.push((
        "kobana-dunning (tokio)".into(),
        spawn_product(&product, server_cpu, "after", None, DEMO_OWNER, "tokio")?,
    ));
    // The other adapters, for their latency spread (p99/p50) on the same requests.
    let other_adapters = servers.len()..servers.len() + OTHER_ADAPTERS.len();
    for transport in OTHER_ADAPTERS {
        servers.push((
            format!("kobana-dunning ({transport})"),
            spawn_product(&product, server_cpu, transport, None, DEMO_OWNER, transport)?,
        ));
    }
    if let Some(b) = &before {
        servers.push((
            "kobana-dunning before".into(),
            spawn_product(b, server_cpu, "before", None, DEMO_OWNER, "tokio")?,
        ));
    }
    // The PostgreSQL replica's schema outlives its server (dropped after `servers`).
    let scratch = match &store {
        Some(url) => Some(contention::Scratch::new(url)?),
        None => None,
    };
    let pg_server = match &scratch {
        Some(s) => {
            servers.push((
                "kobana-dunning (tokio, PostgreSQL)".into(),
                spawn_product(
                    &product,
                    server_cpu,
                    "postgres",
                    Some(s.url()),
                    DEMO_OWNER,
                    "tokio",
                )?,
            ));
            Some(servers.len() - 1)
        }
        None => None,
    };
    // The generator's own process stays off the servers' CPU too.
    if let Some(c) = load_cpu {
        let _ = me
            .args([
                "-a",
                "-p",
                "-c",
                &c.to_string(),
                &std::process::id().to_string(),
            ])
            .output();
    }

    let echo = Some(("echo", r#"{"note":"hi"}"#));
    let mut scenarios = vec![
        {
            let mut s = fixed(
                0,
                "bare hyper 1.x",
                "fixed 200",
                "server/discover",
                None,
                None,
            );
            s.sample = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec();
            s
        },
        fixed(
            1,
            "rmcp 3.11.0",
            "tools/call echo",
            "tools/call",
            echo,
            None,
        ),
        fixed(
            1,
            "rmcp 3.11.0",
            "server/discover",
            "server/discover",
            None,
            None,
        ),
        fixed(
            2,
            "tower-mcp 0.25.0",
            "tools/call echo",
            "tools/call",
            echo,
            None,
        ),
    ];
    for (i, (label, s)) in servers.iter().enumerate().skip(3) {
        let token = s.token.as_deref().unwrap_or_default();
        let t = Some(token);
        let list = Some((
            "dunning_charges_list",
            r#"{"status":"overdue","per_page":10}"#,
        ));
        let list_label = "tools/call dunning_charges_list overdue, per_page 10";
        if Some(i) == pg_server {
            // On PostgreSQL, the store's rows: a page read and a write.
            scenarios.push(fixed(i, label, list_label, "tools/call", list, t));
            scenarios.push(writes(i, label, token));
            continue;
        }
        // The other adapters: the protocol path, a call and a page (no list, no write).
        let other = other_adapters.contains(&i);
        scenarios.push(fixed(
            i,
            label,
            "server/discover",
            "server/discover",
            None,
            t,
        ));
        if !other {
            scenarios.push(fixed(i, label, "tools/list", "tools/list", None, t));
            scenarios.push(gzip(fixed(i, label, GZIP_LIST, "tools/list", None, t)));
        }
        let me_call = Some(("dunning_me", "{}"));
        scenarios.push(fixed(
            i,
            label,
            "tools/call dunning_me",
            "tools/call",
            me_call,
            t,
        ));
        scenarios.push(fixed(i, label, list_label, "tools/call", list, t));
        if !other {
            scenarios.push(writes(i, label, token));
        }
    }

    let dir = TempDir(std::env::temp_dir().join(format!("dunning-versus-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0)?;
    let mut scripts = Vec::new();
    let mut usable = Vec::new();
    for (k, s) in scenarios.iter().enumerate() {
        let path = dir.0.join(format!("s{k}.lua"));
        std::fs::write(&path, &s.script)?;
        scripts.push(path);
        match check(servers[s.server].1.addr, &s.sample) {
            Ok(()) => usable.push(true),
            Err(e) => {
                println!("skipped: {} {}: {e}", s.label, s.request);
                usable.push(false);
            }
        }
    }

    let mut runs: Vec<Vec<Run>> = scenarios.iter().map(|_| Vec::new()).collect();
    let mut arg = 300_000_000u64;
    for _ in 0..rounds {
        for (k, s) in scenarios.iter().enumerate() {
            if !usable[k] {
                continue;
            }
            let addr = servers[s.server].1.addr;
            // The others stopped while this one is measured: their timers (job ticks,
            // listeners) would otherwise take CPU 0 from it, in its tail.
            let others: Vec<u32> = (0..servers.len())
                .filter(|&j| j != s.server)
                .map(|j| servers[j].1.child.id())
                .collect();
            let pid = servers[s.server].1.child.id();
            signal(&others, "-STOP");
            let measured = (|| {
                let _ = wrk(load_cpu, CONNS, addr, &scripts[k], 1, arg + 1_000_000)?;
                let cpu = cpu_time_us(pid);
                let mut run = wrk(load_cpu, CONNS, addr, &scripts[k], secs, arg + 2_000_000)?;
                let requests = run.rps * secs as f64;
                run.cpu_us = (cpu_time_us(pid) - cpu) / requests.max(1.0);
                Ok::<_, io::Error>(run)
            })();
            signal(&others, "-CONT");
            arg += 2_000_000;
            runs[k].push(measured?);
        }
    }
    drop(servers);
    drop(scratch);

    // Each round's p99/p50 beside the median round's: a tail is the noisiest figure of
    // a run, and one round's says little of the others'.
    let spreads: Vec<String> = runs
        .iter()
        .map(|r| {
            r.iter()
                .map(|run| format!("{:.1}", run.p99_us / run.p50_us.max(1.0)))
                .collect::<Vec<_>>()
                .join(" / ")
        })
        .collect();
    let medians: Vec<Option<Run>> = runs
        .into_iter()
        .map(|mut r| {
            r.sort_by(|a, b| a.rps.total_cmp(&b.rps));
            (!r.is_empty()).then(|| r.swap_remove(r.len() / 2))
        })
        .collect();
    let floor = medians[0].as_ref().map_or(1.0, |m| m.rps);
    println!();
    println!(
        "| server | request | req/s | vs bare hyper | CPU µs/req | p50 (µs) | p99 (µs) | p99/p50 | each round's p99/p50 | errors |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for ((s, m), spread) in scenarios.iter().zip(&medians).zip(&spreads) {
        let Some(m) = m else { continue };
        println!(
            "| {} | {} | {:.0} | {:.3} | {:.1} | {:.0} | {:.0} | {:.1} | {spread} | {} |",
            s.label,
            s.request,
            m.rps,
            m.rps / floor,
            m.cpu_us,
            m.p50_us,
            m.p99_us,
            m.p99_us / m.p50_us.max(1.0),
            m.errors
        );
    }
    if let Some(url) = &store {
        contention::run(&product, url, server_cpu, load_cpu, secs * 2)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parse_wrk;

    #[test]
    fn reads_a_wrk_report() {
        let text = "Running 5s test @ http://127.0.0.1:1/\n  1 threads and 32 connections\n\
            \x20 Latency Distribution\n     50%  245.00us\n     75%  300.00us\n     90%  1.00ms\n\
            \x20    99%    1.23ms\n  123456 requests in 5.00s, 12.34MB read\n\
            \x20 Socket errors: connect 0, read 2, write 0, timeout 1\n\
            \x20 Non-2xx or 3xx responses: 4\nRequests/sec:  24690.12\nTransfer/sec:      2.47MB\n";
        let r = parse_wrk(text).unwrap();
        assert!((r.rps - 24690.12).abs() < 1e-6);
        assert!((r.p50_us - 245.0).abs() < 1e-6);
        assert!((r.p99_us - 1230.0).abs() < 1e-6);
        assert_eq!(r.errors, 7);
    }
}
