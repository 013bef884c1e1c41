//! Malformed and ambiguous requests: each is refused with 400 (or 505) and a close.

use super::*;

const H: &str = "POST / HTTP/1.1\r\nHost: a\r\n";

fn req(extra_headers: &str, rest: &str) -> Vec<u8> {
    format!("{H}{extra_headers}\r\n{rest}").into_bytes()
}

#[test]
fn content_length_with_transfer_encoding() {
    let reason = "Content-Length with Transfer-Encoding";
    assert_bad_request(
        &req(
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\n",
        ),
        reason,
    );
    assert_bad_request(
        &req(
            "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
            "0\r\n\r\n",
        ),
        reason,
    );
}

#[test]
fn conflicting_content_lengths() {
    for headers in [
        "Content-Length: 5\r\nContent-Length: 6\r\n",
        "Content-Length: 5, 6\r\n",
        "Content-Length: 5\r\nContent-Length: 5, 6\r\n",
        "Content-Length: 5, 05\r\n",
    ] {
        assert_bad_request(&req(headers, "hello!"), "conflicting Content-Length");
    }
}

#[test]
fn identical_content_lengths_are_accepted() {
    for headers in [
        "Content-Length: 5\r\nContent-Length: 5\r\n",
        "Content-Length: 5,5\r\n",
        "Content-Length: 5 ,\t5\r\n",
    ] {
        let events = run(&req(headers, "hello"));
        assert_eq!(requests(&events)[0].body(), b"hello", "{headers}");
    }
}

#[test]
fn invalid_content_lengths() {
    for value in [
        "abc",
        "+5",
        "-5",
        "0x5",
        "5.0",
        "5 5",
        "",
        "5,",
        ",5",
        "18446744073709551616",
        "00000000000000000005",
    ] {
        let input = req(&format!("Content-Length: {value}\r\n"), "hello");
        assert_bad_request(&input, "invalid Content-Length");
    }
}

#[test]
fn transfer_codings_other_than_single_chunked() {
    for headers in [
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
        "Transfer-Encoding: identity\r\n",
        "Transfer-Encoding: gzip\r\n",
        "Transfer-Encoding: chunked, gzip\r\n",
        "Transfer-Encoding: chunked;q=1\r\n",
        "Transfer-Encoding: \r\n",
        "Transfer-Encoding: chunked,\r\n",
        "Transfer-Encoding: xchunked\r\n",
    ] {
        assert_bad_request(&req(headers, "0\r\n\r\n"), "unsupported Transfer-Encoding");
    }
}

#[test]
fn transfer_encoding_in_http10() {
    assert_bad_request(
        b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "Transfer-Encoding in HTTP/1.0",
    );
}

#[test]
fn obs_fold() {
    assert_bad_request(&req("X-A: a\r\n b\r\n", ""), "obsolete line folding");
    assert_bad_request(&req("X-A: a\r\n\tb\r\n", ""), "obsolete line folding");
    assert_bad_request(
        b"GET / HTTP/1.1\r\nHost: a\r\n Host: a\r\n\r\n",
        "obsolete line folding",
    );
}

#[test]
fn whitespace_before_colon() {
    assert_bad_request(
        &req("Content-Length : 5\r\n", "hello"),
        "invalid header name",
    );
    assert_bad_request(&req("X-A\t: 5\r\n", ""), "invalid header name");
}

#[test]
fn invalid_header_names_and_values() {
    assert_bad_request(&req("X(A): 1\r\n", ""), "invalid header name");
    assert_bad_request(&req(": 1\r\n", ""), "invalid header name");
    assert_bad_request(&req("NoColon\r\n", ""), "invalid header name");
    assert_bad_request(&req("X-A: a\x01b\r\n", ""), "invalid header value");
    assert_bad_request(&req("X-A: a\x7fb\r\n", ""), "invalid header value");
}

#[test]
fn nul_bytes() {
    assert_bad_request(&req("X-\0A: 1\r\n", ""), "NUL byte in request head");
    assert_bad_request(&req("X-A: a\0b\r\n", ""), "NUL byte in request head");
    assert_bad_request(
        b"GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n",
        "NUL byte in request head",
    );
}

#[test]
fn bare_cr() {
    assert_bad_request(&req("X-A: a\rb\r\n", ""), "bare CR");
    assert_bad_request(&req("X\r-A: ab\r\n", ""), "bare CR");
    assert_bad_request(b"GET / HTTP/1.1\r\r\n\r\n", "bare CR");
}

#[test]
fn bare_lf_is_rejected_everywhere() {
    for input in [
        &b"GET / HTTP/1.1\nHost: a\n\n"[..],
        b"GET / HTTP/1.1\r\nHost: a\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\n\n",
        b"\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n0\r\n\r\n",
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nT: 1\n\r\n",
    ] {
        assert_bad_request(input, "bare LF line terminator");
    }
}

#[test]
fn invalid_request_lines() {
    for input in [
        &b"GET /\r\n\r\n"[..],
        b"GET  / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET / HTTP/1.1 \r\n\r\n",
        b"GET / HTTP/1.1x\r\n\r\n",
        b" GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"G@T / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"GET\r\n\r\n",
        b"GET / \r\n\r\n",
        b"GET / HTTPS/1.1\r\n\r\n",
        b"GET / http/1.1\r\n\r\n",
        b"GET / HTTP/11\r\n\r\n",
        b"GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\x16\x03\x01\x02\x01\xfc\x03\x03 / HTTP/1.1\r\nHost: a\r\n\r\n",
    ] {
        assert_bad_request(input, "invalid request line");
    }
}

#[test]
fn non_ascii_target() {
    assert_bad_request(
        "GET /caf\u{e9} HTTP/1.1\r\nHost: a\r\n\r\n".as_bytes(),
        "invalid request target",
    );
}

#[test]
fn unsupported_versions_get_505() {
    for input in [
        &b"GET / HTTP/2.0\r\n\r\n"[..],
        b"GET / HTTP/1.2\r\n\r\n",
        b"GET / HTTP/0.9\r\n\r\n",
        b"GET / HTTP/3.0\r\nHost: a\r\n\r\n",
    ] {
        let text = assert_refused(&run(input), 505);
        assert!(text.contains("HTTP Version Not Supported: unsupported HTTP version"));
    }
}

#[test]
fn multiple_host_headers() {
    assert_bad_request(&req("Host: b\r\n", ""), "multiple Host headers");
}

#[test]
fn invalid_chunk_framing() {
    let te = "Transfer-Encoding: chunked\r\n";
    let cases = [
        ("g\r\nx\r\n0\r\n\r\n", "invalid chunk size"),
        ("\r\nx\r\n0\r\n\r\n", "invalid chunk size"),
        ("-1\r\nx\r\n0\r\n\r\n", "invalid chunk size"),
        ("0x1\r\nx\r\n0\r\n\r\n", "invalid chunk size"),
        (" 1\r\nx\r\n0\r\n\r\n", "invalid chunk size"),
        ("10000000000000000\r\n", "chunk size overflow"),
        ("1 x\r\nx\r\n0\r\n\r\n", "invalid chunk extension"),
        ("1;a\x01\r\nx\r\n0\r\n\r\n", "invalid chunk extension"),
        // A quoted string must close before the line ends.
        ("1;a=\"open\r\nx\r\n0\r\n\r\n", "invalid chunk extension"),
        ("1;a=\"esc\\\"\r\nx\r\n0\r\n\r\n", "invalid chunk extension"),
        ("1\r\nxy\r\n0\r\n\r\n", "missing CRLF after chunk data"),
        ("1\r\nx0\r\n\r\n", "missing CRLF after chunk data"),
        ("1\rx", "bare CR"),
        ("0\r\nBad Trailer: 1\r\n\r\n", "invalid trailer field"),
    ];
    for (body, reason) in cases {
        assert_bad_request(&req(te, body), reason);
    }
}

#[test]
fn chunk_extension_limit_boundary() {
    let te = "Transfer-Encoding: chunked\r\n";
    // The extension is everything after the size digits: ";" + 1023 bytes = 1024.
    let ok = format!("1;{}\r\nx\r\n0\r\n\r\n", "a".repeat(1023));
    assert_eq!(requests(&run(&req(te, &ok)))[0].body(), b"x");
    let over = format!("1;{}\r\nx\r\n0\r\n\r\n", "a".repeat(1024));
    assert_bad_request(&req(te, &over), "chunk extension too long");
}

#[test]
fn smuggled_second_request_is_never_parsed() {
    // A classic CL.TE payload: the "GPOST" must not become a request.
    let input = b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGPOST / HTTP/1.1\r\nHost: a\r\n\r\n";
    let events = run(input);
    assert!(requests(&events).is_empty());
    assert_refused(&events, 400);
}

#[test]
fn http11_without_host_is_400_http10_may_omit_it() {
    // RFC 9112 §3.2.
    assert_bad_request(b"GET / HTTP/1.1\r\n\r\n", "missing Host header");
    assert_bad_request(
        b"POST / HTTP/1.1\r\nContent-Length: 1\r\n\r\nx",
        "missing Host header",
    );
    assert_eq!(requests(&run(b"GET / HTTP/1.0\r\n\r\n")).len(), 1);
}
