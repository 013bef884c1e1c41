//! Every limit at its boundary.

use super::*;
use crate::Output;

const MAX_BODY: usize = 2_097_152;

/// Header lines (CRLF-terminated) such that they plus the final CRLF are `total` bytes.
fn header_lines(count: usize, total: usize) -> String {
    let fixed = count * "X-000: \r\n".len() + 2;
    let values = total - fixed;
    (0..count)
        .map(|i| {
            let len = values / count + usize::from(i < values % count);
            format!("X-{i:03}: {}\r\n", "v".repeat(len))
        })
        .collect()
}

#[test]
fn header_lines_helper_is_exact() {
    assert_eq!(header_lines(80, 65536).len() + 2, 65536);
    assert_eq!(header_lines(7, 1000).len() + 2, 1000);
}

#[test]
fn request_line_boundary() {
    let line = |n: usize| format!("GET /{} HTTP/1.1", "a".repeat(n));
    assert_eq!(line(8178).len(), 8192);
    let events = run(format!("{}\r\nHost: a\r\n\r\n", line(8178)).as_bytes());
    assert_eq!(requests(&events)[0].target().len(), 8179);

    let text = assert_refused(&run(format!("{}\r\n\r\n", line(8179)).as_bytes()), 414);
    assert!(text.contains(r#""message":"URI Too Long: request line too long""#));
    // Refused as soon as the 8193rd byte arrives, without waiting for the line end.
    assert_refused(&run(&[b'A'; 8193]), 414);
    assert_eq!(run(&[b'A'; 8192]), []);
}

#[test]
fn header_section_boundary() {
    // `Host: a\r\n` (9 bytes) is one of the 80 lines.
    let input = |total: usize| {
        format!(
            "GET / HTTP/1.1\r\nHost: a\r\n{}\r\n",
            header_lines(79, total - 9)
        )
    };
    let events = run(input(65536).as_bytes());
    assert_eq!(requests(&events)[0].headers().len(), 80);
    let text = assert_refused(&run(input(65537).as_bytes()), 400);
    assert!(text.contains(r#""message":"Bad Request: header section too large""#));
}

#[test]
fn header_count_boundary() {
    // `Host` is one of the `count` lines.
    let input = |count: usize| {
        let others = count - 1;
        format!(
            "GET / HTTP/1.1\r\nHost: a\r\n{}\r\n",
            header_lines(others, others * 20)
        )
    };
    let events = run(input(100).as_bytes());
    assert_eq!(requests(&events)[0].headers().len(), 100);
    let text = assert_refused(&run(input(101).as_bytes()), 431);
    assert!(
        text.contains(r#""message":"Request Header Fields Too Large: too many header fields""#)
    );
}

fn expected_413(limit: usize) -> String {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"Request body too large (limit {limit} bytes)"}}}}"#
    );
    format!(
        "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n\
         Cache-Control: no-store\r\nContent-Length: {}\r\n\
         Date: Thu, 01 Jan 2026 00:00:00 GMT\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[test]
fn the_413_body_is_exact() {
    assert!(expected_413(MAX_BODY).ends_with(
        r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit 2097152 bytes)"}}"#
    ));
}

#[test]
fn content_length_body_boundary() {
    let mut input =
        format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {MAX_BODY}\r\n\r\n").into_bytes();
    input.resize(input.len() + MAX_BODY, b'b');
    let events = run(&input);
    assert_eq!(requests(&events)[0].body().len(), MAX_BODY);

    // Over the limit: answered on the head alone, before any body byte.
    let over = format!(
        "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        MAX_BODY + 1
    );
    let events = run(over.as_bytes());
    assert_eq!(
        events,
        [
            Event::Transmit(expected_413(MAX_BODY).into_bytes()),
            Event::Close
        ]
    );
    let huge = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9999999999999999999\r\n\r\n";
    assert_refused(&run(huge.as_bytes()), 413);
}

#[test]
fn chunked_body_boundary() {
    let chunk = format!("10000\r\n{}\r\n", "c".repeat(0x10000));
    let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
    let full = format!("{head}{}", chunk.repeat(MAX_BODY / 0x10000));
    let events = run(format!("{full}0\r\n\r\n").as_bytes());
    assert_eq!(requests(&events)[0].body().len(), MAX_BODY);

    // One more byte: refused on its size line, before its data arrives.
    let mut conn = conn_with(Limits::default());
    conn.handle_input(format!("{full}1\r\n").as_bytes());
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("a head first")
    };
    conn.admit(head);
    assert_eq!(
        conn.poll_output(),
        Some(Output::Transmit(expected_413(MAX_BODY).into_bytes()))
    );
    assert_eq!(conn.poll_output(), Some(Output::Close));
    assert_eq!(conn.poll_output(), None);
}

#[test]
fn body_limit_comes_from_limits() {
    let limits = Limits {
        max_body: 10,
        ..Limits::default()
    };
    let events = run_with(
        limits,
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n0123456789",
    );
    assert_eq!(requests(&events)[0].body(), b"0123456789");
    let events = run_with(
        limits,
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\n",
    );
    assert_eq!(
        events,
        [Event::Transmit(expected_413(10).into_bytes()), Event::Close]
    );
    let events = run_with(
        limits,
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n5\r\n56789\r\n1\r\n",
    );
    assert_eq!(
        events,
        [Event::Transmit(expected_413(10).into_bytes()), Event::Close]
    );
}

#[test]
fn trailers_share_the_header_limits() {
    let head = "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
    let ok = format!("{head}{}\r\n", header_lines(100, 65536));
    assert_eq!(requests(&run(ok.as_bytes())).len(), 1);
    let big = format!("{head}{}\r\n", header_lines(100, 65537));
    let text = assert_refused(&run(big.as_bytes()), 400);
    assert!(text.contains("trailer section too large"));
    let many = format!("{head}{}\r\n", header_lines(101, 2020));
    assert_refused(&run(many.as_bytes()), 431);
}

#[test]
fn buffered_input_stays_bounded() {
    let cap = Limits::default().input_cap();
    let mut conn = conn_with(Limits::default());
    // A body arriving in one huge read, once its head is admitted, is consumed as it goes.
    conn.handle_input(
        format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {MAX_BODY}\r\n\r\n").as_bytes(),
    );
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("a head")
    };
    conn.admit(head);
    conn.handle_input(&vec![b'b'; MAX_BODY - 1]);
    assert_eq!(conn.buffered(), 0);
    // An unterminated head is refused once it reaches the cap.
    let mut conn = conn_with(Limits::default());
    let mut input = b"GET / HTTP/1.1\r\nHost: a\r\n".to_vec();
    input.resize(cap * 3, b'h');
    conn.handle_input(&input);
    assert!(conn.buffered() == 0 && conn.wants_close());
}
