//! `Server::handle` alone (no sockets, no codec), era 2026, against a baseline measured
//! in the same run: `serde_json::from_slice::<Value>` + `to_vec` of the `tools/call` body.
//!
//! Run: `cargo bench -p dunning-benches -- --warm-up-time 1 --measurement-time 3`.
//! Every case is measured twice: group `core` with criterion's wall clock, group
//! `core_cpu` with the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`), which time spent
//! preempted does not inflate, so it stays meaningful on a shared, loaded machine.
//! After criterion's own report, a table gives each median and its ratio to the baseline
//! (read back from criterion's `estimates.json`). Targets: `tools/call` ≤ 5 µs,
//! `tools/list` of 60 tools ≤ 50 µs (medians).

use std::hint::black_box;
use std::path::PathBuf;

use std::time::Duration;

use cpu_time::ThreadTime;
use criterion::Criterion;
use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{BenchmarkGroup, Throughput};
use dunning_benches as fx;
use serde_json::Value;

/// Groups: wall clock, thread CPU time.
const GROUPS: [&str; 2] = ["core", "core_cpu"];
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

/// Thread CPU time as a criterion measurement.
struct ThreadCpu;

impl Measurement for ThreadCpu {
    type Intermediate = ThreadTime;
    type Value = Duration;

    fn start(&self) -> ThreadTime {
        ThreadTime::now()
    }
    fn end(&self, start: ThreadTime) -> Duration {
        start.elapsed()
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, v: &Duration) -> f64 {
        v.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &Nanos
    }
}

/// Formats nanoseconds as ns/µs/ms (CPU time).
struct Nanos;

impl ValueFormatter for Nanos {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = match typical {
            t if t < 1e3 => (1.0, "ns (cpu)"),
            t if t < 1e6 => (1e3, "µs (cpu)"),
            _ => (1e6, "ms (cpu)"),
        };
        values.iter_mut().for_each(|v| *v /= div);
        unit
    }
    fn scale_throughputs(&self, _: f64, _: &Throughput, values: &mut [f64]) -> &'static str {
        values.iter_mut().for_each(|v| *v = 1e9 / *v);
        "elem/s (cpu)"
    }
    fn scale_for_machines(&self, _: &mut [f64]) -> &'static str {
        "ns"
    }
}

/// The baseline and every case into one group, whatever its clock.
fn run<M: Measurement>(mut g: BenchmarkGroup<'_, M>) {
    let server = fx::server();
    let env = fx::env();
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

fn median_ns(group: &str, id: &str) -> Option<f64> {
    let path = criterion_home()
        .join(group)
        .join(id)
        .join("new")
        .join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    v.pointer("/median/point_estimate")?.as_f64()
}

fn report() {
    for group in GROUPS {
        let Some(base) = median_ns(group, BASELINE) else {
            println!(
                "(no {group} estimates under {}: ratios skipped)",
                criterion_home().display()
            );
            continue;
        };
        println!(
            "\n{:<24} {:>12} {:>10} {:>14}",
            format!("{group}/"),
            "median",
            "x baseline",
            "target"
        );
        println!(
            "{:<24} {:>9.2} µs {:>10} {:>14}",
            BASELINE,
            base / 1000.0,
            "1.00",
            "-"
        );
        for (id, _, target) in cases() {
            let Some(m) = median_ns(group, id) else {
                continue;
            };
            let verdict = match target {
                t if t <= 0.0 => "-".to_owned(),
                t if m <= t => format!("≤{} µs ok", t / 1000.0),
                t => format!("≤{} µs MISSED", t / 1000.0),
            };
            println!(
                "{id:<24} {:>9.2} µs {:>10.2} {verdict:>14}",
                m / 1000.0,
                m / base
            );
        }
    }
}

fn main() {
    check(&fx::server());
    let mut wall = Criterion::default().configure_from_args();
    run(wall.benchmark_group(GROUPS[0]));
    let mut cpu = Criterion::default()
        .with_measurement(ThreadCpu)
        .configure_from_args();
    run(cpu.benchmark_group(GROUPS[1]));
    wall.final_summary();
    report();
}
