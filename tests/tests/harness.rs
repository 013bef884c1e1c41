//! The in-memory harness itself: delivery splits, pipelining, clock and load.

use dunning_core::Load;
use dunning_harness::{Harness, START, Split};
use dunning_tests::expect::HttpResponse;
use dunning_tests::{TestDomain, test_server};

const DISCOVER_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;

const PING_BODY: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// A POST to the endpoint with the owner's token and the given extra header lines.
fn post(extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: Bearer tok-owner\r\n\
         Content-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn discover() -> Vec<u8> {
    post(
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: server/discover\r\n",
        DISCOVER_BODY,
    )
}

fn ping() -> Vec<u8> {
    post("", PING_BODY)
}

fn harness() -> Harness<TestDomain> {
    Harness::new(test_server())
}

#[test]
fn every_split_gives_the_same_bytes() {
    let whole = harness().send(&discover());
    assert!(
        whole.starts_with(b"HTTP/1.1 200 OK\r\n"),
        "{}",
        String::from_utf8_lossy(&whole)
    );
    assert_eq!(harness().send_split(&discover(), Split::EveryByte), whole);
    for seed in 0..20 {
        assert_eq!(
            harness().send_split(&discover(), Split::Random(seed)),
            whole
        );
    }
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let mut h = harness();
    let mut two = ping();
    two.extend_from_slice(&discover());
    let bytes = h.send(&two);
    let (first, used) = HttpResponse::parse_prefix(&bytes).unwrap();
    let second = HttpResponse::parse(&bytes[used..]).unwrap();
    assert_eq!(first.body, br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
    assert_eq!(second.status, 200);
    assert_eq!(h.requests(), 2);
}

#[test]
fn clock_and_load_are_the_harness_s() {
    let mut h = harness();
    assert_eq!(h.now(), START);
    let date = |b: &[u8]| {
        HttpResponse::parse(b)
            .unwrap()
            .values("date")
            .next()
            .map(str::to_owned)
    };
    assert_eq!(
        date(&h.send(&ping())).as_deref(),
        Some("Tue, 01 Dec 2026 12:00:00 GMT")
    );
    h.advance(301_000);
    assert_eq!(
        date(&h.send(&ping())).as_deref(),
        Some("Tue, 01 Dec 2026 12:05:01 GMT")
    );
    h.set_load(Load::Overloaded);
    assert!(h.send(&ping()).starts_with(b"HTTP/1.1 503 "));
    h.set_load(Load::Normal);
    assert!(h.send(&ping()).starts_with(b"HTTP/1.1 200 "));
}

#[test]
fn incomplete_request_gets_no_answer() {
    let req = ping();
    assert!(harness().send(&req[..req.len() - 1]).is_empty());
}
