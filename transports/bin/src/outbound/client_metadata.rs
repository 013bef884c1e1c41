//! Client ID Metadata Documents, fetched: when a client names itself by an
//! `https` URL, the embedded authorization server reads the JSON there.
//!
//! The URL is the client's choice, so it is fetched under the webhook rules
//! ([`crate::outbound::webhook::guarded_agent`]): only globally routable addresses, no proxy,
//! no redirects; plus 2 s to connect and 5 s in all, at most [`MAX_BYTES`] of body,
//! status `200` and a JSON content type. Answers are cached for [`TTL`] (failures for
//! [`FAILURE_TTL`], so a slow or hostile URL costs one fetch per interval, not one per
//! request); at most [`MAX_ENTRIES`] URLs are remembered. What the document must say is
//! the core's decision (`dunning_core::oauth::cimd`).

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use dunning_core::UnixTime;
use dunning_core::oauth::{Backend, GrantKind, Person};
use dunning_domain::oauth::OAuthStore;
use serde_json::Value;
use ureq::Agent;

use super::webhook::{describe_error, guarded_agent};

/// Largest document read (the draft suggests 5 KB).
pub(crate) const MAX_BYTES: u64 = 5 * 1024;
/// How long a fetched document is used.
pub(crate) const TTL: Duration = Duration::from_secs(300);
/// How long a failed fetch is remembered.
pub(crate) const FAILURE_TTL: Duration = Duration::from_secs(30);
/// Most URLs cached.
pub(crate) const MAX_ENTRIES: usize = 1024;

type Entry = (Instant, Result<Value, String>);

/// Fetches and caches metadata documents.
pub(crate) struct Fetcher {
    agent: Agent,
    cache: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher").finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher; `allow_private` lifts the address rule (tests only).
    pub(crate) fn new(allow_private: bool) -> Self {
        Self {
            agent: guarded_agent(
                Duration::from_secs(2),
                Duration::from_secs(5),
                allow_private,
            ),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The document at `url`, from the cache or fetched.
    pub(crate) fn get(&self, url: &str) -> Result<Value, String> {
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((until, v)) = cache.get(url) {
                if now < *until {
                    return v.clone();
                }
            }
        }
        let fetched = self.fetch(url);
        let until = now + if fetched.is_ok() { TTL } else { FAILURE_TTL };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_ENTRIES {
            cache.retain(|_, (u, _)| now < *u);
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(url.to_owned(), (until, fetched.clone()));
        fetched
    }

    fn fetch(&self, url: &str) -> Result<Value, String> {
        let mut response = self
            .agent
            .get(url)
            .header("Accept", "application/json")
            .call()
            .map_err(describe_error)?;
        let status = response.status().as_u16();
        if status != 200 {
            return Err(format!("status {status}"));
        }
        let json = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
        if !json {
            return Err("not a JSON content type".into());
        }
        let mut body = Vec::new();
        response
            .body_mut()
            .as_reader()
            .take(MAX_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| format!("reading: {e}"))?;
        if body.len() as u64 > MAX_BYTES {
            return Err(format!("larger than {MAX_BYTES} bytes"));
        }
        serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
    }
}

/// The store plus the fetcher: the embedded authorization server's backend.
#[derive(Debug)]
pub(crate) struct WithClientMetadata {
    /// Persistence and people.
    pub(crate) store: OAuthStore,
    /// Client ID Metadata Documents.
    pub(crate) fetcher: Fetcher,
}

impl Backend for WithClientMetadata {
    fn people(&self) -> Result<Vec<Person>, String> {
        self.store.people()
    }

    fn put(
        &self,
        kind: GrantKind,
        id: &str,
        doc: &Value,
        expires: Option<UnixTime>,
    ) -> Result<(), String> {
        self.store.put(kind, id, doc, expires)
    }

    fn get(&self, kind: GrantKind, id: &str) -> Result<Option<Value>, String> {
        self.store.get(kind, id)
    }

    fn update(
        &self,
        kind: GrantKind,
        id: &str,
        f: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Result<Option<Value>, String> {
        self.store.update(kind, id, f)
    }

    fn client_metadata(&self, url: &str) -> Result<Value, String> {
        let r = self.fetcher.get(url);
        if let Err(e) = &r {
            tracing::info!(error = %e, "client metadata document refused");
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// A loopback server answering every request with `body` (as JSON), counting them.
    fn serve(body: String) -> (String, Arc<AtomicUsize>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let hits = Arc::new(AtomicUsize::new(0));
        let h = hits.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                h.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf);
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (format!("http://{addr}/client.json"), hits)
    }

    #[test]
    fn a_private_address_is_refused() {
        let (url, hits) = serve("{}".into());
        let e = Fetcher::new(false).get(&url).unwrap_err();
        assert!(e.contains("address_not_allowed"), "{e}");
        assert_eq!(hits.load(Ordering::SeqCst), 0, "never connected");
    }

    #[test]
    fn documents_are_size_limited_and_cached() {
        let (url, hits) = serve(format!(
            "{{\"client_id\":\"x\",\"pad\":\"{}\"}}",
            "a".repeat(100)
        ));
        let f = Fetcher::new(true);
        assert_eq!(f.get(&url).unwrap()["client_id"], "x");
        assert_eq!(f.get(&url).unwrap()["client_id"], "x");
        assert_eq!(
            hits.load(Ordering::SeqCst),
            1,
            "the second came from the cache"
        );

        let big = "a".repeat(MAX_BYTES as usize);
        let (url, _) = serve(format!("{{\"pad\":\"{big}\"}}"));
        let e = f.get(&url).unwrap_err();
        assert!(e.contains("larger than"), "{e}");
    }
}
