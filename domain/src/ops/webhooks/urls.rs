//! Receiver URLs: parsing and the address policy (global addresses only, unless
//! allowed).

use crate::error::DomainError;

/// A parsed webhook URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `https`.
    pub tls: bool,
    /// Host name or IP (IPv6 without brackets), lower case.
    pub host: String,
    /// Port.
    pub port: u16,
    /// Path and query, at least `/`.
    pub path: String,
}

impl Target {
    /// The `Host` header value.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.tls { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Whether the host is the local machine (`http` allowed for development).
    pub fn is_local(&self) -> bool {
        matches!(self.host.as_str(), "localhost" | "127.0.0.1" | "::1")
    }
}

/// Parses an absolute `http`/`https` URL (no credentials, no fragment).
pub fn parse_url(raw: &str) -> Result<Target, String> {
    if raw.len() > 2048 {
        return Err("must be at most 2048 characters".into());
    }
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("must not contain spaces or control characters".into());
    }
    let lower = raw.to_ascii_lowercase();
    let (tls, rest) = if lower.starts_with("https://") {
        (true, &raw[8..])
    } else if lower.starts_with("http://") {
        (false, &raw[7..])
    } else {
        return Err("must be an absolute https:// URL".into());
    };
    if rest.contains('#') {
        return Err("must not have a fragment (#...)".into());
    }
    let end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    if authority.contains('@') {
        return Err("must not carry credentials (user:password@)".into());
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let close = v6.find(']').ok_or("has an unterminated IPv6 address")?;
        let host = &v6[..close];
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("has an invalid IPv6 address".into());
        }
        let after = &v6[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return Err("has an invalid host".into()),
        };
        (host.to_owned(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, _)) if h.contains(':') => {
                return Err("must put an IPv6 address in brackets".into());
            }
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (authority.to_owned(), None),
        }
    };
    let mut host = host.to_ascii_lowercase();
    // `example.com.` is `example.com`: one spelling, one lookup, one filter, one `Host`.
    if !host.contains(':') && host.ends_with('.') {
        host.pop();
    }
    if host.is_empty() {
        return Err("must name a host".into());
    }
    if !host.contains(':') && host.split('.').any(str::is_empty) {
        return Err("has an empty label in its host".into());
    }
    if !host.contains(':')
        && !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
    {
        return Err("has an invalid host".into());
    }
    let port = match port {
        None => {
            if tls {
                443
            } else {
                80
            }
        }
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or("has an invalid port")?,
    };
    let path = if path.is_empty() {
        "/".to_owned()
    } else if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_owned()
    };
    Ok(Target {
        tls,
        host,
        port,
        path,
    })
}

pub(super) fn check_url(raw: &str) -> Result<String, DomainError> {
    let t = parse_url(raw).map_err(|why| DomainError::field("url", why))?;
    if !t.tls && !t.is_local() {
        return Err(DomainError::field(
            "url",
            "must use https (http is accepted only for localhost or 127.0.0.1, for development)",
        ));
    }
    Ok(raw.to_owned())
}
