//! The webhook HTTP driver over real loopback sockets. Moved from the domain's tests
//! with the driver, unchanged in what they assert: the address policy
//! (from `domain/tests/webhook_addresses.rs`: every non-global form refused before any
//! connection is made, the same receiver reached once private addresses are allowed, a
//! trailing dot changing nothing) and a signed delivery to a loopback receiver (from
//! `domain/tests/webhooks.rs`). Then what the move to `ureq` must keep: no redirect
//! followed, ≤ 4 KB of an answer kept, a silent receiver timed out.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use dunning_domain::ops::webhooks::{self, WebhookDriver, WebhookRequest, verify};
use dunning_domain::testing::Bed;
use serde_json::json;

use super::HttpDriver;
use super::resolve::GlobalResolver;

#[path = "../../../../../domain/tests/support/webhooks.rs"]
mod support;
use support::*;

// ---- from domain/tests/webhook_addresses.rs ----

fn request(url: &str) -> WebhookRequest {
    WebhookRequest {
        delivery_id: "d-1".into(),
        webhook_id: "w-1".into(),
        event_code: "charge.paid".into(),
        url: url.into(),
        ssl_verification: true,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: "{}".into(),
    }
}

/// A receiver on 127.0.0.1 that answers `204` to whoever connects, counting them.
fn counting_receiver() -> (u16, std::sync::mpsc::Receiver<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { break };
            let _ = tx.send(());
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            let _ = s.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, rx)
}

fn driver(allow_private: bool) -> HttpDriver {
    HttpDriver::new()
        .timeouts(Duration::from_secs(2), Duration::from_secs(5))
        .allow_private_addresses(allow_private)
}

#[test]
fn every_non_global_form_is_refused_before_connecting() {
    let (port, connections) = counting_receiver();
    let refused = driver(false);
    for host in [
        "[::127.0.0.1]",     // IPv4-compatible
        "[::ffff:0:7f00:1]", // IPv4-translated
        "[::ffff:127.0.0.1]",
        "[64:ff9b::7f00:1]", // NAT64
        "[2002:7f00:1::1]",  // 6to4
        "192.0.0.1",         // IETF protocol assignments
        "127.0.0.1",
        "[::1]",
        "localhost",
        "localhost.",
    ] {
        let r = refused.post(&request(&format!("http://{host}:{port}/hook")));
        let e = r.error.unwrap_or_default();
        assert!(e.starts_with("address_not_allowed"), "{host}: {e:?}");
        assert_eq!(r.status, None, "{host}");
    }
    assert!(
        connections.try_recv().is_err(),
        "a refused address was connected to"
    );
    // The same receiver, allowed: reached by name with and without the trailing dot.
    let allowed = driver(true);
    for host in ["127.0.0.1", "localhost", "localhost."] {
        let r = allowed.post(&request(&format!("http://{host}:{port}/hook")));
        assert_eq!(r.status, Some(204), "{host}: {r:?}");
        connections
            .recv_timeout(Duration::from_secs(5))
            .expect("connected");
    }
}

// ---- from domain/tests/webhooks.rs ----

/// A one-shot HTTP receiver on 127.0.0.1 that checks the signature with `secret`.
fn signing_receiver(
    secret: String,
    status: u16,
) -> (u16, std::thread::JoinHandle<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = Vec::new();
        let mut chunk = [0u8; 1024];
        let (head, body) = loop {
            let n = s.read(&mut chunk).unwrap();
            assert!(n > 0, "request cut short");
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let len: usize = head
                    .lines()
                    .find_map(|l| {
                        l.to_ascii_lowercase()
                            .strip_prefix("content-length:")
                            .map(|v| v.trim().parse().unwrap())
                    })
                    .expect("Content-Length");
                if body.len() >= len {
                    break (head.to_owned(), body.to_owned());
                }
            }
        };
        let sig = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("x-kobana-signature")
                    .then(|| v.trim().to_owned())
            })
            .unwrap_or_default();
        let verified = verify(&sig, &secret, &body).is_some();
        let answer = if verified {
            "ok-verified"
        } else {
            "bad-signature"
        };
        let status = if verified { status } else { 401 };
        write!(
            s,
            "HTTP/1.1 {status} X\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .unwrap();
        (head, body)
    });
    (port, handle)
}

#[test]
fn http_driver_posts_to_loopback_receiver() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let placeholder = hook(&mut bed, &ana, "http://127.0.0.1:9/x", json!(["export.*"]));
    let wid = id(&placeholder);
    let secret = placeholder["secret"].as_str().unwrap().to_owned();
    let (port, handle) = signing_receiver(secret.clone(), 200);
    bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "url": format!("http://127.0.0.1:{port}/hooks/kobana?x=1")}),
    );
    export_processed(&mut bed, &ana);
    let driver = HttpDriver::new().allow_private_addresses(true);
    assert_eq!(deliver(&bed, &ana, &driver), 1);
    let (head, body) = handle.join().unwrap();
    assert!(
        head.starts_with("POST /hooks/kobana?x=1 HTTP/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains(&format!("Host: 127.0.0.1:{port}")));
    assert!(head.contains("X-Kobana-Event: export.processed"));
    let d = deliveries(&mut bed, &ana, &wid).remove(0);
    assert_eq!(d["status"], "delivered", "{d}");
    assert_eq!(d["response_code"], 200);
    assert_eq!(d["response_body"], "ok-verified");
    let full = bed.ok(
        &ana,
        "dunning_webhook_deliveries_get",
        json!({"id": wid, "delivery_id": d["id"]}),
    );
    assert_eq!(full["payload"], body.as_str(), "the signed bytes were sent");

    // A receiver that refuses: the attempt is recorded and retried.
    let (port, handle) = signing_receiver(secret, 503);
    bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "url": format!("http://127.0.0.1:{port}/")}),
    );
    export_processed(&mut bed, &ana);
    assert_eq!(deliver(&bed, &ana, &driver), 1);
    handle.join().unwrap();
    let d = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "status": "pending"}),
    )["data"][0]
        .clone();
    assert_eq!(d["response_code"], 503);
    assert_eq!(d["response_body"], "ok-verified");
    assert_eq!(d["attempts"], 1);
}

#[test]
fn http_driver_refuses_private_addresses_and_plain_https() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let req = WebhookRequest {
        delivery_id: "d".into(),
        webhook_id: "w".into(),
        event_code: "webhook.ping".into(),
        url: format!("http://127.0.0.1:{port}/"),
        ssl_verification: true,
        headers: vec![],
        body: "{}".into(),
    };
    let r = HttpDriver::new().post(&req);
    assert!(r.status.is_none());
    assert!(r.error.unwrap().starts_with("address_not_allowed"));
    let r = HttpDriver::new().post(&WebhookRequest {
        url: "https://erp.example.com/".into(),
        ..req
    });
    assert!(r.error.unwrap().starts_with("tls_unavailable"));
    drop(listener);
}

// ---- what the move to ureq must keep ----

/// A receiver on 127.0.0.1 that reads one request and writes `answer(port)` as it is;
/// returns how many connections it took (the first, and any within a second after).
fn raw_receiver(
    answer: impl FnOnce(u16) -> Vec<u8> + Send + 'static,
) -> (u16, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 8192];
        let _ = s.read(&mut buf);
        let _ = s.write_all(&answer(port));
        drop(s);
        listener.set_nonblocking(true).unwrap();
        let mut connections = 1;
        for _ in 0..20 {
            if listener.accept().is_ok() {
                connections += 1;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        connections
    });
    (port, handle)
}

#[test]
fn a_redirect_is_an_answer_not_a_second_request() {
    // Redirected to itself: following it would be a second connection.
    let (port, handle) = raw_receiver(|port| {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{port}/elsewhere\r\nContent-Length: 5\r\nConnection: close\r\n\r\nmoved"
        )
        .into_bytes()
    });
    let r = driver(true).post(&request(&format!("http://127.0.0.1:{port}/hook")));
    assert_eq!(r.status, Some(302), "{r:?}");
    assert_eq!(r.body, "moved");
    assert!(!r.is_success());
    assert_eq!(handle.join().unwrap(), 1, "the redirect was not followed");
}

#[test]
fn only_4_kb_of_an_answer_are_kept() {
    let body = "é".repeat(3000); // 6,000 bytes, two per character
    let answer = format!(
        "HTTP/1.1 500 Oops\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (port, handle) = raw_receiver(move |_| answer.into_bytes());
    let r = driver(true).post(&request(&format!("http://127.0.0.1:{port}/")));
    assert_eq!(r.status, Some(500), "{r:?}");
    assert_eq!(
        r.body.len(),
        webhooks::RESPONSE_BODY_MAX,
        "cut on a character"
    );
    assert!(body.starts_with(&r.body));
    handle.join().unwrap();
}

#[test]
fn a_silent_receiver_is_given_up_after_the_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let keep = std::thread::spawn(move || {
        // Accepts, reads, never answers.
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = [0u8; 8192];
        let _ = s.read(&mut buf);
        std::thread::sleep(Duration::from_secs(3));
    });
    let driver = HttpDriver::new()
        .timeouts(Duration::from_secs(1), Duration::from_secs(1))
        .allow_private_addresses(true);
    let started = std::time::Instant::now();
    let r = driver.post(&request(&format!("http://127.0.0.1:{port}/")));
    let took = started.elapsed();
    assert_eq!(r.status, None, "{r:?}");
    assert!(r.error.unwrap_or_default().contains("timeout"));
    assert!(took < Duration::from_millis(2500), "{took:?}");
    keep.join().unwrap();
}

#[test]
fn the_resolver_reads_brackets_and_a_trailing_dot_as_the_same_host() {
    let strict = GlobalResolver {
        timeout: Duration::from_secs(2),
        allow_private: false,
    };
    for host in ["[::1]", "::1", "127.0.0.1", "localhost", "localhost."] {
        let e = strict
            .allowed(host, 80, Duration::from_secs(2))
            .unwrap_err();
        assert!(e.starts_with("address_not_allowed"), "{host}: {e}");
    }
    let lax = GlobalResolver {
        timeout: Duration::from_secs(2),
        allow_private: true,
    };
    assert_eq!(
        lax.allowed("[::1]", 80, Duration::from_secs(2)).unwrap(),
        vec!["[::1]:80".parse().unwrap()]
    );
    let dotted = lax
        .allowed("localhost.", 80, Duration::from_secs(2))
        .unwrap();
    let plain = lax
        .allowed("localhost", 80, Duration::from_secs(2))
        .unwrap();
    assert_eq!(dotted, plain);
}

#[test]
fn odd_characters_in_a_path_are_percent_encoded() {
    assert_eq!(
        super::encode_path("/a b/é?x=1&y=%20"),
        "/a%20b/%C3%A9?x=1&y=%20"
    );
    assert_eq!(super::encode_path("/hooks/kobana?x=1"), "/hooks/kobana?x=1");
}
