//! The webhook HTTP driver behind `[webhooks]`, end to end: the binary, its config, a
//! webhook created over `/v1`, and a receiver on loopback (plain HTTP and TLS with a
//! self-signed certificate). The default driver records and never connects.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use common::{Resp, Srv};
use serde_json::{Value, json};

/// What a receiver saw: the request head and body.
type Seen = (String, String);

fn bearer(t: &str) -> String {
    format!("Bearer {t}")
}

fn post(srv: &Srv, token: &str, target: &str, body: &Value) -> Resp {
    srv.request(
        "POST",
        target,
        &[
            ("Authorization", &bearer(token)),
            ("Content-Type", "application/json"),
        ],
        body.to_string().as_bytes(),
    )
}

/// Reads one HTTP/1.1 request (head, then `Content-Length` bytes) and answers `200 ok`.
fn serve_one(stream: &mut dyn ReadWrite) -> Seen {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).expect("read request");
        assert!(n > 0, "receiver: connection closed mid-head");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .expect("Content-Length");
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).expect("read body");
        assert!(n > 0, "receiver: connection closed mid-body");
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8(buf[head_end..head_end + len].to_vec()).unwrap();
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        .unwrap();
    stream.flush().unwrap();
    (head, body)
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// A plain-HTTP receiver for one request.
fn http_receiver() -> (u16, JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        serve_one(&mut s)
    });
    (port, handle)
}

/// A TLS receiver (self-signed certificate for `localhost`) for `connections`
/// connections; a failed handshake counts as one and is reported as `None`.
fn tls_receiver(connections: usize) -> (u16, JoinHandle<Vec<Option<Seen>>>) {
    let key = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert = key.cert.der().clone();
    let der = rustls::pki_types::PrivateKeyDer::Pkcs8(key.signing_key.serialize_der().into());
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], der)
        .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..connections {
            let (tcp, _) = listener.accept().unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            let mut handshake = Ok(());
            while handshake.is_ok() && tls.conn.is_handshaking() {
                handshake = tls.conn.complete_io(&mut tls.sock).map(drop);
            }
            seen.push(handshake.ok().map(|()| serve_one(&mut tls)));
        }
        seen
    });
    (port, handle)
}

const HTTP_DRIVER: &str = "[webhooks]\ndriver = \"http\"\nallow_private_addresses = true\n";

/// Creates a webhook for `url` and returns (id, secret).
fn create_hook(srv: &Srv, api: &str, url: &str, verify: bool) -> (String, String) {
    let r = post(
        srv,
        api,
        "/v1/webhooks",
        &json!({"url": url, "events": ["*"], "ssl_verification": verify}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let w = r.json();
    (
        w["id"].as_str().unwrap().to_owned(),
        w["secret"].as_str().unwrap().to_owned(),
    )
}

fn test_hook(srv: &Srv, api: &str, id: &str) -> Value {
    let r = post(srv, api, &format!("/v1/webhooks/{id}/test"), &json!({}));
    assert!(r.status < 300, "{} {}", r.status, r.text());
    r.json()
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[test]
fn http_driver_posts_signed_deliveries_to_a_loopback_receiver() {
    let srv = Srv::start(&[], Some(HTTP_DRIVER));
    let api = srv.mint_api("demo", "ana@demo.example");
    let (port, receiver) = http_receiver();
    let (id, secret) = create_hook(&srv, &api, &format!("http://127.0.0.1:{port}/hook"), true);
    let d = test_hook(&srv, &api, &id);
    let (head, body) = receiver.join().unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1\r\n"), "{head}");
    assert_eq!(header(&head, "X-Kobana-Event"), Some("webhook.ping"));
    let sig = header(&head, "X-Kobana-Signature").expect("signature header");
    assert!(
        dunning_domain::webhooks::verify(sig, &secret, &body).is_some(),
        "the signature verifies over the raw body with the webhook's secret: {sig}"
    );
    assert_eq!(d["status"], "delivered", "{d}");
    assert_eq!(d["response_code"], 200);
    assert_eq!(d["response_body"], "ok");
}

#[test]
fn http_driver_speaks_tls_and_checks_certificates_unless_told_not_to() {
    let srv = Srv::start(&[], Some(HTTP_DRIVER));
    let api = srv.mint_api("demo", "ana@demo.example");
    let (port, receiver) = tls_receiver(2);

    // A self-signed certificate: refused while verification is on...
    let (strict, _) = create_hook(&srv, &api, &format!("https://localhost:{port}/tls"), true);
    let d = test_hook(&srv, &api, &strict);
    assert_ne!(d["status"], "delivered", "{d}");
    let error = d["error"].as_str().unwrap_or_default().to_ascii_lowercase();
    assert!(error.contains("certificate"), "{d}");

    // ...accepted when the webhook's owner turned it off, still encrypted.
    let (lax, secret) = create_hook(&srv, &api, &format!("https://localhost:{port}/tls"), false);
    let d = test_hook(&srv, &api, &lax);
    assert_eq!(d["status"], "delivered", "{d}");
    let seen = receiver.join().unwrap();
    assert!(
        seen[0].is_none(),
        "the verifying client aborted the handshake"
    );
    let (head, body) = seen[1].clone().expect("the second connection completed");
    assert!(head.starts_with("POST /tls HTTP/1.1\r\n"), "{head}");
    let sig = header(&head, "X-Kobana-Signature").unwrap();
    assert!(dunning_domain::webhooks::verify(sig, &secret, &body).is_some());
}

#[test]
fn the_default_driver_records_and_never_connects() {
    let srv = Srv::start(&[], None);
    let api = srv.mint_api("demo", "ana@demo.example");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let (id, _) = create_hook(&srv, &api, &format!("http://127.0.0.1:{port}/"), true);
    let d = test_hook(&srv, &api, &id);
    assert_eq!(d["status"], "delivered", "recorded as delivered: {d}");
    thread::sleep(Duration::from_millis(200));
    assert!(
        listener.accept().is_err(),
        "nothing connected to the receiver"
    );
}

#[test]
fn a_slow_receiver_never_holds_up_other_writes() {
    let srv = Srv::start(&[], Some(HTTP_DRIVER));
    let api = srv.mint_api("demo", "ana@demo.example");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (accepted_tx, accepted) = std::sync::mpsc::channel();
    let receiver = thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        accepted_tx.send(()).unwrap();
        // Takes its time before reading and answering.
        thread::sleep(Duration::from_secs(3));
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        serve_one(&mut s)
    });
    let (id, _) = create_hook(&srv, &api, &format!("http://127.0.0.1:{port}/slow"), true);
    let tester = {
        let (addr, api, id) = (srv.addr.clone(), api.clone(), id.clone());
        thread::spawn(move || {
            let r = common::http(
                &addr,
                "POST",
                &format!("/v1/webhooks/{id}/test"),
                &[
                    ("Authorization", &bearer(&api)),
                    ("Content-Type", "application/json"),
                ],
                b"{}",
            );
            (r.status, r.json())
        })
    };
    accepted
        .recv_timeout(Duration::from_secs(10))
        .expect("the receiver was called");
    // While the receiver sleeps, another write goes through at once.
    let started = std::time::Instant::now();
    let r = post(
        &srv,
        &api,
        "/v1/debtors",
        &json!({"cnpj_cpf": "529.982.247-25", "name": "Durante o teste"}),
    );
    let took = started.elapsed();
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(
        took < Duration::from_millis(1500),
        "a write waited {took:?} for the webhook receiver"
    );
    let (status, d) = tester.join().unwrap();
    assert_eq!(status, 201, "{d}");
    assert_eq!(d["status"], "delivered", "{d}");
    let (head, _) = receiver.join().unwrap();
    assert!(head.starts_with("POST /slow HTTP/1.1\r\n"), "{head}");
}
