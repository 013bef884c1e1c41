//! `X-Request-Id` over real sockets, on every adapter: every response carries
//! one (errors, health and well-known included); a request's own is used only when the
//! configuration trusts the proxy, and only when it is valid.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use dunning_core::config::{Config, Keys};
use dunning_core::{RequestLog, Server};
use dunning_e2e::{Adapter, Split, discover_request, exchange, header, start, status};
use dunning_runtime::{Observer, Options};
use dunning_tests::{TEST_KEY, TestAuth, TestDomain, TestLimiter};

/// Records `(adapter id, RequestLog::request_id)` of every request.
#[derive(Default)]
struct Ids(Mutex<Vec<(String, Option<String>)>>);

impl Observer for Ids {
    fn request_finished(&self, id: &str, log: &RequestLog, _status: u16, _elapsed: Duration) {
        self.0
            .lock()
            .unwrap()
            .push((id.to_owned(), log.request_id.clone()));
    }
}

fn server(trust: bool) -> Arc<Server<TestDomain>> {
    let config = Config {
        trust_request_id: trust,
        ..Config::default()
    };
    Arc::new(
        Server::new(config, Keys::single(TEST_KEY), TestDomain::new(), TestAuth)
            .expect("the test catalog is valid")
            .with_limiter(TestLimiter),
    )
}

fn get(target: &str, extra: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n").into_bytes()
}

/// A `ping` without a token (`401`).
fn unauthorized(extra: &str) -> Vec<u8> {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn with_id(mut raw: Vec<u8>, id: &str) -> Vec<u8> {
    // Right after the request line.
    let at = raw.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    let line = format!("X-Request-Id: {id}\r\n");
    raw.splice(at..at, line.bytes());
    raw
}

fn each(f: impl Fn(Adapter) + Sync) {
    thread::scope(|s| {
        let hs: Vec<_> = Adapter::ALL
            .iter()
            .map(|&a| {
                (
                    a,
                    s.spawn({
                        let f = &f;
                        move || f(a)
                    }),
                )
            })
            .collect();
        for (a, h) in hs {
            assert!(h.join().is_ok(), "{} failed (see above)", a.name());
        }
    });
}

fn is_adapter_id(v: &str) -> bool {
    v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit())
}

#[test]
fn every_response_carries_the_adapters_request_id() {
    each(|adapter| {
        let ids = Arc::new(Ids::default());
        let running = start(adapter, server(false), Options::default(), ids.clone()).unwrap();
        let addr = running.addr();
        let cases: [(&str, Vec<u8>, u16); 6] = [
            ("discover", discover_request(), 200),
            ("401", unauthorized(""), 401),
            ("healthz", get("/healthz", ""), 200),
            (
                "well-known",
                get("/.well-known/oauth-protected-resource", ""),
                200,
            ),
            ("404", get("/nowhere", ""), 404),
            // Not trusted: the request's own id is ignored.
            (
                "untrusted",
                with_id(get("/healthz", ""), "from-the-client"),
                200,
            ),
        ];
        for (what, raw, want) in cases {
            let resp = exchange(addr, &raw, Split::Whole).unwrap();
            assert_eq!(status(&resp), Some(want), "{} {what}", adapter.name());
            let id = header(&resp, "x-request-id")
                .unwrap_or_else(|| panic!("{} {what}: no X-Request-Id", adapter.name()));
            assert!(is_adapter_id(&id), "{} {what}: {id}", adapter.name());
        }
        running.stop().unwrap();
        // What the log line names is what the response said: the adapter's own id.
        assert!(
            ids.0
                .lock()
                .unwrap()
                .iter()
                .all(|(_, theirs)| theirs.is_none())
        );
    });
}

#[test]
fn a_trusted_proxys_request_id_is_echoed_when_valid() {
    each(|adapter| {
        let ids = Arc::new(Ids::default());
        let running = start(adapter, server(true), Options::default(), ids.clone()).unwrap();
        let addr = running.addr();
        let id = "proxy-7f3a:01HZX/ok_~";
        for raw in [
            with_id(discover_request(), id),
            with_id(unauthorized(""), id),
            with_id(get("/healthz", ""), id),
            with_id(get("/.well-known/oauth-protected-resource", ""), id),
        ] {
            let resp = exchange(addr, &raw, Split::Whole).unwrap();
            assert_eq!(
                header(&resp, "x-request-id").as_deref(),
                Some(id),
                "{}: {}",
                adapter.name(),
                String::from_utf8_lossy(&resp)
            );
        }
        let long = "a".repeat(129);
        for bad in [long.as_str(), "two words", "caf\u{e9}"] {
            let resp = exchange(addr, &with_id(get("/healthz", ""), bad), Split::Whole).unwrap();
            let got = header(&resp, "x-request-id").unwrap_or_default();
            assert!(is_adapter_id(&got), "{} {bad:?}: {got}", adapter.name());
        }
        let exactly = "b".repeat(128);
        let resp = exchange(addr, &with_id(get("/healthz", ""), &exactly), Split::Whole).unwrap();
        assert_eq!(header(&resp, "x-request-id"), Some(exactly));
        running.stop().unwrap();
        let seen = ids.0.lock().unwrap();
        assert!(
            seen.iter().any(|(_, theirs)| theirs.as_deref() == Some(id)),
            "the log is told which id the response carried"
        );
    });
}
