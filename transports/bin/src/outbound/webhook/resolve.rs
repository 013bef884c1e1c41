//! Name resolution for the webhook HTTP driver, bounded in time (within the connect
//! timeout: `getaddrinfo` has no deadline of its own), and the address policy applied to
//! what it finds: [`GlobalResolver`] is the driver's `ureq` resolver.
//!
//! `getaddrinfo` has no deadline of its own: a slow or hostile DNS server could hold a
//! delivery (and the jobs thread behind it) for as long as the resolver retries. The
//! lookup runs on a short-lived thread and is given up after `timeout`; the thread ends
//! on its own when the system resolver does. An IP literal is never looked up.
//!
//! Names reach this point canonical (the driver hands `ureq` the URL as
//! `dunning_domain::ops::webhooks::parse_url` spelled it, which drops one trailing dot, and
//! [`GlobalResolver`] drops one more should it get one), so `example.com.` and
//! `example.com` are resolved the same way and pass the same address filter
//! ([`super::global_ip::is_global`]). `ureq` connects to exactly the addresses the
//! resolver returns: no second lookup a rebinding DNS could answer otherwise.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::Duration;

use ureq::config::Config;
use ureq::http::Uri;
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::NextTimeout;

use super::global_ip::is_global;

/// The addresses of `host:port`, or why there are none; at most `timeout` is spent.
pub(crate) fn resolve(host: &str, port: u16, timeout: Duration) -> Result<Vec<SocketAddr>, String> {
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

/// Why a delivery was not attempted, carried through `ureq` as [`ureq::Error::Other`]
/// and reported as it is (`address_not_allowed: ...`, `dns_timeout: ...`, `dns: ...`).
#[derive(Debug)]
pub(crate) struct Refused(pub(crate) String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The driver's resolver: [`resolve`] within the connect timeout (or what is left of
/// `ureq`'s own budget, if less), then only the globally routable addresses, unless
/// private addresses are allowed.
#[derive(Clone, Debug)]
pub(crate) struct GlobalResolver {
    /// Longest lookup.
    pub(crate) timeout: Duration,
    /// Loopback and private addresses pass too (development, tests).
    pub(crate) allow_private: bool,
}

impl GlobalResolver {
    /// The addresses of `host:port` that may be connected to, or why none may.
    pub(crate) fn allowed(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, String> {
        let host = host.strip_prefix('[').unwrap_or(host);
        let host = host.strip_suffix(']').unwrap_or(host);
        // `example.com.` is `example.com`: one lookup, one filter.
        let host = match host.strip_suffix('.') {
            Some(name) if !host.contains(':') => name,
            _ => host,
        };
        let allowed: Vec<SocketAddr> = resolve(host, port, timeout)?
            .into_iter()
            .filter(|a| self.allow_private || is_global(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err("address_not_allowed: the host resolves to no public address".into());
        }
        Ok(allowed)
    }
}

impl Resolver for GlobalResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &Config,
        timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        let refused = |why: String| ureq::Error::Other(Box::new(Refused(why)));
        let host = uri
            .host()
            .ok_or_else(|| refused("bad url: no host".into()))?;
        let default_port = if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        let port = uri.port_u16().unwrap_or(default_port);
        let limit = self.timeout.min(*timeout.after);
        let allowed = self.allowed(host, port, limit).map_err(refused)?;
        let mut out = self.empty();
        for a in allowed {
            // `ureq` keeps at most 16 addresses; the first ones are tried first.
            if out.try_push(a).is_err() {
                break;
            }
        }
        Ok(out)
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
