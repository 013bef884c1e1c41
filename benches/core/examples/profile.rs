//! Runs one bench case N times, for a profiler that counts rather than times:
//! `valgrind --tool=callgrind target/release/examples/profile tools_call 2000`.
//! Cases: baseline, discover, tools_list, tools_call, mismatch.

use std::hint::black_box;

use dunning_benches as fx;
use serde_json::Value;

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "tools_call".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let server = fx::server();
    let env = fx::env();
    let fixture = match case.as_str() {
        "discover" => fx::discover(),
        "tools_list" => fx::tools_list(),
        "mismatch" => fx::header_mismatch(),
        _ => fx::tools_call(),
    };
    let headers = fixture.header_views();
    let req = fixture.request(&headers);
    let first = server.handle(&req, &env);
    eprintln!(
        "{case}: status {}, {} body bytes, {n} iterations",
        first.status,
        first.body.len()
    );
    for _ in 0..n {
        if case == "baseline" {
            let v: Value = serde_json::from_slice(black_box(&fixture.body)).unwrap();
            black_box(serde_json::to_vec(&v).unwrap());
        } else {
            let _response = black_box(server.handle(black_box(&req), &env));
        }
    }
}
