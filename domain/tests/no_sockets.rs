//! The domain opens no socket and has no clock or RNG of its own: the webhook HTTP
//! client lives in the binary (`transports/bin/src/outbound/webhook/`), and
//! time and entropy reach the domain only through an operation's context
//! (`domain/src/op.rs`: `Op::now`, the entropy ids and secrets are derived from, and
//! `WorkerEntropy` for the workers' operations, lent by the binary).
//!
//! The test scans the code of every file under `domain/src` (comments removed, string
//! literals kept) for the names that would mean otherwise, and `domain/Cargo.toml` for
//! the crates that would. `std::net::IpAddr` and friends are not sockets and stay
//! allowed; so are atomics that are fields of a value (a per-domain counter), not
//! process-wide `static`s.

use std::path::Path;

/// Names that open, resolve or wrap a socket.
const SOCKETS: &[&str] = &[
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "UnixStream",
    "UnixListener",
    "UnixDatagram",
    "ToSocketAddrs",
    "to_socket_addrs",
    "lookup_host",
    "socket2",
    "mio",
    "tokio",
    "ureq",
    "reqwest",
    "hyper",
    "rustls",
];

/// Names that read a clock or draw chance outside an operation's context.
const TIME_AND_CHANCE: &[&str] = &[
    "RandomState",
    "getrandom",
    "SystemTime::now",
    "Instant::now",
    "Utc::now",
    "Local::now",
    "thread_rng",
    "OsRng",
    "rand::",
];

/// Crates the domain must not depend on (normal dependencies): the client's and any
/// RNG's.
const BANNED_CRATES: &[&str] = &[
    "getrandom",
    "rand",
    "socket2",
    "mio",
    "tokio",
    "ureq",
    "reqwest",
    "hyper",
    "hyper-util",
    "rustls",
    "webpki-roots",
    "native-tls",
];

/// `(file under domain/src, banned name)` pairs that are allowed, each with why; a new
/// entry must say why the domain cannot do without it.
const ALLOWED: &[(&str, &str)] = &[
    // The runtime that drives a pooled PostgreSQL session on the caller's thread, as the
    // blocking `postgres` crate drives its own (the store's I/O, like SQLite's file;
    // `the_database_driver_stays_inside_the_postgres_store`).
    ("store/postgres/session.rs", "tokio"),
    // Reads ahead: connections driven by the adapter's runtime, whose rounds it awaits
    // (`dunning_core::ahead`), bounded by a semaphore; its tests await them on a runtime
    // of their own, as the adapter does.
    ("store/postgres/ahead.rs", "tokio"),
    ("store/postgres/ahead/tests.rs", "tokio"),
    // The shared connections of first rounds: the runtime's clock (`tokio::time`, which a
    // test can pause), read to pass over a connection whose statement has gone unanswered
    // for a while. No answer depends on it, only which connection carries a statement.
    ("store/postgres/ahead/shared.rs", "tokio"),
    ("store/postgres/ahead/shared.rs", "Instant::now"),
    // The same tests' paused clock (`tokio::time::pause`), read to see how long a call
    // waited for a connection.
    ("store/postgres/ahead/tests.rs", "Instant::now"),
];

/// Banned crates the domain may depend on all the same, each with why.
const ALLOWED_CRATES: &[&str] = &[
    // The runtime of `store/postgres/session.rs` and the reads ahead's tasks and
    // semaphore (see `ALLOWED`): `rt`, `rt-multi-thread` (`block_in_place`) and `sync`,
    // no networking of its own (`tokio-postgres` opens the database's socket).
    "tokio",
];

fn domain_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[path = "../../tests/shared/source_scan.rs"]
mod source_scan;
use source_scan::{rust_files, strip_comments};

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Where `name` occurs in `line` as a whole name: not inside a longer identifier
/// (`mio` is not `premio`, `rand::` is not `operand::`).
fn find_name(line: &str, name: &str) -> Option<usize> {
    let starts_ident = name.starts_with(is_ident);
    let ends_ident = name.ends_with(is_ident);
    line.match_indices(name).map(|(at, _)| at).find(|&at| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let glued_before = starts_ident && before.is_some_and(is_ident);
        let glued_after = ends_ident && after.is_some_and(is_ident);
        !glued_before && !glued_after
    })
}

/// A process-wide atomic: the keyword `static` (not the `'static` lifetime) and, after
/// it on the same line, a type whose name starts with `Atomic`.
fn static_atomic(line: &str) -> bool {
    line.match_indices("static").any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + "static".len()..].chars().next();
        let keyword =
            !before.is_some_and(|c| is_ident(c) || c == '\'') && !after.is_some_and(is_ident);
        keyword && {
            let rest = &line[at..];
            rest.match_indices("Atomic")
                .any(|(i, _)| !rest[..i].chars().next_back().is_some_and(is_ident))
        }
    })
}

/// Every banned use in `code` (comments already removed), as `(line, what)`.
fn scan(code: &str) -> Vec<(usize, String)> {
    let mut hits = Vec::new();
    for (n, line) in code.lines().enumerate() {
        for name in SOCKETS.iter().chain(TIME_AND_CHANCE) {
            if find_name(line, name).is_some() {
                hits.push((n + 1, (*name).to_owned()));
            }
        }
        if static_atomic(line) {
            hits.push((n + 1, "static ... Atomic".to_owned()));
        }
    }
    hits
}

#[test]
fn the_scan_finds_each_form_and_only_in_code() {
    let code = strip_comments(concat!(
        "use std::net::{IpAddr, SocketAddr};\n",
        "let s = std::net::TcpStream::connect(a);\n",
        "let a = (host, 443).to_socket_addrs();\n",
        "let u = UdpSocket::bind(a);\n",
        "let r = std::collections::hash_map::RandomState::new();\n",
        "let _ = getrandom::fill(&mut b);\n",
        "let t = std::time::Instant::now();\n",
        "let w = SystemTime::now();\n",
        "static TICKS: AtomicU64 = AtomicU64::new(0);\n",
        "pub(super) static CALLS: std::sync::atomic::AtomicU64 = AtomicU64::new(0);\n",
        "// TcpStream, Instant::now and static X: AtomicU64 in a comment\n",
        "/// getrandom in a doc comment\n",
        "fn f(x: &'static AtomicU64, premio: u8, operand: u8) {}\n",
        "struct S { drawn: AtomicU64 }\n",
        "static NAMES: OnceLock<Vec<String>> = OnceLock::new();\n",
    ));
    let hits = scan(&code);
    let lines: Vec<usize> = hits.iter().map(|(n, _)| *n).collect();
    assert_eq!(lines, vec![2, 3, 4, 5, 6, 7, 8, 9, 10], "{hits:?}");
    let what: Vec<&str> = hits.iter().map(|(_, w)| w.as_str()).collect();
    for w in [
        "TcpStream",
        "to_socket_addrs",
        "UdpSocket",
        "RandomState",
        "getrandom",
        "Instant::now",
        "SystemTime::now",
        "static ... Atomic",
    ] {
        assert!(what.contains(&w), "{w} was not found: {hits:?}");
    }
}

#[test]
fn domain_source_opens_no_socket_and_reads_no_clock_or_rng() {
    let src = domain_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(
        files.iter().any(|f| f.ends_with("op.rs")),
        "domain/src not found"
    );
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .expect("under domain/src")
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).expect("source is UTF-8");
        for (line, what) in scan(&strip_comments(&text)) {
            if !ALLOWED.contains(&(rel.as_str(), what.as_str())) {
                found.push(format!("domain/src/{rel}:{line}: {what}"));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the domain must not open sockets or read a clock or RNG of its own (time and \
         entropy come through the Op; the HTTP client lives in the binary):\n{}",
        found.join("\n")
    );
}

#[test]
fn domain_depends_on_no_socket_or_rng_crate() {
    let manifest = std::fs::read_to_string(domain_dir().join("Cargo.toml")).expect("Cargo.toml");
    let mut section = String::new();
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(['[', ']']).to_owned();
            continue;
        }
        let normal = section == "dependencies"
            || (section.starts_with("target.") && section.ends_with(".dependencies"));
        if normal {
            if let Some((name, _)) = line.split_once('=') {
                let name = name.trim().split('.').next().unwrap_or_default();
                if !name.is_empty() && !name.starts_with('#') {
                    deps.push(name.to_owned());
                }
            }
        }
    }
    assert!(
        deps.iter().any(|d| d == "dunning-core"),
        "unexpected manifest: {deps:?}"
    );
    let banned: Vec<&String> = deps
        .iter()
        .filter(|d| BANNED_CRATES.contains(&d.as_str()) && !ALLOWED_CRATES.contains(&d.as_str()))
        .collect();
    assert!(banned.is_empty(), "domain/Cargo.toml depends on {banned:?}");
}

/// The one socket the domain crate may open is the PostgreSQL store's connection to its
/// database: the store's I/O, like SQLite's file, behind the `Store` trait.
/// The driver and its pool are named in `store/postgres.rs` only, so no business code
/// reaches a socket through them.
#[test]
fn the_database_driver_stays_inside_the_postgres_store() {
    let src = domain_dir().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .expect("under domain/src")
            .to_string_lossy()
            .replace('\\', "/");
        // The store and its own folder (its unit tests).
        if rel == "store/postgres.rs" || rel.starts_with("store/postgres/") {
            continue;
        }
        let code = strip_comments(&std::fs::read_to_string(file).expect("source is UTF-8"));
        for (n, line) in code.lines().enumerate() {
            // The crates by path (`postgres::Client`, `r2d2::Pool`), not the store's
            // module (`store::postgres::PostgresStore`).
            let driver = line
                .match_indices("postgres::")
                .any(|(at, _)| !line[..at].ends_with("store::") && !line[..at].ends_with("self::"));
            if driver || find_name(line, "r2d2").is_some() || find_name(line, "NoTls").is_some() {
                found.push(format!("domain/src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "the PostgreSQL driver is used outside domain/src/store/postgres.rs:\n{}",
        found.join("\n")
    );
}
