//! `dunning_charges_create` through the core on a debtor that already has 100, 1,000 and
//! 10,000 charges: a write must cost the same whatever the size of
//! the debtor, since SQLite has one writer and a slow write delays every tenant.
//!
//! Only the create is timed. After each one the new charge is deleted straight from the
//! store, untimed, so the debtor keeps exactly its size however many iterations
//! criterion runs. Report the medians as ratios to the 100-charge case.
//!
//! Run: `cargo bench -p dunning-domain-benches --bench charges_create -- --warm-up-time 1 --measurement-time 5`

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use dunning_domain::store::{self, Kind};
use dunning_domain_benches::{call_request, handle, handle_at, server_with_charges};
use serde_json::{Value, json};

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("charges_create_per_debtor");
    g.sample_size(30);
    for n in [100usize, 1_000, 10_000] {
        let (server, org) = server_with_charges(n);
        let (body, headers) = call_request("dunning_debtors_list", json!({}));
        let (_, answer) = handle(&server, &body, &headers);
        let answer: Value = serde_json::from_slice(&answer).expect("json");
        let debtor = answer["result"]["structuredContent"]["data"][0]["id"]
            .as_str()
            .expect("the debtor")
            .to_owned();
        let (body, headers) = call_request(
            "dunning_charges_create",
            json!({"debtor_id": debtor, "amount": 150.0, "due_date": "2026-12-21",
                   "payment_method": "boleto", "description": "Mensalidade"}),
        );
        let mut counter = 1_000u64;
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    counter += 1;
                    let started = Instant::now();
                    let (status, answer) = handle_at(&server, &body, &headers, counter);
                    spent += started.elapsed();
                    assert_eq!(status, 200);
                    let answer: Value = serde_json::from_slice(&answer).expect("json");
                    let id = answer["result"]["structuredContent"]["id"]
                        .as_str()
                        .unwrap_or_else(|| panic!("created: {answer}"))
                        .to_owned();
                    store::write(server.dispatch().store(), store::WriteScope::All, |tx| {
                        Ok(tx.delete(Kind::Charge, &org, &id)?)
                    })
                    .expect("delete");
                }
                spent
            });
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
