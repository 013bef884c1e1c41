//! Behaviour tests of the codec, driven through the public API.

mod basic;
mod limits;
mod proptests;
mod smuggling;

use dunning_core::Response;

use crate::fuzzing::{Event, NOW, drive, ok_response};
use crate::{Conn, Limits, OwnedRequest};

/// A connection with the test clock set.
fn conn_with(limits: Limits) -> Conn {
    let mut c = Conn::new(limits);
    c.set_now(NOW);
    c
}

/// Feeds `input` whole (no EOF), answering every request with `ok_response`.
fn run(input: &[u8]) -> Vec<Event> {
    run_with(Limits::default(), input)
}

fn run_with(limits: Limits, input: &[u8]) -> Vec<Event> {
    drive(&mut conn_with(limits), [input], false, &mut |_| {
        ok_response()
    })
}

/// Feeds `input` whole then EOF.
fn run_eof(input: &[u8]) -> Vec<Event> {
    drive(
        &mut conn_with(Limits::default()),
        [input],
        true,
        &mut |_| ok_response(),
    )
}

/// The requests among `events`.
fn requests(events: &[Event]) -> Vec<&OwnedRequest> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Request(r) => Some(r),
            _ => None,
        })
        .collect()
}

/// The response bytes among `events`, as text.
fn responses(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Response(r) => Some(String::from_utf8_lossy(r).into_owned()),
            _ => None,
        })
        .collect()
}

/// Asserts that `events` are exactly one codec error response with `status`, then
/// `Close`; returns the error response's text.
#[track_caller]
fn assert_refused(events: &[Event], status: u16) -> String {
    let [Event::Transmit(bytes), Event::Close] = events else {
        panic!("expected Transmit + Close, got {events:#?}");
    };
    let text = String::from_utf8_lossy(bytes).into_owned();
    assert!(
        text.starts_with(&format!("HTTP/1.1 {status} ")),
        "expected {status}, got {text}"
    );
    assert!(text.contains("\r\nConnection: close\r\n"), "{text}");
    assert!(
        text.contains("\r\nContent-Type: application/json\r\n"),
        "{text}"
    );
    assert!(text.contains("\r\nCache-Control: no-store\r\n"), "{text}");
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    let json: serde_json::Value = serde_json::from_str(body).expect("JSON error body");
    assert_eq!(json["error"]["code"], -32600);
    assert_eq!(json["id"], serde_json::Value::Null);
    let len = format!("\r\nContent-Length: {}\r\n", body.len());
    assert!(text.contains(&len), "{text}");
    text
}

/// Asserts a `400` whose message is `Bad Request: <reason>`.
#[track_caller]
fn assert_bad_request(input: &[u8], reason: &str) {
    let events = run(input);
    let text = assert_refused(&events, 400);
    let want = format!(r#""message":"Bad Request: {reason}"}}"#);
    assert!(
        text.contains(&want),
        "input {:?}: want {want}, got {text}",
        String::from_utf8_lossy(input)
    );
}

/// A response that echoes the request body.
fn echo(req: &OwnedRequest) -> Response {
    Response::json(http::StatusCode::OK, req.body().to_vec())
}
