//! Unit tests of the shared pieces (no sockets).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dunning_core::{Response, UnixTime};
use http::{HeaderValue, StatusCode, header};

use crate::{Admission, CAP_BODY, CAP_RESPONSE, CloseReason, Connection, Next, Options};

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
    c.received(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n", t0);
    assert!(matches!(c.poll(), Next::Read));
    assert_eq!(c.deadline(), Some(t0 + Duration::from_secs(1)));
    assert_eq!(
        c.expired(t0 + Duration::from_secs(1)),
        Some(CloseReason::HeaderTimeout)
    );
    let t1 = t0 + Duration::from_millis(500);
    c.received(b"\r\nab", t1);
    // The head is decided before the body is read; no deadline meanwhile.
    let Next::Head(head) = c.poll() else {
        panic!("a head")
    };
    assert_eq!(c.deadline(), None);
    c.admit(head, Admission::Admit(lease(5)));
    assert!(matches!(c.poll(), Next::Read));
    let idle = c.deadline().unwrap();
    assert!(idle <= Instant::now() + Duration::from_secs(5));
    c.received(b"cde", Instant::now());
    let Next::Request(req) = c.poll() else {
        panic!("a complete request")
    };
    assert_eq!(req.body(), b"abcde");
    assert_eq!(c.deadline(), None);
    c.respond(Response::empty(StatusCode::NO_CONTENT));
    assert!(c.output().starts_with(b"HTTP/1.1 204 No Content\r\n"));
    assert!(!c.is_idle());
    let n = c.output().len();
    c.consume_output(n, Instant::now());
    assert!(c.is_idle());
    assert!(matches!(c.poll(), Next::Read));
}

/// A lease of `n` bytes on a budget of its own.
fn lease(n: usize) -> crate::Lease {
    crate::budget::Budget::new(n).lease(n).unwrap()
}

/// A connection whose body of 1,000 declared bytes was admitted at `t0` (about).
fn admitted(o: &Options) -> (Connection, Instant) {
    let mut c = Connection::new(o);
    c.received(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\n",
        Instant::now(),
    );
    let Next::Head(head) = c.poll() else {
        panic!("a head")
    };
    let t0 = Instant::now();
    c.admit(head, Admission::Admit(lease(1000)));
    (c, t0)
}

#[test]
fn a_trickled_body_meets_its_total_deadline() {
    // One byte a second restarts the idle timeout, not the body's.
    let o = Options {
        idle_timeout: Duration::from_secs(20),
        body_read_timeout: Duration::from_secs(30),
        min_body_rate: 0,
        ..opts()
    };
    let (mut c, t0) = admitted(&o);
    for s in 1..=29 {
        c.received(b"x", t0 + Duration::from_secs(s));
    }
    let d = c.deadline().unwrap();
    assert!(d <= t0 + Duration::from_secs(31), "{d:?}");
    assert_eq!(
        c.expired(t0 + Duration::from_secs(31)),
        Some(CloseReason::BodyTimeout)
    );
}

#[test]
fn a_body_slower_than_the_minimum_rate_is_cut() {
    let o = Options {
        idle_timeout: Duration::from_secs(60),
        body_read_timeout: Duration::from_secs(300),
        min_body_rate: 100,
        ..opts()
    };
    let (mut c, t0) = admitted(&o);
    // 100 bytes earn one second past the grace.
    c.received(&[b'x'; 100], t0 + Duration::from_secs(1));
    let want = t0 + crate::BODY_RATE_GRACE + Duration::from_secs(1);
    let d = c.deadline().unwrap();
    assert!(d <= want + Duration::from_millis(50) && d + Duration::from_millis(50) >= want);
    assert_eq!(
        c.expired(want + Duration::from_millis(100)),
        Some(CloseReason::BodyTimeout)
    );
}

#[test]
fn answers_are_held_back_past_the_output_bound() {
    // A client pipelining without reading gets no more answers.
    let o = Options {
        max_pending_output: 1000,
        ..opts()
    };
    let mut c = Connection::new(&o);
    let one = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    c.received(&one.repeat(10), Instant::now());
    let big = Response::json(StatusCode::OK, vec![b'x'; 600]);
    let mut answered = 0;
    loop {
        match c.poll() {
            Next::Request(_) => {
                answered += 1;
                c.respond(big.clone());
            }
            Next::Read => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered, 2);
    assert!(c.held());
    let n = c.output().len();
    c.consume_output(n, Instant::now());
    assert!(matches!(c.poll(), Next::Request(_)));
}

#[test]
fn a_vectored_write_sends_the_same_bytes_as_one_buffer_at_a_time() {
    // Two pipelined requests, each answered with a body too large to coalesce: the head
    // and the body are buffers of their own. Written through `output_vectored` in uneven
    // pieces (one ending inside a buffer, one spanning three), the bytes are those of
    // draining `output` one buffer at a time.
    let drain = |vectored: bool| {
        let mut c = Connection::new(&opts());
        let one = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n";
        c.received(&one.repeat(2), Instant::now());
        for fill in [b'x', b'y'] {
            assert!(matches!(c.poll(), Next::Request(_)));
            c.respond(Response::json(StatusCode::OK, vec![fill; 20_000]));
        }
        let mut sent = Vec::new();
        let mut step = 7_000;
        while c.pending() > 0 {
            let n = if vectored {
                let (slices, k) = c.output_vectored();
                let all: Vec<u8> = slices[..k].iter().flat_map(|b| b.iter().copied()).collect();
                let n = step.min(all.len());
                sent.extend_from_slice(&all[..n]);
                n
            } else {
                let n = c.output().len();
                sent.extend_from_slice(c.output());
                n
            };
            c.consume_output(n, Instant::now());
            step = 23_000;
        }
        assert!(c.output().is_empty());
        sent
    };
    let one_at_a_time = drain(false);
    assert_eq!(drain(true), one_at_a_time);
    assert!(one_at_a_time.ends_with(&[b'y'; 20_000]));
}

#[test]
fn a_chunked_body_past_the_budget_is_refused_with_503() {
    // The budget bounds bodies in flight, chunked ones as they grow.
    let mut c = Connection::new(&opts());
    c.received(
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        Instant::now(),
    );
    let Next::Head(head) = c.poll() else {
        panic!("a head")
    };
    let budget = crate::budget::Budget::new(crate::budget::LEASE_STEP);
    c.admit(head, Admission::Admit(budget.lease(0).unwrap()));
    let chunk = format!("{:x}\r\n{}\r\n", 50_000, "y".repeat(50_000));
    c.received(chunk.as_bytes(), Instant::now());
    assert!(matches!(c.poll(), Next::Read));
    assert_eq!(budget.used(), crate::budget::LEASE_STEP);
    c.received(chunk.as_bytes(), Instant::now());
    assert!(matches!(c.poll(), Next::Close));
    assert!(
        c.output()
            .starts_with(b"HTTP/1.1 503 Service Unavailable\r\n")
    );
    assert_eq!(budget.used(), 0);
}

#[test]
fn framing_error_is_transmitted_then_closed() {
    let mut c = Connection::new(&opts());
    c.received(
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        Instant::now(),
    );
    assert!(matches!(c.poll(), Next::Close));
    assert!(c.output().starts_with(b"HTTP/1.1 400 "));
    assert_eq!(c.close_reason(), CloseReason::Codec);
    assert!(matches!(c.poll(), Next::Close));
}

/// A service over the test domain with `max_connections` 2.
fn capped() -> crate::Service<dunning_tests::TestDomain> {
    let opts = Options {
        max_connections: 2,
        ..opts()
    };
    crate::Service::new(
        Arc::new(dunning_tests::test_server()),
        opts,
        Arc::new(crate::NoopObserver),
    )
}

/// A connection opened on `service` from 127.0.0.1, enrolled.
fn open(
    service: &crate::Service<dunning_tests::TestDomain>,
) -> Option<(Connection, crate::ConnectionSlot)> {
    let mut slot = service.open_connection_from([127, 0, 0, 1].into())?;
    let mut c = Connection::new(service.options());
    c.enrol(&mut slot);
    Some((c, slot))
}

#[test]
fn at_the_cap_the_oldest_unauthenticated_head_waiter_gives_its_place() {
    let service = capped();
    let (mut old, old_slot) = open(&service).unwrap();
    old.received(b"POST / HTTP/1.1\r\nHost: x\r\n", Instant::now());
    let (young, _young_slot) = open(&service).unwrap();
    assert_eq!(service.evictable(), 2);
    // The third takes the oldest's place: still two counted.
    let (_third, _third_slot) = open(&service).expect("the oldest is evicted");
    assert!(old.evicted() && !young.evicted());
    assert_eq!(old.expired(Instant::now()), Some(CloseReason::Evicted));
    assert!(matches!(old.poll(), Next::Close));
    assert!(old.output().is_empty(), "closed without a word");
    assert_eq!(service.connections(), 2);
    drop(old);
    drop(old_slot); // its place is the third's: not given back
    assert_eq!(service.connections(), 2);
}

#[test]
fn age_is_counted_from_accept_not_from_the_connections_first_run() {
    // An async adapter's tasks may first run in any order: the older slot, whose
    // connection is not enrolled yet, is still the one evicted, and its connection,
    // enrolled afterwards, closes at once.
    let service = capped();
    let mut old_slot = service.open_connection_from([127, 0, 0, 1].into()).unwrap();
    let (young, _young_slot) = open(&service).unwrap();
    assert_eq!(service.evictable(), 2);
    let (_third, _third_slot) = open(&service).expect("the oldest is evicted");
    let mut old = Connection::new(service.options());
    old.enrol(&mut old_slot);
    assert!(old.evicted() && !young.evicted());
    assert_eq!(old.expired(Instant::now()), Some(CloseReason::Evicted));
}

#[test]
fn an_authenticated_or_busy_connection_is_never_evicted() {
    let service = capped();
    // Authenticated: its request was answered for an organization.
    let (mut authed, _a) = open(&service).unwrap();
    authed.received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", Instant::now());
    let Next::Request(_) = authed.poll() else {
        panic!("a request")
    };
    let mut resp = Response::empty(StatusCode::NO_CONTENT);
    resp.log.organization = Some("org".into());
    authed.respond(resp);
    // Busy: its request is with the core.
    let (mut busy, _b) = open(&service).unwrap();
    busy.received(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", Instant::now());
    let Next::Request(_) = busy.poll() else {
        panic!("a request")
    };
    assert_eq!(service.evictable(), 0);
    assert!(open(&service).is_none(), "nothing to evict: refused");
    // Answered without authentication and idle again: it may be evicted now.
    busy.respond(Response::empty(StatusCode::UNAUTHORIZED));
    let n = busy.output().len();
    busy.consume_output(n, Instant::now());
    assert_eq!(service.evictable(), 1);
    assert!(open(&service).is_some());
    assert!(busy.evicted() && !authed.evicted());
}
