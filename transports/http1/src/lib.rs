//! # dunning-http1: a sans-IO HTTP/1.1 server codec
//!
//! One [`Conn`] per TCP connection turns the bytes read from the socket into complete
//! requests ([`OwnedRequest`], borrowable as a [`dunning_core::Request`]) and encodes each
//! [`dunning_core::Response`] to bytes. It does no I/O, reads no clock (time is passed in
//! as [`dunning_core::UnixTime`]), spawns nothing and never panics on any input. Request
//! heads are parsed by [`httparse`], behind a stricter byte scanner of our own.
//!
//! ## Call order (the adapter's loop)
//!
//! 1. Read bytes from the socket and feed them: [`Conn::handle_input`] (or
//!    [`Conn::handle_eof`] when the peer closed its sending half).
//! 2. Drain [`Conn::poll_output`] until it returns `None`, acting on each item in order:
//!    * [`Output::Transmit`]: write these bytes (a `100 Continue`, or an error response the
//!      codec generated itself for a framing error);
//!    * [`Output::Request`]: hand [`OwnedRequest::as_core`] to the core, then call
//!      [`Conn::encode_response`] with its response, write the bytes it appended, and
//!      **drain again** (encoding a response lets the codec parse the next pipelined request);
//!    * [`Output::Head`]: a head whose body is not read yet. Decide from the head alone
//!      (the core's `Server::check_head`: path, method, `Origin`, authentication, load),
//!      then [`Conn::admit`] it (the body is read; `100 Continue` goes out now) or
//!      [`Conn::refuse`] it with the answer (sent with `Connection: close`; the body is
//!      never buffered), and **drain again**. Do not read from the socket meanwhile;
//!    * [`Output::Close`]: flush everything already produced, then close the socket. After
//!      `Close` the connection yields nothing more.
//! 3. Go back to 1 when [`Conn::wants_input`] is true.
//!
//! ```
//! use dunning_core::{Response, UnixTime};
//! use dunning_http1::{Conn, Limits, Output};
//!
//! let now = UnixTime::from_secs(1_767_225_600); // the adapter reads its clock
//! let mut conn = Conn::new(Limits::default());
//! conn.set_now(now);
//! let mut wire = Vec::new(); // what the adapter writes to the socket, in order
//! conn.handle_input(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}");
//! while let Some(output) = conn.poll_output() {
//!     match output {
//!         Output::Request(req) => {
//!             let view = req.as_core();
//!             let request = view.request(); // `server.handle(&request, &env)` in real life
//!             let resp = Response::json(http::StatusCode::OK, request.body.to_vec());
//!             conn.encode_response(&resp, now, &mut wire);
//!         }
//!         Output::Head(head) => conn.admit(head), // or conn.refuse(&answer)
//!         Output::Transmit(bytes) => wire.extend_from_slice(&bytes),
//!         Output::Close => break, // flush `wire`, then close the socket
//!     }
//! }
//! assert!(wire.starts_with(b"HTTP/1.1 200 OK\r\n"));
//! assert!(wire.ends_with(b"\r\n\r\n{}"));
//! ```
//!
//! Responses must be produced strictly in request order: the codec never yields a new
//! request before the previous one was answered through [`Conn::encode_response`].
//! [`Conn::set_now`] gives the clock reading used for the `Date` of responses the codec
//! generates itself (it is also updated by every [`Conn::encode_response`]); without one
//! those responses carry no `Date`.
//!
//! ## State machine
//!
//! ```text
//!          +--------------------------- encode_response (keep-alive) ----------------+
//!          v                                                                         |
//!   [Head] --head complete, no body (or whole CL body buffered)--> [Awaiting] -------+
//!     |  \--body to come--> [Gate] --admit--> [Body n] --n bytes-->     ^     \
//!     |                       |          \--> [Chunked] --last chunk-----+      encode_response
//!     |                       +--refuse: Transmit(answer) + Close               (close)
//!     +-- framing error (any state): Transmit(error) + Close ----> [Closed] <------+
//!     +-- EOF before a complete request: Close ------------------> [Closed]
//! ```
//!
//! * **Head**: bytes are scanned once, incrementally (no quadratic rescans on byte-wise
//!   input), for bare CR/LF, NUL, obs-fold and the size limits; a complete head is then
//!   parsed by httparse and its framing headers are checked.
//! * **Gate**: the head was yielded as [`Output::Head`]; nothing of the body is read until
//!   [`Conn::admit`]. Heads whose whole `Content-Length` body came with them (no
//!   `Expect: 100-continue`) skip it: that memory is already spent, and the core decides
//!   the same refusals with the same bytes from the complete request.
//! * **Body / Chunked**: the body is de-framed straight into the request; the input buffer
//!   only ever holds an incomplete line.
//! * **Awaiting**: the request was yielded; input arriving now is buffered unparsed, at most
//!   [`Limits::max_request_line`] + 2 + [`Limits::max_header_bytes`] bytes
//!   ([`Conn::wants_input`] turns false meanwhile). Bytes beyond that cap are dropped and
//!   the connection is closed after the pending response (`Connection: close`).
//! * **Closed**: terminal; input is ignored.
//!
//! ## Strictness policy
//!
//! * **Bare LF is rejected.** Every line of the head, of chunk-size lines and of trailers
//!   must end in CRLF; a LF not preceded by CR, or a CR not followed by LF, is answered
//!   `400` and the connection closes. (httparse alone accepts bare LF; a lenient server
//!   behind a strict proxy, or the reverse, is a request-smuggling desync.)
//! * Leading empty lines (CRLF) before a request line are ignored (RFC 9112 §2.2).
//! * **HTTP version**: only `HTTP/1.0` and `HTTP/1.1` are served. Any other well-formed
//!   version (`HTTP/` digit `.` digit, e.g. `HTTP/2.0`, `HTTP/1.2`, `HTTP/0.9`) gets `505`;
//!   a malformed one gets `400`.
//! * **Content-Length**: each value is a comma-separated list of `1*DIGIT` (at most 19
//!   digits, no sign, no empty element). Repeated values — in one field or across several
//!   fields — are accepted only if they are all *byte-identical* after trimming spaces
//!   (`5, 5` is accepted; `5, 05` and `5, 6` are `400`).
//! * **Transfer-Encoding**: the only coding accepted is one single `chunked`
//!   (case-insensitive) across all fields; `gzip, chunked`, `chunked, chunked`, `identity`
//!   are `400`. Transfer-Encoding with Content-Length is `400`; Transfer-Encoding in an
//!   HTTP/1.0 request is `400`.
//! * Header lines starting with SP/HTAB (obs-fold), whitespace between a field name and the
//!   colon, NUL or bare CR anywhere, invalid tokens and more than one `Host` field are `400`.
//!   An HTTP/1.1 request without `Host` is `400` (RFC 9112 §3.2); HTTP/1.0 may omit it.
//!   Non-ASCII request targets are `400`.
//! * Chunk sizes: 1 to 16 hex digits, extensions (from the first byte after the size to the
//!   CR) at most [`Limits::max_chunk_ext`] bytes, only `*(SP/HTAB) ";" ...` with visible
//!   characters, and no quoted string left open at the line end (`;a="x` is `400`); data
//!   must be followed by CRLF. Trailers are validated as field lines and
//!   ignored.
//! * `Expect: 100-continue` (HTTP/1.1, with a non-empty body) makes the codec emit
//!   `HTTP/1.1 100 Continue` when the head is admitted ([`Conn::admit`]), before reading
//!   the body; never for a refused head, and not when the declared length is already over
//!   the limit (then `413` directly). Other expectations are ignored.
//!
//! ## Limits ([`Limits`])
//!
//! | limit | default | counts | over it |
//! |---|---|---|---|
//! | `max_request_line` | 8192 | request-line bytes, CRLF excluded | `414` |
//! | `max_header_bytes` | 65536 | all field lines after the request line, with their CRLFs and the final empty line | `400` |
//! | `max_headers` | 100 | field lines | `431` |
//! | `max_body` | 2097152 | de-framed body bytes; exactly the limit is accepted | `413` with a JSON-RPC body |
//! | `max_chunk_ext` | 1024 | bytes of one chunk extension | `400` |
//!
//! Limits are decided before the excess is buffered: a declared `Content-Length` over the
//! limit is refused without reading the body, a chunk whose size would take the running
//! total over the limit is refused on its size line. Trailers share `max_header_bytes` and
//! `max_headers`. Every codec-generated error response closes the connection.
//!
//! ## Response encoding
//!
//! `HTTP/1.1 <code> <reason>`, the response's own headers in order (any framing header the
//! core set anyway — `Content-Length`, `Transfer-Encoding`, `Connection`, `Date` — is
//! dropped; a `Connection: close` from the core is honoured), then `Content-Length`,
//! `Date` (IMF-fixdate), and `Connection: close` when closing (`Connection: keep-alive`
//! for a kept-alive HTTP/1.0 request). Header names are written in canonical Title-Case
//! (`content-type` → `Content-Type`, `mcp-session-id` → `Mcp-Session-Id`,
//! `www-authenticate` → `WWW-Authenticate`). 1xx and 204 carry neither body nor
//! `Content-Length`; 304 and responses to `HEAD` carry the body's `Content-Length` but no
//! body.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod chunked;
mod conn;
mod encode;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod head;
mod limits;
mod request;

pub use conn::{Conn, Output};
pub use encode::encode;
pub use error::CodecError;
pub use limits::Limits;
pub use request::{CoreRequest, OwnedRequest};

#[cfg(test)]
mod tests;
