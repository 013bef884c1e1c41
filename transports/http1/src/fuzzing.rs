//! Fuzz target bodies (shared by cargo-fuzz and `cargo test`) and the reference adapter
//! loop they drive. Not a stable API.

use dunning_core::{Response, UnixTime};
use http::StatusCode;

use crate::{Conn, Limits, Output, OwnedRequest};

/// The clock reading the targets use.
pub const NOW: UnixTime = UnixTime::from_secs(1_767_225_600); // 2026-01-01T00:00:00Z

/// What an adapter driving a [`Conn`] observed, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request was yielded (and answered: a [`Event::Response`] follows).
    Request(OwnedRequest),
    /// The bytes [`Conn::encode_response`] appended for it.
    Response(Vec<u8>),
    /// An [`Output::Transmit`].
    Transmit(Vec<u8>),
    /// [`Output::Close`].
    Close,
}

/// The fixed response the targets answer every request with.
pub fn ok_response() -> Response {
    Response::json(StatusCode::OK, b"{\"ok\":true}".to_vec())
}

/// The reference adapter loop: feeds `pieces` in order (then EOF when `eof`), draining
/// after each and answering each request with `respond`. Stops feeding after `Close`.
///
/// Panics if the codec breaks its contract (output after `Close`).
pub fn drive<'a>(
    conn: &mut Conn,
    pieces: impl IntoIterator<Item = &'a [u8]>,
    eof: bool,
    respond: &mut dyn FnMut(&OwnedRequest) -> Response,
) -> Vec<Event> {
    let mut events = Vec::new();
    for piece in pieces {
        conn.handle_input(piece);
        if drain(conn, respond, &mut events) {
            return events;
        }
    }
    if eof {
        conn.handle_eof();
        drain(conn, respond, &mut events);
    }
    events
}

/// Drains the outputs; true once `Close` was seen.
fn drain(
    conn: &mut Conn,
    respond: &mut dyn FnMut(&OwnedRequest) -> Response,
    events: &mut Vec<Event>,
) -> bool {
    while let Some(output) = conn.poll_output() {
        match output {
            Output::Request(req) => {
                let resp = respond(&req);
                let mut out = Vec::new();
                conn.encode_response(&resp, NOW, &mut out);
                events.push(Event::Request(req));
                events.push(Event::Response(out));
            }
            // Heads are admitted: the events are those of a codec without the gate.
            Output::Head(req) => conn.admit(req),
            Output::Transmit(bytes) => events.push(Event::Transmit(bytes)),
            Output::Close => {
                events.push(Event::Close);
                assert!(conn.wants_close(), "Close without wants_close");
                assert_eq!(conn.poll_output(), None, "output after Close");
                return true;
            }
        }
    }
    false
}

/// Small limits, so short fuzz inputs reach every limit.
pub fn small_limits() -> Limits {
    Limits {
        max_request_line: 32,
        max_header_bytes: 96,
        max_headers: 4,
        max_body: 64,
        max_chunk_ext: 8,
    }
}

fn run(limits: Limits, pieces: &[&[u8]]) -> Vec<Event> {
    let mut conn = Conn::new(limits);
    conn.set_now(NOW);
    drive(&mut conn, pieces.iter().copied(), true, &mut |_| {
        ok_response()
    })
}

/// Fuzz target: arbitrary bytes, whole, then EOF; must not panic, must end in `Close`,
/// and every codec error response must be followed by `Close`.
pub fn decode(data: &[u8]) {
    for limits in [Limits::default(), small_limits()] {
        let events = run(limits, &[data]);
        assert_eq!(events.last(), Some(&Event::Close), "no Close after EOF");
        assert_eq!(
            events.iter().filter(|e| **e == Event::Close).count(),
            1,
            "several Close"
        );
        for (i, e) in events.iter().enumerate() {
            if let Event::Transmit(bytes) = e {
                if bytes.as_slice() != b"HTTP/1.1 100 Continue\r\n\r\n" {
                    assert_eq!(events.get(i + 1), Some(&Event::Close));
                }
            }
        }
    }
}

/// Fuzz target: the first byte says how many split points follow (0-3, two bytes each);
/// the rest is fed whole, split at those points, and one byte at a time. All three must
/// give identical events.
pub fn split(data: &[u8]) {
    let Some((&n, rest)) = data.split_first() else {
        return;
    };
    let (points, payload) = rest.split_at((usize::from(n % 4) * 2).min(rest.len()));
    let mut cuts: Vec<usize> = points
        .chunks(2)
        .map(|c| c.iter().fold(0usize, |a, &b| a * 256 + usize::from(b)) % (payload.len() + 1))
        .collect();
    cuts.sort_unstable();
    let mut pieces = Vec::new();
    let mut at = 0;
    for cut in cuts {
        pieces.push(&payload[at..cut]);
        at = cut;
    }
    pieces.push(&payload[at..]);
    let bytes: Vec<&[u8]> = payload.chunks(1).collect();

    for limits in [Limits::default(), small_limits()] {
        // Over the input cap, input is dropped while a request awaits its answer, so the
        // outcome legitimately depends on how the input was read.
        if payload.len() > limits.input_cap() {
            continue;
        }
        let whole = run(limits, &[payload]);
        assert_eq!(whole, run(limits, &pieces), "split differs");
        if payload.len() <= 1 << 16 {
            assert_eq!(whole, run(limits, &bytes), "byte-wise differs");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INPUTS: &[&[u8]] = &[
        b"",
        b"GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        b"\x02\x00\x05\x00\x20POST /mcp HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.0\r\n\r\n",
        b"\x01\x00\x30POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
        b"\x03GET / HTTP/1.1\nHost: a\n\n",
        b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
        b"GET / HTTP/2.0\r\n\r\n",
        b"\r\n\r\n\r\nGET /\x00 HTTP/1.1\r\n\r\n",
        b"HEAD / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n",
        b"\x00\xff\xfe\r\r\n\n",
    ];

    #[test]
    fn decode_survives_samples() {
        for input in INPUTS {
            decode(input);
        }
    }

    #[test]
    fn split_agrees_on_samples() {
        for input in INPUTS {
            split(input);
        }
    }

    #[test]
    fn split_of_long_pipeline() {
        let mut data = vec![3, 0, 7, 0, 100, 1, 0];
        for i in 0..20 {
            data.extend_from_slice(
                format!("POST /{i} HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc").as_bytes(),
            );
        }
        split(&data);
    }
}
