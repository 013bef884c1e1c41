//! Happy paths: keep-alive, HTTP/1.0, pipelining, bodies, 100-continue, EOF.

use dunning_core::{Header, Response};
use http::{HeaderValue, StatusCode, header};

use super::*;
use crate::Output;

const OK_TAIL: &str = "Content-Length: 11\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n";

#[test]
fn simple_get_keeps_alive() {
    let events = run(b"GET /mcp?x=1 HTTP/1.1\r\nHost: example.com\r\nX-Thing:  v a l \r\n\r\n");
    let reqs = requests(&events);
    assert_eq!(reqs.len(), 1);
    let r = reqs[0];
    assert_eq!(
        (r.method(), r.target(), r.version()),
        ("GET", "/mcp?x=1", 1)
    );
    assert!(r.keep_alive() && !r.is_head());
    let headers: Vec<Header<'_>> = r.headers().collect();
    assert_eq!(headers.len(), 2);
    assert_eq!(headers[0].name, "Host");
    assert_eq!(headers[0].value, b"example.com");
    assert_eq!(headers[1].name, "X-Thing");
    assert_eq!(r.body(), b"");
    assert_eq!(
        responses(&events),
        [format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{OK_TAIL}\r\n{{\"ok\":true}}"
        )]
    );
    assert_eq!(events.len(), 2, "no Close: {events:?}");
}

#[test]
fn core_view() {
    let events = run(b"POST /mcp?a=b HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nbody");
    let r = requests(&events)[0];
    let view = r.as_core();
    let req = view.request();
    assert_eq!(req.method, "POST");
    assert_eq!(req.path(), "/mcp");
    assert_eq!(req.query(), Some("a=b"));
    assert_eq!(req.single_header("content-length"), Ok(Some(&b"4"[..])));
    assert_eq!(req.body, b"body");
    assert_eq!(r.with_core(|q| q.headers.len()), 2);
    assert_eq!(r.clone().into_body(), b"body");
}

#[test]
fn pipelining_three_requests_in_order() {
    let input = b"POST /1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\naGET /2 HTTP/1.1\r\nHost: a\r\n\r\n\
                  POST /3 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nc\r\n0\r\n\r\n";
    let mut conn = conn_with(Limits::default());
    conn.handle_input(input);
    let Some(Output::Request(first)) = conn.poll_output() else {
        panic!("first request")
    };
    assert_eq!(first.target(), "/1");
    // The next request is not yielded before the first is answered.
    assert_eq!(conn.poll_output(), None);
    assert!(!conn.wants_input());
    let mut out = Vec::new();
    conn.encode_response(&echo(&first), NOW, &mut out);
    let Some(Output::Request(second)) = conn.poll_output() else {
        panic!("second request")
    };
    assert_eq!(second.target(), "/2");
    conn.encode_response(&echo(&second), NOW, &mut out);
    // A chunked body is never complete with its head: the head is decided first.
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("third head")
    };
    conn.admit(head);
    let Some(Output::Request(third)) = conn.poll_output() else {
        panic!("third request")
    };
    assert_eq!((third.target(), third.body()), ("/3", &b"c"[..]));
    conn.encode_response(&echo(&third), NOW, &mut out);
    assert_eq!(conn.poll_output(), None);
    assert!(conn.wants_input() && !conn.wants_close());
    let text = String::from_utf8(out).unwrap();
    let bodies: Vec<&str> = text.split("HTTP/1.1 200 OK").skip(1).collect();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[0].ends_with("\r\n\r\na") && bodies[2].ends_with("\r\n\r\nc"));
}

#[test]
fn connection_close_request() {
    let events =
        run(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: Keep-Alive, CLOSE\r\n\r\nGET /never HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(requests(&events).len(), 1);
    assert!(responses(&events)[0].contains("\r\nConnection: close\r\n\r\n"));
    assert_eq!(events.last(), Some(&Event::Close));
}

#[test]
fn response_connection_close_is_honoured() {
    let mut conn = conn_with(Limits::default());
    let events = drive(
        &mut conn,
        [&b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"[..]],
        false,
        &mut |_| {
            Response::empty(StatusCode::OK)
                .with_header(header::CONNECTION, HeaderValue::from_static("close"))
        },
    );
    assert_eq!(requests(&events).len(), 1);
    let resp = &responses(&events)[0];
    assert_eq!(resp.matches("Connection").count(), 1, "{resp}");
    assert!(resp.ends_with("Connection: close\r\n\r\n"));
    assert_eq!(events.last(), Some(&Event::Close));
    assert!(conn.wants_close());
}

#[test]
fn http10_closes_by_default() {
    let events = run(b"GET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\n\r\n");
    assert_eq!(requests(&events)[0].version(), 0);
    assert!(!requests(&events)[0].keep_alive());
    assert_eq!(requests(&events).len(), 1);
    assert!(responses(&events)[0].starts_with("HTTP/1.1 200 OK\r\n"));
    assert!(responses(&events)[0].contains("\r\nConnection: close\r\n"));
    assert_eq!(events.last(), Some(&Event::Close));
}

#[test]
fn http10_keep_alive() {
    let events = run(
        b"POST / HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nhi\
          GET / HTTP/1.0\r\nconnection: KEEP-ALIVE\r\n\r\n",
    );
    assert_eq!(requests(&events).len(), 2);
    assert_eq!(requests(&events)[0].body(), b"hi");
    for r in responses(&events) {
        assert!(r.contains("\r\nConnection: keep-alive\r\n"), "{r}");
    }
    assert_ne!(events.last(), Some(&Event::Close));
}

#[test]
fn expect_100_continue() {
    let mut conn = conn_with(Limits::default());
    conn.handle_input(
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n",
    );
    // `100 Continue` only once the head is admitted.
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("head")
    };
    assert_eq!(conn.poll_output(), None);
    conn.admit(head);
    assert_eq!(
        conn.poll_output(),
        Some(Output::Transmit(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec()))
    );
    assert_eq!(conn.poll_output(), None);
    conn.handle_input(b"abc");
    let Some(Output::Request(r)) = conn.poll_output() else {
        panic!("request")
    };
    assert_eq!(r.body(), b"abc");
}

#[test]
fn expect_100_continue_only_with_a_body_and_http11() {
    for input in [
        &b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
        b"POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx",
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: something-else\r\nContent-Length: 1\r\n\r\nx",
    ] {
        let events = run(input);
        assert!(matches!(events[0], Event::Request(_)), "{events:?}");
    }
    let events = run(
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    assert_eq!(
        events,
        [Event::Transmit(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec())]
    );
}

#[test]
fn chunked_with_extensions_and_trailers() {
    let events = run(
        b"POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n\
          4;name=value\r\nWiki\r\n5 ; x\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\
          X-Trailer: yes\r\nOther: 1\r\n\r\nGET /next HTTP/1.1\r\nHost: a\r\n\r\n",
    );
    let reqs = requests(&events);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].body(), b"Wikipedia in\r\n\r\nchunks.");
    assert!(reqs[0].headers().all(|h| h.name != "X-Trailer"));
    assert_eq!(reqs[1].target(), "/next");
}

#[test]
fn head_request_gets_length_without_body() {
    let events = run(b"HEAD / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert!(requests(&events)[0].is_head());
    assert_eq!(
        responses(&events),
        [format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{OK_TAIL}\r\n"
        )]
    );
}

#[test]
fn leading_empty_lines_are_ignored() {
    let events =
        run(b"\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(requests(&events).len(), 2);
}

#[test]
fn eof_between_requests_closes() {
    assert_eq!(run_eof(b""), [Event::Close]);
    let events = run_eof(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    assert_eq!(events.len(), 3);
    assert_eq!(events[2], Event::Close);
}

#[test]
fn eof_mid_request_closes_without_response() {
    for input in [
        &b"GET / HT"[..],
        b"GET / HTTP/1.1\r\nHost: a\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\r",
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n",
    ] {
        assert_eq!(run_eof(input), [Event::Close], "{input:?}");
    }
}

#[test]
fn eof_after_complete_request_still_answers() {
    let mut conn = conn_with(Limits::default());
    conn.handle_input(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    conn.handle_eof();
    assert!(!conn.wants_input());
    let Some(Output::Request(_)) = conn.poll_output() else {
        panic!("request")
    };
    let mut out = Vec::new();
    conn.encode_response(&ok_response(), NOW, &mut out);
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("\r\nConnection: close\r\n")
    );
    assert_eq!(conn.poll_output(), Some(Output::Close));
    assert_eq!(conn.poll_output(), None);
}

#[test]
fn nothing_after_close() {
    let mut conn = conn_with(Limits::default());
    conn.handle_input(b"GET / HTTP/1.1\nHost: a\r\n\r\n");
    assert!(matches!(conn.poll_output(), Some(Output::Transmit(_))));
    assert_eq!(conn.poll_output(), Some(Output::Close));
    assert!(conn.wants_close() && !conn.wants_input());
    conn.handle_input(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n");
    conn.handle_eof();
    let mut out = Vec::new();
    conn.encode_response(&ok_response(), NOW, &mut out);
    assert!(out.is_empty());
    assert_eq!(conn.poll_output(), None);
    assert_eq!(conn.error(), Some(crate::CodecError::BareLf));
}

#[test]
fn encode_response_without_request_does_nothing() {
    let mut conn = conn_with(Limits::default());
    let mut out = Vec::new();
    conn.encode_response(&ok_response(), NOW, &mut out);
    assert!(out.is_empty());
    assert_eq!(conn.poll_output(), None);
    assert!(!conn.wants_close());
}

#[test]
fn error_response_date_comes_from_the_clock_given() {
    let mut conn = Conn::new(Limits::default());
    conn.handle_input(b"BAD\n");
    let Some(Output::Transmit(bytes)) = conn.poll_output() else {
        panic!("transmit")
    };
    assert!(!String::from_utf8(bytes).unwrap().contains("Date:"));
    let events = run(b"BAD\n");
    let text = assert_refused(&events, 400);
    assert!(
        text.contains("\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n"),
        "{text}"
    );
}

#[test]
fn pipelined_flood_is_capped_and_closes_after_the_response() {
    let mut conn = conn_with(Limits::default());
    let cap = Limits::default().input_cap();
    let mut input = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n".to_vec();
    input.resize(input.len() + cap + 100, b'x');
    conn.handle_input(&input);
    conn.handle_input(b"more");
    assert!(conn.buffered() <= cap);
    let Some(Output::Request(_)) = conn.poll_output() else {
        panic!("request")
    };
    let mut out = Vec::new();
    conn.encode_response(&ok_response(), NOW, &mut out);
    assert!(
        String::from_utf8(out)
            .unwrap()
            .contains("\r\nConnection: close\r\n")
    );
    assert_eq!(conn.poll_output(), Some(Output::Close));
}

#[test]
fn free_encode_function() {
    let mut out = Vec::new();
    crate::encode(
        &Response::empty(StatusCode::NO_CONTENT),
        NOW,
        false,
        &mut out,
    );
    assert_eq!(
        out,
        b"HTTP/1.1 204 No Content\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\nConnection: close\r\n\r\n"
    );
}

#[test]
fn a_body_is_not_read_before_its_head_is_admitted() {
    // The head is yielded alone; body bytes wait unparsed.
    let mut conn = conn_with(Limits::default());
    conn.handle_input(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 1000\r\n\r\nab");
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("a head")
    };
    assert_eq!(head.declared_length(), Some(1000));
    assert!(head.body().is_empty() && !conn.wants_input());
    assert_eq!(conn.body_received(), 0);
    assert_eq!(conn.poll_output(), None);
    conn.admit(head);
    assert_eq!(conn.body_received(), 2);
    assert!(conn.wants_input());
}

#[test]
fn a_refused_head_is_answered_and_closed_without_continue() {
    let mut conn = conn_with(Limits::default());
    conn.handle_input(
        b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n",
    );
    let Some(Output::Head(head)) = conn.poll_output() else {
        panic!("a head")
    };
    assert_eq!(head.declared_length(), None);
    conn.refuse(&Response::empty(StatusCode::UNAUTHORIZED));
    let Some(Output::Transmit(bytes)) = conn.poll_output() else {
        panic!("the refusal")
    };
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.starts_with("HTTP/1.1 401 Unauthorized\r\n"), "{text}");
    assert!(text.contains("Connection: close\r\n"), "{text}");
    assert!(!text.contains("100 Continue"));
    assert_eq!(conn.poll_output(), Some(Output::Close));
    assert!(conn.wants_close());
    conn.handle_input(b"5\r\nhello\r\n");
    assert_eq!(conn.poll_output(), None);
}

#[test]
fn a_whole_body_that_came_with_its_head_skips_the_gate() {
    let events = run(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}");
    assert_eq!(requests(&events)[0].body(), b"{}");
    let mut conn = conn_with(Limits::default());
    conn.handle_input(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}");
    assert!(matches!(conn.poll_output(), Some(Output::Request(_))));
}
