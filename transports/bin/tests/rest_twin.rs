//! Every MCP tool and its `/v1` REST twin answer the same JSON (product spec §8: "a tool
//! cannot diverge from the endpoint it mirrors; a test proves it by calling both and
//! comparing"), over a real socket in both eras (era 2025 refuses destructive tools, §13).
//!
//! Three identical servers — the core [`Server`] over the real [`Domain`], each on its own
//! store seeded with the deterministic demo data (in-memory SQLite, or a fresh PostgreSQL
//! schema when `DUNNING_TEST_PG` names a database) — are served over real
//! loopback sockets by the blocking adapter. All see the same sequence of operations
//! under the same fixed clock and, per operation, the same request counter (so the same
//! entropy and request id): server `mcp` gets each one as an era-2026 `tools/call` (the
//! `_meta` envelope, mirrored `Mcp-*` headers, and for destructive tools the §13
//! confirmation round trip: `input_required`, then the same call with the accepted answer
//! and the sealed `requestState`), server `rest` gets it on the tool's `/v1` route (path
//! variables, query string for `GET`/`DELETE`, JSON body otherwise, `X-Idempotency-Key`),
//! and server `legacy` gets it as an era-2025 `tools/call` (`MCP-Protocol-Version:
//! 2025-06-18`, no envelope, no mirrored headers, no `initialize`: the transport is
//! stateless, §1-§2). Generated ids and timestamps therefore agree (webhook signing secrets,
//! drawn from the OS on purpose, are compared by shape: see [`mask_secrets`]), and every
//! answer is compared:
//!
//! * JSON: the tool result's `structuredContent` equals the REST body, and its text item is
//!   that value pretty-printed (§7);
//! * `204`: the tool answers `{"status": 204}`;
//! * files (PDF, CSV): the tool's descriptor (§9) names the REST `Content-Type`, the size of
//!   the REST body, and a `download_path` that serves the same bytes;
//! * tool errors: `isError` with `structuredContent` equal to the REST error body, whose
//!   HTTP status is the one §11 gives the code;
//! * era 2025: the same result as era 2026 (text item, `structuredContent`, `isError`),
//!   without the era-2026 fields (`resultType`, `_meta`, `ttlMs`, `cacheScope`, §3) —
//!   except where era 2026 asked for confirmation: era 2025 cannot confirm, so the tool is
//!   refused with the `CONFIRMATION_REQUIRED` tool error (§13), and the store is checked
//!   unchanged by the refusal (a destructive call that fails its preflight answers the
//!   preflight's error in both eras, and changes nothing either). The operation is then
//!   applied to `legacy` on its `/v1` route, under the same counter, and must answer what
//!   `rest` answered, so the three stores stay identical (checked at the end).
//!
//! The sequence reads the pristine demo data first, then writes (creates, updates, state
//! changes, destructive tools), then reads again. It must cover every tool of the catalogue,
//! in both eras, and refuse every destructive tool at least once in era 2025: a tool added
//! without a case fails the test. Each case also states the outcome it
//! expects (success or an error code), so the comparison is never between two unexpected
//! failures.
//!
//! The principal is the same person and token on both servers: the test authenticator
//! returns it for both audiences. In the product an MCP token is refused on `/v1` and the
//! reverse (§10), and the token's audience is visible by design in `dunning_me`
//! (`token.kind`) and in the `origin` of manual deliveries (`manual` vs `api`); holding it
//! fixed isolates what §8 is about, the surface.

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{pct, query_value};
use dunning_core::{
    Audience, AuthError, Authenticate, Config, Ctx, Dispatch, Env, Keys, Load, Principal, Scope,
    Server, ToolDef, UnixTime,
};
use dunning_domain::store::{self, Kind, Query, Store};
use dunning_domain::testing::T0;
use dunning_domain::{Domain, demo};
use dunning_runtime::{EnvSource, NoopObserver, Options};
use serde_json::{Map, Value, json};

/// The person every call runs as (owner of `demo`: every scope, every permission).
const PERSON: &str = "ana@demo.example";
/// The bearer token the test authenticator accepts.
const TOKEN: &str = "twin-token";
/// The modern revision.
const V2026: &str = "2026-07-28";
/// The legacy revision the era-2025 calls name (the newest 2025 one: it has
/// `structuredContent`, which `2025-03-26` predates).
const V2025: &str = "2025-06-18";
/// How long a socket waits for the server.
const TIMEOUT: Duration = Duration::from_secs(30);

/// A clock fixed at the demo seeding time and a request counter the test sets before each
/// operation, so both servers run it with the same `Env` (entropy and request id).
struct Steered {
    now: UnixTime,
    counter: AtomicU64,
}

impl EnvSource for Steered {
    fn now(&self) -> UnixTime {
        self.now
    }

    fn env(&self, load: Load) -> Env {
        let mut env = Env::fixed(self.now, self.counter.load(Ordering::SeqCst));
        env.load = load;
        env
    }
}

/// Accepts [`TOKEN`] as [`PERSON`] of `demo`, looked up in the store at every request like
/// the product's authenticator does after verifying a JWT; same principal for both
/// audiences (see the module documentation).
struct TwinAuth {
    domain: Domain,
}

impl Authenticate for TwinAuth {
    fn authenticate(
        &self,
        token: &str,
        _audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        if token != TOKEN {
            return Err(AuthError::Signature);
        }
        let scopes: Vec<String> = dunning_domain::catalog::SCOPES
            .all()
            .map(str::to_owned)
            .to_vec();
        self.domain.principal(
            "demo",
            PERSON,
            &scopes,
            Audience::Mcp,
            now.plus_millis(3_600_000),
        )
    }
}

/// One server on a loopback port.
struct Side {
    server: Arc<Server<Domain>>,
    store: Arc<dyn Store>,
    env: Arc<Steered>,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Side {
    fn start() -> Self {
        // In-memory SQLite, or a fresh PostgreSQL schema when `DUNNING_TEST_PG` is set
        // (dropped with the store), as the domain's tests get theirs.
        let store = dunning_domain::testing::store();
        let domain = Domain::new(store.clone());
        demo::seed(&domain, T0).expect("demo seed");
        let auth = TwinAuth {
            domain: Domain::new(store.clone()),
        };
        let server = Arc::new(
            Server::new(
                Config::default(),
                Keys::single(b"rest-twin-state-key-0123456789abcdef"),
                domain,
                auth,
            )
            .expect("the catalogue is valid"),
        );
        let env = Arc::new(Steered {
            now: T0,
            counter: AtomicU64::new(0),
        });
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let opts = Options {
            env: env.clone(),
            workers: 2,
            ..Options::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (server, stop) = (server.clone(), stop.clone());
            std::thread::spawn(move || {
                dunning_blocking::serve(listener, server, opts, Arc::new(NoopObserver), stop)
            })
        };
        Self {
            server,
            store,
            env,
            addr,
            stop,
            thread: Some(thread),
        }
    }

    /// Every document of every organization, as stored (JSON text, in a fixed order).
    fn snapshot(&self) -> Vec<String> {
        store::read(&*self.store, |tx| {
            let mut docs = Vec::new();
            for org in tx.organizations()? {
                for kind in Kind::ALL {
                    docs.push(format!("{org} {}", kind.table()));
                    docs.extend(tx.find_raw(kind, &org, &Query::all())?);
                }
            }
            Ok(docs)
        })
        .expect("store snapshot")
    }

    /// One request on a fresh connection, answered under request counter `n`.
    fn send(
        &self,
        n: u64,
        method: &str,
        target: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Reply {
        self.env.counter.store(n, Ordering::SeqCst);
        let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: {}\r\n", self.addr);
        for (k, v) in headers {
            let _ = write!(raw, "{k}: {v}\r\n");
        }
        let _ = write!(
            raw,
            "Connection: close\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let mut raw = raw.into_bytes();
        raw.extend_from_slice(body);
        let mut s = TcpStream::connect_timeout(&self.addr, TIMEOUT).expect("connect");
        s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        s.set_write_timeout(Some(TIMEOUT)).expect("timeout");
        s.write_all(&raw).expect("write request");
        let mut out = Vec::new();
        s.read_to_end(&mut out).expect("read response");
        Reply::parse(&out)
    }
}

impl Drop for Side {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A parsed HTTP/1.1 response.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn parse(raw: &[u8]) -> Self {
        let end = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no response head in {:?}", String::from_utf8_lossy(raw)));
        let head = std::str::from_utf8(&raw[..end]).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse().ok())
            .expect("status line");
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let body = raw[end + 4..].to_vec();
        let reply = Self {
            status,
            headers,
            body,
        };
        let length = reply
            .header("content-length")
            .map(|v| v.parse::<usize>().expect("length"));
        // A 204 has no body and no Content-Length (RFC 9110 §8.6).
        let expected = (reply.status != 204).then_some(reply.body.len());
        assert_eq!(length, expected, "Content-Length of {reply:?}");
        reply
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn is_json(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "not JSON ({e}): {} {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// The era-2026 answer of a case: `structuredContent` (secrets masked), `isError`, and
/// whether it took the confirmation round trip.
struct Modern {
    value: Value,
    is_error: bool,
    confirmed: bool,
}

/// What a case expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// A 2xx answer.
    Done,
    /// A tool error with this code.
    Fails(&'static str),
}
use Expect::{Done, Fails};

/// The REST status of a tool error code (product spec §11).
fn rest_status(code: &str) -> u16 {
    match code {
        "VALIDATION_ERROR" | "NOT_SETTLED" => 422,
        "NOT_FOUND" => 404,
        "CONFLICT" | "IDEMPOTENCY_CONFLICT" | "CONFIRMATION_DECLINED" => 409,
        "FORBIDDEN" => 403,
        "CONFIRMATION_REQUIRED" => 428,
        "RATE_LIMITED" => 429,
        other => panic!("unknown tool error code {other}"),
    }
}

/// Credentials and `Accept`, on every request.
fn auth_headers() -> Vec<(String, String)> {
    vec![
        ("Authorization".into(), format!("Bearer {TOKEN}")),
        ("Accept".into(), "application/json".into()),
    ]
}

/// The three servers, the catalogue, and what the sequence covered so far.
struct Twin {
    mcp: Side,
    rest: Side,
    legacy: Side,
    tools: Vec<ToolDef>,
    n: u64,
    /// Tools compared between era 2026 and REST.
    covered: BTreeSet<String>,
    /// Tools checked in era 2025 (same result, or refused for confirmation).
    covered_legacy: BTreeSet<String>,
    /// Destructive tools refused with `CONFIRMATION_REQUIRED` in era 2025.
    refused: BTreeSet<String>,
    /// How many era-2025 refusals (then applied on `/v1`) the sequence made.
    refusals: usize,
    log: String,
    started: Instant,
}

impl Twin {
    fn new() -> Self {
        let (mcp, rest, legacy) = std::thread::scope(|s| {
            let a = s.spawn(Side::start);
            let b = s.spawn(Side::start);
            let c = s.spawn(Side::start);
            (
                a.join().expect("mcp side"),
                b.join().expect("rest side"),
                c.join().expect("legacy side"),
            )
        });
        let tools = mcp.server.dispatch().catalog().tools;
        Self {
            mcp,
            rest,
            legacy,
            tools,
            n: 0,
            covered: BTreeSet::new(),
            covered_legacy: BTreeSet::new(),
            refused: BTreeSet::new(),
            refusals: 0,
            log: String::new(),
            started: Instant::now(),
        }
    }

    fn def(&self, tool: &str) -> &ToolDef {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .unwrap_or_else(|| panic!("no tool {tool} in the catalogue"))
    }

    /// A read straight from the REST side's domain (no request, no counter): to pick the
    /// demo entities the cases act on.
    fn peek(&self, tool: &str, args: Value) -> Value {
        let dispatch = self.rest.server.dispatch();
        let who = dispatch
            .principal(
                "demo",
                PERSON,
                &Scope::ALL
                    .iter()
                    .map(|&s| dunning_domain::catalog::SCOPES.name(s).to_owned())
                    .collect::<Vec<_>>(),
                Audience::Mcp,
                T0.plus_millis(3_600_000),
            )
            .expect("principal");
        let ctx = Ctx {
            principal: &who,
            now: T0,
            request_id: "peek",
            entropy: &[0; 32],
        };
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        match dispatch.read_tool(tool, args, ctx) {
            Some(Ok(out)) => out.tool_value(),
            other => panic!("peek {tool}: {other:?}"),
        }
    }

    /// The rows of a listing (up to 100).
    fn rows(&self, tool: &str, mut args: Value) -> Vec<Value> {
        args["per_page"] = json!(100);
        self.peek(tool, args)["data"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Runs one operation on the three servers and compares; returns the REST JSON (the
    /// descriptor for a file).
    fn case(&mut self, tool: &str, args: Value, expect: Expect) -> Value {
        self.n += 1;
        let n = 1000 + self.n * 8;
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let def = self.def(tool).clone();
        let rest = self.rest_call(&self.rest, n, &def, &args);
        let (result, confirmed) = self.mcp_call(n, &def, &args);
        let context = format!("case {} {tool} {}", self.n, Value::Object(args.clone()));
        let (structured, is_error) = tool_value(&context, &result);
        let modern = Modern {
            value: structured.clone(),
            is_error,
            confirmed,
        };
        let outcome;
        let value = if rest.status >= 400 {
            let body = rest.json();
            let code = body["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert_eq!(
                rest.status,
                rest_status(&code),
                "{context}: REST status of {code}"
            );
            assert!(
                is_error,
                "{context}: REST failed with {body} but the tool answered {result}"
            );
            assert_eq!(structured, body, "{context}: tool error ≠ REST error body");
            assert!(
                matches!(expect, Fails(c) if c == code),
                "{context}: {expect:?} was expected, not the error {body}"
            );
            outcome = code;
            body
        } else {
            assert!(
                !is_error,
                "{context}: REST {} but the tool failed: {result}",
                rest.status
            );
            assert_eq!(
                expect, Done,
                "{context}: succeeded ({}) but {expect:?} was expected",
                rest.status
            );
            outcome = rest.status.to_string();
            if rest.status == 204 {
                assert!(rest.body.is_empty(), "{context}: 204 with a body");
                assert_eq!(structured, json!({ "status": 204 }), "{context}: 204");
                structured
            } else if rest.is_json() {
                let mut body = rest.json();
                mask_secrets(&mut body, false);
                assert_eq!(structured, body, "{context}: structuredContent ≠ REST body");
                body
            } else {
                self.check_file(n, &context, &rest, &structured);
                structured
            }
        };
        self.covered.insert(tool.to_owned());
        let legacy_outcome = self.check_legacy(
            n,
            &def,
            &args,
            &format!("{context} [era {V2025}]"),
            &modern,
            &rest,
        );
        let _ = writeln!(
            self.log,
            "{:>3} {:<36} {:<7} {:<28} {}",
            self.n,
            tool,
            def.route.as_ref().map_or("", |r| r.method),
            format!("{outcome}{}", if confirmed { " (confirmed)" } else { "" }),
            legacy_outcome
        );
        value
    }

    /// The era-2025 call of a case, against the era-2026 answer and the REST reply. For
    /// a destructive tool, a store snapshot from before the call proves it changed nothing.
    /// Returns the log column.
    fn check_legacy(
        &mut self,
        n: u64,
        def: &ToolDef,
        args: &Map<String, Value>,
        context: &str,
        modern: &Modern,
        rest: &Reply,
    ) -> String {
        let before = def.annotations.destructive.then(|| self.legacy.snapshot());
        let result = self.legacy_call(n, def, args);
        let (value, is_error) = tool_value(context, &result);
        if let Some(before) = before {
            let after = self.legacy.snapshot();
            if after != before {
                let changed: Vec<&String> = after.iter().filter(|d| !before.contains(d)).collect();
                panic!(
                    "{context}: the era-2025 call of a destructive tool changed the store \
                     ({result}): {changed:?}"
                );
            }
        }
        self.covered_legacy.insert(def.name.clone());
        if !modern.confirmed {
            // Not a confirmation in era 2026 (not destructive, or refused by the preflight):
            // era 2025 answers the same.
            assert_eq!(
                is_error, modern.is_error,
                "{context}: isError differs from era 2026: {result}"
            );
            assert_eq!(
                value, modern.value,
                "{context}: structuredContent ≠ era 2026's (and the REST body)"
            );
            if rest.status == 200 && !rest.is_json() {
                let path = value["download_path"].as_str().expect("download_path");
                let again = self.legacy.send(n, "GET", path, &auth_headers(), b"");
                assert_eq!(again.status, 200, "{context}: GET {path}");
                assert_eq!(
                    again.body, rest.body,
                    "{context}: {path} serves other bytes"
                );
            }
            return "same".to_owned();
        }
        // Era 2026 confirmed it; era 2025 cannot: refused with the tool error (REST 428 in
        // §11's table, but here an `isError` result), nothing executed (§13).
        assert!(is_error, "{context}: ran without confirmation: {result}");
        let message = value["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            value,
            json!({ "error": {
                "code": "CONFIRMATION_REQUIRED",
                "message": message,
                "request_id": Env::fixed(T0, n).request_id,
            } }),
            "{context}: not the CONFIRMATION_REQUIRED tool error"
        );
        assert!(
            message.contains(&def.name) && message.contains(V2026),
            "{context}: the message must name the tool and tell to confirm through a \
             {V2026} client: {message}"
        );
        self.refused.insert(def.name.clone());
        self.refusals += 1;
        // The same operation through `/v1` (REST needs no confirmation), same counter.
        let applied = self.rest_call(&self.legacy, n, def, args);
        assert_eq!(
            (applied.status, applied.header("content-type")),
            (rest.status, rest.header("content-type")),
            "{context}: /v1 on the era-2025 server: {}",
            String::from_utf8_lossy(&applied.body)
        );
        if applied.is_json() {
            let (mut a, mut b) = (applied.json(), rest.json());
            mask_secrets(&mut a, false);
            mask_secrets(&mut b, false);
            assert_eq!(a, b, "{context}: /v1 on the era-2025 server ≠ REST body");
        } else {
            assert_eq!(
                applied.body, rest.body,
                "{context}: /v1 on the era-2025 server ≠ REST body"
            );
        }
        format!("CONFIRMATION_REQUIRED, /v1 {}", applied.status)
    }

    /// An era-2025 `tools/call`: no envelope, no mirrored headers, no handshake.
    fn legacy_call(&self, n: u64, def: &ToolDef, args: &Map<String, Value>) -> Value {
        let mut headers = auth_headers();
        headers.extend([
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("MCP-Protocol-Version".to_owned(), V2025.to_owned()),
        ]);
        let body = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": { "name": def.name, "arguments": args },
        });
        let reply = self.legacy.send(
            n,
            "POST",
            "/",
            &headers,
            &serde_json::to_vec(&body).expect("body"),
        );
        assert_eq!(
            reply.status,
            200,
            "{} [era {V2025}]: {}",
            def.name,
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.header("mcp-protocol-version"), Some(V2025));
        let msg = reply.json();
        assert_eq!(msg["id"], json!(n), "{} [era {V2025}]: {msg}", def.name);
        let result = msg
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{} [era {V2025}]: no result in {msg}", def.name));
        for key in ["resultType", "_meta", "ttlMs", "cacheScope"] {
            assert!(
                result.get(key).is_none(),
                "{} [era {V2025}]: an era-2026 field {key} in {result}",
                def.name
            );
        }
        result
    }

    /// A file: the tool's descriptor names the REST answer, and its `download_path` serves
    /// the same bytes.
    fn check_file(&mut self, n: u64, context: &str, rest: &Reply, descriptor: &Value) {
        assert_eq!(rest.status, 200, "{context}: file status");
        assert_eq!(
            descriptor["content_type"].as_str(),
            rest.header("content-type"),
            "{context}: content_type of {descriptor}"
        );
        assert_eq!(
            descriptor["byte_size"].as_u64(),
            Some(rest.body.len() as u64),
            "{context}: byte_size of {descriptor}"
        );
        assert!(!rest.body.is_empty(), "{context}: empty file");
        let path = descriptor["download_path"]
            .as_str()
            .unwrap_or_else(|| panic!("{context}: no download_path in {descriptor}"));
        let again = self.rest.send(n, "GET", path, &auth_headers(), b"");
        assert_eq!(again.status, 200, "{context}: GET {path}");
        assert_eq!(
            again.body, rest.body,
            "{context}: {path} serves other bytes"
        );
    }

    /// The `/v1` route on `side`: path variables from the template, the rest in the query string
    /// (`GET`, `DELETE`) or the JSON body; `idempotency_key` as `X-Idempotency-Key`.
    fn rest_call(&self, side: &Side, n: u64, def: &ToolDef, args: &Map<String, Value>) -> Reply {
        let route = def.route.as_ref().expect("every tool has a /v1 route");
        let mut rest = args.clone();
        let mut path = String::new();
        for seg in route.path.split('/').skip(1) {
            path.push('/');
            match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(var) => {
                    let v = rest
                        .remove(var)
                        .unwrap_or_else(|| panic!("{}: path variable {var} missing", def.name));
                    path.push_str(&pct(v.as_str().expect("path variables are strings")));
                }
                None => path.push_str(seg),
            }
        }
        let mut headers = auth_headers();
        if let Some(key) = rest.remove("idempotency_key") {
            let key = key
                .as_str()
                .expect("idempotency_key is a string")
                .to_owned();
            headers.push(("X-Idempotency-Key".into(), key));
        }
        let body = match route.method {
            "GET" | "DELETE" => {
                let query: Vec<String> = rest
                    .iter()
                    .map(|(k, v)| format!("{}={}", pct(k), pct(&query_value(v))))
                    .collect();
                if !query.is_empty() {
                    path.push('?');
                    path.push_str(&query.join("&"));
                }
                Vec::new()
            }
            _ => {
                headers.push(("Content-Type".into(), "application/json".into()));
                serde_json::to_vec(&Value::Object(rest)).expect("body")
            }
        };
        side.send(n, route.method, &path, &headers, &body)
    }

    /// An era-2026 `tools/call`; a destructive tool's `input_required` is answered with
    /// the user's acceptance, under the same request counter. Returns the final result
    /// and whether a confirmation took place.
    fn mcp_call(&self, n: u64, def: &ToolDef, args: &Map<String, Value>) -> (Value, bool) {
        let mut headers = auth_headers();
        headers.extend([
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("MCP-Protocol-Version".to_owned(), V2026.to_owned()),
            ("Mcp-Method".to_owned(), "tools/call".to_owned()),
            (
                "Mcp-Name".to_owned(),
                dunning_core::mirror::encode(&def.name).into_owned(),
            ),
        ]);
        let props = def.input_schema["properties"].as_object();
        for (k, schema) in props.into_iter().flatten() {
            if let (Some(name), Some(v)) = (schema["x-mcp-header"].as_str(), args.get(k)) {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                headers.push((
                    format!("Mcp-Param-{name}"),
                    dunning_core::mirror::encode(&text).into_owned(),
                ));
            }
        }
        let mut params = json!({
            "name": def.name,
            "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V2026,
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
                "io.modelcontextprotocol/clientInfo": { "name": "rest-twin", "version": "1.0.0" },
            },
        });
        let post = |params: &Value| {
            let body =
                json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params });
            let reply = self.mcp.send(
                n,
                "POST",
                "/",
                &headers,
                &serde_json::to_vec(&body).expect("body"),
            );
            assert_eq!(
                reply.status,
                200,
                "{}: {}",
                def.name,
                String::from_utf8_lossy(&reply.body)
            );
            assert_eq!(reply.header("mcp-protocol-version"), Some(V2026));
            let msg = reply.json();
            assert_eq!(msg["id"], json!(n), "{}: {msg}", def.name);
            msg.get("result")
                .cloned()
                .unwrap_or_else(|| panic!("{}: no result in {msg}", def.name))
        };
        let first = post(&params);
        match first["resultType"].as_str() {
            Some("complete") => {
                assert!(
                    !def.annotations.destructive || first["isError"] == json!(true),
                    "{}: a destructive tool ran without confirmation: {first}",
                    def.name
                );
                (first, false)
            }
            Some("input_required") => {
                assert!(
                    def.annotations.destructive,
                    "{}: input_required from a tool that is not destructive: {first}",
                    def.name
                );
                let ask = &first["inputRequests"]["confirm"];
                assert_eq!(ask["method"], "elicitation/create", "{}: {first}", def.name);
                assert!(
                    ask["params"]["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty()),
                    "{}: confirmation message: {first}",
                    def.name
                );
                params["requestState"] = first["requestState"].clone();
                params["inputResponses"] =
                    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
                let second = post(&params);
                assert_eq!(second["resultType"], "complete", "{}: {second}", def.name);
                (second, true)
            }
            _ => panic!("{}: unexpected result {first}", def.name),
        }
    }

    /// Every catalogue tool was called on both surfaces and in both eras, every
    /// destructive one was refused in era 2025, and the three stores hold the same data.
    fn assert_covered(&self) {
        let all: BTreeSet<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        let missing: Vec<&String> = all.difference(&self.covered).collect();
        assert!(
            missing.is_empty(),
            "tools without a REST-twin case: {missing:?}"
        );
        let missing: Vec<&String> = all.difference(&self.covered_legacy).collect();
        assert!(
            missing.is_empty(),
            "tools without an era-{V2025} check: {missing:?}"
        );
        let destructive: BTreeSet<String> = self
            .tools
            .iter()
            .filter(|t| t.annotations.destructive)
            .map(|t| t.name.clone())
            .collect();
        let missing: Vec<&String> = destructive.difference(&self.refused).collect();
        assert!(
            missing.is_empty(),
            "destructive tools never refused for confirmation in era {V2025}: {missing:?}"
        );
        let (rest, legacy) = (self.rest.snapshot(), self.legacy.snapshot());
        assert_eq!(
            masked_docs(&legacy),
            masked_docs(&rest),
            "the era-{V2025} server's store ≠ the REST server's"
        );
        assert_eq!(
            masked_docs(&self.mcp.snapshot()),
            masked_docs(&rest),
            "the era-{V2026} server's store ≠ the REST server's"
        );
        eprintln!(
            "{}{} tools on both surfaces in era {V2026}, {} in era {V2025} ({} destructive \
             refused there {} times, then applied on /v1), {} operations on three servers, \
             {} documents each, in {:.1?}",
            self.log,
            self.covered.len(),
            self.covered_legacy.len(),
            self.refused.len(),
            self.refusals,
            self.n,
            rest.len(),
            self.started.elapsed()
        );
    }
}

/// Webhook signing secrets come from the OS generator, on purpose (a secret must not be
/// derivable from a request's entropy), so they differ between the two servers: under the
/// keys that carry them, string values are compared by shape (`whsec_` + 64 hex digits, or
/// the last four of those) and then masked.
fn mask_secrets(v: &mut Value, under_secret: bool) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let secret = under_secret || matches!(k.as_str(), "secret" | "secret_last4");
                mask_secrets(x, secret);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| mask_secrets(x, under_secret)),
        Value::String(s) if under_secret => {
            let hex = s.strip_prefix("whsec_").unwrap_or(s);
            assert!(
                (hex.len() == 64 || hex.len() == 4) && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                "not a webhook secret: {s}"
            );
            *s = format!("<secret:{}>", s.len());
        }
        _ => {}
    }
}

/// A tool result's `structuredContent`, secrets masked, after checking that its text item
/// is that value pretty-printed (§7); and whether it is an error.
fn tool_value(context: &str, result: &Value) -> (Value, bool) {
    let mut structured = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| panic!("{context}: no structuredContent in {result}"));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(
        text,
        serde_json::to_string_pretty(&structured).expect("pretty"),
        "{context}: the text item is the structured value pretty-printed"
    );
    mask_secrets(&mut structured, false);
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    (structured, is_error)
}

/// A store snapshot with webhook secrets masked (see [`mask_secrets`]).
fn masked_docs(docs: &[String]) -> Vec<Value> {
    docs.iter()
        .map(|d| {
            let mut v = serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.clone()));
            mask_secrets(&mut v, false);
            v
        })
        .collect()
}

fn id(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_owned()
}

fn status_is(v: &Value, status: &str) -> bool {
    v["status"] == status
}

#[test]
fn every_tool_answers_like_its_rest_twin() {
    let mut t = Twin::new();
    assert!(
        t.tools.iter().all(|d| d.route.is_some()),
        "every tool has a /v1 route"
    );

    // ---- Pristine reads ----------------------------------------------------------------
    let charges = t.rows("dunning_charges_list", json!({ "sort_by": "created_at" }));
    let charges2 = t.rows(
        "dunning_charges_list",
        json!({ "sort_by": "created_at", "page": 2 }),
    );
    let all: Vec<Value> = charges.into_iter().chain(charges2).collect();
    // Overdue and not paused: a demo charge is paused over a dispute, and a disputed
    // charge can be neither negativated nor protested.
    let overdue: Vec<&Value> = all
        .iter()
        .filter(|c| status_is(c, "overdue") && c["dunning_paused"] != json!(true))
        .collect();
    let pending: Vec<&Value> = all.iter().filter(|c| status_is(c, "pending")).collect();
    let paid: Vec<&Value> = all.iter().filter(|c| status_is(c, "paid")).collect();
    assert!(overdue.len() >= 5 && pending.len() >= 3 && !paid.is_empty());
    let debtor = overdue[0]["debtor_id"].as_str().expect("debtor").to_owned();

    t.case("dunning_me", json!({}), Done);
    t.case("dunning_summary_get", json!({}), Done);
    t.case(
        "dunning_summary_get",
        json!({ "from": "2026-11-01", "to": "2026-11-30" }),
        Done,
    );
    t.case(
        "dunning_debtors_list",
        json!({ "has_overdue": true, "sort_by": "overdue_amount", "sort_order": "desc", "per_page": 10 }),
        Done,
    );
    t.case(
        "dunning_debtors_list",
        json!({ "q": "Silva", "page": 2, "per_page": 3 }),
        Done,
    );
    t.case("dunning_debtors_get", json!({ "id": debtor }), Done);
    t.case("dunning_debtors_statement", json!({ "id": debtor }), Done);
    t.case(
        "dunning_debtors_statement",
        json!({ "id": debtor, "format": "pdf" }),
        Done,
    );
    t.case("dunning_contact_points_list", json!({ "id": debtor }), Done);
    t.case(
        "dunning_contact_points_list",
        json!({ "id": debtor, "channel": "email" }),
        Done,
    );
    t.case(
        "dunning_charges_list",
        json!({ "status": "overdue,pending", "min_amount": 100.5, "sort_by": "amount", "per_page": 20 }),
        Done,
    );
    t.case(
        "dunning_charges_list",
        json!({ "debtor_id": debtor, "due_from": "2026-01-01", "due_to": "2026-12-31" }),
        Done,
    );
    t.case("dunning_charges_get", json!({ "id": id(overdue[0]) }), Done);
    t.case(
        "dunning_charges_timeline",
        json!({ "id": id(overdue[0]) }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": id(paid[0]) }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": id(pending[0]) }),
        Fails("NOT_SETTLED"),
    );
    let bureau = t.rows("dunning_credit_bureau_list", json!({}));
    t.case(
        "dunning_credit_bureau_list",
        json!({ "bureau": "serasa" }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_get",
        json!({ "id": id(&bureau[0]) }),
        Done,
    );
    let protests = t.rows("dunning_protests_list", json!({}));
    t.case("dunning_protests_list", json!({}), Done);
    t.case(
        "dunning_protests_get",
        json!({ "id": id(&protests[0]) }),
        Done,
    );
    let agreements = t.rows("dunning_agreements_list", json!({}));
    t.case(
        "dunning_agreements_list",
        json!({ "status": "accepted" }),
        Done,
    );
    t.case(
        "dunning_agreements_get",
        json!({ "id": id(&agreements[0]) }),
        Done,
    );
    t.case(
        "dunning_agreements_term",
        json!({ "id": id(&agreements[0]) }),
        Done,
    );
    let rulers = t.rows("dunning_rulers_list", json!({}));
    t.case("dunning_rulers_list", json!({ "status": "active" }), Done);
    t.case("dunning_rulers_get", json!({ "id": id(&rulers[0]) }), Done);
    t.case(
        "dunning_rulers_preview",
        json!({ "id": id(&rulers[0]), "charge_id": id(pending[0]) }),
        Done,
    );
    t.case(
        "dunning_rulers_preview",
        json!({ "id": id(&rulers[0]), "due_date": "2026-12-20", "amount": 1234.56 }),
        Done,
    );
    t.case(
        "dunning_deliveries_list",
        json!({ "channel": "email", "per_page": 10 }),
        Done,
    );
    let sent = t
        .rows("dunning_deliveries_list", json!({ "channel": "email" }))
        .iter()
        .find(|d| {
            let open = all.iter().any(|c| {
                c["id"] == d["charge_id"]
                    && matches!(c["status"].as_str(), Some("overdue" | "pending"))
            });
            open && matches!(d["status"].as_str(), Some("sent" | "delivered" | "read"))
        })
        .map(id)
        .expect("a sent e-mail about an open charge in the demo data");
    let processed = t
        .rows("dunning_events_list", json!({ "resource_type": "export" }))
        .iter()
        .filter_map(|e| e["resource_id"].as_str().map(str::to_owned))
        .find(|x| t.peek("dunning_exports_get", json!({ "id": x }))["status"] == "processed")
        .expect("a processed export in the demo data");
    let hooks = t.rows("dunning_webhooks_list", json!({}));
    let hook = id(&hooks[0]);
    t.case("dunning_webhooks_list", json!({ "active": true }), Done);
    t.case("dunning_webhooks_get", json!({ "id": hook }), Done);
    let hook_deliveries = t.rows("dunning_webhook_deliveries_list", json!({ "id": hook }));
    t.case(
        "dunning_webhook_deliveries_list",
        json!({ "id": hook, "per_page": 5 }),
        Done,
    );
    t.case(
        "dunning_webhook_deliveries_get",
        json!({ "id": hook, "delivery_id": id(&hook_deliveries[0]) }),
        Done,
    );
    t.case(
        "dunning_events_list",
        json!({ "resource_type": "charge", "per_page": 10 }),
        Done,
    );
    let debtor_overdue: Vec<String> = overdue
        .iter()
        .filter(|c| c["debtor_id"] == debtor.as_str())
        .map(|c| id(c))
        .collect();
    t.case(
        "dunning_agreements_simulate",
        json!({
            "debtor_id": debtor, "charge_ids": debtor_overdue, "installments_count": 3,
            "first_due_date": "2026-12-15", "discount_percentage": 10.0,
        }),
        Done,
    );

    // Errors on reads: unknown id, unknown argument (strict reads).
    let nobody = "00000000-0000-4000-8000-000000000000";
    t.case(
        "dunning_charges_get",
        json!({ "id": nobody }),
        Fails("NOT_FOUND"),
    );
    t.case(
        "dunning_charges_list",
        json!({ "stauts": "overdue" }),
        Fails("VALIDATION_ERROR"),
    );

    // ---- Writes ------------------------------------------------------------------------
    let new_debtor = t.case(
        "dunning_debtors_create",
        json!({
            "cnpj_cpf": "52998224725", "name": "Zé Twin da Silva", "tags": ["twin"],
            "address": { "street": "Rua A", "number": "1", "neighborhood": "Centro",
                         "city": "São Paulo", "state": "SP", "zipcode": "01001000" },
        }),
        Done,
    );
    let d = id(&new_debtor);
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Zé", "idempotency_key": "twin-debtor-1" }),
        Done,
    );
    // The same key again replays the first result on both surfaces.
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Zé", "idempotency_key": "twin-debtor-1" }),
        Done,
    );
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Outro", "idempotency_key": "twin-debtor-1" }),
        Fails("IDEMPOTENCY_CONFLICT"),
    );
    let cp = t.case(
        "dunning_contact_points_create",
        json!({ "id": d, "channel": "email", "value": "ze.twin@example.com", "is_primary": true, "consent": "opted_in" }),
        Done,
    );
    let cp2 = t.case(
        "dunning_contact_points_create",
        json!({ "id": d, "channel": "sms", "value": "+5511987654321", "label": "celular" }),
        Done,
    );
    t.case(
        "dunning_contact_points_update",
        json!({ "id": d, "cp_id": id(&cp), "label": "trabalho" }),
        Done,
    );
    t.case(
        "dunning_contact_points_delete",
        json!({ "id": d, "cp_id": id(&cp2) }),
        Done,
    );
    let charge = t.case(
        "dunning_charges_create",
        json!({
            "debtor_id": d, "amount": 350.75, "due_date": "2026-12-20", "payment_method": "pix",
            "description": "Serviço twin", "fine_percentage": 2.0, "interest_percentage": 1.0,
        }),
        Done,
    );
    let c = id(&charge);
    let draft = t.case(
        "dunning_charges_create",
        json!({ "debtor_id": d, "amount": 99.9, "due_date": "2027-01-10", "payment_method": "boleto", "draft": true }),
        Done,
    );
    t.case(
        "dunning_charges_update",
        json!({ "id": c, "amount": 400.0, "description": "Serviço twin (revisto)" }),
        Done,
    );
    t.case(
        "dunning_charges_pause",
        json!({ "id": c, "until": "2026-12-10", "reason": "negociando" }),
        Done,
    );
    t.case("dunning_charges_resume", json!({ "id": c }), Done);
    let notified = t.case(
        "dunning_charges_notify",
        json!({ "id": c, "channel": "email", "message": "Olá, segue sua cobrança." }),
        Done,
    );
    t.case(
        "dunning_notifications_create",
        json!({ "charge_ids": [c], "channel": "email", "message": "Lembrete de vencimento." }),
        Done,
    );
    let delivery = notified["deliveries"][0]["id"]
        .as_str()
        .or_else(|| notified["data"][0]["id"].as_str())
        .or_else(|| notified["id"].as_str())
        .unwrap_or_else(|| panic!("no delivery in {notified}"))
        .to_owned();
    t.case(
        "dunning_deliveries_resend",
        json!({ "id": delivery }),
        Fails("CONFLICT"),
    );
    t.case("dunning_deliveries_resend", json!({ "id": sent }), Done);
    t.case(
        "dunning_charges_mark_paid",
        json!({ "id": c, "paid_amount": 400.0, "paid_via": "pix", "note": "pago no caixa" }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": c }),
        Done,
    );
    t.case(
        "dunning_charges_cancel",
        json!({ "id": c, "reason": "já paga" }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_charges_cancel",
        json!({ "id": id(pending[1]), "reason": "emitida por engano" }),
        Done,
    );
    let to_issue = t.case(
        "dunning_charges_create",
        json!({ "debtor_id": debtor, "amount": 42.0, "due_date": "2027-01-12", "payment_method": "pix", "draft": true }),
        Done,
    );
    t.case(
        "dunning_charges_issue",
        json!({ "id": id(&to_issue), "due_date": "2027-01-15" }),
        Done,
    );
    t.case(
        "dunning_charges_issue",
        json!({ "id": id(pending[2]), "due_date": "2027-02-01" }),
        Fails("CONFLICT"),
    );
    t.case("dunning_charges_delete", json!({ "id": id(&draft) }), Done);
    t.case(
        "dunning_charges_delete",
        json!({ "id": id(pending[2]) }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_charges_delete",
        json!({ "id": nobody }),
        Fails("NOT_FOUND"),
    );
    t.case(
        "dunning_charges_decide",
        json!({ "id": id(overdue[1]), "decision": "negotiate", "reason": "cliente pediu prazo" }),
        Done,
    );
    let record = t.case(
        "dunning_charges_negativate",
        json!({ "id": id(overdue[2]), "bureau": "spc", "notice_days": 10 }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_get",
        json!({ "id": id(&record) }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_remove",
        json!({ "id": id(&bureau[0]), "reason": "error" }),
        Done,
    );
    let protest = t.case(
        "dunning_charges_protest",
        json!({ "id": id(overdue[3]), "title_type": "duplicata_mercantil", "document_ids": ["NF-1", "canhoto"] }),
        Done,
    );
    t.case("dunning_protests_get", json!({ "id": id(&protest) }), Done);
    t.case(
        "dunning_protests_cancel",
        json!({ "id": id(&protests[0]), "mode": "withdraw", "reason": "pagamento combinado" }),
        Done,
    );
    let agreement = t.case(
        "dunning_agreements_create",
        json!({
            "debtor_id": overdue[4]["debtor_id"], "charge_ids": [id(overdue[4])],
            "installments_count": 2, "first_due_date": "2026-12-20",
        }),
        Done,
    );
    t.case(
        "dunning_agreements_accept",
        json!({ "id": id(&agreement), "accepted_by": "operator" }),
        Done,
    );
    t.case(
        "dunning_agreements_term",
        json!({ "id": id(&agreement) }),
        Done,
    );
    t.case(
        "dunning_agreements_cancel",
        json!({ "id": id(&agreement), "reason": "desistiu" }),
        Done,
    );
    let ruler = t.case(
        "dunning_rulers_create",
        json!({
            "name": "Régua twin", "description": "criada pelo teste",
            "steps": [{
                "offset_days": -3, "channel": "email", "name": "Lembrete",
                "template": { "subject": "Sua fatura vence em breve", "body": "Olá {{debtor.name}}, sua fatura vence em {{charge.due_date}}." },
            }],
        }),
        Done,
    );
    let r = id(&ruler);
    t.case(
        "dunning_rulers_update",
        json!({ "id": r, "description": "revista" }),
        Done,
    );
    let step = t.case(
        "dunning_steps_create",
        json!({
            "id": r, "offset_days": 5, "channel": "sms", "name": "Cobrança",
            "template": { "body": "Fatura vencida: {{charge.url}}" },
        }),
        Done,
    );
    t.case(
        "dunning_steps_update",
        json!({ "id": r, "step_id": id(&step), "offset_days": 7 }),
        Done,
    );
    t.case(
        "dunning_steps_delete",
        json!({ "id": r, "step_id": id(&step) }),
        Done,
    );
    t.case("dunning_rulers_activate", json!({ "id": r }), Done);
    t.case(
        "dunning_rulers_pause",
        json!({ "id": r, "reason": "revisão" }),
        Done,
    );
    t.case("dunning_rulers_archive", json!({ "id": r }), Done);
    let export = t.case(
        "dunning_exports_create",
        json!({ "resource": "charges", "format": "csv", "filters": { "status": "overdue" } }),
        Done,
    );
    t.case("dunning_exports_get", json!({ "id": id(&export) }), Done);
    // Exports are processed by the worker: the new one is still queued.
    t.case(
        "dunning_exports_download",
        json!({ "id": id(&export) }),
        Fails("CONFLICT"),
    );
    t.case("dunning_exports_get", json!({ "id": processed }), Done);
    t.case("dunning_exports_download", json!({ "id": processed }), Done);
    let new_hook = t.case(
        "dunning_webhooks_create",
        json!({ "url": "https://erp.twin.example/hooks", "events": ["charge.paid"], "description": "twin" }),
        Done,
    );
    let h = id(&new_hook);
    t.case(
        "dunning_webhooks_update",
        json!({ "id": h, "description": "twin (revisto)" }),
        Done,
    );
    t.case(
        "dunning_webhooks_test",
        json!({ "id": h, "event_code": "ping" }),
        Fails("VALIDATION_ERROR"),
    );
    t.case("dunning_webhooks_test", json!({ "id": h }), Done);
    t.case(
        "dunning_webhooks_test",
        json!({ "id": h, "event_code": "charge.paid" }),
        Done,
    );
    t.case(
        "dunning_webhooks_rotate_secret",
        json!({ "id": h, "grace_period_seconds": 3600 }),
        Done,
    );
    let delivered = hook_deliveries
        .iter()
        .find(|d| d["status"] == "delivered")
        .map(id)
        .expect("a delivered webhook delivery in the demo data");
    let failed = hook_deliveries
        .iter()
        .find(|d| d["status"] == "failed")
        .map(id)
        .expect("a failed webhook delivery in the demo data");
    t.case(
        "dunning_webhook_deliveries_resend",
        json!({ "id": hook, "delivery_id": delivered }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_webhook_deliveries_resend",
        json!({ "id": hook, "delivery_id": failed }),
        Done,
    );
    t.case("dunning_webhooks_delete", json!({ "id": h }), Done);
    t.case(
        "dunning_debtors_archive",
        json!({ "id": d, "reason": "teste" }),
        Done,
    );

    // ---- Reads after the writes: both stores hold the same data ------------------------
    t.case("dunning_summary_get", json!({}), Done);
    t.case(
        "dunning_events_list",
        json!({ "per_page": 100, "sort_order": "desc" }),
        Done,
    );
    t.case("dunning_deliveries_list", json!({ "per_page": 100 }), Done);
    t.case("dunning_charges_list", json!({ "debtor_id": d }), Done);

    t.assert_covered();
}
