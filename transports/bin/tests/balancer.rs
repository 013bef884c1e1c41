//! The shipped nginx configuration (`deploy/nginx/kobana-dunning.conf`) in front of a
//! replica, over real sockets: what a client behind the balancer gets is what a replica
//! gives. The configuration is filled as `scripts/cluster/run` fills it (its two
//! placeholders) and run by the machine's nginx (Debian's `nginx-light`, installed here
//! when missing, as `scripts/cluster/run` does). On PostgreSQL (`DUNNING_TEST_PG`) the
//! replica runs there, like every server of the suite.
//!
//! Checked: a body over 2 MB, declared or chunked, is refused by nginx with the product's
//! exact JSON-RPC `413` (the replica's own body and headers), not nginx's HTML page; a
//! body of exactly the limit reaches the replica; and the README's production nginx
//! example carries every setting of the shipped file.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{Resp, Srv, V2026, http, scratch};
use dunning_tests::client::send_raw;

/// The product's answer to a body over the limit, byte for byte.
const TOO_LARGE: &str = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Request body too large (limit 2097152 bytes)"}}"#;

/// `[limits] max_body_bytes` by default: 2 MB.
const LIMIT: usize = 2_097_152;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The machine's nginx; installed from Debian's packages when missing.
fn nginx_bin() -> PathBuf {
    let find = || {
        ["/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/bin/nginx"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
    };
    if let Some(p) = find() {
        return p;
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "nginx-light"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !install() {
        let _ = Command::new("apt-get")
            .args(["update", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        install();
    }
    find().expect(
        "no nginx, and `apt-get install nginx-light` failed: install nginx to run this suite",
    )
}

/// nginx with the shipped site configuration, its one upstream `replica`, on a free
/// loopback port; stopped (its master process, by pid) when dropped.
struct Nginx {
    child: Child,
    addr: String,
    dir: PathBuf,
}

impl Nginx {
    fn start(replica: &str) -> Self {
        let dir = scratch("nginx");
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let shipped =
            std::fs::read_to_string(repo().join("deploy/nginx/kobana-dunning.conf")).unwrap();
        let site = shipped
            .replace("@LISTEN@", &addr)
            .replace("@UPSTREAMS@", &format!("server {replica};"));
        std::fs::write(dir.join("site.conf"), site).unwrap();
        let d = dir.display();
        let user = if rustix::process::getuid().is_root() {
            "user root;"
        } else {
            ""
        };
        let main = format!(
            "{user}\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/logs/error.log warn;\n\
             events {{ worker_connections 256; }}\nhttp {{\n  access_log {d}/logs/access.log;\n  \
             client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n  \
             fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  \
             scgi_temp_path {d}/tmp/scgi;\n  include {d}/site.conf;\n}}\n"
        );
        std::fs::write(dir.join("nginx.conf"), main).unwrap();
        let child = Command::new(nginx_bin())
            .arg("-p")
            .arg(&dir)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .args(["-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut n = Self { child, addr, dir };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(r) = common::try_http(&n.addr, "GET", "/healthz", &[], b"")
                && r.status == 200
            {
                return n;
            }
            let exited = n.child.try_wait().unwrap();
            assert!(
                exited.is_none() && Instant::now() < deadline,
                "nginx did not come up ({exited:?}): {}",
                std::fs::read_to_string(n.dir.join("logs/error.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Nginx {
    /// A fast shutdown (`SIGTERM`: the master stops its worker, then itself), bounded;
    /// `SIGKILL` only if it has not exited by then. A killed master leaves its worker
    /// running, still listening, after the test.
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Sends `head` and a body of `len` bytes in chunks of 64 KiB (`Transfer-Encoding:
/// chunked`), ignoring a write refused once the peer answered; reads the answer.
fn chunked(addr: &str, head: &str, len: usize) -> Resp {
    let mut bytes = head.as_bytes().to_vec();
    let mut left = len;
    while left > 0 {
        let n = left.min(64 * 1024);
        bytes.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        bytes.resize(bytes.len() + n, b'a');
        bytes.extend_from_slice(b"\r\n");
        left -= n;
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    send_raw(addr, &bytes)
}

/// What the product promises for a body over the limit, wherever it comes from.
fn assert_product_413(r: &Resp, via: &str) {
    assert_eq!(r.status, 413, "{via}: {}", r.text());
    assert_eq!(r.text(), TOO_LARGE, "{via}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{via}");
    assert_eq!(r.header("cache-control"), Some("no-store"), "{via}");
}

#[test]
fn a_body_over_the_limit_gets_the_products_json_413_through_nginx() {
    let replica = Srv::start(&[], None);
    let nginx = Nginx::start(&replica.addr);
    let bearer = format!("Bearer {}", replica.token);
    let big = vec![b'a'; LIMIT + 1];
    let headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V2026),
        ("Authorization", bearer.as_str()),
    ];

    // Declared: the replica's own answer, then the balancer's; the same.
    let direct = http(&replica.addr, "POST", "/", &headers, &big);
    assert_product_413(&direct, "replica, declared");
    let through = http(&nginx.addr, "POST", "/", &headers, &big);
    assert_product_413(&through, "nginx, declared");
    for h in ["content-type", "cache-control", "content-length"] {
        assert_eq!(direct.header(h), through.header(h), "{h}");
    }

    // Chunked: found while reading the body, by the replica and by nginx alike.
    let head = |addr: &str| {
        format!(
            "POST / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             MCP-Protocol-Version: {V2026}\r\nAuthorization: {bearer}\r\n\
             Transfer-Encoding: chunked\r\n\r\n"
        )
    };
    let direct = chunked(&replica.addr, &head(&replica.addr), LIMIT + 1);
    assert_product_413(&direct, "replica, chunked");
    let through = chunked(&nginx.addr, &head(&nginx.addr), LIMIT + 1);
    assert_product_413(&through, "nginx, chunked");

    // Exactly the limit is no refusal: it reaches the replica (which says it is not
    // JSON-RPC, in its own words, with its request id).
    let exact = http(&nginx.addr, "POST", "/", &headers, &big[..LIMIT]);
    assert_eq!(exact.status, 400, "{}", exact.text());
    assert!(
        exact.header("x-request-id").is_some(),
        "{:?}",
        exact.headers
    );
    assert_eq!(exact.json()["error"]["code"], -32700, "{}", exact.text());
}

/// The directives of an nginx `server { ... }` text, one per entry, whitespace collapsed
/// and comments dropped (nested blocks' directives included).
fn directives(text: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_readme_production_example_carries_every_setting_of_the_shipped_file() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let example = readme
        .split("```nginx\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a ```nginx block in the README");
    let shipped = std::fs::read_to_string(repo().join("deploy/nginx/kobana-dunning.conf")).unwrap();
    let server = shipped
        .split_once("server {")
        .map(|(_, s)| s)
        .expect("a server block");
    // Addresses differ by design (the README's proxy has TLS and one local replica); the
    // 413 body is checked as a whole line, quotes included. Every other line must match.
    let ours = directives(example);
    for d in directives(server) {
        if d.starts_with("listen ") || d.starts_with("proxy_pass ") || d == "}" {
            continue;
        }
        assert!(
            ours.contains(&d),
            "the README's nginx example lacks `{d}` of deploy/nginx/kobana-dunning.conf"
        );
    }
}
