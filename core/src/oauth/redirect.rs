//! Redirect URIs: which may be registered, and when a request's matches a registered one.
//!
//! Registered: `https` URIs, or `http` on a loopback host (`127.0.0.1`, `[::1]`,
//! `localhost`; RFC 8252 §7.3, §8.3); no fragment, no user info. Matching is exact
//! string comparison, except that a loopback `http` URI matches with any port (RFC 8252
//! §7.3: native apps bind an ephemeral port at each run).

/// Longest redirect URI accepted.
pub const MAX_LEN: usize = 2048;

/// The parts that matter: scheme, host, port (as written), rest (path and query).
struct Parts<'a> {
    scheme: &'a str,
    host: &'a str,
    port: Option<&'a str>,
    rest: &'a str,
}

fn split(uri: &str) -> Option<Parts<'_>> {
    if uri.len() > MAX_LEN || uri.contains('#') || uri.bytes().any(|b| b <= b' ' || b >= 0x7f) {
        return None;
    }
    let (scheme, after) = uri.split_once("://")?;
    let cut = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(cut);
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let end = v6.find(']')?;
        let host = &authority[..end + 2];
        let tail = &v6[end + 1..];
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':')?),
        };
        (host, port)
    } else {
        match authority.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if let Some(p) = port {
        if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
    }
    Some(Parts {
        scheme,
        host,
        port,
        rest,
    })
}

fn loopback_http(p: &Parts<'_>) -> bool {
    p.scheme == "http" && matches!(p.host, "127.0.0.1" | "[::1]" | "localhost")
}

/// Whether `uri` may be registered.
pub fn registrable(uri: &str) -> bool {
    split(uri).is_some_and(|p| p.scheme == "https" || loopback_http(&p))
}

/// Whether the redirect URI of a request matches a registered one.
pub fn matches(registered: &str, requested: &str) -> bool {
    if registered == requested {
        return true;
    }
    let (Some(r), Some(q)) = (split(registered), split(requested)) else {
        return false;
    };
    loopback_http(&r)
        && loopback_http(&q)
        && r.host == q.host
        && r.rest == q.rest
        && q.port.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_may_be_registered() {
        for ok in [
            "https://app.example.com/cb",
            "http://127.0.0.1:3000/callback",
            "http://localhost/cb",
            "http://[::1]:9/cb?x=1",
        ] {
            assert!(registrable(ok), "{ok}");
        }
        for bad in [
            "http://app.example.com/cb",
            "https://app.example.com/cb#frag",
            "https://user@app.example.com/cb",
            "javascript:alert(1)",
            "http://127.0.0.1:abc/cb",
            "http://localhost.evil.com/cb",
            "",
        ] {
            assert!(!registrable(bad), "{bad}");
        }
    }

    #[test]
    fn matching_is_exact_but_loopback_ports_vary() {
        assert!(matches("https://a.example/cb", "https://a.example/cb"));
        assert!(!matches("https://a.example/cb", "https://a.example/cb/"));
        assert!(!matches(
            "https://a.example/cb",
            "https://a.example:8443/cb"
        ));
        assert!(matches(
            "http://127.0.0.1:3000/callback",
            "http://127.0.0.1:51234/callback"
        ));
        assert!(matches("http://localhost/cb", "http://localhost:4000/cb"));
        assert!(!matches(
            "http://127.0.0.1:3000/cb",
            "http://localhost:3000/cb"
        ));
        assert!(!matches(
            "http://127.0.0.1:3000/cb",
            "http://127.0.0.1:3000/other"
        ));
    }
}
