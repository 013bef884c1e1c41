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
    let server = server_with_charges(100_000);
    let org = {
        let (body, headers) = call_request("dunning_me", json!({}));
        assert_eq!(handle(&server, &body, &headers), 200);
        // The organization id is Ana's; read it back from the store through the domain.
        store::read(server.dispatch().store(), |tx| Ok(tx.organizations()?)).expect("orgs")[0]
            .clone()
    };
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
        assert_eq!(handle(&server, &body, &headers), 200);
        g.bench_function(name, |b| b.iter(|| handle(&server, &body, &headers)));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
