//! E-mail to debtors over real SMTP: the binary with `[channels.email] driver = "smtp"`
//! against a real SMTP server on loopback (`aiosmtpd`, see `support/smtp.rs`).
//!
//! * a ruler step and a confirmed `dunning_charges_notify` each arrive: addressed to the
//!   contact point, with the subject, the organization's name and CNPJ, a text and an
//!   HTML part, `List-Unsubscribe` (+ `List-Unsubscribe-Post`), and the delivery is
//!   `sent` with the `Message-ID` recorded as its `provider_message_id`;
//! * the unsubscribe link opts the contact point out at once (a forged one changes
//!   nothing);
//! * a refused recipient (`550`) bounces the delivery with the code and counts the
//!   bounce (the contact point becomes `invalid`); a `421` is retried and then sent.
//!
//! The ruler these tests make sends all day, Monday to Saturday, so the suite's
//! night-time and Saturday runs send too.

mod common;
#[path = "support/smtp.rs"]
mod smtp;

use std::time::{Duration, Instant};

use common::confirm::{ask, confirm, success};
use common::{Srv, V2026, cpf, date_in, tool_ok};
use serde_json::{Value, json};
use smtp::Sink;

fn config(port: u16) -> String {
    format!(
        "[jobs]\nengine_interval_secs = 1\n\
         [channels]\nretry_base_secs = 1\nretry_max_secs = 2\n\
         [channels.email]\ndriver = \"smtp\"\nurl = \"smtp://127.0.0.1:{port}\"\n\
         from = \"Cobranca Demo <cobranca@demo.example>\"\nreply_to = \"financeiro@demo.example\"\n"
    )
}

fn ok(srv: &Srv, tool: &str, args: Value) -> Value {
    tool_ok(&srv.call(&srv.token, V2026, tool, args)).unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// An active ruler sending one e-mail on the due date, at any hour of a sending day.
fn all_day_ruler(srv: &Srv) -> String {
    let r = ok(
        srv,
        "dunning_rulers_create",
        json!({
            "name": "Régua de teste por e-mail",
            "send_window": {"start": "00:00", "end": "23:59", "saturday_end": "23:59", "skip_holidays": false},
            "steps": [{"offset_days": 0, "channel": "email", "send_at": "00:00",
                       "template": {"subject": "Sua fatura vence hoje, {{debtor.name}}",
                                    "body": "Olá {{debtor.name}}, sua fatura de {{charge.amount}} vence hoje."}}]
        }),
    );
    let rid = id(&r);
    ok(srv, "dunning_rulers_activate", json!({"id": rid}));
    rid
}

/// A debtor with one e-mail contact point; returns (debtor, contact point).
fn debtor(srv: &Srv, n: u32, name: &str, email: &str) -> (String, String) {
    let d = id(&ok(
        srv,
        "dunning_debtors_create",
        json!({"cnpj_cpf": cpf(n), "name": name}),
    ));
    let cp = id(&ok(
        srv,
        "dunning_contact_points_create",
        json!({"id": d, "channel": "email", "value": email}),
    ));
    (d, cp)
}

fn charge(srv: &Srv, debtor: &str, ruler: &str, due_in: i64) -> String {
    id(&ok(
        srv,
        "dunning_charges_create",
        json!({"debtor_id": debtor, "amount": 123.45, "due_date": date_in(due_in),
               "payment_method": "pix", "ruler_id": ruler}),
    ))
}

/// The deliveries about `charge`.
fn deliveries(srv: &Srv, charge: &str) -> Vec<Value> {
    ok(srv, "dunning_deliveries_list", json!({"charge_id": charge}))["data"]
        .as_array()
        .unwrap()
        .clone()
}

/// Waits (at most 30 s) until a delivery about `charge` satisfies `pred`.
fn wait_delivery(srv: &Srv, charge: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(d) = deliveries(srv, charge).into_iter().find(|d| pred(d)) {
            return d;
        }
        assert!(
            Instant::now() < deadline,
            "no delivery {what} for {charge}: {:?}",
            deliveries(srv, charge)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A confirmed `dunning_charges_notify` by e-mail with a built-in template.
fn notify(srv: &Srv, charge: &str) -> Value {
    let args = json!({"id": charge, "channel": "email", "template_id": "reminder"});
    let (state, message) = ask(srv, &srv.token, "dunning_charges_notify", &args);
    assert!(message.contains("e-mail"), "{message}");
    success(&confirm(
        srv,
        &srv.token,
        "dunning_charges_notify",
        &args,
        &state,
    ))
}

/// The organization's name and CNPJ as every message must print them.
fn creditor(srv: &Srv) -> (String, String) {
    let me = ok(srv, "dunning_me", json!({}));
    let org = &me["organization"];
    let c = org["cnpj"].as_str().unwrap();
    let formatted = format!(
        "{}.{}.{}/{}-{}",
        &c[..2],
        &c[2..5],
        &c[5..8],
        &c[8..12],
        &c[12..]
    );
    (org["name"].as_str().unwrap().to_owned(), formatted)
}

/// What every e-mail must carry.
fn check_message(m: &Value, to: &str, subject: &str, creditor: &(String, String)) {
    let h = &m["headers"];
    assert_eq!(m["rcpt_tos"], json!([to]), "{m}");
    assert!(h["to"].as_str().unwrap().contains(to), "{m}");
    assert_eq!(h["subject"], subject, "{m}");
    assert_eq!(h["from"], "Cobranca Demo <cobranca@demo.example>", "{m}");
    assert_eq!(h["reply-to"], "financeiro@demo.example", "{m}");
    assert_eq!(m["content_type"], "multipart/alternative", "{m}");
    let text = m["text"].as_str().expect("a text part");
    let html = m["html"].as_str().expect("an HTML part");
    for part in [text, html] {
        assert!(part.contains(&creditor.0), "the creditor's name in {part}");
        assert!(
            part.contains(&format!("CNPJ {}", creditor.1)),
            "the CNPJ in {part}"
        );
    }
    let unsubscribe = h["list-unsubscribe"].as_str().expect("List-Unsubscribe");
    assert!(
        unsubscribe.starts_with("<http://127.0.0.1:")
            && unsubscribe.contains("/channels/unsubscribe?t=v1."),
        "{unsubscribe}"
    );
    assert_eq!(h["list-unsubscribe-post"], "List-Unsubscribe=One-Click");
    let link = unsubscribe.trim_matches(['<', '>']);
    assert!(text.contains(link), "the link in the text part");
    assert!(
        html.contains(&link.replace('&', "&amp;")),
        "the link in the HTML part"
    );
}

#[test]
fn a_ruler_step_and_a_confirmed_notify_reach_a_real_smtp_server() {
    let sink = Sink::start();
    let mut srv = Srv::start(&[], Some(&config(sink.port)));
    let creditor = creditor(&srv);
    let ruler = all_day_ruler(&srv);

    // The ruler step: due today, sent by the engine's next tick.
    let (d1, _) = debtor(&srv, 424_000_001, "Ana Régua", "ana.regua@example.com");
    let c1 = charge(&srv, &d1, &ruler, 0);
    let m = sink.wait(30, "the ruler's e-mail", |e| {
        e["event"] == "message" && e["rcpt_tos"] == json!(["ana.regua@example.com"])
    });
    check_message(
        &m,
        "ana.regua@example.com",
        "Sua fatura vence hoje, Ana Régua",
        &creditor,
    );
    assert!(m["text"].as_str().unwrap().contains("R$ 123,45"), "{m}");
    let sent = wait_delivery(&srv, &c1, "sent", |d| d["status"] == "sent");
    assert_eq!(sent["origin"], "ruler");
    assert_eq!(
        sent["provider_message_id"], m["headers"]["message-id"],
        "{sent}"
    );

    // The manual notify (due in ten days: the step is not due yet, so only this one).
    let (d2, cp2) = debtor(
        &srv,
        424_000_002,
        "Bruno Manual",
        "bruno.manual@example.com",
    );
    let c2 = charge(&srv, &d2, &ruler, 10);
    let result = notify(&srv, &c2);
    assert_eq!(result["structuredContent"]["status"], "queued", "{result}");
    let m = sink.wait(30, "the notify's e-mail", |e| {
        e["event"] == "message" && e["rcpt_tos"] == json!(["bruno.manual@example.com"])
    });
    let due = date_in(10);
    let subject = format!(
        "Lembrete: sua fatura vence em {}/{}/{}",
        &due[8..],
        &due[5..7],
        &due[..4]
    );
    check_message(&m, "bruno.manual@example.com", &subject, &creditor);
    let sent = wait_delivery(&srv, &c2, "sent", |d| d["status"] == "sent");
    assert_eq!(sent["origin"], "manual");
    assert_eq!(sent["to"], "bruno.manual@example.com");
    let message_id = m["headers"]["message-id"].as_str().unwrap();
    assert_eq!(sent["provider_message_id"], message_id);
    assert_eq!(
        message_id,
        format!("<{}@demo.example>", sent["id"].as_str().unwrap())
    );
    assert_eq!(
        sink.messages_to("bruno.manual@example.com").len(),
        1,
        "sent once"
    );

    // The unsubscribe link: a GET shows a button and changes nothing, a forged link is
    // refused, the one-click POST opts the contact point out at once.
    let link = m["headers"]["list-unsubscribe"]
        .as_str()
        .unwrap()
        .trim_matches(['<', '>']);
    let target = &link[link.find("/channels/").unwrap()..];
    let consent = |srv: &Srv| {
        let cps = ok(srv, "dunning_contact_points_list", json!({"id": d2}));
        cps["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == cp2.as_str())
            .unwrap()["consent"]
            .clone()
    };
    let page = srv.request("GET", target, &[], b"");
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(
        page.text().contains("<form method=\"post\""),
        "{}",
        page.text()
    );
    assert_eq!(consent(&srv), "unknown");
    let forged = format!("{}x", target);
    let r = srv.request(
        "POST",
        &forged,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"List-Unsubscribe=One-Click",
    );
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(consent(&srv), "unknown");
    let r = srv.request(
        "POST",
        target,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"List-Unsubscribe=One-Click",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.text().contains("não receberá mais"), "{}", r.text());
    assert_eq!(consent(&srv), "opted_out");
    // A second click (or a mail client's automatic POST) is answered the same.
    let again = srv.request(
        "POST",
        target,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"List-Unsubscribe=One-Click",
    );
    assert_eq!(again.status, 200);
    let log = srv.log();
    assert!(
        !log.contains("bruno.manual@example.com"),
        "an address in the log"
    );
    assert!(srv.terminate().success());
}

#[test]
fn a_refused_recipient_bounces_and_a_temporary_refusal_is_retried() {
    let sink = Sink::start();
    let mut srv = Srv::start(&[], Some(&config(sink.port)));
    let ruler = all_day_ruler(&srv);
    let (d1, cp1) = debtor(
        &srv,
        424_000_011,
        "Carla Bounce",
        "bounce.carla@example.com",
    );
    let (d2, _) = debtor(&srv, 424_000_012, "Davi Later", "later.davi@example.com");
    let c1 = charge(&srv, &d1, &ruler, 0);
    let c2 = charge(&srv, &d2, &ruler, 0);

    // 550: bounced with the code, one bounce on the contact point, which is now invalid.
    let bounced = wait_delivery(&srv, &c1, "bounced", |d| d["status"] == "bounced");
    assert_eq!(bounced["error_code"], "smtp_550", "{bounced}");
    assert!(bounced["failed_at"].is_string(), "{bounced}");
    assert!(
        !bounced["error_message"].as_str().unwrap().contains('@'),
        "no address kept: {bounced}"
    );
    let cps = ok(&srv, "dunning_contact_points_list", json!({"id": d1}));
    let cp = cps["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == cp1.as_str())
        .unwrap()
        .clone();
    assert_eq!(cp["bounce_count"], 1, "{cp}");
    assert_eq!(cp["status"], "invalid", "{cp}");
    assert_eq!(cp["last_delivery_status"], "bounced", "{cp}");
    assert!(sink.messages_to("bounce.carla@example.com").is_empty());

    // 421: refused once, then sent on the next attempt after the back-off.
    sink.wait(30, "the 421", |e| {
        e["event"] == "refused" && e["code"] == 421
    });
    let sent = wait_delivery(&srv, &c2, "sent after a retry", |d| d["status"] == "sent");
    assert_eq!(sent["attempt"], 2, "{sent}");
    assert_eq!(
        sink.messages_to("later.davi@example.com").len(),
        1,
        "one message"
    );
    // The bounced one was never tried again.
    let refusals = sink
        .events()
        .into_iter()
        .filter(|e| e["event"] == "refused" && e["rcpt"] == "bounce.carla@example.com")
        .count();
    assert_eq!(refusals, 1);
    let log = srv.log();
    assert!(
        log.contains("outcome=\"retry\"") || log.contains("outcome=retry"),
        "{log}"
    );
    assert!(
        !log.contains("later.davi@example.com"),
        "an address in the log"
    );
    assert!(srv.terminate().success());
}
