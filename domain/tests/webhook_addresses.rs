//! The webhook HTTP driver's address policy over a real loopback socket (issue 10,
//! item 5): every non-global form is refused before any connection is made; the same
//! receiver is reached once private addresses are allowed; a trailing dot changes
//! nothing.

use std::net::TcpListener;
use std::time::Duration;

use dunning_domain::webhooks::{HttpDriver, WebhookDriver, WebhookRequest, parse_url};

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
fn receiver() -> (u16, std::sync::mpsc::Receiver<()>) {
    use std::io::{Read, Write};
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
    let (port, connections) = receiver();
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

#[test]
fn a_trailing_dot_is_the_same_host() {
    let a = parse_url("https://ERP.example.com./hook").unwrap();
    let b = parse_url("https://erp.example.com/hook").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.host_header(), "erp.example.com");
    for bad in [
        "https://./x",
        "https://a..b/x",
        "https://.a/x",
        "https://a../x",
    ] {
        assert!(parse_url(bad).is_err(), "{bad}");
    }
}
