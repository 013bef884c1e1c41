//! Size limits of one connection.

/// Size limits applied to every request of a [`Conn`](crate::Conn).
///
/// See the crate docs for exactly what each limit counts and the status sent when it is
/// exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest request line, in bytes, CRLF excluded (over it: `414`). Default 8192.
    pub max_request_line: usize,
    /// Largest header section (field lines with their CRLFs plus the final empty line), in
    /// bytes (over it: `400`, step 1 of the processing order). Also bounds the trailer section.
    /// Default 65536.
    pub max_header_bytes: usize,
    /// Most header field lines (over it: `431`). Also bounds trailer lines. Default 100.
    pub max_headers: usize,
    /// Largest (de-chunked) body, in bytes; exactly this many is accepted (over it: `413`).
    /// Default 2,097,152.
    pub max_body: usize,
    /// Longest extension of one chunk-size line, in bytes (over it: `400`). Default 1024.
    pub max_chunk_ext: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_request_line: 8192,
            max_header_bytes: 65536,
            max_headers: 100,
            max_body: 2_097_152,
            max_chunk_ext: 1024,
        }
    }
}

impl Limits {
    /// Most input bytes the connection buffers unparsed: a whole request head (or a
    /// chunk-size line, whichever is larger).
    pub(crate) fn input_cap(&self) -> usize {
        let head = self
            .max_request_line
            .saturating_add(2)
            .saturating_add(self.max_header_bytes);
        head.max(self.max_chunk_ext.saturating_add(64))
    }
}
