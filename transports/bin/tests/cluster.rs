//! Three replicas on one PostgreSQL database behave as one server (proved over real
//! processes): three `serve` processes on one data dir (the keys) and one schema,
//! their rate-limit buckets in Redis, each request sent to the replica a balancer might
//! pick. Runs when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step), on a
//! fresh schema dropped at the end; says so and passes otherwise.
//!
//! One cluster, checked in order, the destructive part last: a write through one replica
//! is read through the others; a confirmed destructive call replayed 20 times at once
//! over the three executes once; a member removed from the store is refused by every
//! replica within a second; a replica killed with SIGKILL during a burst of writes loses
//! no acknowledged write, and the retries of the unacknowledged ones (same idempotency
//! key, another replica) create no duplicate.

mod common;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::confirm::{accept, ask, call, cents, charge, count, event_codes, pending_charges};
use common::pg::{in_schema, pg_url};
use common::{Srv, V2026, cpf, mcp_call, scratch, tool_ok};
use dunning_domain::store::postgres::PostgresStore;
use dunning_domain::store::{self, Kind};
use serde_json::{Value, json};

/// What a balancer in front of the replicas would be reached at: every replica's
/// `public_url`, so tokens carry one audience.
const PUBLIC_URL: &str = "http://127.0.0.1:9/";

/// The cluster: replicas and the database.
struct Cluster {
    replicas: Vec<Srv>,
    db: PostgresStore,
    /// The store's URL (`token --store`).
    store_url: String,
}

impl Cluster {
    /// Three replicas started together on a new data dir and a new schema.
    fn start() -> Option<Self> {
        let url = pg_url()?;
        let db = PostgresStore::scratch(&url).unwrap();
        let store_url = in_schema(&url, db.scratch_schema().unwrap());
        let dir = scratch("cluster");
        let config = dir.join("cluster.toml");
        let prefix = format!("cluster-{}-{}", std::process::id(), common::now_ms());
        std::fs::write(
            &config,
            format!(
                "[rate_limit]\norg_per_minute = 600000\norg_burst = 100000\n\
                 token_per_minute = 600000\ntoken_burst = 100000\n\
                 shared = \"redis://127.0.0.1:6379/\"\nshared_prefix = \"{prefix}\"\n"
            ),
        )
        .unwrap();
        let config = config.to_str().unwrap().to_owned();
        let starts: Vec<_> = (0..3)
            .map(|_| {
                let (dir, store_url, config) = (dir.clone(), store_url.clone(), config.clone());
                thread::spawn(move || {
                    let extra = [
                        "--store",
                        &store_url,
                        "--public-url",
                        PUBLIC_URL,
                        "--config",
                        &config,
                    ];
                    Srv::start_in(dir, &extra, None)
                })
            })
            .collect();
        let replicas = starts.into_iter().map(|s| s.join().unwrap()).collect();
        Some(Self {
            replicas,
            db,
            store_url,
        })
    }
}

#[test]
fn three_replicas_on_one_database_behave_as_one_server() {
    let Some(mut cluster) = Cluster::start() else {
        return;
    };
    let token = cluster.replicas[0].token.clone();
    one_store(&cluster, &token);
    confirmed_replays_execute_once(&cluster, &token);
    removed_member_refused_everywhere(&cluster);
    killed_replica_loses_nothing(&mut cluster, &token);
    for r in &mut cluster.replicas {
        assert!(r.terminate().success());
    }
}

/// One token for the three (one data dir, one audience); a write through one replica
/// is read through the others.
fn one_store(c: &Cluster, token: &str) {
    let r = &c.replicas;
    let created = r[0].call(
        token,
        V2026,
        "dunning_debtors_create",
        json!({"cnpj_cpf": cpf(412_000_001), "name": "Maria Cluster"}),
    );
    let id = tool_ok(&created).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for s in &r[1..] {
        let got = s.call(token, V2026, "dunning_debtors_get", json!({"id": id}));
        assert_eq!(got.structured()["name"], "Maria Cluster", "{}", got.text());
    }
}

/// The race of `confirm_replay.rs`, its copies spread over the replicas.
fn confirmed_replays_execute_once(c: &Cluster, token: &str) {
    const COPIES: usize = 20;
    let r = &c.replicas;
    let id = pending_charges(&r[0], 1).remove(0);
    let before = charge(&r[1], &id);
    let args = json!({ "id": id, "paid_amount": 2.34, "paid_via": "pix", "note": "cluster" });
    let tool = "dunning_charges_mark_paid";
    let (state, _) = ask(&r[2], token, tool, &args);
    let barrier = Arc::new(Barrier::new(COPIES));
    let copies: Vec<_> = (0..COPIES)
        .map(|i| {
            let (barrier, addr, token, args, state) = (
                barrier.clone(),
                r[i % 3].addr.clone(),
                token.to_owned(),
                args.clone(),
                state.clone(),
            );
            thread::spawn(move || {
                let extra = json!({ "inputResponses": accept(), "requestState": state });
                barrier.wait();
                call(&addr, &token, tool, &args, &extra, args["id"].as_str())
            })
        })
        .collect();
    let results: Vec<Value> = copies
        .into_iter()
        .map(|h| {
            let resp = h.join().unwrap();
            assert_eq!(resp.status, 200, "{}", resp.text());
            resp.json()["result"].clone()
        })
        .collect();
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result["resultType"], "complete", "copy {i}: {result}");
        assert_eq!(result, &results[0], "copy {i} differs");
    }
    let after = charge(&r[0], &id);
    assert_eq!(
        cents(&after["paid_amount"]) - cents(&before["paid_amount"]),
        234,
        "one payment: {after}"
    );
    let codes = event_codes(&r[1], &id);
    assert_eq!(count(&codes, "charge.partially_paid"), 1, "{codes:?}");
}

/// A member deleted from the store is refused by every replica within a second (no
/// replica keeps membership: it is read at every request).
fn removed_member_refused_everywhere(c: &Cluster) {
    let r = &c.replicas;
    let caio = r[0].mint(&[
        "--org",
        "demo",
        "--person",
        "caio@demo.example",
        "--store",
        &c.store_url,
    ]);
    for s in r {
        let me = s.call(&caio, V2026, "dunning_me", json!({}));
        assert_eq!(me.status, 200, "{}", me.text());
        assert!(me.json()["result"]["isError"].is_null(), "{}", me.text());
    }
    let org = dunning_domain::demo::stable_id("org:demo");
    store::write(&c.db, store::WriteScope::All, |tx| {
        let member = dunning_domain::org::find_member(tx, &org, "caio@demo.example")?
            .expect("caio is a member");
        Ok(tx.delete(Kind::Member, &org, &member.id)?)
    })
    .unwrap();
    let removed = Instant::now();
    for (i, s) in r.iter().enumerate() {
        loop {
            let me = s.call(&caio, V2026, "dunning_me", json!({}));
            if me.status != 200 || me.json()["result"]["isError"] == true {
                assert!(
                    [401, 403].contains(&me.status),
                    "replica {i}: {} {}",
                    me.status,
                    me.text()
                );
                break;
            }
            assert!(
                removed.elapsed() < Duration::from_secs(1),
                "replica {i} still serves a removed member"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Writers spread debtor creations over the replicas, each with its own idempotency
/// key; one replica is killed mid-burst; what it did not acknowledge is retried on the
/// next replica with the same key. Every acknowledged write is there once, and every
/// key made exactly one debtor.
fn killed_replica_loses_nothing(c: &mut Cluster, token: &str) {
    const WRITERS: usize = 4;
    const PER_WRITER: usize = 25;
    const KILL_AFTER: usize = 30;
    let run = common::now_ms() % 1_000_000;
    let mark = format!("Replica {run}");
    let addrs: Vec<String> = c.replicas.iter().map(|s| s.addr.clone()).collect();
    let acked = Arc::new(AtomicUsize::new(0));
    let dead = Arc::new(Mutex::new(HashSet::<usize>::new()));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (addrs, acked, dead, token, mark) = (
                addrs.clone(),
                acked.clone(),
                dead.clone(),
                token.to_owned(),
                mark.clone(),
            );
            thread::spawn(move || {
                let mut acks: HashMap<String, String> = HashMap::new();
                for n in 0..PER_WRITER {
                    let seq = u32::try_from(w * PER_WRITER + n).unwrap();
                    let key = format!("{mark}-{seq}");
                    let args = json!({
                        "cnpj_cpf": cpf(413_000_000 + seq),
                        "name": format!("{mark} {seq}"),
                        "idempotency_key": key,
                    });
                    // The balancer's retry: the next replica, the same request.
                    let mut pick = w + n;
                    let id = (0..6).find_map(|_| {
                        pick += 1;
                        let i = pick % addrs.len();
                        if dead.lock().unwrap().contains(&i) {
                            return None;
                        }
                        let resp = mcp_call(&addrs[i], &token, "dunning_debtors_create", &args)?;
                        tool_ok(&resp).ok()
                    });
                    let id = id.unwrap_or_else(|| panic!("{key}: no replica acknowledged it"));
                    acks.insert(key, id["id"].as_str().unwrap().to_owned());
                    acked.fetch_add(1, Ordering::Relaxed);
                }
                acks
            })
        })
        .collect();
    while acked.load(Ordering::Relaxed) < KILL_AFTER {
        thread::sleep(Duration::from_millis(5));
    }
    let victim = c.replicas.remove(2);
    let _ = victim.sigkill();
    dead.lock().unwrap().insert(2);
    let acks: HashMap<String, String> = writers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(acks.len(), WRITERS * PER_WRITER);

    // Every key made one debtor, the one acknowledged: read back by name through a
    // surviving replica.
    let listed = c.replicas[0].call(
        token,
        V2026,
        "dunning_debtors_list",
        json!({ "q": mark, "per_page": 100 }),
    );
    let page = tool_ok(&listed).unwrap();
    assert!(page["meta"]["total_pages"].as_u64().unwrap() <= 2, "{page}");
    let mut by_name: HashMap<String, Vec<String>> = HashMap::new();
    let mut pages = vec![page];
    if pages[0]["meta"]["total_pages"] == 2 {
        let second = c.replicas[1].call(
            token,
            V2026,
            "dunning_debtors_list",
            json!({ "q": mark, "per_page": 100, "page": 2 }),
        );
        pages.push(tool_ok(&second).unwrap());
    }
    for p in &pages {
        for d in p["data"].as_array().unwrap() {
            by_name
                .entry(d["name"].as_str().unwrap().to_owned())
                .or_default()
                .push(d["id"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(by_name.len(), WRITERS * PER_WRITER, "one debtor per key");
    for (key, id) in &acks {
        let name = key.replacen('-', " ", 1);
        assert_eq!(
            by_name.get(&name),
            Some(&vec![id.clone()]),
            "{key}: acknowledged once, stored once"
        );
    }
}
