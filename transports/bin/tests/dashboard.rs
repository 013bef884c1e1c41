//! The Grafana dashboard (`deploy/grafana/kobana-dunning.json`) queries only series a
//! running server exports: every metric name in every panel's PromQL `expr` must have a
//! sample in `/metrics` after a few real calls (a success, a tool error, a `401`).

mod common;

use std::collections::BTreeSet;

use common::{Srv, V2026};
use serde_json::{Value, json};

const DASHBOARD: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../deploy/grafana/kobana-dunning.json"
);

/// Every `expr` string anywhere in the dashboard.
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                match (k.as_str(), v) {
                    ("expr", Value::String(e)) => out.push(e.clone()),
                    _ => exprs(v, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|v| exprs(v, out)),
        _ => {}
    }
}

/// Removes every span from `open` to its matching `close` (with what is between).
fn strip(text: &str, open: char, close: char) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut quoted = false;
    for c in text.chars() {
        if depth > 0 {
            match c {
                '"' => quoted = !quoted,
                c if c == open && !quoted => depth += 1,
                c if c == close && !quoted => depth -= 1,
                _ => {}
            }
            continue;
        }
        if c == open {
            depth = 1;
        } else {
            out.push(c);
        }
    }
    out
}

/// PromQL words that are not metric names.
const KEYWORDS: [&str; 9] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
];

/// The metric names an expression selects: identifiers left once label matchers,
/// ranges and `by (...)` groupings are gone, that do not call (`rate(`) and are not
/// keywords or numbers.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut text = strip(&strip(expr, '{', '}'), '[', ']');
    for kw in ["by", "without"] {
        while let Some(at) = text.find(&format!("{kw} (")) {
            let rest = &text[at..];
            let end = rest.find(')').map_or(rest.len(), |e| e + 1);
            text.replace_range(at..at + end, " ");
        }
    }
    let mut names = BTreeSet::new();
    let bytes: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || "_:".contains(bytes[i])) {
                i += 1;
            }
            let word: String = bytes[start..i].iter().collect();
            let calls = bytes[i..].iter().find(|c| !c.is_whitespace()) == Some(&'(');
            if !calls && !KEYWORDS.contains(&word.as_str()) {
                names.insert(word);
            }
        } else if c.is_ascii_digit() || c == '.' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == '.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    names
}

#[test]
fn the_metric_name_extraction_reads_promql() {
    let names = metric_names(
        "sum(rate(a_total{x=\"y{z}\",t!=\"\"}[$__rate_interval])) / sum by (le, method) (b_bucket) + time() - max(c) * 0.5",
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["a_total", "b_bucket", "c"]
    );
}

#[test]
fn every_series_the_dashboard_queries_is_exported_by_a_running_server() {
    let dashboard: Value =
        serde_json::from_slice(&std::fs::read(DASHBOARD).expect("the dashboard")).unwrap();
    let mut all = Vec::new();
    exprs(&dashboard, &mut all);
    assert!(all.len() >= 20, "{} expressions", all.len());
    let names: BTreeSet<String> = all.iter().flat_map(|e| metric_names(e)).collect();
    assert!(names.contains("dunning_requests_total"), "{names:?}");
    assert!(names.contains("process_resident_memory_bytes"), "{names:?}");

    // A JWKS file beside the development key, so the JWKS series exist (RFC 8037's
    // example Ed25519 key: nothing is signed with it here).
    let dir = common::seeded_dir("dashboard");
    let jwks = dir.join("jwks.json");
    std::fs::write(
        &jwks,
        json!({"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "rfc8037",
                         "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]})
        .to_string(),
    )
    .unwrap();
    let config = format!(
        "metrics_listen = \"127.0.0.1:0\"\n[auth]\nissuer = \"https://issuer.example\"\njwks_file = \"{}\"\ndev_key = true\n",
        jwks.display()
    );
    let srv = Srv::start_in(dir, &[], Some(&config));
    let ok = srv.call(&srv.token, V2026, "dunning_me", json!({}));
    assert_eq!(ok.status, 200, "{}", ok.text());
    let bad = json!({ "cnpj_cpf": "529.982.247-25", "name": "Maria\u{7}Silva" });
    let r = srv.call(&srv.token, V2026, "dunning_debtors_create", bad);
    assert_eq!(r.structured()["error"]["code"], "VALIDATION_ERROR");
    assert_eq!(
        srv.rpc(Some("not-a-token"), V2026, "tools/list", json!({}))
            .status,
        401
    );
    let addr = srv
        .banner
        .lines()
        .find_map(|l| l.strip_prefix("Metrics: http://"))
        .map(|a| a.trim_end_matches("/metrics").to_owned())
        .unwrap_or_else(|| panic!("no Metrics line: {}", srv.banner));
    let text = common::http(&addr, "GET", "/metrics", &[], b"").text();
    let exported = |name: &str| {
        text.lines().any(|l| {
            !l.starts_with('#')
                && l.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
    };
    let missing: Vec<&String> = names.iter().filter(|n| !exported(n)).collect();
    assert!(
        missing.is_empty(),
        "queried by the dashboard, not exported: {missing:?}\n{text}"
    );
}
