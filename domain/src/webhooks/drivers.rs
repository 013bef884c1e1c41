//! How deliveries leave: the recording driver (the default) and the HTTP driver.

use super::*;

/// One POST to a receiver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRequest {
    /// Delivery id.
    pub delivery_id: String,
    /// Webhook id.
    pub webhook_id: String,
    /// Event code.
    pub event_code: String,
    /// Target URL.
    pub url: String,
    /// Verify the TLS certificate.
    pub ssl_verification: bool,
    /// Headers besides `Host`, `Content-Length` and `Connection`.
    pub headers: Vec<(String, String)>,
    /// The raw JSON body (what the signature covers).
    pub body: String,
}

impl WebhookRequest {
    /// A header's value (case-insensitive name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What came back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WebhookResponse {
    /// HTTP status, when an answer was read.
    pub status: Option<u16>,
    /// Start of the answer's body (≤ 4 KB).
    pub body: String,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// A network or protocol failure.
    pub error: Option<String>,
}

impl WebhookResponse {
    /// Whether the receiver took it (2xx).
    pub fn is_success(&self) -> bool {
        self.error.is_none() && self.status.is_some_and(|s| (200..300).contains(&s))
    }
}

/// Posts webhook deliveries. Called outside any store transaction by [`tick`].
pub trait WebhookDriver: Send + Sync {
    /// Performs one attempt.
    fn post(&self, request: &WebhookRequest) -> WebhookResponse;
}

/// The default driver: keeps every request in memory and answers with a fixed status
/// (200 unless told otherwise); nothing leaves the machine.
#[derive(Debug)]
pub struct RecordingDriver {
    pub(super) requests: Mutex<Vec<WebhookRequest>>,
    pub(super) answer: Mutex<(u16, String)>,
}

impl Default for RecordingDriver {
    fn default() -> Self {
        Self {
            requests: Mutex::new(Vec::new()),
            answer: Mutex::new((200, "recorded".into())),
        }
    }
}

impl RecordingDriver {
    /// A recorder answering 200.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<WebhookRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Answers the following requests with `status` and `body`.
    pub fn respond_with(&self, status: u16, body: &str) {
        *self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = (status, body.to_owned());
    }
}

impl WebhookDriver for RecordingDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(request.clone());
        let (status, body) = self
            .answer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        WebhookResponse {
            status: Some(status),
            body,
            duration_ms: 0,
            error: None,
        }
    }
}

pub(super) static DRIVER: RwLock<Option<Arc<dyn WebhookDriver>>> = RwLock::new(None);

/// The process-wide recorder used while no driver is installed.
pub fn default_recorder() -> Arc<RecordingDriver> {
    static REC: OnceLock<Arc<RecordingDriver>> = OnceLock::new();
    REC.get_or_init(|| Arc::new(RecordingDriver::new())).clone()
}

/// Chooses the driver `dunning_webhooks_test` attempts through (the binary installs
/// [`HttpDriver`] when configured; the default is [`default_recorder`]).
pub fn install_driver(driver: Arc<dyn WebhookDriver>) {
    *DRIVER
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(driver);
}

/// The installed driver.
pub fn installed_driver() -> Arc<dyn WebhookDriver> {
    DRIVER
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .unwrap_or_else(|| default_recorder() as Arc<dyn WebhookDriver>)
}

/// A byte stream (plain TCP or TLS).
pub trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// Wraps a connected socket in TLS (supplied by the binary, e.g. with rustls).
pub trait TlsConnector: Send + Sync {
    /// Runs the handshake for `host`; `verify` is the webhook's `ssl_verification`.
    fn connect(&self, host: &str, tcp: TcpStream, verify: bool)
    -> std::io::Result<Box<dyn Stream>>;
}

/// Posts for real: a small blocking HTTP/1.1 client (one request per connection).
#[derive(Clone)]
pub struct HttpDriver {
    pub(super) connect_timeout: Duration,
    pub(super) timeout: Duration,
    pub(super) allow_private: bool,
    pub(super) tls: Option<Arc<dyn TlsConnector>>,
}

impl std::fmt::Debug for HttpDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpDriver")
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("allow_private", &self.allow_private)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Default for HttpDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpDriver {
    /// 3 s to connect, 10 s for the whole exchange, public addresses only, no TLS.
    pub fn new() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(10),
            allow_private: false,
            tls: None,
        }
    }

    /// Sets the timeouts.
    pub fn timeouts(mut self, connect: Duration, total: Duration) -> Self {
        self.connect_timeout = connect;
        self.timeout = total;
        self
    }

    /// Allows loopback and private addresses (development, tests). Off by default: a
    /// webhook URL must not reach the server's own network.
    pub fn allow_private_addresses(mut self, allow: bool) -> Self {
        self.allow_private = allow;
        self
    }

    /// Enables `https` through `tls`.
    pub fn with_tls(mut self, tls: Arc<dyn TlsConnector>) -> Self {
        self.tls = Some(tls);
        self
    }

    fn exchange(&self, req: &WebhookRequest, started: Instant) -> Result<(u16, String), String> {
        let target = parse_url(&req.url)?;
        if target.tls && self.tls.is_none() {
            return Err("tls_unavailable: this server has no TLS connector for https".into());
        }
        // Within the connect timeout; then only the addresses that passed the filter
        // are connected to (no second lookup a rebinding DNS could answer otherwise).
        let addrs = crate::resolve::resolve(&target.host, target.port, self.connect_timeout)?;
        let allowed: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|a| self.allow_private || crate::global_ip::is_global(a.ip()))
            .collect();
        if allowed.is_empty() {
            return Err("address_not_allowed: the host resolves to no public address".into());
        }
        let mut tcp = None;
        let mut last = String::new();
        for a in &allowed {
            match TcpStream::connect_timeout(a, self.connect_timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = format!("connect: {e}"),
            }
        }
        let tcp = tcp.ok_or(last)?;
        let left = |started: Instant| {
            self.timeout
                .checked_sub(started.elapsed())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| "timeout".to_owned())
        };
        tcp.set_write_timeout(Some(left(started)?))
            .map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(left(started)?))
            .map_err(|e| e.to_string())?;
        let _ = tcp.set_nodelay(true);
        let mut stream: Box<dyn Stream> = match (&self.tls, target.tls) {
            (Some(tls), true) => tls
                .connect(&target.host, tcp, req.ssl_verification)
                .map_err(|e| format!("tls: {e}"))?,
            _ => Box::new(tcp),
        };
        let mut head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
            target.path,
            target.host_header(),
            req.body.len()
        );
        for (k, v) in &req.headers {
            if k.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
                return Err(format!("invalid header {k}"));
            }
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(req.body.as_bytes()))
            .and_then(|()| stream.flush())
            .map_err(|e| format!("write: {e}"))?;
        read_response(&mut *stream, started, self.timeout)
    }
}

/// Reads a status line, headers (≤ 16 KB) and at most [`RESPONSE_BODY_MAX`] bytes of
/// body, then stops.
pub(super) fn read_response(
    stream: &mut dyn Stream,
    started: Instant,
    timeout: Duration,
) -> Result<(u16, String), String> {
    const HEAD_MAX: usize = 16 * 1024;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut head_end = None;
    let mut content_length: Option<usize> = None;
    let mut chunked = false;
    loop {
        if started.elapsed() >= timeout {
            if head_end.is_some() {
                break;
            }
            return Err("timeout".into());
        }
        if let Some(end) = head_end {
            let body_len = buf.len() - end;
            if body_len >= RESPONSE_BODY_MAX || content_length.is_some_and(|n| body_len >= n) {
                break;
            }
        }
        let n = match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A timeout or reset after the status line: keep what came.
            Err(_) if head_end.is_some() => break,
            Err(e) => return Err(format!("read: {e}")),
        };
        buf.extend_from_slice(&chunk[..n]);
        if head_end.is_none() {
            if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                head_end = Some(p + 4);
                let head = String::from_utf8_lossy(&buf[..p]).to_ascii_lowercase();
                for line in head.split("\r\n").skip(1) {
                    if let Some((k, v)) = line.split_once(':') {
                        match k.trim() {
                            "content-length" => content_length = v.trim().parse().ok(),
                            "transfer-encoding" => chunked = v.contains("chunked"),
                            _ => {}
                        }
                    }
                }
            } else if buf.len() > HEAD_MAX {
                return Err("response headers too large".into());
            }
        }
    }
    let end = head_end.ok_or("no HTTP response")?;
    let status_line = String::from_utf8_lossy(&buf[..end]);
    let status_line = status_line.lines().next().unwrap_or_default();
    let mut parts = status_line.split(' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x response: {status_line}"));
    }
    let status = parts
        .next()
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|c| (100..600).contains(c))
        .ok_or_else(|| format!("bad status line: {status_line}"))?;
    let mut body = buf[end..].to_vec();
    if chunked {
        body = dechunk(&body);
    }
    if let Some(n) = content_length {
        body.truncate(n);
    }
    Ok((status, truncate_body(&body)))
}

/// Best-effort decoding of the chunks read so far.
pub(super) fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(p) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_line = String::from_utf8_lossy(&raw[..p]);
        let Ok(size) = usize::from_str_radix(size_line.split(';').next().unwrap_or("").trim(), 16)
        else {
            break;
        };
        if size == 0 {
            break;
        }
        raw = &raw[p + 2..];
        let take = size.min(raw.len());
        out.extend_from_slice(&raw[..take]);
        if take < size || raw.len() < size + 2 {
            break;
        }
        raw = &raw[size + 2..];
    }
    out
}

/// At most [`RESPONSE_BODY_MAX`] bytes, cut on a character boundary, as text.
pub(super) fn truncate_body(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(RESPONSE_BODY_MAX)]).into_owned();
    if text.len() <= RESPONSE_BODY_MAX {
        return text;
    }
    let mut cut = RESPONSE_BODY_MAX;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text[..cut].to_owned()
}

impl WebhookDriver for HttpDriver {
    fn post(&self, request: &WebhookRequest) -> WebhookResponse {
        let started = Instant::now();
        let result = self.exchange(request, started);
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match result {
            Ok((status, body)) => WebhookResponse {
                status: Some(status),
                body,
                duration_ms,
                error: None,
            },
            Err(e) => WebhookResponse {
                status: None,
                body: String::new(),
                duration_ms,
                error: Some(e),
            },
        }
    }
}
