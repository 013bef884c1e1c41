//! Unit tests of the shared pieces (no sockets).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dunning_core::{Response, UnixTime};
use http::{HeaderValue, StatusCode, header};

use crate::{CAP_BODY, CAP_RESPONSE, CloseReason, Connection, Next, Options};

fn opts() -> Options {
    Options {
        header_read_timeout: Duration::from_secs(1),
        idle_timeout: Duration::from_secs(5),
        env: Arc::new(crate::FixedEnv::new(UnixTime::from_secs(1_800_000_000))),
        ..Options::default()
    }
}

#[test]
fn cap_response_is_what_the_codec_would_write() {
    let resp = Response::json(
        StatusCode::SERVICE_UNAVAILABLE,
        CAP_BODY.as_bytes().to_vec(),
    )
    .with_header(header::RETRY_AFTER, HeaderValue::from_static("1"))
    .with_header(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    let mut out = Vec::new();
    dunning_http1::encode(&resp, UnixTime::from_secs(0), false, &mut out);
    let text = String::from_utf8(out).unwrap();
    let without_date: String = text
        .split_inclusive("\r\n")
        .filter(|l| !l.starts_with("Date:"))
        .collect();
    assert_eq!(without_date.as_bytes(), CAP_RESPONSE);
    let v: serde_json::Value = serde_json::from_str(CAP_BODY).unwrap();
    assert_eq!(v["error"]["code"], -31503);
}

#[test]
fn request_id_is_16_hex_digits() {
    use crate::EnvSource;
    let env = crate::SystemEnv.env(dunning_core::Load::Normal);
    assert_eq!(env.request_id.len(), 16);
    assert!(env.request_id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_ne!(env.entropy, [0; 32]);
    assert_eq!(
        crate::request_id([0, 0, 0, 0, 0, 0, 1, 0xab]),
        "00000000000001ab"
    );
}

#[test]
fn header_deadline_then_body_deadline() {
    let o = opts();
    let mut c = Connection::new(&o);
    let t0 = Instant::now();
    c.received(b"POST / HTTP/1.1\r\nContent-Length: 5\r\n", t0);
    assert!(matches!(c.poll(), Next::Read));
    assert_eq!(c.deadline(), Some(t0 + Duration::from_secs(1)));
    assert_eq!(
        c.expired(t0 + Duration::from_secs(1)),
        Some(CloseReason::HeaderTimeout)
    );
    let t1 = t0 + Duration::from_millis(500);
    c.received(b"\r\nab", t1);
    assert!(matches!(c.poll(), Next::Read));
    assert_eq!(c.deadline(), Some(t1 + Duration::from_secs(5)));
    c.received(b"cde", t1);
    let Next::Request(req) = c.poll() else {
        panic!("a complete request")
    };
    assert_eq!(req.body(), b"abcde");
    assert_eq!(c.deadline(), None);
    c.respond(&Response::empty(StatusCode::NO_CONTENT));
    assert!(c.output().starts_with(b"HTTP/1.1 204 No Content\r\n"));
    assert!(!c.is_idle());
    let n = c.output().len();
    c.consume_output(n, Instant::now());
    assert!(c.is_idle());
    assert!(matches!(c.poll(), Next::Read));
}

#[test]
fn framing_error_is_transmitted_then_closed() {
    let mut c = Connection::new(&opts());
    c.received(
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        Instant::now(),
    );
    assert!(matches!(c.poll(), Next::Close));
    assert!(c.output().starts_with(b"HTTP/1.1 400 "));
    assert_eq!(c.close_reason(), CloseReason::Codec);
    assert!(matches!(c.poll(), Next::Close));
}
