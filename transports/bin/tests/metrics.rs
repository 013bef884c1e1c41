//! Metrics and traces, end to end on the binary over real sockets: what
//! `/metrics` says after real requests, where it is served, what the jobs report, and
//! that a `tools/call` span reaches an OTLP receiver.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{Srv, V2025, V2026, http as request_at};
use serde_json::json;

/// The value of the first sample whose line starts with `series` (a name, or a name and
/// the opening of its labels), summed over every such line.
fn sample(text: &str, series: &str) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#') && l.starts_with(series))
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

fn scrape(srv: &Srv) -> String {
    let r = srv.request("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    r.text()
}

/// Polls `/metrics` (through `get`) until `ok` holds, for at most 10 s.
fn eventually(get: impl Fn() -> String, ok: impl Fn(&str) -> bool, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = get();
        if ok(&text) {
            return text;
        }
        assert!(Instant::now() < deadline, "{what} never showed:\n{text}");
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_tool_error_is_labelled_with_its_code_and_the_http_status_it_came_with() {
    let srv = Srv::start(&[], None);
    let bad = json!({ "cnpj_cpf": "529.982.247-25", "name": "Maria\u{7}Silva" });
    let r = srv.call(&srv.token, V2026, "dunning_debtors_create", bad);
    assert_eq!(r.status, 200, "a tool error is an HTTP 200");
    assert_eq!(r.structured()["error"]["code"], "VALIDATION_ERROR");
    let r = srv.call(&srv.token, V2025, "dunning_me", json!({}));
    assert_eq!(r.status, 200);
    let text = scrape(&srv);
    assert_eq!(
        sample(
            &text,
            "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_debtors_create\",era=\"2026\",status=\"200\",tool_error=\"VALIDATION_ERROR\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_me\",era=\"2025\",status=\"200\",tool_error=\"\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "dunning_request_duration_seconds_count{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_me\"}"
        ) == Some(1.0),
        "{text}"
    );
    // Probes are labelled by their endpoint and their HTTP method and path.
    let probe = "dunning_requests_total{endpoint=\"metrics\",method=\"GET /metrics\"";
    assert!(
        sample(&text, probe).is_none(),
        "this scrape is counted once it is answered"
    );
    let text = scrape(&srv);
    assert!(sample(&text, probe).is_some(), "{text}");
    // No tenant data in any label.
    let org = dunning_domain::demo::stable_id("org:demo");
    assert!(!text.contains(&org) && !text.contains("demo.example"));
}

#[test]
fn auth_failures_are_counted_by_reason_and_rate_limits_by_scope() {
    let srv = Srv::start(
        &[],
        Some(
            "[rate_limit]\ntoken_per_minute = 1\ntoken_burst = 1\norg_per_minute = 6000\norg_burst = 1000\n",
        ),
    );
    let expired = srv.mint(&[
        "--org",
        "demo",
        "--person",
        "ana@demo.example",
        "--ttl",
        "-3600",
    ]);
    let api = srv.mint_api("demo", "ana@demo.example");
    let cases = [
        (None, "no_token"),
        (Some("not-a-jwt"), "malformed"),
        (Some(expired.as_str()), "expired"),
        (Some(api.as_str()), "audience"),
    ];
    for (token, _) in &cases {
        let r = srv.rpc(*token, V2026, "tools/list", json!({}));
        assert_eq!(r.status, 401, "{}", r.text());
    }
    // One request a minute for this token: the second is refused by its bucket.
    let limited = srv.mint(&["--org", "demo", "--person", "bruno@demo.example"]);
    let statuses: Vec<u16> = (0..2)
        .map(|_| {
            srv.rpc(Some(&limited), V2026, "tools/list", json!({}))
                .status
        })
        .collect();
    assert_eq!(statuses, [200, 429]);
    let text = scrape(&srv);
    for (_, reason) in &cases {
        assert_eq!(
            sample(
                &text,
                &format!("dunning_auth_failures_total{{reason=\"{reason}\"}}")
            ),
            Some(1.0),
            "{reason}: {text}"
        );
    }
    assert_eq!(
        sample(&text, "dunning_rate_limited_total{scope=\"token\"}"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(&text, "dunning_rate_limited_total{scope=\"org\"}"),
        Some(0.0)
    );
    assert!(
        sample(
            &text,
            "dunning_requests_total{endpoint=\"mcp\",method=\"\",tool=\"\",era=\"\",status=\"401\""
        ) == Some(4.0),
        "a 401 decided from the head names its endpoint: {text}"
    );
}

/// The address of the metrics listener, from the banner's `Metrics:` line.
fn metrics_addr(srv: &Srv) -> String {
    let line = srv
        .banner
        .lines()
        .find_map(|l| l.strip_prefix("Metrics: http://"))
        .unwrap_or_else(|| panic!("no Metrics line: {}", srv.banner));
    line.trim_end_matches("/metrics").to_owned()
}

#[test]
fn metrics_listen_serves_metrics_and_the_public_listener_does_not() {
    let srv = Srv::start(&[], Some("metrics_listen = \"127.0.0.1:0\"\n"));
    let addr = metrics_addr(&srv);
    assert!(
        addr.starts_with("127.0.0.1:") && !addr.ends_with(":0"),
        "{addr}"
    );
    assert_eq!(
        srv.call(&srv.token, V2026, "dunning_me", json!({})).status,
        200
    );
    let public = srv.request("GET", "/metrics", &[], b"");
    assert_eq!(public.status, 404, "not on the public listener");
    let r = request_at(&addr, "GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.text();
    assert!(
        sample(
            &text,
            "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_me\""
        ) == Some(1.0),
        "{text}"
    );
    assert!(
        sample(&text, "process_resident_memory_bytes").is_some_and(|v| v > 0.0),
        "the process collector: {text}"
    );
    assert_eq!(request_at(&addr, "GET", "/", &[], b"").status, 404);
    assert_eq!(request_at(&addr, "GET", "/healthz", &[], b"").status, 404);
    assert_eq!(request_at(&addr, "POST", "/metrics", &[], b"").status, 405);
    // Asked for, the public listener serves it too.
    let both = Srv::start(
        &[],
        Some("metrics_listen = \"127.0.0.1:0\"\nmetrics_on_public = true\n"),
    );
    assert_eq!(both.request("GET", "/metrics", &[], b"").status, 200);
    assert_eq!(
        request_at(&metrics_addr(&both), "GET", "/metrics", &[], b"").status,
        200
    );
}

#[test]
fn job_counters_move_after_an_engine_tick_and_a_webhook_delivery() {
    // The engine every second; deliveries recorded (nothing leaves the machine).
    let srv = Srv::start(&[], Some("[jobs]\nengine_interval_secs = 1\n"));
    let api = srv.mint_api("demo", "ana@demo.example");
    let auth = format!("Bearer {api}");
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let text = eventually(
        || scrape(&srv),
        |t| sample(t, "dunning_engine_ticks_total{outcome=\"ok\"}").is_some_and(|v| v >= 1.0),
        "an engine tick",
    );
    assert_eq!(
        sample(&text, "dunning_engine_ticks_total{outcome=\"error\"}"),
        Some(0.0)
    );
    assert!(sample(&text, "dunning_webhook_outbox_pending").is_some());
    assert!(sample(&text, "dunning_exports{state=\"processed\"}").is_some());
    let before = sample(
        &text,
        "dunning_webhook_attempts_total{outcome=\"delivered\"}",
    )
    .expect("registered at zero");
    // A webhook for every event, then an event (`charge.created`): its delivery is
    // attempted on a tick.
    let r = srv.request(
        "POST",
        "/v1/webhooks",
        &headers,
        json!({"url": "https://receiver.example/hook", "events": ["*"]})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let r = srv.request(
        "POST",
        "/v1/debtors",
        &headers,
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Metrics"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let debtor = r.json()["id"].as_str().unwrap().to_owned();
    let r = srv.request(
        "POST",
        "/v1/charges",
        &headers,
        json!({"debtor_id": debtor, "amount": 99.9, "due_date": "2027-01-10", "payment_method": "pix"})
            .to_string()
            .as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let text = eventually(
        || scrape(&srv),
        |t| {
            sample(t, "dunning_webhook_attempts_total{outcome=\"delivered\"}")
                .is_some_and(|v| v > before)
        },
        "a delivered webhook attempt",
    );
    assert!(sample(&text, "dunning_webhook_outbox_oldest_pending_age_seconds").is_some());
    // The demo's ruler sends at the suite's default instant; at another (CI's night run)
    // it may have nothing due, so only the series' presence is asserted.
    assert!(
        sample(&text, "dunning_deliveries_total{channel=\"email\"").is_some(),
        "{text}"
    );
}

/// A one-shot OTLP/HTTP receiver: the bodies of the POSTs it got, until `stop`.
fn otlp_receiver() -> (u16, mpsc::Receiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 8192];
            // Head, then Content-Length bytes.
            let body = loop {
                let Ok(n) = conn.read(&mut chunk) else {
                    break None;
                };
                if n == 0 {
                    break None;
                }
                buf.extend_from_slice(&chunk[..n]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let len: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + len {
                    assert!(head.starts_with("post /v1/traces "), "{head}");
                    assert!(
                        head.contains("content-type: application/x-protobuf"),
                        "{head}"
                    );
                    break Some(buf[end + 4..end + 4 + len].to_vec());
                }
            };
            let _ = conn
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            if let Some(b) = body {
                if tx.send(b).is_err() {
                    return;
                }
            }
        }
    });
    (port, rx)
}

#[test]
fn a_tools_call_span_reaches_the_otlp_endpoint_with_the_tool_name() {
    let (port, bodies) = otlp_receiver();
    let mut srv = Srv::start(
        &[],
        Some(&format!(
            "[telemetry]\notlp_endpoint = \"http://127.0.0.1:{port}\"\n"
        )),
    );
    let r = srv.call(&srv.token, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200);
    let bad = json!({ "cnpj_cpf": "529.982.247-25", "name": "Maria\u{7}Silva" });
    assert_eq!(
        srv.call(&srv.token, V2026, "dunning_debtors_create", bad)
            .status,
        200
    );
    // The batch is flushed at shutdown at the latest.
    assert!(srv.terminate().success());
    let mut all = Vec::new();
    while let Ok(b) = bodies.recv_timeout(Duration::from_secs(5)) {
        all.extend(b);
    }
    let has = |s: &str| all.windows(s.len()).any(|w| w == s.as_bytes());
    for expected in [
        "tools/call dunning_me",
        "tools/call dunning_debtors_create",
        "mcp.method.name",
        "gen_ai.tool.name",
        "gen_ai.operation.name",
        "execute_tool",
        "mcp.protocol.version",
        "2026-07-28",
        "error.type",
        "tool_error",
        "VALIDATION_ERROR",
        "kobana-dunning",
    ] {
        assert!(
            has(expected),
            "{expected:?} is not in the exported spans: {}",
            String::from_utf8_lossy(&all)
        );
    }
}
