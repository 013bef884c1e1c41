//! Three replicas on one PostgreSQL database, each running the ruler engine every
//! second against one real SMTP server (a slow one, so their sends overlap): every
//! delivery is sent once. Each claims a delivery with a lease before sending it, so the
//! others leave it alone. Runs when `DUNNING_TEST_PG` names a database (CI's PostgreSQL
//! step), on a fresh schema dropped at the end; says so and passes otherwise.

mod common;
#[path = "support/smtp.rs"]
mod smtp;

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

use common::pg::{in_schema, pg_url};
use common::{Srv, V2026, cpf, date_in, scratch, tool_ok};
use dunning_domain::store::postgres::PostgresStore;
use serde_json::{Value, json};
use smtp::Sink;

const PUBLIC_URL: &str = "http://127.0.0.1:9/";
/// Messages the test sends.
const MESSAGES: u32 = 30;

fn ok(srv: &Srv, token: &str, tool: &str, args: Value) -> Value {
    tool_ok(&srv.call(token, V2026, tool, args)).unwrap_or_else(|e| panic!("{tool}: {e}"))
}

#[test]
fn three_replicas_send_each_delivery_once() {
    let Some(url) = pg_url() else { return };
    let sink = Sink::slow(150);
    let db = PostgresStore::scratch(&url).unwrap();
    let store_url = in_schema(&url, db.scratch_schema().unwrap());
    let dir = scratch("cluster-channels");
    let config = dir.join("cluster.toml");
    std::fs::write(
        &config,
        format!(
            "[jobs]\nengine_interval_secs = 1\n\
             [rate_limit]\norg_per_minute = 600000\norg_burst = 100000\n\
             token_per_minute = 600000\ntoken_burst = 100000\n\
             [channels.email]\ndriver = \"smtp\"\nurl = \"smtp://127.0.0.1:{}\"\n\
             from = \"Cobranca Demo <cobranca@demo.example>\"\n",
            sink.port
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap().to_owned();
    let starts: Vec<_> = (0..3)
        .map(|_| {
            let (dir, store_url, config) = (dir.clone(), store_url.clone(), config.clone());
            thread::spawn(move || {
                let extra = [
                    "--store",
                    &store_url,
                    "--public-url",
                    PUBLIC_URL,
                    "--config",
                    &config,
                ];
                Srv::start_in(dir, &extra, None)
            })
        })
        .collect();
    let mut replicas: Vec<Srv> = starts.into_iter().map(|s| s.join().unwrap()).collect();
    let token = replicas[0].token.clone();

    // A ruler open all day, one e-mail on the due date; charges due today, written
    // through every replica in turn.
    let r = &replicas;
    let created = ok(
        &r[0],
        &token,
        "dunning_rulers_create",
        json!({
            "name": "Régua do cluster",
            "send_window": {"start": "00:00", "end": "23:59", "saturday_end": "23:59", "skip_holidays": false},
            "steps": [{"offset_days": 0, "channel": "email", "send_at": "00:00",
                       "template": {"subject": "Vence hoje", "body": "Olá {{debtor.name}}, {{charge.amount}} vence hoje."}}]
        }),
    );
    let ruler = created["id"].as_str().unwrap().to_owned();
    let step = created["steps"][0]["id"].as_str().unwrap().to_owned();
    ok(
        &r[1],
        &token,
        "dunning_rulers_activate",
        json!({"id": ruler}),
    );
    let mut addresses = Vec::new();
    for n in 0..MESSAGES {
        let srv = &r[(n % 3) as usize];
        let d = ok(
            srv,
            &token,
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf(428_000_000 + n), "name": format!("Cliente {n}")}),
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let email = format!("cliente{n}@cluster.example");
        ok(
            srv,
            &token,
            "dunning_contact_points_create",
            json!({"id": d, "channel": "email", "value": email}),
        );
        ok(
            srv,
            &token,
            "dunning_charges_create",
            json!({"debtor_id": d, "amount": 10.0 + f64::from(n), "due_date": date_in(0),
                   "payment_method": "pix", "ruler_id": ruler}),
        );
        addresses.push(email);
    }

    // Every one arrives...
    let deadline = Instant::now() + Duration::from_secs(90);
    let received = |sink: &Sink| -> HashMap<String, usize> {
        let mut by = HashMap::new();
        for e in sink.events() {
            if e["event"] == "message" {
                for to in e["rcpt_tos"].as_array().unwrap() {
                    *by.entry(to.as_str().unwrap().to_owned()).or_insert(0) += 1;
                }
            }
        }
        by
    };
    while addresses
        .iter()
        .any(|a| !received(&sink).contains_key(a.as_str()))
    {
        assert!(
            Instant::now() < deadline,
            "not all sent: {:?}",
            received(&sink)
        );
        thread::sleep(Duration::from_millis(250));
    }
    // ...and after several more ticks of every replica, still once.
    thread::sleep(Duration::from_secs(4));
    let got = received(&sink);
    for a in &addresses {
        assert_eq!(
            got.get(a.as_str()),
            Some(&1),
            "{a} received {:?}",
            got.get(a.as_str())
        );
    }
    let sent = ok(
        &r[2],
        &token,
        "dunning_deliveries_list",
        json!({"step_id": step, "status": "sent", "per_page": 100}),
    );
    let ours: Vec<&Value> = sent["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["to"]
                .as_str()
                .is_some_and(|t| t.ends_with("@cluster.example"))
        })
        .collect();
    assert_eq!(ours.len(), MESSAGES as usize);
    assert!(ours.iter().all(|d| d["attempt"] == 1), "one attempt each");
    // The work was shared: more than one replica sent.
    let senders = replicas
        .iter()
        .filter(|s| s.log().contains("delivery sent"))
        .count();
    assert!(senders >= 2, "only {senders} replica sent");
    for s in &mut replicas {
        assert!(s.terminate().success());
    }
}
