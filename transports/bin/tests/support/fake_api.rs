//! A provider's HTTP API on loopback for the channel tests: every request is kept
//! (method, target, headers, body) and answered by the test's function. One request per
//! connection (`Connection: close`), a 5 s read timeout, bodies by `Content-Length`.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the API received.
#[derive(Clone, Debug)]
pub(crate) struct Req {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Req {
    /// The value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Answer = dyn Fn(&Req) -> (u16, String) + Send + Sync;

/// The running API.
pub(crate) struct FakeApi {
    /// Its port on 127.0.0.1.
    pub(crate) port: u16,
    requests: Arc<Mutex<Vec<Req>>>,
}

impl FakeApi {
    /// Starts it; `answer` gives each request's status and JSON body.
    pub(crate) fn start(answer: impl Fn(&Req) -> (u16, String) + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let kept = requests.clone();
        let answer: Arc<Answer> = Arc::new(answer);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                let (kept, answer) = (kept.clone(), answer.clone());
                std::thread::spawn(move || {
                    conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                    let Some(req) = read(&mut conn) else { return };
                    let (status, body) = answer(&req);
                    kept.lock().unwrap().push(req);
                    let _ = conn.write_all(
                        format!(
                            "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                            body.len()
                        )
                        .as_bytes(),
                    );
                });
            }
        });
        Self { port, requests }
    }

    /// Every request so far, in order of answer.
    pub(crate) fn requests(&self) -> Vec<Req> {
        self.requests.lock().unwrap().clone()
    }
}

fn read(conn: &mut std::net::TcpStream) -> Option<Req> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = conn.read(&mut chunk).ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
        let mut lines = head.split("\r\n");
        let mut first = lines.next()?.split(' ');
        let (method, target) = (first.next()?.to_owned(), first.next()?.to_owned());
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
            .collect();
        let len: usize = headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            let n = conn.read(&mut chunk).ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        return Some(Req {
            method,
            target,
            headers,
            body: buf[end + 4..end + 4 + len].to_vec(),
        });
    }
}
