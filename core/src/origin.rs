//! `Origin` validation: DNS-rebinding defence.
//!
//! Allowed: the origin of the public URL, configured extras, and, when listening on
//! loopback, `http(s)://localhost`, `127.0.0.1` and `[::1]` on any port. Scheme and host
//! compare case-insensitively; a default port equals its absence.

use crate::config::Config;

/// `(scheme, host, port)` of an origin or URL, lowercased, port made explicit.
fn parts(url: &str) -> Option<(String, String, u16)> {
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, after) = v6.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return None,
        };
        (format!("[{h}]"), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let port = match port {
        Some(p) => p.parse().ok()?,
        None => default,
    };
    Some((scheme, host.to_ascii_lowercase(), port))
}

/// Whether a request's `Origin` value is allowed.
pub fn allowed(origin: &str, config: &Config) -> bool {
    let Some(o) = parts(origin) else { return false };
    if parts(&config.public_url).as_ref() == Some(&o) {
        return true;
    }
    if config
        .allowed_origins
        .iter()
        .any(|a| parts(a).as_ref() == Some(&o))
    {
        return true;
    }
    config.loopback && matches!(o.1.as_str(), "localhost" | "127.0.0.1" | "[::1]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let mut c = Config {
            public_url: "https://mcp.example.com".into(),
            ..Config::default()
        };
        assert!(allowed("https://mcp.example.com", &c));
        assert!(allowed("HTTPS://MCP.example.com:443", &c));
        assert!(!allowed("http://mcp.example.com", &c));
        assert!(!allowed("https://evil.example.com", &c));
        assert!(!allowed("null", &c));
        assert!(allowed("http://localhost:3000", &c));
        assert!(allowed("http://127.0.0.1:9", &c));
        assert!(allowed("http://[::1]:8080", &c));
        assert!(!allowed("http://localhost.evil.com", &c));
        c.loopback = false;
        assert!(!allowed("http://localhost:3000", &c));
        c.allowed_origins.push("https://app.example.com".into());
        assert!(allowed("https://app.example.com", &c));
    }
}
