//! # dunning-e2e: the three socket adapters, side by side, over real loopback sockets
//!
//! Test support (the tests are in `tests/`): [`start`] runs any [`Adapter`] on
//! `127.0.0.1:0` in its own thread, and [`Running::stop`] shuts it down gracefully and
//! returns what `serve` returned. The client side is plain `std::net`:
//! [`exchange`] sends one request's bytes (whole, byte by byte, or in seeded random
//! pieces), half-closes, and reads to the end, like the in-memory harness does with its
//! codec. [`strip_date`] removes the one header that may differ between runs.
//!
//! Everything is bounded: every socket has a read timeout ([`CLIENT_TIMEOUT`]) and every
//! server a drain timeout, so a hung adapter fails a test instead of hanging it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use dunning_core::Server;
use dunning_core::dispatch::Dispatch;
pub use dunning_harness::Split;
use dunning_runtime::{Observer, Options};

/// How long a test client waits for the server before giving up.
pub const CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// One of the socket adapters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Adapter {
    /// `dunning-tokio` on a two-worker multi-threaded runtime.
    Tokio,
    /// `dunning-blocking`.
    Blocking,
    /// `dunning-mio`.
    Mio,
}

impl Adapter {
    /// All three.
    pub const ALL: [Self; 3] = [Self::Tokio, Self::Blocking, Self::Mio];

    /// Lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Tokio => "tokio",
            Self::Blocking => "blocking",
            Self::Mio => "mio",
        }
    }
}

/// How a running adapter is told to stop.
enum Stop {
    Tokio(Option<tokio::sync::oneshot::Sender<()>>),
    Flag(Arc<AtomicBool>),
}

/// An adapter serving on loopback in its own thread.
pub struct Running {
    addr: SocketAddr,
    stop: Stop,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Running {
    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Begins the graceful shutdown without waiting for it.
    pub fn begin_stop(&mut self) {
        match &mut self.stop {
            Stop::Tokio(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(());
                }
            }
            Stop::Flag(flag) => {
                if !flag.swap(true, Ordering::AcqRel) {
                    // The flag-driven loops look at it every TICK; a connection wakes them
                    // at once (it is closed straight away as idle), keeping tests fast.
                    let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
                }
            }
        }
    }

    /// Whether `serve` has returned.
    pub fn finished(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Shuts down gracefully; returns what `serve` returned.
    pub fn stop(mut self) -> io::Result<()> {
        self.begin_stop();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("serve panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.begin_stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts `adapter` on `127.0.0.1:0`, serving `server`.
pub fn start<D: Dispatch + 'static>(
    adapter: Adapter,
    server: Arc<Server<D>>,
    opts: Options,
    observer: Arc<dyn Observer>,
) -> io::Result<Running> {
    let listener = listen()?;
    let addr = listener.local_addr()?;
    let name = format!("serve-{}", adapter.name());
    let (stop, thread) = match adapter {
        Adapter::Tokio => {
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            listener.set_nonblocking(true)?;
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let thread = thread::Builder::new().name(name).spawn(move || {
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    let stop = async move {
                        let _ = rx.await;
                    };
                    dunning_tokio::serve(listener, server, opts, observer, stop).await
                })
            })?;
            (Stop::Tokio(Some(tx)), thread)
        }
        Adapter::Blocking => {
            let flag = Arc::new(AtomicBool::new(false));
            let f = Arc::clone(&flag);
            let thread = thread::Builder::new()
                .name(name)
                .spawn(move || dunning_blocking::serve(listener, server, opts, observer, f))?;
            (Stop::Flag(flag), thread)
        }
        Adapter::Mio => {
            let flag = Arc::new(AtomicBool::new(false));
            let f = Arc::clone(&flag);
            let thread = thread::Builder::new()
                .name(name)
                .spawn(move || dunning_mio::serve(listener, server, opts, observer, f))?;
            (Stop::Flag(flag), thread)
        }
    };
    Ok(Running {
        addr,
        stop,
        thread: Some(thread),
    })
}

/// Pending connections the kernel queues before `accept`: the product's (a client
/// opening thousands of connections in a row must not wait out SYN retransmissions).
pub const LISTEN_BACKLOG: i32 = 1024;

/// A listener on `127.0.0.1:0` with [`LISTEN_BACKLOG`].
fn listen() -> io::Result<TcpListener> {
    let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(LISTEN_BACKLOG)?;
    Ok(socket.into())
}

/// A connected client socket with [`CLIENT_TIMEOUT`] on reads and writes, `TCP_NODELAY`.
pub fn connect(addr: SocketAddr) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, CLIENT_TIMEOUT)?;
    s.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Bytes of a request delivered in pieces as [`Split`] says; beyond them, pieces are 1024
/// times larger (a 2 MB body one byte per write would take minutes, and tells no more).
pub const FINE_SPLIT: usize = 64 * 1024;

/// Sends `raw` on a new connection, delivered as `split` says (one write per piece, the
/// first [`FINE_SPLIT`] bytes exactly so), then half-closes and reads until the server
/// closes. Returns every byte the server wrote.
///
/// A write the server refuses (it already answered and closed) ends the sending early:
/// what was read is still returned. A read timeout is an error.
pub fn exchange(addr: SocketAddr, raw: &[u8], split: Split) -> io::Result<Vec<u8>> {
    let mut s = connect(addr)?;
    let mut rng = SplitMix(match split {
        Split::Random(seed) => seed,
        _ => 0,
    });
    let mut rest = raw;
    while !rest.is_empty() {
        let sent = raw.len() - rest.len();
        let scale = if sent < FINE_SPLIT { 1 } else { 1024 };
        let n = match split {
            Split::Whole => rest.len(),
            Split::EveryByte => scale,
            Split::Random(_) => scale * (1 + (rng.next() % 64) as usize),
        }
        .min(rest.len());
        if s.write_all(&rest[..n]).is_err() {
            break;
        }
        rest = &rest[n..];
    }
    let _ = s.shutdown(Shutdown::Write);
    read_to_close(&mut s)
}

/// Reads until the server closes. A reset after some bytes returns those bytes; a
/// timeout is an error.
pub fn read_to_close(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(e);
            }
            Err(e) if out.is_empty() => return Err(e),
            Err(_) => return Ok(out),
        }
    }
}

/// Reads exactly one response (head, then a `Content-Length` body) from a kept-alive
/// connection. Returns the raw bytes.
pub fn read_response(s: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut byte = [0u8; 1];
    while !out.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        out.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&out).to_ascii_lowercase();
    let len = head
        .split("\r\n")
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let start = out.len();
    out.resize(start + len, 0);
    s.read_exact(&mut out[start..])?;
    Ok(out)
}

/// Every `Date` header line removed (in every response of the stream).
pub fn strip_date(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while !rest.is_empty() {
        let end = rest
            .windows(2)
            .position(|w| w == b"\r\n")
            .map_or(rest.len(), |i| i + 2);
        let line = &rest[..end];
        if !(line.len() >= 5 && line[..5].eq_ignore_ascii_case(b"date:")) {
            out.extend_from_slice(line);
        }
        rest = &rest[end..];
    }
    out
}

/// The status code of the first response in `raw`, if it has one.
pub fn status(raw: &[u8]) -> Option<u16> {
    let line = raw.split(|&b| b == b'\r').next()?;
    let code = line.get(9..12)?;
    std::str::from_utf8(code).ok()?.parse().ok()
}

/// The value of header `name` in the first response of `raw`.
pub fn header(raw: &[u8], name: &str) -> Option<String> {
    let head_end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    head.split("\r\n").skip(1).find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
    })
}

/// The body of the first response of `raw` (everything after its head).
pub fn body(raw: &[u8]) -> &[u8] {
    raw.windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(&[][..], |i| &raw[i + 4..])
}

/// SplitMix64, the same generator as the harness, so `Split::Random(seed)` cuts the bytes
/// at the same places.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// An era-2026 `server/discover` request by `tok-owner`, with every header it needs.
pub fn discover_request() -> Vec<u8> {
    rpc_request("server/discover", None, "{}")
}

/// An era-2026 `tools/list` by `tok-owner` (a large answer: every tool with its schemas).
pub fn tools_list_request() -> Vec<u8> {
    rpc_request("tools/list", None, "{}")
}

/// An era-2026 `tools/call` of `tool` with `arguments` (a JSON object), by `tok-owner`.
pub fn call_request(tool: &str, arguments: &str) -> Vec<u8> {
    rpc_request("tools/call", Some(tool), arguments)
}

fn rpc_request(method: &str, tool: Option<&str>, arguments: &str) -> Vec<u8> {
    const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let (name_header, params) = match tool {
        Some(t) => (
            format!("Mcp-Name: {t}\r\n"),
            format!(r#"{{{META},"name":"{t}","arguments":{arguments}}}"#),
        ),
        None => (String::new(), format!("{{{META}}}")),
    };
    let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer tok-owner\r\n\
         Content-Type: application/json\r\nAccept: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: {method}\r\n{name_header}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

pub mod gate;
pub mod observe;
