//! `dunning_charges_list` with `per_page=100` over 100,000 charges, through the core
//! (target: ≤ 5 ms median), beside a baseline measured in the same run: the bare store
//! query that fetches the same 100 documents (no core, no JSON-RPC, no computed fields).
//!
//! Run: `cargo bench -p dunning-domain-benches -- --warm-up-time 1 --measurement-time 5`

use criterion::{Criterion, criterion_group, criterion_main};
use dunning_domain::store::{self, Kind, Order, Query};
use dunning_domain_benches::{call_request, handle, server_with_charges};
use serde_json::json;

fn bench(c: &mut Criterion) {
    let (server, org) = server_with_charges(100_000);
    let mut g = c.benchmark_group("charges_list_100k");
    g.sample_size(30);
    g.bench_function("baseline: store query of 100 docs", |b| {
        b.iter(|| {
            store::read(server.dispatch().store(), |tx| {
                let q = Query {
                    sort: ("due_date", Order::Asc),
                    limit: Some(100),
                    ..Query::all()
                };
                Ok((
                    tx.count(Kind::Charge, &org, &[])?,
                    tx.find(Kind::Charge, &org, &q)?.len(),
                ))
            })
            .expect("query")
        });
    });
    for (name, args) in [
        ("tools/call per_page=100", json!({"per_page": 100})),
        (
            "tools/call per_page=100 status=overdue sort=amount",
            json!({"per_page": 100, "status": "overdue", "sort_by": "amount"}),
        ),
        (
            "tools/call per_page=100 page=500",
            json!({"per_page": 100, "page": 500}),
        ),
    ] {
        let (body, headers) = call_request("dunning_charges_list", args);
        // What is timed is a real page: 100 charges of a large total, not an error.
        let (status, answer) = handle(&server, &body, &headers);
        assert_eq!(status, 200);
        let answer: serde_json::Value = serde_json::from_slice(&answer).expect("json");
        let page = &answer["result"]["structuredContent"];
        assert_eq!(page["data"].as_array().map(Vec::len), Some(100), "{name}");
        assert!(page["meta"]["total"].as_u64() > Some(10_000), "{name}");
        g.bench_function(name, |b| b.iter(|| handle(&server, &body, &headers)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
