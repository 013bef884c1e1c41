//! The webhook HTTP driver behind `[webhooks]`, end to end: the binary, its config, a
//! webhook created over `/v1`, and a receiver on loopback (plain HTTP and TLS with a
//! self-signed certificate). The default driver records and never connects.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

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

/// Reads one HTTP/1.1 request (head, then `Content-Length` bytes); `None` when the
/// connection fails or closes first.
fn read_request(stream: &mut dyn ReadWrite) -> Option<Seen> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let len: usize = header(&head, "Content-Length")?.parse().ok()?;
    while buf.len() < head_end + len {
        let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8(buf[head_end..head_end + len].to_vec()).ok()?;
    Some((head, body))
}

/// Answers `200 ok` and closes.
fn answer_ok(stream: &mut dyn ReadWrite) {
    let _ = stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        .and_then(|()| stream.flush());
}

trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

/// How long a receiver waits for the delivery its test expects.
const RECEIVER_LIMIT: Duration = Duration::from_secs(30);

/// Accepts connections on `listener` until one carries a request with
/// `X-Kobana-Event: <event>` (at most [`RECEIVER_LIMIT`]), answering every request.
///
/// Why it filters: when the suite runs inside the demo organization's send window, the
/// ruler engine's first tick sends the demo data's due messages, and their events fan
/// out to any `*` webhook a test has just created. Those deliveries are answered and
/// set aside, so each test counts exactly the delivery it expects, at any hour.
///
/// `open` turns an accepted socket into a stream (`None`: the connection failed, e.g.
/// a TLS handshake the client aborted); `on_match` runs before the matching request is
/// answered. Returns every connection in order: `None` for one that failed, else what
/// it carried.
fn receive(
    listener: &TcpListener,
    event: &str,
    open: &dyn Fn(TcpStream) -> Option<Box<dyn ReadWrite>>,
    on_match: &dyn Fn(),
) -> Vec<Option<Seen>> {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + RECEIVER_LIMIT;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        let tcp = match listener.accept() {
            Ok((tcp, _)) => tcp,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(10));
                continue;
            }
            Err(e) => panic!("accept: {e}"),
        };
        tcp.set_nonblocking(false).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let Some(mut stream) = open(tcp) else {
            seen.push(None);
            continue;
        };
        let request = read_request(&mut *stream);
        let matched = request
            .as_ref()
            .is_some_and(|(head, _)| header(head, "X-Kobana-Event") == Some(event));
        if matched {
            on_match();
        }
        answer_ok(&mut *stream);
        seen.push(request);
        if matched {
            return seen;
        }
    }
    panic!("no {event} delivery within {RECEIVER_LIMIT:?}; saw {seen:?}");
}

/// The request of the last connection (the one [`receive`] matched).
fn matched(mut seen: Vec<Option<Seen>>) -> Seen {
    seen.pop().flatten().expect("the matching request")
}

fn plain(tcp: TcpStream) -> Option<Box<dyn ReadWrite>> {
    Some(Box::new(tcp))
}

/// A plain-HTTP receiver of one `event` delivery.
fn http_receiver(event: &'static str) -> (u16, JoinHandle<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || matched(receive(&listener, event, &plain, &|| {})));
    (port, handle)
}

/// A TLS receiver (self-signed certificate for `localhost`) of one `event` delivery; a
/// failed handshake counts as a connection and is reported as `None`.
fn tls_receiver(event: &'static str) -> (u16, JoinHandle<Vec<Option<Seen>>>) {
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
        let open = |tcp: TcpStream| -> Option<Box<dyn ReadWrite>> {
            let conn = rustls::ServerConnection::new(config.clone()).unwrap();
            let mut tls = rustls::StreamOwned::new(conn, tcp);
            while tls.conn.is_handshaking() {
                tls.conn.complete_io(&mut tls.sock).ok()?;
            }
            Some(Box::new(tls))
        };
        receive(&listener, event, &open, &|| {})
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
    let (port, receiver) = http_receiver("webhook.ping");
    let (id, secret) = create_hook(&srv, &api, &format!("http://127.0.0.1:{port}/hook"), true);
    let d = test_hook(&srv, &api, &id);
    let (head, body) = receiver.join().unwrap();
    assert!(head.starts_with("POST /hook HTTP/1.1\r\n"), "{head}");
    assert_eq!(header(&head, "X-Kobana-Event"), Some("webhook.ping"));
    let sig = header(&head, "X-Kobana-Signature").expect("signature header");
    assert!(
        dunning_domain::ops::webhooks::verify(sig, &secret, &body).is_some(),
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
    let (port, receiver) = tls_receiver("webhook.ping");

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
    let mut seen = receiver.join().unwrap();
    let (head, body) = seen.pop().flatten().expect("the lax delivery completed");
    assert!(
        seen.iter().any(Option::is_none),
        "the verifying client aborted its handshake: {seen:?}"
    );
    assert!(head.starts_with("POST /tls HTTP/1.1\r\n"), "{head}");
    let sig = header(&head, "X-Kobana-Signature").unwrap();
    assert!(dunning_domain::ops::webhooks::verify(sig, &secret, &body).is_some());
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
        // Takes its time before answering the test delivery.
        let slow = || {
            accepted_tx.send(()).unwrap();
            thread::sleep(Duration::from_secs(3));
        };
        matched(receive(&listener, "webhook.ping", &plain, &slow))
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
    let started = Instant::now();
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
