//! Durability: a server killed with SIGKILL in the middle of a burst of writes loses no
//! write it had acknowledged.
//!
//! The store is SQLite in WAL mode with `synchronous=FULL` (the embedded default), so a
//! write is on disk before its response leaves; on PostgreSQL (`DUNNING_TEST_PG`), a
//! write is committed before its response leaves, and the kill drops the server's
//! connections mid-transaction (the database rolls back what was not committed). Several client threads write over both
//! surfaces (MCP `dunning_debtors_create`, REST `POST /v1/charges`), each with its own
//! idempotency key; every fully received success is recorded. The process is killed
//! while requests are in flight, a new server is started on the same data dir, and
//! every acknowledged write must be there, with its idempotency record (a retry with the
//! same key answers the same id), and the database must be sound.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{Resp, Srv, V2026, cpf, date_in, mcp_call, seeded_dir, tool_ok, try_http};
use serde_json::{Value, json};

/// No 429 in the middle of the burst.
const CONFIG: &str = "[rate_limit]\nenabled = false\n";
/// Writer threads: the even ones create debtors over MCP, the odd ones charges over REST.
const WRITERS: usize = 4;
/// Acknowledged writes (in all) before the kill; each writer must have some too.
const ACKS_BEFORE_KILL: usize = 40;
const ACKS_PER_WRITER: usize = 4;
/// Marks every debtor name and charge description of the burst.
const MARK: &str = "Durabilidade";

/// One acknowledged write.
#[derive(Clone, Debug)]
struct Ack {
    /// Whether it was a debtor (MCP) or a charge (REST).
    debtor: bool,
    /// The id the server answered.
    id: String,
    /// The request, to replay with the same idempotency key.
    args: Value,
}

/// What a writer thread saw.
#[derive(Default)]
struct Outcome {
    acks: Vec<Ack>,
    /// Requests sent (acknowledged or not).
    attempts: usize,
    /// Anything but a success or a dead server.
    errors: Vec<String>,
}

/// A REST request with an API token; `None` when the server is gone.
fn rest(addr: &str, token: &str, method: &str, target: &str, body: Option<&Value>) -> Option<Resp> {
    let auth = format!("Bearer {token}");
    let mut headers = vec![("Authorization", auth.as_str())];
    let text = body.map(Value::to_string).unwrap_or_default();
    if body.is_some() {
        headers.push(("Content-Type", "application/json"));
    }
    try_http(addr, method, target, &headers, text.as_bytes())
}

/// The JSON body of a REST success, or why it is not one.
fn rest_ok(r: &Resp) -> Result<Value, String> {
    if !matches!(r.status, 200 | 201) {
        return Err(format!("{} {}", r.status, r.text()));
    }
    serde_json::from_slice(&r.body).map_err(|e| format!("{e}: {}", r.text()))
}

/// What the writer threads share.
struct Burst {
    addr: String,
    mcp_token: String,
    api_token: String,
    /// The debtor of the charges.
    debtor_id: String,
    /// Their due date.
    due: String,
    /// Set just before the SIGKILL.
    killed: AtomicBool,
    /// Acknowledged writes per writer so far.
    acked: Mutex<Vec<usize>>,
}

/// One writer: writes until the server dies.
fn writer(n: usize, b: &Burst) -> Outcome {
    let mut out = Outcome::default();
    let base = 700_000_000 + u32::try_from(n).unwrap() * 1_000_000;
    for seq in 0.. {
        let debtor = n % 2 == 0;
        let key = format!("durability-{n}-{seq}");
        let args = if debtor {
            json!({
                "cnpj_cpf": cpf(base + seq), "name": format!("{MARK} {n} {seq}"),
                "idempotency_key": key,
            })
        } else {
            json!({
                "debtor_id": b.debtor_id, "amount": 100 + seq, "due_date": b.due,
                "payment_method": "pix", "description": format!("{MARK} {n} {seq}"),
                "idempotency_key": key,
            })
        };
        // Whether the server was already being killed when this request started: a
        // failure is expected then, never before.
        let late = b.killed.load(Ordering::SeqCst);
        out.attempts += 1;
        let resp = if debtor {
            mcp_call(&b.addr, &b.mcp_token, "dunning_debtors_create", &args)
        } else {
            rest(&b.addr, &b.api_token, "POST", "/v1/charges", Some(&args))
        };
        let Some(resp) = resp else {
            if !late && !b.killed.load(Ordering::SeqCst) {
                out.errors
                    .push(format!("writer {n}: request {seq} failed before the kill"));
            }
            break;
        };
        let body = if debtor {
            tool_ok(&resp)
        } else {
            rest_ok(&resp)
        };
        match body {
            Ok(v) => match v["id"].as_str() {
                Some(id) => {
                    out.acks.push(Ack {
                        debtor,
                        id: id.to_owned(),
                        args,
                    });
                    b.acked.lock().unwrap()[n] += 1;
                }
                None => out.errors.push(format!("writer {n}: no id in {v}")),
            },
            Err(e) => out.errors.push(format!("writer {n}, request {seq}: {e}")),
        }
        if out.errors.len() > 5 {
            break;
        }
    }
    out
}

/// An active debtor of `demo` for the charges.
fn active_debtor(srv: &Srv) -> String {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_debtors_list",
        json!({ "status": "active", "has_overdue": false, "per_page": 1 }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    r.structured()["data"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no active debtor: {}", r.text()))
        .to_owned()
}

/// Every item of a list tool (all pages).
fn list_all(srv: &Srv, tool: &str, args: &Value) -> Vec<Value> {
    let mut items = Vec::new();
    for page in 1.. {
        let mut a = args.clone();
        a["page"] = json!(page);
        a["per_page"] = json!(100);
        let r = srv.call(&srv.token, V2026, tool, a);
        let v = tool_ok(&r).unwrap();
        let data = v["data"].as_array().unwrap();
        items.extend(data.iter().cloned());
        if page >= v["meta"]["total_pages"].as_u64().unwrap() {
            break;
        }
    }
    items
}

#[test]
fn sigkill_mid_burst_loses_no_acknowledged_write() {
    let started = Instant::now();
    let srv = Srv::start_in(seeded_dir("durability"), &[], Some(CONFIG));
    let api = srv.mint_api("demo", "ana@demo.example");

    // The burst.
    let burst = Arc::new(Burst {
        addr: srv.addr.clone(),
        mcp_token: srv.token.clone(),
        api_token: api,
        debtor_id: active_debtor(&srv),
        due: date_in(30),
        killed: AtomicBool::new(false),
        acked: Mutex::new(vec![0; WRITERS]),
    });
    let handles: Vec<_> = (0..WRITERS)
        .map(|n| {
            let b = burst.clone();
            thread::spawn(move || writer(n, &b))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let counts = burst.acked.lock().unwrap().clone();
        if counts.iter().sum::<usize>() >= ACKS_BEFORE_KILL
            && counts.iter().all(|&c| c >= ACKS_PER_WRITER)
        {
            break;
        }
        if handles.iter().any(thread::JoinHandle::is_finished) {
            // A writer gave up: kill anyway and report its errors below.
            break;
        }
        assert!(
            Instant::now() < deadline,
            "too slow: {counts:?} acknowledged in 60 s\n{}",
            srv.log()
        );
        thread::sleep(Duration::from_millis(2));
    }
    burst.killed.store(true, Ordering::SeqCst);
    let on_postgres = srv.store.is_some();
    let (status, dir) = srv.sigkill();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9),
        "{status:?}"
    );
    let outcomes: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let errors: Vec<&String> = outcomes.iter().flat_map(|o| &o.errors).collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let acks: Vec<Ack> = outcomes.iter().flat_map(|o| o.acks.clone()).collect();
    let attempts: usize = outcomes.iter().map(|o| o.attempts).sum();
    assert!(acks.len() >= ACKS_BEFORE_KILL, "{}", acks.len());
    // The crash left the write-ahead log behind (a clean close removes it): this really
    // was a WAL database killed with its connections open, recovered by the restart.
    let sqlite_file = (!on_postgres).then(|| dir.join("dunning.sqlite3"));
    if on_postgres {
        println!(
            "SQLite only, skipped on PostgreSQL: the WAL file check (PostgreSQL's log is \
             the database server's, which was not killed, not a file of the data dir)"
        );
    } else {
        assert!(
            dir.join("dunning.sqlite3-wal").exists(),
            "no WAL after the kill"
        );
    }

    // Restart on the same data dir.
    let mut srv = Srv::start_in(dir, &[], Some(CONFIG));
    for path in ["/healthz", "/readyz"] {
        let r = srv.request("GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}: {}", r.text());
        assert_eq!(r.json()["status"], "ok", "{path}");
    }
    let api = srv.mint_api("demo", "ana@demo.example");
    for ack in &acks {
        if ack.debtor {
            let r = mcp_call(
                &srv.addr,
                &srv.token,
                "dunning_debtors_get",
                &json!({ "id": ack.id }),
            )
            .unwrap();
            let d = tool_ok(&r).unwrap_or_else(|e| panic!("acknowledged debtor lost: {e}"));
            assert_eq!(d["name"], ack.args["name"], "{d}");
            let digits: String = d["cnpj_cpf"]
                .as_str()
                .unwrap()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
            assert_eq!(digits, ack.args["cnpj_cpf"].as_str().unwrap());
            // The idempotency record was committed with it: a retry is the same debtor.
            let r = mcp_call(&srv.addr, &srv.token, "dunning_debtors_create", &ack.args).unwrap();
            let again = tool_ok(&r).unwrap();
            assert_eq!(again["id"], ack.id.as_str(), "retry after the crash");
        } else {
            let r = rest(
                &srv.addr,
                &api,
                "GET",
                &format!("/v1/charges/{}", ack.id),
                None,
            )
            .unwrap();
            let c = rest_ok(&r).unwrap_or_else(|e| panic!("acknowledged charge lost: {e}"));
            assert_eq!(c["description"], ack.args["description"], "{c}");
            assert_eq!(c["amount"].as_f64(), ack.args["amount"].as_f64(), "{c}");
            let r = rest(&srv.addr, &api, "POST", "/v1/charges", Some(&ack.args)).unwrap();
            let again = rest_ok(&r).unwrap();
            assert_eq!(again["id"], ack.id.as_str(), "retry after the crash");
        }
    }
    // Nothing doubled, nothing invented: each key wrote at most one row, and between the
    // acknowledged and the attempted.
    let debtors = list_all(&srv, "dunning_debtors_list", &json!({ "q": MARK }));
    let charges = list_all(
        &srv,
        "dunning_charges_list",
        &json!({ "q": MARK, "debtor_id": burst.debtor_id }),
    );
    let mut names = HashSet::new();
    for item in debtors.iter().chain(&charges) {
        let label = item
            .get("name")
            .or_else(|| item.get("description"))
            .and_then(Value::as_str)
            .unwrap()
            .to_owned();
        assert!(names.insert(label.clone()), "duplicate {label}");
    }
    let found = debtors.len() + charges.len();
    assert!(
        acks.len() <= found && found <= attempts,
        "acknowledged {}, found {found}, attempted {attempts}",
        acks.len()
    );
    // The restarted server takes new writes.
    let r = mcp_call(
        &srv.addr,
        &srv.token,
        "dunning_debtors_create",
        &json!({ "cnpj_cpf": cpf(699_999_999), "name": "Depois do Crash" }),
    )
    .unwrap();
    tool_ok(&r).unwrap();
    assert!(srv.terminate().success(), "{}", srv.log());

    // The database is sound: SQLite's own check when the CLI is installed (SQLite only),
    // and on both stores every row of every table read back through the store.
    integrity(&*srv.open_store(), sqlite_file.as_deref());
    println!(
        "{} acknowledged of {attempts} attempted before the kill; {found} found after; {:?} in all",
        acks.len(),
        started.elapsed()
    );
}

/// `PRAGMA integrity_check` through the `sqlite3` CLI when it is installed and the store
/// is the SQLite file `sqlite_file`, and a full read of every kind in every organization
/// through the store.
fn integrity(s: &dyn dunning_domain::store::Store, sqlite_file: Option<&std::path::Path>) {
    use dunning_domain::store::{self, Kind, Query};
    let checked = sqlite_file.map(|db| {
        std::process::Command::new("sqlite3")
            .arg(db)
            .arg("PRAGMA integrity_check;")
            .output()
    });
    match checked {
        None => println!(
            "SQLite only, skipped on PostgreSQL: `PRAGMA integrity_check` (a check of the \
             SQLite file); the store read-back below runs on both"
        ),
        Some(Ok(out)) => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(text.trim(), "ok", "integrity_check");
        }
        Some(Err(e)) => eprintln!("sqlite3 CLI not available ({e}); store read-back only"),
    }
    let rows = store::read(s, |tx| {
        let mut rows = 0;
        for org in tx.organizations()? {
            for kind in Kind::ALL {
                let all = tx.find(kind, &org, &Query::all())?;
                let counted = tx.count(kind, &org, &[])?;
                assert_eq!(all.len() as u64, counted, "{kind:?} in {org}");
                rows += all.len();
            }
        }
        Ok(rows)
    })
    .unwrap();
    assert!(rows > 0);
}
