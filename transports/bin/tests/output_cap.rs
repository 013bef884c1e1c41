//! The output cap, measured on the product: clients that pipeline large answers
//! (`dunning_events_list`, 100 per page, about 360 KB each) and never read them must not
//! grow the server's memory past a bound, on every adapter. Each server is a process of
//! its own, so its resident set is its own.

mod common;

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Srv, V2026};

/// Clients, and requests each pipelines.
const CLIENTS: usize = 24;
const REQUESTS: usize = 200;
/// Most the server's anonymous memory may grow while they wait, on a server that has
/// already served as many callers at once. What they hold: each connection's unsent
/// answers, `[limits] max_pending_output` and the one answer that crossed it (about
/// 0.4 MB, in a buffer that grew by doubling), 12-14 MiB for 24; and what the allocator
/// cannot give back while those buffers are pinned among the freed pieces of the answers
/// built around them (`malloc_info`: 13 MB in use and 15 MB free at one peak). Measured
/// 5-27 MiB over the adapters (`docs/decisions.md`, "What the output-cap test bounds").
/// What the bound tells apart is a queue without a cap, which answers every pipelined
/// request (24 x 200 answers of 360 KB: 1.7 GB); the cap itself, to the byte, is
/// `dunning_runtime`'s `answers_are_held_back_past_the_output_bound`.
const MOST: u64 = 40 << 20;

/// The server's anonymous resident memory, in bytes: its heap and stacks. File pages
/// (the binary's code, SQLite's memory-mapped database) are the page cache's, not held
/// for answers.
fn anon(srv: &Srv) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", srv.child.id())).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// One `dunning_events_list` request of 100 events.
fn request(token: &str) -> Vec<u8> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{V2026}","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"dunning_events_list","arguments":{{"per_page":100}}}}}}"#
    );
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nMCP-Protocol-Version: {V2026}\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: dunning_events_list\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends `req` and reads its answer; returns the answer's size.
fn exchange(s: &mut TcpStream, req: &[u8]) -> usize {
    s.write_all(req).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed");
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        assert!(head.starts_with("http/1.1 200"), "{head}");
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap();
        if got.len() >= end + 4 + len {
            return len;
        }
    }
}

/// Writes as much of `rest` as the socket takes now; returns what is left.
fn push<'a>(s: &mut TcpStream, rest: &'a [u8]) -> &'a [u8] {
    match s.write(rest) {
        Ok(n) => &rest[n..],
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => rest,
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn clients_that_never_read_their_answers_cost_a_bounded_memory() {
    for transport in ["tokio", "blocking", "mio"] {
        let srv = Srv::start(&["--transport", transport], None);
        let req = request(&srv.token);
        // Warm, first alone: the store's caches, one answer's worth of everything.
        let mut warm = TcpStream::connect(&srv.addr).unwrap();
        warm.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        exchange(&mut warm, &req);
        drop(warm);
        let alone = anon(&srv);
        // Then as many callers at once as the clients below, reading their answers: the
        // threads, the allocator's working set of 24 answers built at once and (on
        // PostgreSQL) the pooled connections are what any 24 concurrent callers cost,
        // reading or not; the bound is on what not reading adds to that.
        std::thread::scope(|s| {
            for _ in 0..CLIENTS {
                s.spawn(|| {
                    let mut warm = TcpStream::connect(&srv.addr).unwrap();
                    warm.set_read_timeout(Some(Duration::from_secs(30)))
                        .unwrap();
                    for _ in 0..3 {
                        let size = exchange(&mut warm, &req);
                        assert!(size > 300_000, "{transport}: an answer of {size} bytes");
                    }
                });
            }
        });
        let before = anon(&srv);
        let all = req.repeat(REQUESTS);
        let mut clients: Vec<(TcpStream, &[u8])> = (0..CLIENTS)
            .map(|_| {
                let s = TcpStream::connect(&srv.addr).unwrap();
                s.set_nonblocking(true).unwrap();
                (s, &all[..])
            })
            .collect();
        // Pipeline until the server stops reading (its answers fill the socket buffers,
        // then its own cap), and the memory settles.
        let start = Instant::now();
        let mut peak = before;
        while start.elapsed() < Duration::from_secs(6) {
            for (s, rest) in &mut clients {
                *rest = push(s, rest);
            }
            peak = peak.max(anon(&srv));
            std::thread::sleep(Duration::from_millis(50));
        }
        let grown = peak.saturating_sub(before);
        eprintln!(
            "{transport}: anonymous memory {} MiB after one caller, {} MiB after {CLIENTS} reading at once, \
             grew {} MiB more with {CLIENTS} clients that do not read ({} MiB above one caller)",
            alone >> 20,
            before >> 20,
            grown >> 20,
            peak.saturating_sub(alone) >> 20
        );
        assert!(
            grown <= MOST,
            "{transport}: grew {} MiB (at most {})",
            grown >> 20,
            MOST >> 20
        );
        drop(clients);
    }
}
