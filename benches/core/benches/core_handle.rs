//! `Server::handle` alone (no sockets, no codec), era 2026, against a baseline measured
//! in the same run: `serde_json::from_slice::<Value>` + `to_vec` of the `tools/call` body.
//!
//! Run: `cargo bench -p dunning-benches -- --warm-up-time 1 --measurement-time 3`.
//! After criterion's own report, a table gives each median and its ratio to the baseline
//! (read back from criterion's `estimates.json`). Targets: `tools/call` ≤ 5 µs,
//! `tools/list` of 60 tools ≤ 50 µs (medians).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::Criterion;
use dunning_benches as fx;
use serde_json::Value;

const GROUP: &str = "core";
const BASELINE: &str = "baseline_json_roundtrip";

/// (bench id, fixture, target median in ns or 0).
fn cases() -> Vec<(&'static str, fx::Owned, f64)> {
    vec![
        ("server_discover", fx::discover(), 0.0),
        ("tools_list_60", fx::tools_list(), 50_000.0),
        ("tools_call", fx::tools_call(), 5_000.0),
        ("header_mismatch", fx::header_mismatch(), 0.0),
    ]
}

/// Refuses to bench a fixture that does not get the answer it stands for.
fn check(server: &dunning_core::Server<fx::BenchDomain>) {
    let env = fx::env();
    let answer = |o: &fx::Owned| {
        let h = o.header_views();
        let r = server.handle(&o.request(&h), &env);
        let v: Value = serde_json::from_slice(&r.body).expect("JSON answer");
        (r.status.as_u16(), v)
    };
    let (status, v) = answer(&fx::discover());
    assert_eq!(status, 200, "{v}");
    let (status, v) = answer(&fx::tools_list());
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["tools"].as_array().map(Vec::len), Some(60));
    let (status, v) = answer(&fx::tools_call());
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["structuredContent"]["served"], true, "{v}");
    let (status, v) = answer(&fx::header_mismatch());
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (400, Some(-32020)),
        "{v}"
    );
}

fn benches(c: &mut Criterion) {
    let server = fx::server();
    check(&server);
    let env = fx::env();
    let mut g = c.benchmark_group(GROUP);
    let call = fx::tools_call();
    g.bench_function(BASELINE, |b| {
        b.iter(|| {
            let v: Value = serde_json::from_slice(black_box(&call.body)).unwrap();
            black_box(serde_json::to_vec(&v).unwrap())
        });
    });
    for (id, fixture, _) in cases() {
        let headers = fixture.header_views();
        let req = fixture.request(&headers);
        g.bench_function(id, |b| {
            b.iter(|| black_box(server.handle(black_box(&req), &env)));
        });
    }
    g.finish();
}

/// Where criterion writes its results (its own rule: `CRITERION_HOME`, else the cargo
/// target directory).
fn criterion_home() -> PathBuf {
    if let Some(h) = std::env::var_os("CRITERION_HOME") {
        return h.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    target.join("criterion")
}

fn median_ns(id: &str) -> Option<f64> {
    let path = criterion_home()
        .join(GROUP)
        .join(id)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.pointer("/median/point_estimate")?.as_f64()
}

fn report() {
    let Some(base) = median_ns(BASELINE) else {
        println!(
            "(no estimates found under {}: ratios skipped)",
            criterion_home().display()
        );
        return;
    };
    println!(
        "\n{:<24} {:>12} {:>10} {:>10}",
        "bench", "median", "x baseline", "target"
    );
    println!(
        "{:<24} {:>9.2} µs {:>10} {:>10}",
        BASELINE,
        base / 1000.0,
        "1.00",
        "-"
    );
    for (id, _, target) in cases() {
        let Some(m) = median_ns(id) else { continue };
        let verdict = match target {
            t if t <= 0.0 => "-".to_owned(),
            t if m <= t => format!("≤{} µs ok", t / 1000.0),
            t => format!("≤{} µs MISSED", t / 1000.0),
        };
        println!(
            "{id:<24} {:>9.2} µs {:>10.2} {verdict:>10}",
            m / 1000.0,
            m / base
        );
    }
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c);
    c.final_summary();
    report();
}
