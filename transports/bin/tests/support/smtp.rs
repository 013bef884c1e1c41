#![allow(dead_code)]

//! A real SMTP server for the e-mail tests: `aiosmtpd` (PyPI) in a virtual environment
//! under the target directory, made on first use (`python3 -m venv`, then `pip install
//! aiosmtpd==1.4.6`; a few seconds, once per target directory), running
//! `support/smtp_sink.py` on a free loopback port. What it received is read back as the
//! JSON lines the script prints (see the script for which recipients it refuses).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

const AIOSMTPD: &str = "aiosmtpd==1.4.6";

/// The virtual environment's Python, made once.
fn python() -> PathBuf {
    static PY: OnceLock<PathBuf> = OnceLock::new();
    PY.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let dir = root.join("venv-aiosmtpd-1.4.6");
        let py = dir.join("bin/python");
        if py.exists() {
            return py;
        }
        let partial = root.join(format!("venv-aiosmtpd-partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&partial)
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "python3 -m venv (Debian: python3-venv) is needed for the SMTP tests"
        );
        let out = Command::new(partial.join("bin/pip"))
            .args(["install", "-q", "--disable-pip-version-check", AIOSMTPD])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pip install {AIOSMTPD}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // Another test process may have won the race: either copy will do.
        if std::fs::rename(&partial, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&partial);
        }
        py
    })
    .clone()
}

/// A running SMTP sink.
pub(crate) struct Sink {
    child: Child,
    _stdin: ChildStdin,
    /// Its port on 127.0.0.1.
    pub(crate) port: u16,
    events: Arc<Mutex<Vec<Value>>>,
}

impl Sink {
    /// Starts one on a free port and waits until it listens.
    pub(crate) fn start() -> Self {
        Self::slow(0)
    }

    /// Like [`Sink::start`], answering each message's data after `delay_ms`.
    pub(crate) fn slow(delay_ms: u64) -> Self {
        let py = python();
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/support/smtp_sink.py");
        for _ in 0..3 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let mut child = Command::new(&py)
                .arg(&script)
                .arg(port.to_string())
                .arg(format!("{}", delay_ms as f64 / 1000.0))
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let stdin = child.stdin.take().unwrap();
            let out = child.stdout.take().unwrap();
            let events = Arc::new(Mutex::new(Vec::new()));
            let sink = events.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(out).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        sink.lock().unwrap().push(v);
                    }
                }
            });
            let s = Self {
                child,
                _stdin: stdin,
                port,
                events,
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if s.events().iter().any(|e| e["event"] == "ready") {
                    return s;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            // The port was taken between the probe and the bind: another one.
        }
        panic!("the SMTP sink did not start");
    }

    /// Everything it reported so far.
    pub(crate) fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    /// The messages received for `rcpt`.
    pub(crate) fn messages_to(&self, rcpt: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| {
                e["event"] == "message"
                    && e["rcpt_tos"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|r| r == rcpt))
            })
            .collect()
    }

    /// Waits (at most `secs`) for an event `pred` accepts.
    pub(crate) fn wait(&self, secs: u64, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(e) = self.events().into_iter().find(|e| pred(e)) {
                return e;
            }
            assert!(
                Instant::now() < deadline,
                "no {what} within {secs} s; the sink saw: {:?}",
                self.events()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
