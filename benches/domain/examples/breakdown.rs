//! Where `dunning_charges_list` spends its time over 100,000 charges: the store's count
//! and page query alone, then the whole call through the core.
//!
//! `cargo run --release -p dunning-domain-benches --example breakdown [CHARGES]`
//! (`profile` as a second argument runs only 20 calls through the core, for callgrind).

use std::time::Instant;

use dunning_domain::store::{self, Kind, Order, Query};
use dunning_domain_benches::{call_request, handle, server_with_charges};
use serde_json::json;

fn time<R>(what: &str, n: u32, mut f: impl FnMut() -> R) {
    let mut v = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(f());
        v.push(t.elapsed());
    }
    v.sort();
    println!("{what:<60} median {:>10.3?}", v[v.len() / 2]);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let (server, org) = server_with_charges(n);
    if args.get(2).map(String::as_str) == Some("profile") {
        let (body, headers) = call_request("dunning_charges_list", json!({"per_page": 100}));
        for _ in 0..20 {
            std::hint::black_box(handle(&server, &body, &headers));
        }
        return;
    }
    let store = server.dispatch().store();
    time("store: count", 20, || {
        store::read(store, |tx| Ok(tx.count(Kind::Charge, &org, &[])?)).unwrap()
    });
    for offset in [0, 49_900] {
        time(
            &format!("store: find 100 by due_date, offset {offset}"),
            20,
            || {
                store::read(store, |tx| {
                    let q = Query {
                        sort: ("due_date", Order::Asc),
                        limit: Some(100),
                        offset,
                        ..Query::all()
                    };
                    Ok(tx.find(Kind::Charge, &org, &q)?.len())
                })
                .unwrap()
            },
        );
    }
    for (name, args) in [
        ("core: per_page=100", json!({"per_page": 100})),
        (
            "core: per_page=100 page=500",
            json!({"per_page": 100, "page": 500}),
        ),
    ] {
        let (body, headers) = call_request("dunning_charges_list", args);
        time(name, 20, || handle(&server, &body, &headers));
    }
}
