//! Operations, end to end on the binary: exports start the moment they are
//! queued and say how far they are.

mod common;

use std::time::{Duration, Instant};

use common::{Srv, cpf};
use serde_json::{Value, json};

#[test]
fn an_export_of_a_thousand_rows_completes_within_two_seconds_of_being_queued() {
    // Default intervals: the engine ticks every 60 s, so only the wake-up can be this fast.
    // (Rate limits off: a thousand creations in a burst.)
    let srv = Srv::start(&[], Some("[rate_limit]\nenabled = false\n"));
    let api = srv.mint_api("demo", "ana@demo.example");
    let bearer = format!("Bearer {api}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let post = |target: &str, body: Value| {
        srv.request("POST", target, &headers, body.to_string().as_bytes())
    };
    for i in 0..1_000 {
        let r = post(
            "/v1/debtors",
            json!({"cnpj_cpf": cpf(300_000_000 + i), "name": format!("Exportada {i:04}"), "tags": ["export-test"]}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    }
    // Let the first engine tick (at start) go by, so it cannot be what builds the file.
    std::thread::sleep(Duration::from_millis(300));
    let queued = Instant::now();
    let r = post(
        "/v1/exports",
        json!({"resource": "debtors", "filters": {"tag": "export-test"}}),
    );
    assert_eq!(r.status, 202, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(r.json()["status"], "queued");
    let done = loop {
        let e = srv
            .request("GET", &format!("/v1/exports/{id}"), &headers, b"")
            .json();
        if e["status"] == "processed" || e["status"] == "failed" {
            break e;
        }
        assert!(
            queued.elapsed() < Duration::from_secs(10),
            "still {} after 10 s: {e}",
            e["status"]
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = queued.elapsed();
    assert_eq!(done["status"], "processed", "{done}");
    assert_eq!(done["row_count"], 1_000);
    assert_eq!(done["progress"], 100);
    assert!(
        took < Duration::from_secs(2),
        "processed {took:?} after being queued"
    );
    // The line is written once the drain that built the file returns, which can be just
    // after a reader saw `processed`: give it a moment.
    let logged = |log: &str| {
        log.lines()
            .any(|l| l.contains("export finished") && l.contains(&id) && l.contains("rows=1000"))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !logged(&srv.log()) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let log = srv.log();
    assert!(logged(&log), "one log line at the end: {log}");
}
