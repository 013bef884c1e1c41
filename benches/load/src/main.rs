//! # dunning-load: loopback load benchmark of the network adapters
//!
//! ```text
//! cargo run --release -p dunning-load            # the whole report (about 3 minutes)
//! cargo run --release -p dunning-load -- --quick # shorter runs, fewer idle connections
//! ```
//!
//! Each server runs in a child process (`dunning-load serve <kind>`, port on stdout, stops
//! when its stdin closes or after 10 minutes), so its memory can be read from
//! `/proc/<pid>/status` and its threads do not mix with the load generator's.
//!
//! * **Throughput**: N keep-alive connections (default 50) on a tokio load generator send
//!   fixed request bytes back to back for a fixed time (or a request budget), recording each
//!   request's latency. `hyper 1.x + the core` runs the same core behind hyper (body
//!   collected, `Server::handle` on the blocking pool): the fair yardstick of what our codec
//!   and loop cost. Every scenario runs in 3 interleaved rounds and the median round is
//!   reported, so a burst of noise on the machine does not land on one server only. Servers: a bare hyper 1.x answering a fixed `200` (the floor of HTTP
//!   on this machine), then the tokio, mio and blocking adapters with the test domain, for
//!   `server/discover` and a trivial `tools/call` (era 2026, every header).
//! * **Idle memory**: 10,000 connections each send one request, read the answer and stay
//!   open; the server's `VmRSS` before and after, divided by the count.
//!
//! * **Side by side** (`dunning-load versus`, see `versus.rs`): the product binary beside
//!   bare hyper, rmcp and tower-mcp, each pinned to one CPU, `wrk` on the other.
//! * **Two organizations' writers** (`dunning-load contention --store URL [--secs N]`,
//!   see `contention.rs`): `versus`' last row alone, for looking at its lock waits.
//! * **The product binary** (`dunning-load against NAME=URL@TOKEN...`, see `against.rs`):
//!   running servers compared on a read and a write; `benches/replicas.sh` compares one
//!   replica on SQLite, one on PostgreSQL and three behind nginx.
//!
//! Loopback only (127.0.0.1); every loop is bounded by time and count.

#![forbid(unsafe_code)]

mod against;
mod contention;
mod versus;

use std::convert::Infallible;
use std::future::Future;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use dunning_runtime::{NoopObserver, Options};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A child server lives at most this long.
const CHILD_LIFETIME: Duration = Duration::from_secs(600);

/// Settings of one report.
#[derive(Clone, Copy, Debug)]
struct Plan {
    conns: usize,
    secs: u64,
    budget: u64,
    idle: usize,
    rounds: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("serve") {
        let kind = args.get(1).cloned().unwrap_or_default();
        if let Err(e) = child(&kind) {
            eprintln!("serve {kind}: {e}");
            std::process::exit(1);
        }
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let plan = Plan {
        conns: 50,
        secs: if quick { 2 } else { 5 },
        budget: 2_000_000,
        idle: if quick { 2_000 } else { 10_000 },
        rounds: if quick { 1 } else { 3 },
    };
    let done = if args.first().map(String::as_str) == Some("versus") {
        versus::run(&args[1..])
    } else if args.first().map(String::as_str) == Some("contention") {
        contention::standalone(&args[1..])
    } else if args.first().map(String::as_str) == Some("against") {
        against::run(&args[1..], Plan { conns: 16, ..plan })
    } else {
        report(plan)
    };
    if let Err(e) = done {
        eprintln!("dunning-load: {e}");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------- the servers (child side)

/// Serves `kind` on 127.0.0.1:0, prints `PORT <n>`, stops when stdin closes.
fn child(kind: &str) -> io::Result<()> {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    println!("PORT {}", std_listener.local_addr()?.port());
    io::stdout().flush()?;
    let stop = Arc::new(AtomicBool::new(false));
    let on_eof = Arc::clone(&stop);
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = io::stdin().take(1 << 20).read_to_end(&mut sink);
        on_eof.store(true, Ordering::SeqCst);
    });
    let on_timer = Arc::clone(&stop);
    std::thread::spawn(move || {
        std::thread::sleep(CHILD_LIFETIME);
        on_timer.store(true, Ordering::SeqCst);
    });
    let opts = Options {
        max_connections: 50_000,
        max_in_flight: 1_024,
        drain_timeout: Duration::from_secs(1),
        ..Options::default()
    };
    let server = Arc::new(dunning_tests::test_server());
    match kind {
        "mio" => dunning_mio::serve(std_listener, server, opts, Arc::new(NoopObserver), stop),
        "blocking" => {
            let opts = Options {
                workers: 64,
                ..opts
            };
            dunning_blocking::serve(std_listener, server, opts, Arc::new(NoopObserver), stop)
        }
        "tokio" | "hyper" | "hyper-core" => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(async move {
                std_listener.set_nonblocking(true)?;
                let listener = tokio::net::TcpListener::from_std(std_listener)?;
                let stopped = async move {
                    while !stop.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                };
                if kind == "hyper" {
                    bare_hyper(listener, stopped).await
                } else if kind == "hyper-core" {
                    hyper_core(listener, server, stopped).await
                } else {
                    let observer = Arc::new(NoopObserver);
                    dunning_tokio::serve(listener, server, opts, observer, stopped).await
                }
            })
        }
        other => Err(io::Error::other(format!("unknown server {other}"))),
    }
}

/// The floor: hyper 1.x, HTTP/1.1 keep-alive, a fixed `200` with a short JSON body.
async fn bare_hyper(
    listener: tokio::net::TcpListener,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    use http_body_util::Full;
    use hyper::service::service_fn;
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                tokio::spawn(async move {
                    let service = service_fn(|_req| async {
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(&b"{\"ok\":true}"[..])))
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

/// The same core behind hyper 1.x instead of our codec and loop (body collected, then
/// `Server::handle` on the blocking pool, as dunning-tokio does): what our adapter costs
/// compared with hyper for the same work.
async fn hyper_core<D: dunning_core::dispatch::Dispatch + 'static>(
    listener: tokio::net::TcpListener,
    server: Arc<dunning_core::Server<D>>,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    use dunning_runtime::EnvSource;
    use http_body_util::{BodyExt, Full};
    use hyper::service::service_fn;
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let _ = stream.set_nodelay(true);
                let server = Arc::clone(&server);
                tokio::spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let server = Arc::clone(&server);
                        async move {
                            let (parts, body) = req.into_parts();
                            let body = body.collect().await.map(|b| b.to_bytes().to_vec()).unwrap_or_default();
                            let resp = tokio::task::spawn_blocking(move || {
                                let headers: Vec<dunning_core::Header<'_>> = parts
                                    .headers
                                    .iter()
                                    .map(|(n, v)| dunning_core::Header { name: n.as_str(), value: v.as_bytes() })
                                    .collect();
                                let req = dunning_core::Request {
                                    method: parts.method.as_str(),
                                    target: parts.uri.path_and_query().map_or("/", |p| p.as_str()),
                                    headers: &headers,
                                    body: &body,
                                };
                                server.handle(&req, &dunning_runtime::SystemEnv.env(dunning_core::Load::Normal))
                            })
                            .await;
                            let mut out = hyper::Response::builder();
                            let body = match resp {
                                Ok(resp) => {
                                    out = out.status(resp.status);
                                    for (n, v) in &resp.headers {
                                        out = out.header(n, v);
                                    }
                                    resp.body
                                }
                                Err(_) => {
                                    out = out.status(500);
                                    Vec::new()
                                }
                            };
                            Ok::<_, Infallible>(
                                out.body(Full::new(io::Cursor::new(body)))
                                    .unwrap_or_else(|_| hyper::Response::new(Full::new(io::Cursor::new(Vec::new())))),
                            )
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        }
    }
}

/// A child server process; killed (if still running) when dropped.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Server {
    fn spawn(kind: &str) -> io::Result<Self> {
        let exe = std::env::current_exe()?;
        let mut child = Command::new(exe)
            .args(["serve", kind])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
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
        Ok(Self {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        })
    }

    /// The child's resident set size, in KiB.
    fn rss_kib(&self) -> io::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .ok_or_else(|| io::Error::other("no VmRSS"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // EOF: graceful stop
        let end = Instant::now() + Duration::from_secs(3);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

// ---------------------------------------------------------------- the load (parent side)

/// An era-2026 request by `tok-owner` (the test domain's token).
fn rpc(method: &str, tool: Option<&str>) -> Vec<u8> {
    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let (name, params) = match tool {
        Some(t) => (
            format!("Mcp-Name: {t}\r\n"),
            format!(r#"{{{META},"name":"{t}","arguments":{{"note":"hi"}}}}"#),
        ),
        None => (String::new(), format!("{{{META}}}")),
    };
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-owner\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// What one load run measured.
struct Measure {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    p50_us: u64,
    p99_us: u64,
}

impl Measure {
    fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }
}

/// What each connection sends: the same bytes every time, or new bytes per request (a
/// write with its own idempotency key).
#[derive(Clone)]
enum Requests {
    Fixed(Arc<[u8]>),
    Each(Arc<dyn Fn() -> Vec<u8> + Send + Sync>),
}

impl From<&[u8]> for Requests {
    fn from(bytes: &[u8]) -> Self {
        Self::Fixed(bytes.into())
    }
}

/// `plan.conns` keep-alive connections send `request` back to back for `plan.secs` (or
/// until `plan.budget` requests), after a one-second warm-up.
fn load(addr: SocketAddr, request: impl Into<Requests>, plan: Plan) -> io::Result<Measure> {
    let request = request.into();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        // Warm-up: caches, the blocking pool, TCP windows.
        let warm = Duration::from_secs(1);
        let _ = run_load(addr, &request, plan.conns, warm, plan.budget).await?;
        run_load(
            addr,
            &request,
            plan.conns,
            Duration::from_secs(plan.secs),
            plan.budget,
        )
        .await
    })
}

async fn run_load(
    addr: SocketAddr,
    request: &Requests,
    conns: usize,
    time: Duration,
    budget: u64,
) -> io::Result<Measure> {
    let issued = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let end = start + time;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..conns {
        let (issued, errors, request) = (issued.clone(), errors.clone(), request.clone());
        tasks.spawn(async move {
            let mut lat = Vec::with_capacity(1 << 16);
            let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
                errors.fetch_add(1, Ordering::Relaxed);
                return lat;
            };
            let _ = s.set_nodelay(true);
            let mut buf = Vec::with_capacity(16 * 1024);
            while Instant::now() < end && issued.fetch_add(1, Ordering::Relaxed) < budget {
                let t = Instant::now();
                let sent = match &request {
                    Requests::Fixed(bytes) => s.write_all(bytes).await,
                    Requests::Each(make) => s.write_all(&make()).await,
                };
                let ok = sent.is_ok()
                    && matches!(read_one(&mut s, &mut buf).await, Ok(200))
                    && !buf.windows(15).any(|w| w == b"\"isError\":true");
                if !ok {
                    errors.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                lat.push(u32::try_from(t.elapsed().as_micros()).unwrap_or(u32::MAX));
            }
            lat
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r.unwrap_or_default());
    }
    let elapsed = start.elapsed();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .map_or(0, u64::from)
    };
    Ok(Measure {
        requests: all.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
    })
}

/// The median run by throughput.
fn median(mut runs: Vec<Measure>) -> Measure {
    runs.sort_by(|a, b| a.rps().total_cmp(&b.rps()));
    runs.swap_remove(runs.len() / 2)
}

/// Reads one response (head + `Content-Length` body); returns its status.
async fn read_one(s: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> io::Result<u16> {
    buf.clear();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let status = head.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
            let len: usize = head
                .split("\r\n")
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < end + 4 + len {
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            return Ok(status);
        }
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens `n` connections, each answered once, then idle; returns the server's RSS growth
/// per connection in bytes.
fn idle_rss(kind: &str, n: usize) -> io::Result<(u64, u64, f64)> {
    let server = Server::spawn(kind)?;
    // Warm the server up (runtime threads, first allocations) before the baseline.
    let req = rpc("server/discover", None);
    for _ in 0..10 {
        let mut s = TcpStream::connect(server.addr)?;
        s.write_all(&req)?;
        read_blocking(&mut s)?;
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = server.rss_kib()?;
    let mut socks = Vec::with_capacity(n);
    for _ in 0..n {
        let mut s = TcpStream::connect(server.addr)?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.write_all(&req)?;
        read_blocking(&mut s)?;
        socks.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let after = server.rss_kib()?;
    drop(socks);
    let per = (after.saturating_sub(before) * 1024) as f64 / n as f64;
    Ok((before, after, per))
}

fn read_blocking(s: &mut TcpStream) -> io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
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
                return Ok(());
            }
        }
    }
}

fn report(plan: Plan) -> io::Result<()> {
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    println!(
        "dunning-load: {} keep-alive connections, {} s per run (after 1 s warm-up), median of {} \
         interleaved rounds, loopback, {} CPUs",
        plan.conns,
        plan.secs,
        plan.rounds,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let discover = rpc("server/discover", None);
    let call = rpc("tools/call", Some("test_echo"));
    let scenarios: [(&str, &str, &[u8]); 9] = [
        ("hyper", "fixed 200", &discover),
        ("hyper-core", "server/discover", &discover),
        ("hyper-core", "tools/call test_echo", &call),
        ("tokio", "server/discover", &discover),
        ("tokio", "tools/call test_echo", &call),
        ("mio", "server/discover", &discover),
        ("mio", "tools/call test_echo", &call),
        ("blocking", "server/discover", &discover),
        ("blocking", "tools/call test_echo", &call),
    ];
    let mut servers = Vec::new();
    for kind in ["hyper", "hyper-core", "tokio", "mio", "blocking"] {
        servers.push((kind, Server::spawn(kind)?));
    }
    let mut results: Vec<Vec<Measure>> = scenarios.iter().map(|_| Vec::new()).collect();
    for _ in 0..plan.rounds {
        for (i, (kind, _, req)) in scenarios.iter().enumerate() {
            let addr = servers
                .iter()
                .find(|(k, _)| k == kind)
                .map(|(_, s)| s.addr)
                .ok_or_else(|| io::Error::other("no server"))?;
            results[i].push(load(addr, *req, plan)?);
        }
    }
    drop(servers);
    let medians: Vec<Measure> = results.into_iter().map(median).collect();
    let floor = medians[0].rps();
    println!();
    println!("| server | request | rps | p50 (µs) | p99 (µs) | vs hyper | errors |");
    println!("|---|---|---:|---:|---:|---:|---:|");
    for ((kind, name, _), m) in scenarios.iter().zip(&medians) {
        let server = if *kind == "hyper" {
            "bare hyper 1.x".to_owned()
        } else if *kind == "hyper-core" {
            "hyper 1.x + the core".to_owned()
        } else {
            format!("dunning-{kind}")
        };
        row(&server, name, m, floor);
    }
    println!();
    println!("| no sockets: codec + core, one thread | wall µs/request | CPU µs/request |");
    println!("|---|---:|---:|");
    for (name, req) in [
        ("server/discover", &discover),
        ("tools/call test_echo", &call),
    ] {
        let (wall, cpu) = core_cost(req);
        println!("| {name} | {wall:.1} | {cpu:.1} |");
    }
    println!();
    println!("| server | idle connections | VmRSS before (KiB) | after (KiB) | per connection |");
    println!("|---|---:|---:|---:|---:|");
    for kind in ["tokio", "mio"] {
        let (before, after, per) = idle_rss(kind, plan.idle)?;
        println!(
            "| dunning-{kind} | {} | {before} | {after} | {:.1} KiB |",
            plan.idle,
            per / 1024.0
        );
    }
    Ok(())
}

/// CPU time this thread has used, from `/proc/thread-self/schedstat` (nanoseconds).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The cost of one request without sockets: codec in, `Service::handle` (the core), codec
/// out, on this thread, for about a second. Returns (wall µs, thread-CPU µs) per request.
fn core_cost(request: &[u8]) -> (f64, f64) {
    let service = dunning_runtime::Service::new(
        Arc::new(dunning_tests::test_server()),
        Options::default(),
        Arc::new(NoopObserver),
    );
    let opts = Options::default();
    let (start, cpu0) = (Instant::now(), thread_cpu_ns());
    let mut n = 0u64;
    while start.elapsed() < Duration::from_secs(1) && n < 1_000_000 {
        let mut conn = dunning_runtime::Connection::new(&opts);
        conn.received(request, Instant::now());
        let _ = conn.answer_all(&service);
        n += 1;
    }
    let wall = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    let cpu = thread_cpu_ns().saturating_sub(cpu0) as f64 / 1e3 / n as f64;
    (wall, cpu)
}

fn row(server: &str, request: &str, m: &Measure, floor: f64) {
    println!(
        "| {server} | {request} | {:.0} | {} | {} | {:.2}× | {} |",
        m.rps(),
        m.p50_us,
        m.p99_us,
        m.rps() / floor,
        m.errors
    );
}
