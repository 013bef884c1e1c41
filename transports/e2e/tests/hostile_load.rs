//! Hardening, transport (`docs/decisions.md`, "Hardening: transport"): clients that try to hold slots or buy memory without
//! a token, pipeline without reading, or lean on HTTP leniency — over real loopback
//! sockets, on every adapter (in parallel threads). Each test fails without its fix.
//!
//! Every loop is bounded in count and time; every socket has a read timeout.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use dunning_e2e::observe::Counts;
use dunning_e2e::{
    Adapter, Running, body, connect, discover_request, header, read_response, read_to_close, start,
    status, tools_list_request,
};
use dunning_runtime::{CloseReason, Options};
use dunning_tests::test_server;

/// Runs `f` for each adapter in its own thread; a panic names the adapter.
fn each(f: impl Fn(Adapter) + Sync) {
    thread::scope(|s| {
        let handles: Vec<_> = Adapter::ALL
            .iter()
            .map(|&a| {
                let f = &f;
                (a, s.spawn(move || f(a)))
            })
            .collect();
        for (a, h) in handles {
            if h.join().is_err() {
                panic!("{} failed (see above)", a.name());
            }
        }
    });
}

fn serve(adapter: Adapter, opts: Options) -> (Running, Arc<Counts>) {
    let counts = Arc::new(Counts::default());
    let running = start(adapter, Arc::new(test_server()), opts, counts.clone()).unwrap();
    (running, counts)
}

fn small_pool() -> Options {
    Options {
        workers: 4,
        ..Options::default()
    }
}

/// A connected socket whose reads give up after `limit`.
fn connect_within(addr: SocketAddr, limit: Duration) -> TcpStream {
    let s = connect(addr).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    s
}

/// The head of an MCP `tools/list` POST declaring a body of `len` bytes; `auth` is the
/// `Authorization` line (or empty), `extra` more header lines.
fn post_head(auth: &str, len: usize, extra: &str) -> String {
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n{extra}\
         Content-Length: {len}\r\n\r\n"
    )
}

const OWNER: &str = "Authorization: Bearer tok-owner\r\n";

/// A discover request on a new connection is answered 200.
fn answers_normally(addr: SocketAddr, who: Adapter) {
    let mut s = connect(addr).unwrap();
    s.write_all(&discover_request()).unwrap();
    let raw = read_response(&mut s).unwrap();
    assert_eq!(
        status(&raw),
        Some(200),
        "{}: {}",
        who.name(),
        String::from_utf8_lossy(&raw)
    );
}

#[test]
fn a_tokenless_head_gets_401_before_any_body_byte() {
    // Authentication is decided from the head; the body is never waited for.
    each(|a| {
        let (running, _) = serve(a, small_pool());
        for auth in ["", "Authorization: Bearer nope\r\n"] {
            let mut s = connect_within(running.addr(), Duration::from_secs(3));
            s.write_all(post_head(auth, 1000, "").as_bytes()).unwrap();
            let started = Instant::now();
            let raw = read_to_close(&mut s)
                .unwrap_or_else(|e| panic!("{}: no answer before the body ({e})", a.name()));
            assert_eq!(status(&raw), Some(401), "{}", a.name());
            assert!(
                header(&raw, "www-authenticate").is_some_and(|v| v.starts_with("Bearer ")),
                "{}",
                a.name()
            );
            assert_eq!(header(&raw, "connection").as_deref(), Some("close"));
            let v: serde_json::Value = serde_json::from_slice(body(&raw)).unwrap();
            assert_eq!(v["error"]["code"], -31401);
            assert!(v["id"].is_null());
            assert!(started.elapsed() < Duration::from_secs(3), "{}", a.name());
        }
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

#[test]
fn expect_100_continue_is_sent_only_after_authentication() {
    each(|a| {
        let (running, _) = serve(a, small_pool());
        // No token: the 401, never a 100.
        let mut s = connect_within(running.addr(), Duration::from_secs(3));
        s.write_all(post_head("", 2, "Expect: 100-continue\r\n").as_bytes())
            .unwrap();
        let raw = read_to_close(&mut s).unwrap();
        assert!(raw.starts_with(b"HTTP/1.1 401 "), "{}", a.name());
        assert!(!String::from_utf8_lossy(&raw).contains("100 Continue"));
        // A good token: 100, then the body, then the answer.
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
        let mut s = connect_within(running.addr(), Duration::from_secs(3));
        let head = post_head(OWNER, body.len(), "Expect: 100-continue\r\n");
        s.write_all(head.as_bytes()).unwrap();
        let mut interim = [0u8; 25];
        s.read_exact(&mut interim).unwrap();
        assert_eq!(&interim, b"HTTP/1.1 100 Continue\r\n\r\n", "{}", a.name());
        s.write_all(body.as_bytes()).unwrap();
        assert_eq!(status(&read_response(&mut s).unwrap()), Some(200));
        running.stop().unwrap();
    });
}

#[test]
fn trickling_tokenless_bodies_hold_no_slot() {
    // Scaled down: as many token-less trickling uploads as there are slots
    // (connections; blocking workers) used to hold them all; now each is refused at once.
    const SLOTS: usize = 4;
    each(|a| {
        let opts = Options {
            max_connections: SLOTS,
            workers: SLOTS,
            ..Options::default()
        };
        let (running, counts) = serve(a, opts);
        let mut trickling = Vec::new();
        for _ in 0..SLOTS {
            let mut s = connect_within(running.addr(), Duration::from_secs(3));
            s.write_all(post_head("", 1000, "").as_bytes()).unwrap();
            let _ = s.write_all(b"{");
            trickling.push(s);
        }
        for s in &mut trickling {
            let raw = read_to_close(s).expect("refused at once");
            assert_eq!(status(&raw), Some(401), "{}", a.name());
        }
        assert!(
            counts.wait_until(Duration::from_secs(3), |c| c.open() == 0),
            "{}: {} still open",
            a.name(),
            counts.open()
        );
        answers_normally(running.addr(), a);
        drop(trickling);
        running.stop().unwrap();
    });
}

#[test]
fn refused_tricklers_give_their_slots_back_before_lingering() {
    // At the close: a token-less client refused at its head keeps trickling, so
    // the lingering close would last its full 2 s. Before, the connection kept its place
    // under the cap (tokio, mio) or lingered on a worker once 64 lingered aside
    // (blocking) for all that time: a few dozen such clients a second and everyone got
    // 503. Now the place goes back before the linger, and past the lingering budget the
    // socket is closed at once.
    const TRICKLERS: usize = 70;
    each(|a| {
        let opts = Options {
            max_connections: 8,
            workers: 2,
            ..Options::default()
        };
        let (running, _counts) = serve(a, opts);
        let mut writers = Vec::new();
        let mut refused = 0;
        for _ in 0..TRICKLERS {
            let mut s = connect_within(running.addr(), Duration::from_secs(3));
            s.write_all(post_head("", 1000, "").as_bytes()).unwrap();
            let raw = read_response(&mut s);
            if raw.ok().as_deref().and_then(status) == Some(401) {
                refused += 1;
            }
            // Keeps sending after the 401, as an attacker would (one byte every 100 ms
            // keeps a lingering close alive for all of its 2 s).
            let mut w = s.try_clone().unwrap();
            writers.push(thread::spawn(move || {
                for _ in 0..15 {
                    if w.write_all(b"x").is_err() {
                        return;
                    }
                    thread::sleep(Duration::from_millis(100));
                }
                drop(s);
            }));
        }
        assert_eq!(
            refused,
            TRICKLERS,
            "{}: every trickler got its 401",
            a.name()
        );
        // While they still trickle, an authenticated client is served.
        answers_normally(running.addr(), a);
        for w in writers {
            w.join().unwrap();
        }
        running.stop().unwrap();
    });
}

#[test]
fn a_trickled_body_is_cut_at_its_total_deadline() {
    // One byte every 200 ms keeps the idle timeout (2 s) at bay, not the body's
    // total deadline (1 s).
    each(|a| {
        let opts = Options {
            idle_timeout: Duration::from_secs(2),
            body_read_timeout: Duration::from_secs(1),
            min_body_rate: 0,
            ..small_pool()
        };
        let (running, counts) = serve(a, opts);
        let mut s = connect_within(running.addr(), Duration::from_secs(6));
        s.write_all(post_head(OWNER, 1000, "").as_bytes()).unwrap();
        let started = Instant::now();
        let mut w = s.try_clone().unwrap();
        let writer = thread::spawn(move || {
            for _ in 0..25 {
                if w.write_all(b" ").is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(200));
            }
        });
        let got = read_to_close(&mut s);
        let elapsed = started.elapsed();
        writer.join().unwrap();
        assert_eq!(got.map(|b| b.len()).unwrap_or(0), 0, "{}", a.name());
        assert!(
            elapsed >= Duration::from_millis(900) && elapsed < Duration::from_secs(3),
            "{}: cut after {elapsed:?}",
            a.name()
        );
        assert!(counts.wait_until(Duration::from_secs(2), |c| c.saw(CloseReason::BodyTimeout)));
        answers_normally(running.addr(), a);
        running.stop().unwrap();
    });
}

#[test]
fn bodies_past_the_global_budget_get_503_with_retry_after() {
    // One upload in flight holds 1,000 of the 1,500 bytes; the next is refused
    // at its head — after authentication (a token-less one still gets its 401).
    each(|a| {
        let opts = Options {
            max_body_buffer: 1500,
            ..small_pool()
        };
        let (running, _) = serve(a, opts);
        let mut first = connect_within(running.addr(), Duration::from_secs(3));
        first
            .write_all(post_head(OWNER, 1000, "").as_bytes())
            .unwrap();
        first.write_all(b"{").unwrap();
        thread::sleep(Duration::from_millis(200));

        let mut second = connect_within(running.addr(), Duration::from_secs(3));
        second
            .write_all(post_head(OWNER, 1000, "").as_bytes())
            .unwrap();
        let raw = read_to_close(&mut second).expect("refused at once");
        assert_eq!(status(&raw), Some(503), "{}", a.name());
        assert_eq!(header(&raw, "retry-after").as_deref(), Some("1"));

        let mut tokenless = connect_within(running.addr(), Duration::from_secs(3));
        tokenless
            .write_all(post_head("", 1000, "").as_bytes())
            .unwrap();
        let raw = read_to_close(&mut tokenless).unwrap();
        assert_eq!(status(&raw), Some(401), "{}", a.name());

        // The first upload finishes; its bytes go back to the budget.
        first.write_all(&[b' '; 999]).unwrap();
        let raw = read_response(&mut first).unwrap();
        assert_ne!(status(&raw), Some(503), "{}", a.name());
        drop(first);
        let mut third = connect_within(running.addr(), Duration::from_secs(3));
        third
            .write_all(post_head(OWNER, 1000, "").as_bytes())
            .unwrap();
        third.write_all(&[b' '; 1000]).unwrap();
        let raw = read_response(&mut third).unwrap();
        assert_ne!(status(&raw), Some(503), "{}", a.name());
        running.stop().unwrap();
    });
}

#[test]
fn unauthenticated_connections_per_address_are_capped() {
    // A slowloris reopening partial heads before the header deadline holds at
    // most `max_unauthenticated_per_ip` connections; authenticated ones do not count.
    const CAP: usize = 3;
    each(|a| {
        let opts = Options {
            max_unauthenticated_per_ip: CAP,
            ..small_pool()
        };
        let (running, counts) = serve(a, opts);
        let mut partial = Vec::new();
        for _ in 0..CAP {
            let mut s = connect_within(running.addr(), Duration::from_secs(3));
            s.write_all(b"POST / HTTP/1.1\r\nHost: a\r\n").unwrap();
            partial.push(s);
        }
        assert!(counts.wait_until(Duration::from_secs(2), |c| c.open() == CAP));
        let mut over = connect_within(running.addr(), Duration::from_secs(3));
        let raw = read_to_close(&mut over).expect("refused at once");
        assert_eq!(status(&raw), Some(503), "{}", a.name());
        assert_eq!(header(&raw, "retry-after").as_deref(), Some("1"));
        // One of them ends (answered 401, then closed): its place is free again.
        let mut first = partial.remove(0);
        first.write_all(b"\r\n").unwrap(); // a complete (bodyless) POST: 401
        assert_eq!(status(&read_response(&mut first).unwrap()), Some(401));
        drop(first);
        assert!(counts.wait_until(Duration::from_secs(2), |c| c.open() == CAP - 1));
        answers_normally(running.addr(), a);
        drop(partial);
        running.stop().unwrap();
    });
}

/// `/metrics` answering 256 KiB: large answers to tiny requests.
struct BigMetrics;

impl dunning_core::Metrics for BigMetrics {
    fn render(&self) -> String {
        "# padding\n".repeat(256 * 1024 / 10)
    }
}

#[test]
fn a_client_that_never_reads_is_not_answered_into_memory() {
    // 400 pipelined `GET /metrics` (36 bytes each, 256 KiB answers) and no
    // reading. Without a bound, every request read (hundreds per read) was answered into
    // memory at once; now answering stops once the socket buffers and
    // `max_pending_output` (64 KiB here) are full: a few MB, a dozen or so answers.
    const N: usize = 400;
    const MOST: usize = 64;
    each(|a| {
        let opts = Options {
            max_pending_output: 64 * 1024,
            ..small_pool()
        };
        let counts = Arc::new(Counts::default());
        let server = Arc::new(test_server().with_metrics(BigMetrics));
        let running = start(a, server, opts, counts.clone()).unwrap();
        let mut s = connect(running.addr()).unwrap();
        let all = b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n".repeat(N);
        s.write_all(&all).unwrap();
        thread::sleep(Duration::from_millis(700));
        let answered = counts.requests.load(Ordering::SeqCst);
        assert!(
            answered <= MOST,
            "{}: {answered} answers of 256 KiB for a client that reads none",
            a.name()
        );
        // Reading resumes the answers, every one of them.
        s.shutdown(Shutdown::Write).unwrap();
        let mut got = 0;
        while got < N {
            let raw = read_response(&mut s).unwrap();
            assert_eq!(status(&raw), Some(200), "{}", a.name());
            got += 1;
        }
        running.stop().unwrap();
    });
}

#[test]
fn lenient_http_is_refused_with_400() {
    // HTTP/1.1 without Host (RFC 9112 §3.2); a chunk extension whose quoted
    // string never closes.
    each(|a| {
        let (running, _) = serve(a, small_pool());
        let no_host = format!(
            "POST / HTTP/1.1\r\n{OWNER}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        );
        let open_quote = format!(
            "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n{OWNER}Content-Type: application/json\r\n\
             Transfer-Encoding: chunked\r\n\r\n2;ext=\"open\r\n{{}}\r\n0\r\n\r\n"
        );
        for (raw, reason) in [
            (no_host, "missing Host header"),
            (open_quote, "invalid chunk extension"),
        ] {
            let mut s = connect_within(running.addr(), Duration::from_secs(3));
            s.write_all(raw.as_bytes()).unwrap();
            let got = read_to_close(&mut s).unwrap();
            assert_eq!(status(&got), Some(400), "{}: {reason}", a.name());
            assert!(
                String::from_utf8_lossy(body(&got)).contains(reason),
                "{}: {}",
                a.name(),
                String::from_utf8_lossy(&got)
            );
        }
        running.stop().unwrap();
    });
}

/// The head every slow client sends, and never finishes.
const SLOW_HEAD: &[u8] = b"POST / HTTP/1.1\r\nHost: x\r\n";

/// `127.0.0.n`.
fn loopback(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

/// A connection to `to` from `from` (a loopback address of its own), its reads and
/// writes bounded by `limit`.
fn connect_from(from: IpAddr, to: SocketAddr, limit: Duration) -> io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::new(from, 0).into())?;
    s.connect_timeout(&to.into(), Duration::from_secs(5))?;
    let s: TcpStream = s.into();
    s.set_read_timeout(Some(limit))?;
    s.set_write_timeout(Some(limit))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// `n` connections that each send [`SLOW_HEAD`] and stop, spread evenly over
/// `127.0.0.1..=127.0.0.{addresses}`.
fn slow_heads(to: SocketAddr, n: usize, addresses: u8) -> Vec<TcpStream> {
    (0..n)
        .map(|i| {
            let from = loopback(1 + u8::try_from(i % usize::from(addresses)).unwrap());
            let mut s = connect_from(from, to, Duration::from_secs(5)).unwrap();
            s.write_all(SLOW_HEAD).unwrap();
            s
        })
        .collect()
}

/// How many of `tries` `tools/list`, each on a new connection from `from`, are answered
/// 200 within 4 s.
fn served(to: SocketAddr, from: IpAddr, tries: usize) -> usize {
    (0..tries)
        .filter(|_| {
            let Ok(mut s) = connect_from(from, to, Duration::from_secs(4)) else {
                return false;
            };
            s.write_all(&tools_list_request()).is_ok()
                && read_response(&mut s).ok().as_deref().and_then(status) == Some(200)
        })
        .count()
}

/// Raises this process's descriptor limit to hold `wanted` sockets; returns how many it
/// may open (as root the hard limit is raised too; elsewhere the soft one up to it).
fn descriptors(wanted: u64) -> u64 {
    // Never lowered (tests run in parallel threads of one process).
    if let Ok((soft, hard)) = rlimit::getrlimit(rlimit::Resource::NOFILE) {
        if soft < wanted {
            let _ = rlimit::setrlimit(rlimit::Resource::NOFILE, wanted, wanted.max(hard));
        }
    }
    rlimit::increase_nofile_limit(wanted).unwrap_or(1024)
}

#[test]
fn slow_heads_from_one_address_hold_no_worker() {
    // 64, then 130, token-less connections from 127.0.0.1 send a head's first lines and
    // stop (under the per-address cap of 256). On the blocking adapter each used to hold
    // one of the 64 workers until its header deadline: an authenticated client from
    // 127.0.0.2 got 2 of 7 answers. Now heads are read by the poller and a worker is
    // taken only by a complete one; the others never held a place.
    descriptors(4096);
    each(|a| {
        let (running, counts) = serve(a, Options::default());
        for n in [64, 130] {
            let heads = slow_heads(running.addr(), n, 1);
            assert!(
                counts.wait_until(Duration::from_secs(5), |c| c.open() >= n),
                "{}: {} of {n} slow heads open",
                a.name(),
                counts.open()
            );
            let ok = served(running.addr(), loopback(2), 10);
            assert!(
                ok >= 9,
                "{} under {n} slow heads: {ok} of 10 served",
                a.name()
            );
            drop(heads);
            assert!(counts.wait_until(Duration::from_secs(5), |c| c.open() == 0));
        }
        running.stop().unwrap();
    });
}

#[test]
fn slow_heads_filling_the_connection_cap_are_evicted_oldest_first() {
    // 10,000 slow heads from 40 addresses (250 each, under the per-address cap) fill
    // `max_connections`: everyone else used to get 503. Now a new connection at the cap
    // takes the place of the oldest unauthenticated one still waiting for its head.
    // Adapters one after the other: each holds 2 x 10,000 descriptors.
    const WANTED: usize = 10_000;
    let fds = descriptors(3 * WANTED as u64);
    // Where the limit cannot be raised, the cap shrinks with the attack: it is still full.
    let n = WANTED.min(usize::try_from(fds.saturating_sub(1000) / 2).unwrap_or(0));
    assert!(n >= 1000, "only {fds} descriptors");
    for a in Adapter::ALL {
        // Heads reopened before their deadline are always there: here, a deadline
        // longer than the test.
        let opts = Options {
            max_connections: n,
            header_read_timeout: Duration::from_secs(60),
            ..Options::default()
        };
        let (running, counts) = serve(a, opts);
        let started = Instant::now();
        let heads = slow_heads(running.addr(), n, 40);
        assert!(
            counts.wait_until(Duration::from_secs(10), |c| c.open() == n),
            "{}: {} of {n} open",
            a.name(),
            counts.open()
        );
        let ok = served(running.addr(), loopback(41), 20);
        assert!(ok >= 18, "{}: {ok} of 20 served at the cap", a.name());
        assert!(
            counts.wait_until(Duration::from_secs(2), |c| c.saw(CloseReason::Evicted)),
            "{}: {:?} open {} refused {}",
            a.name(),
            counts
                .reasons
                .lock()
                .unwrap()
                .iter()
                .rev()
                .take(5)
                .collect::<Vec<_>>(),
            counts.open(),
            counts.refused.load(Ordering::SeqCst)
        );
        assert_eq!(counts.refused.load(Ordering::SeqCst), 0, "{}", a.name());
        // The evicted are the oldest: the first heads were closed, the last ones not.
        let mut first = heads.into_iter();
        let mut oldest = first.next().unwrap();
        assert_eq!(read_to_close(&mut oldest).unwrap(), b"", "{}", a.name());
        let mut newest = first.next_back().unwrap();
        newest
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        assert!(
            read_to_close(&mut newest).is_err(),
            "{}: the newest head still waits",
            a.name()
        );
        drop((first, oldest, newest));
        assert!(
            counts.wait_until(Duration::from_secs(10), |c| c.open() == 0),
            "{}",
            a.name()
        );
        running.stop().unwrap();
        eprintln!("{}: {n} slow heads, {:?}", a.name(), started.elapsed());
    }
}
