//! One connection: input buffer, state machine, output queue.

use std::collections::VecDeque;

use dunning_core::{Response, UnixTime};

use crate::chunked::ChunkedDecoder;
use crate::encode::{Framing, asks_close, encode_framed, encode_head};
use crate::head::{self, BodyKind, HeadScanner};
use crate::{CodecError, Limits, OwnedRequest};

/// The interim response sent for `Expect: 100-continue`.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// What the adapter must do next; see the crate docs for the loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// A complete request: hand [`OwnedRequest::as_core`] to the core, then call
    /// [`Conn::encode_response`] with its response.
    Request(OwnedRequest),
    /// A request head whose body has not been read yet (no byte of it buffered beyond
    /// what arrived with the head). Decide from the head alone — authentication, origin,
    /// limits — then either [`Conn::admit`] it (the body is read; `100 Continue` is sent
    /// then, when asked for) or [`Conn::refuse`] it (the answer is sent, the connection
    /// closes, the body is never buffered). A head whose whole `Content-Length` body
    /// arrived with it, without `Expect: 100-continue`, is yielded as a complete
    /// [`Output::Request`] instead: nothing is left to protect.
    Head(OwnedRequest),
    /// Bytes the codec itself wants written: `HTTP/1.1 100 Continue`, or an error response
    /// it generated for a framing error (always followed by [`Output::Close`]).
    Transmit(Vec<u8>),
    /// Close the connection after writing everything already produced. Nothing follows.
    ///
    /// After an error response, prefer a lingering close (shut down the write side, then
    /// read and discard for a short while) so the peer is not reset before reading it.
    Close,
}

/// Where the connection is in its request cycle.
#[derive(Debug)]
enum State {
    /// Reading a request head.
    Head(HeadScanner),
    /// Reading a `Content-Length` body.
    Body {
        request: OwnedRequest,
        remaining: u64,
    },
    /// Reading a chunked body.
    Chunked {
        request: OwnedRequest,
        decoder: ChunkedDecoder,
    },
    /// A head was yielded; waiting for [`Conn::admit`] or [`Conn::refuse`].
    Gate {
        body: BodyKind,
        expect_continue: bool,
        head: bool,
    },
    /// A request was yielded; waiting for its response.
    Awaiting {
        keep_alive: bool,
        version: u8,
        head: bool,
    },
    /// `Close` was queued; terminal.
    Closed,
}

/// Unconsumed input: `data[start..]`. Consuming is O(1); compaction happens on append.
#[derive(Debug, Default)]
struct InBuf {
    data: Vec<u8>,
    start: usize,
}

impl InBuf {
    fn bytes(&self) -> &[u8] {
        self.data.get(self.start..).unwrap_or_default()
    }
    fn len(&self) -> usize {
        self.data.len() - self.start
    }
    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.data.len());
        if self.start == self.data.len() {
            self.clear();
        }
    }
    fn extend(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.data.drain(..self.start);
            self.start = 0;
        }
        self.data.extend_from_slice(bytes);
    }
    fn clear(&mut self) {
        self.data.clear();
        self.start = 0;
    }
}

/// The codec state of one TCP connection (server side).
#[derive(Debug)]
pub struct Conn {
    limits: Limits,
    input: InBuf,
    state: State,
    out: VecDeque<Output>,
    /// The peer closed its sending half.
    eof: bool,
    /// Input was dropped while awaiting a response: close after it.
    overflow: bool,
    /// Latest clock reading given (for the `Date` of codec-generated responses).
    now: Option<UnixTime>,
    error: Option<CodecError>,
}

impl Conn {
    /// A fresh connection with the given limits.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            input: InBuf::default(),
            state: State::Head(HeadScanner::default()),
            out: VecDeque::new(),
            eof: false,
            overflow: false,
            now: None,
            error: None,
        }
    }

    /// Sets the clock reading used for the `Date` header of responses the codec generates
    /// itself (framing errors). [`Conn::encode_response`] updates it too.
    pub fn set_now(&mut self, now: UnixTime) {
        self.now = Some(now);
    }

    /// Feeds bytes read from the socket. Then drain [`Conn::poll_output`].
    ///
    /// Input after `Close`, or after [`Conn::handle_eof`], is ignored. While a request
    /// awaits its response, input is buffered up to the input cap (see the crate docs);
    /// beyond it the excess is dropped and the connection closes after that response.
    /// While a head awaits [`Conn::admit`] or [`Conn::refuse`], input is kept whole
    /// (don't read then: its body is what the gate protects).
    pub fn handle_input(&mut self, mut bytes: &[u8]) {
        if self.eof {
            return;
        }
        let cap = self.limits.input_cap();
        while !bytes.is_empty() {
            let room = cap.saturating_sub(self.input.len());
            match &self.state {
                State::Closed => return,
                // Kept whole: an adapter does not read while a head waits, so this is only
                // what came with the head, or a test feeding everything at once.
                State::Gate { .. } => {
                    self.input.extend(bytes);
                    return;
                }
                State::Awaiting { .. } => {
                    let take = room.min(bytes.len());
                    self.input.extend(&bytes[..take]);
                    if take < bytes.len() {
                        self.overflow = true;
                    }
                    return;
                }
                State::Head(scanner) if room == 0 => {
                    // Unreachable with consistent limits (the scanner refuses first).
                    let error = if scanner.request_line_done() {
                        CodecError::HeaderSectionTooLarge
                    } else {
                        CodecError::RequestLineTooLong
                    };
                    return self.fail(error);
                }
                State::Body { .. } | State::Chunked { .. } if room == 0 => {
                    return self.fail(CodecError::ChunkExtensionTooLong);
                }
                _ => {}
            }
            let take = room.min(bytes.len());
            self.input.extend(&bytes[..take]);
            bytes = &bytes[take..];
            self.progress();
        }
    }

    /// The peer half-closed (EOF). A request awaiting its response is still answered; an
    /// incomplete request is dropped without a response. Then drain [`Conn::poll_output`].
    pub fn handle_eof(&mut self) {
        self.eof = true;
        self.progress();
    }

    /// The next thing to do, in order; call after every input until it returns `None`.
    pub fn poll_output(&mut self) -> Option<Output> {
        self.out.pop_front()
    }

    /// Encodes the response to the request last yielded by [`Conn::poll_output`], appending
    /// to `out`; write those bytes before anything polled afterwards.
    ///
    /// Decides keep-alive: the connection closes after this response (`Connection: close`
    /// sent, then [`Output::Close`] polled) for HTTP/1.0 without `keep-alive`, a request or
    /// response `Connection: close`, input overflow, or EOF with nothing buffered.
    /// `now` gives the `Date` header. Without a request awaiting a response this does
    /// nothing. `resp.status` should be a final (≥ 200) status: whatever it is, it answers
    /// the request.
    pub fn encode_response(&mut self, resp: &Response, now: UnixTime, out: &mut Vec<u8>) {
        if self.encode_response_head(resp, now, out) {
            out.extend_from_slice(&resp.body);
        }
    }

    /// [`Conn::encode_response`] without the body: appends the status line and header
    /// section only, and returns whether `resp.body` must follow them on the wire (the
    /// caller writes it from where it is, without a copy); false for `HEAD`, `204`, `304`,
    /// and when no request awaits a response.
    pub fn encode_response_head(
        &mut self,
        resp: &Response,
        now: UnixTime,
        out: &mut Vec<u8>,
    ) -> bool {
        self.now = Some(now);
        let State::Awaiting {
            keep_alive,
            version,
            head,
        } = self.state
        else {
            return false;
        };
        let close =
            !keep_alive || self.overflow || asks_close(resp) || (self.eof && self.input.len() == 0);
        let framing = Framing {
            close,
            announce_keep_alive: !close && version == 0,
            head,
        };
        let with_body = encode_head(resp, Some(now), framing, out);
        if close {
            self.close();
        } else {
            self.state = State::Head(HeadScanner::default());
            self.progress();
        }
        with_body
    }

    /// True once the connection must be closed after the pending writes (`Close` queued).
    pub fn wants_close(&self) -> bool {
        matches!(self.state, State::Closed)
    }

    /// Whether reading more from the socket is useful now: false while a request awaits its
    /// response, after EOF, and once closing.
    pub fn wants_input(&self) -> bool {
        !self.eof
            && !matches!(
                self.state,
                State::Awaiting { .. } | State::Gate { .. } | State::Closed
            )
    }

    /// Whether [`Conn::poll_output`] has something: a head or request complete, bytes of
    /// the codec's own to write, or the close. An adapter that reads heads apart from
    /// answering them (the blocking adapter's poller) hands the connection over then.
    pub fn has_output(&self) -> bool {
        !self.out.is_empty()
    }

    /// The framing error that closed the connection, if any (for logging).
    pub fn error(&self) -> Option<CodecError> {
        self.error
    }

    /// Bytes buffered unparsed.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.input.len()
    }

    /// Runs the state machine over the buffered input as far as it goes.
    fn progress(&mut self) {
        loop {
            let state = std::mem::replace(&mut self.state, State::Closed);
            let step = match state {
                State::Head(scanner) => self.step_head(scanner),
                State::Body { request, remaining } => self.step_body(request, remaining),
                State::Chunked { request, decoder } => self.step_chunked(request, decoder),
                other @ (State::Awaiting { .. } | State::Gate { .. } | State::Closed) => {
                    self.state = other;
                    return;
                }
            };
            match step {
                Ok(Some(next)) => self.state = next,
                Ok(None) => {
                    // Stalled: need more input (the state was put back).
                    if self.eof {
                        self.close();
                    }
                    return;
                }
                Err(e) => return self.fail(e),
            }
        }
    }

    /// `Ok(Some(next))`: moved on; `Ok(None)`: needs input (state restored).
    fn step_head(&mut self, mut scanner: HeadScanner) -> Result<Option<State>, CodecError> {
        let Some(scanned) = scanner.scan(self.input.bytes(), &self.limits)? else {
            self.state = State::Head(scanner);
            return Ok(None);
        };
        let head = head::parse(self.input.bytes(), &scanned)?;
        self.input.consume(scanned.len);
        match head.body {
            BodyKind::None => return Ok(Some(self.yield_request(head.request))),
            BodyKind::Length(n) if n > self.limits.max_body as u64 => {
                return Err(CodecError::BodyTooLarge);
            }
            // The whole body came with the head: nothing left to protect by a gate.
            BodyKind::Length(n) if !head.expect_continue && self.input.len() as u64 >= n => {
                return Ok(Some(Self::body_state(head.request, head.body)));
            }
            _ => {}
        }
        let is_head = head.request.is_head();
        self.out.push_back(Output::Head(head.request));
        Ok(Some(State::Gate {
            body: head.body,
            expect_continue: head.expect_continue,
            head: is_head,
        }))
    }

    /// The state that reads a body framed as `body` into `request`.
    fn body_state(request: OwnedRequest, body: BodyKind) -> State {
        match body {
            BodyKind::Chunked => State::Chunked {
                request,
                decoder: ChunkedDecoder::default(),
            },
            BodyKind::Length(remaining) => State::Body { request, remaining },
            BodyKind::None => State::Body {
                request,
                remaining: 0,
            },
        }
    }

    /// Lets the body of the head last yielded as [`Output::Head`] be read: queues
    /// `100 Continue` when the client asked for it, then reads what is buffered. Then
    /// drain [`Conn::poll_output`]. Without a head waiting, does nothing.
    pub fn admit(&mut self, request: OwnedRequest) {
        let State::Gate {
            body,
            expect_continue,
            ..
        } = self.state
        else {
            return;
        };
        let mut request = request;
        if let BodyKind::Length(n) = body {
            // Admitted, and within the limit: one allocation of the declared size rather
            // than doublings that may hold up to twice the body.
            let _ = request
                .body_mut()
                .try_reserve_exact(usize::try_from(n).unwrap_or(0));
        }
        if expect_continue {
            self.out.push_back(Output::Transmit(CONTINUE.to_vec()));
        }
        self.state = Self::body_state(request, body);
        self.progress();
    }

    /// Answers the head last yielded as [`Output::Head`] (or the request whose body is
    /// being read) with `resp` and closes: the response is queued as
    /// [`Output::Transmit`] with `Connection: close`, then [`Output::Close`]; input
    /// still buffered is dropped. Then drain [`Conn::poll_output`]. In any other state,
    /// does nothing.
    pub fn refuse(&mut self, resp: &Response) {
        let head = match &self.state {
            State::Gate { head, .. } => *head,
            State::Body { request, .. } | State::Chunked { request, .. } => request.is_head(),
            _ => return,
        };
        let mut bytes = Vec::new();
        let framing = Framing {
            close: true,
            head,
            ..Framing::default()
        };
        encode_framed(resp, self.now, framing, &mut bytes);
        self.out.push_back(Output::Transmit(bytes));
        self.close();
    }

    /// Body bytes read so far into the request being received (0 in other states).
    pub fn body_received(&self) -> usize {
        match &self.state {
            State::Body { request, .. } | State::Chunked { request, .. } => request.body().len(),
            _ => 0,
        }
    }

    fn step_body(
        &mut self,
        mut request: OwnedRequest,
        remaining: u64,
    ) -> Result<Option<State>, CodecError> {
        let avail = self.input.bytes();
        let take = usize::try_from(remaining).map_or(avail.len(), |r| r.min(avail.len()));
        request.body_mut().extend_from_slice(&avail[..take]);
        self.input.consume(take);
        let remaining = remaining - take as u64;
        if remaining == 0 {
            return Ok(Some(self.yield_request(request)));
        }
        self.state = State::Body { request, remaining };
        Ok(None)
    }

    fn step_chunked(
        &mut self,
        mut request: OwnedRequest,
        mut decoder: ChunkedDecoder,
    ) -> Result<Option<State>, CodecError> {
        let step = decoder.decode(self.input.bytes(), request.body_mut(), &self.limits)?;
        self.input.consume(step.consumed);
        if step.done {
            return Ok(Some(self.yield_request(request)));
        }
        self.state = State::Chunked { request, decoder };
        Ok(None)
    }

    fn yield_request(&mut self, request: OwnedRequest) -> State {
        let next = State::Awaiting {
            keep_alive: request.keep_alive(),
            version: request.version(),
            head: request.is_head(),
        };
        self.out.push_back(Output::Request(request));
        next
    }

    /// Queues the error response and `Close`.
    fn fail(&mut self, error: CodecError) {
        self.error = Some(error);
        let mut bytes = Vec::new();
        let framing = Framing {
            close: true,
            ..Framing::default()
        };
        encode_framed(&error.response(&self.limits), self.now, framing, &mut bytes);
        self.out.push_back(Output::Transmit(bytes));
        self.close();
    }

    /// Queues `Close` and drops everything buffered.
    fn close(&mut self) {
        self.state = State::Closed;
        self.input = InBuf::default();
        self.out.push_back(Output::Close);
    }
}
