//! Name resolution for the webhook HTTP driver, bounded in time (issue 10, item 5).
//!
//! `getaddrinfo` has no deadline of its own: a slow or hostile DNS server could hold a
//! delivery (and the jobs thread behind it) for as long as the resolver retries. The
//! lookup runs on a short-lived thread and is given up after `timeout`; the thread ends
//! on its own when the system resolver does. An IP literal is never looked up.
//!
//! Names reach this point canonical ([`crate::webhooks::parse_url`] drops one trailing
//! dot), so `example.com.` and `example.com` are resolved the same way and pass the
//! same address filter ([`crate::global_ip::is_global`]), which the caller applies to
//! every address returned before connecting to exactly those addresses.
//!
//! This is I/O: it lives beside the driver and moves out of the domain with it.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

/// The addresses of `host:port`, or why there are none; at most `timeout` is spent.
pub fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = mpsc::channel();
    let name = host.to_owned();
    std::thread::Builder::new()
        .name("webhook-dns".into())
        .spawn(move || {
            let found = (name.as_str(), port)
                .to_socket_addrs()
                .map(Iterator::collect::<Vec<_>>)
                .map_err(|e| format!("dns: {e}"));
            let _ = tx.send(found);
        })
        .map_err(|e| format!("dns: {e}"))?;
    match rx.recv_timeout(timeout) {
        Ok(found) => found,
        Err(_) => Err(format!(
            "dns_timeout: {host} did not resolve within {} ms",
            timeout.as_millis()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ip_literals_are_not_looked_up() {
        let a = resolve("::1", 443, Duration::ZERO).unwrap();
        assert_eq!(a, vec!["[::1]:443".parse().unwrap()]);
    }

    #[test]
    fn a_lookup_past_its_deadline_is_an_error() {
        // A zero deadline cannot be met by any lookup of a name.
        let e = resolve("example.invalid", 443, Duration::ZERO).unwrap_err();
        assert!(e.starts_with("dns"), "{e}");
    }
}
