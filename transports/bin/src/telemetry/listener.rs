//! The separate metrics listener (`metrics_listen`): `GET /metrics` and nothing else, on
//! an address the public never reaches (a private interface, or loopback for a sidecar).
//!
//! A plain accept loop on one thread, one connection at a time, each answered and
//! closed: its one client is a Prometheus scraper every few seconds, so none of the
//! public listener's machinery (adapters, limits, authentication) is worth having
//! here. A client that stalls holds the loop for at most [`IO_TIMEOUT`]; anything that
//! is not a `GET`/`HEAD` of `/metrics` is answered `404` or `405`, bad bytes `400`.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::metrics::Prometheus;

/// Longest read or write on a connection.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Longest request head read.
const MAX_HEAD: usize = 8 * 1024;

/// Binds the metrics address (before the public port opens: a wrong address fails the
/// start, not the first scrape).
pub(crate) fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    let l = TcpListener::bind(addr).map_err(|e| format!("metrics_listen {addr}: {e}"))?;
    l.set_nonblocking(true)
        .map_err(|e| format!("metrics_listen {addr}: {e}"))?;
    Ok(l)
}

/// Serves `/metrics` on `listener` until `stop`.
pub(crate) fn spawn(
    listener: TcpListener,
    prometheus: Prometheus,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<()>, String> {
    thread::Builder::new()
        .name("metrics-listen".into())
        .spawn(move || {
            while !stop.load(Ordering::Acquire) {
                match listener.accept() {
                    Ok((conn, _)) => answer(conn, &prometheus),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        thread::sleep(Duration::from_millis(50));
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "metrics listener: accept");
                        thread::sleep(Duration::from_millis(50));
                    }
                }
            }
        })
        .map_err(|e| format!("metrics listener thread: {e}"))
}

/// Reads one request head and answers it; errors only end the connection.
fn answer(mut conn: TcpStream, prometheus: &Prometheus) {
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(IO_TIMEOUT));
    let _ = conn.set_write_timeout(Some(IO_TIMEOUT));
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > MAX_HEAD {
            let _ = conn.write_all(&reply(431, "text/plain", b"", false));
            return;
        }
    }
    let line = head.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut parts = line.trim_end().split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    let bytes = match (method, path) {
        (_, p) if !parts.next().is_some_and(|v| v.starts_with("HTTP/1.")) || p.is_empty() => {
            reply(400, "text/plain", b"", false)
        }
        ("GET" | "HEAD", "/metrics") => reply(
            200,
            "text/plain; version=0.0.4; charset=utf-8",
            prometheus.render().as_bytes(),
            method == "HEAD",
        ),
        (_, "/metrics") => reply(405, "text/plain", b"", false),
        _ => reply(404, "text/plain", b"", false),
    };
    let _ = conn.write_all(&bytes);
}

/// A complete `HTTP/1.1` answer that closes the connection.
fn reply(status: u16, content_type: &str, body: &[u8], head_only: bool) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Request Header Fields Too Large",
    };
    let allow = if status == 405 {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{allow}Cache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}
