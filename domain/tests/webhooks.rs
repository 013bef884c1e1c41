//! Webhooks: CRUD, secrets, filters, fan-out, signatures, rotation, retries,
//! isolation, idempotency. The HTTP driver's own tests (a loopback receiver, the
//! address policy) moved with it to the binary (`transports/bin/src/webhook_http/`).

use dunning_core::{Output, ToolErrorCode};
use dunning_domain::ops::webhooks::{
    RETRY_SCHEDULE_SECS, RecordingDriver, filter_matches, parse_url, verify,
};
use dunning_domain::store::{self, Kind};
use dunning_domain::testing::Bed;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

#[path = "support/webhooks.rs"]
mod support;
use support::*;

fn advance_secs(bed: &mut Bed, secs: u64) {
    bed.now = bed.now.plus_millis(secs * 1000);
}

fn millis(ts: &Value) -> i64 {
    chrono::DateTime::parse_from_rfc3339(ts.as_str().unwrap())
        .unwrap()
        .timestamp_millis()
}

#[test]
fn create_get_list_update_delete() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let w = hook(
        &mut bed,
        &ana,
        "https://erp.example.com/hooks?src=kobana",
        json!(["charge.*", "export.processed", "charge.*"]),
    );
    let wid = id(&w);
    assert_eq!(w["active"], true);
    assert_eq!(w["ssl_verification"], true);
    assert_eq!(
        w["events"],
        json!(["charge.*", "export.processed"]),
        "deduplicated"
    );
    let secret = w["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() > 40);
    assert_eq!(w["secret_last4"], &secret[secret.len() - 4..]);

    let got = bed.ok(&ana, "dunning_webhooks_get", json!({"id": wid}));
    assert_eq!(got["url"], "https://erp.example.com/hooks?src=kobana");
    let list = bed.ok(&ana, "dunning_webhooks_list", json!({"active": true}));
    assert_eq!(list["meta"]["total"], 1);
    assert_eq!(
        bed.ok(&ana, "dunning_webhooks_list", json!({"active": false}))["meta"]["total"],
        0
    );

    let u = bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "active": false, "events": ["*"]}),
    );
    assert_eq!(u["active"], false);
    assert_eq!(u["events"], json!(["*"]));
    assert_eq!(u["description"], "ERP", "fields not sent are kept");
    let again = bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "active": false, "events": ["*"]}),
    );
    assert_eq!(again, u, "update is idempotent");

    let out = bed
        .call(&ana, "dunning_webhooks_delete", json!({"id": wid}))
        .unwrap();
    assert_eq!(out, Output::NoContent);
    let e = bed.err(&ana, "dunning_webhooks_get", json!({"id": wid}));
    assert_eq!(e.code, ToolErrorCode::NotFound);
    let e = bed.err(&ana, "dunning_webhooks_delete", json!({"id": wid}));
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn url_validation_names_the_field() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    for bad in [
        "http://erp.example.com/hooks",
        "ftp://erp.example.com/",
        "https://user:pw@erp.example.com/",
        "https://erp.example.com/a#frag",
        "https:///nohost",
        "https://erp.example.com:0/",
        "https://erp example.com/",
        "https://::1/",
        "erp.example.com",
    ] {
        let e = bed.err(
            &ana,
            "dunning_webhooks_create",
            json!({"url": bad, "events": ["*"]}),
        );
        assert_eq!(e.code, ToolErrorCode::Validation, "{bad}");
        assert_eq!(e.details[0].field, "url", "{bad}");
    }
    for good in [
        "http://localhost:8080/hooks",
        "http://127.0.0.1/hooks",
        "https://erp.example.com",
    ] {
        hook(&mut bed, &ana, good, json!(["*"]));
    }
    let t = parse_url("https://ERP.example.com:8443?x=1").unwrap();
    assert_eq!(
        (t.tls, t.host.as_str(), t.port, t.path.as_str()),
        (true, "erp.example.com", 8443, "/?x=1")
    );
    assert_eq!(parse_url("http://[::1]:9/p").unwrap().host, "::1");
    let e = bed.err(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://x.example.com", "events": ["*"], "colour": 1}),
    );
    assert_eq!(e.details[0].field, "colour");
}

#[test]
fn event_filters_are_checked_against_the_catalog() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    for (events, field) in [
        (json!([]), "events"),
        (json!(["charge.nope"]), "events[0]"),
        (json!(["*", "foo.*"]), "events[1]"),
        (json!(["charge"]), "events[0]"),
        (json!([7]), "events[0]"),
    ] {
        let e = bed.err(
            &ana,
            "dunning_webhooks_create",
            json!({"url": "https://x.example.com", "events": events}),
        );
        assert_eq!(e.code, ToolErrorCode::Validation, "{events}");
        assert_eq!(e.details[0].field, field, "{events}");
    }
    let w = hook(
        &mut bed,
        &ana,
        "https://x.example.com",
        json!(["credit_bureau.*", "webhook.ping", "agreement.broken"]),
    );
    let e = bed.err(
        &ana,
        "dunning_webhooks_update",
        json!({"id": id(&w), "events": ["agreement.exploded"]}),
    );
    assert_eq!(e.details[0].field, "events[0]");
}

#[test]
fn wildcard_filters_match() {
    let f = |xs: &[&str]| xs.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    assert!(filter_matches(&f(&["*"]), "charge.paid"));
    assert!(filter_matches(&f(&["charge.*"]), "charge.paid"));
    assert!(!filter_matches(&f(&["charge.*"]), "credit_bureau.included"));
    assert!(!filter_matches(&f(&["charge.*"]), "chargeback.created"));
    assert!(!filter_matches(&f(&["charge.*"]), "charge"));
    assert!(filter_matches(
        &f(&["protest.failed", "export.processed"]),
        "export.processed"
    ));
    assert!(!filter_matches(&f(&["export.failed"]), "export.processed"));

    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let all = id(&hook(&mut bed, &ana, "https://a.example.com", json!(["*"])));
    let group = id(&hook(
        &mut bed,
        &ana,
        "https://b.example.com",
        json!(["export.*"]),
    ));
    let exact = id(&hook(
        &mut bed,
        &ana,
        "https://c.example.com",
        json!(["export.processed"]),
    ));
    let other = id(&hook(
        &mut bed,
        &ana,
        "https://d.example.com",
        json!(["charge.*", "export.failed"]),
    ));
    let off = id(&hook(&mut bed, &ana, "https://e.example.com", json!(["*"])));
    bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": off, "active": false}),
    );
    let acme = id(&hook(
        &mut bed,
        &carla,
        "https://acme.example.com",
        json!(["*"]),
    ));

    export_processed(&mut bed, &ana);
    for (hook_id, n) in [(&all, 1), (&group, 1), (&exact, 1), (&other, 0), (&off, 0)] {
        let ds = deliveries(&mut bed, &ana, hook_id);
        assert_eq!(ds.len(), n, "{hook_id}");
        for d in ds {
            assert_eq!(d["event_code"], "export.processed");
            assert_eq!(d["status"], "pending");
        }
    }
    assert!(
        deliveries(&mut bed, &carla, &acme).is_empty(),
        "another organization's events are not delivered"
    );
    // Internal audit codes (webhook.created, export.created, ...) are not delivered.
    let codes: Vec<Value> = deliveries(&mut bed, &ana, &all)
        .iter()
        .map(|d| d["event_code"].clone())
        .collect();
    assert_eq!(codes, vec![json!("export.processed")]);
}

#[test]
fn secret_only_in_create_and_rotate_replies() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let w = hook(&mut bed, &ana, "https://x.example.com", json!(["*"]));
    let wid = id(&w);
    let first = w["secret"].as_str().unwrap().to_owned();
    let get = bed.ok(&ana, "dunning_webhooks_get", json!({"id": wid}));
    assert!(get.get("secret").is_none() && get.get("previous_secret").is_none());
    let list = bed.ok(&ana, "dunning_webhooks_list", json!({}));
    assert!(list["data"][0].get("secret").is_none());
    let upd = bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "description": "x"}),
    );
    assert!(upd.get("secret").is_none());

    let r = bed.ok(
        &ana,
        "dunning_webhooks_rotate_secret",
        json!({"id": wid, "grace_period_seconds": 600}),
    );
    let second = r["secret"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    assert_eq!(r["secret_last4"], &second[second.len() - 4..]);
    assert!(
        r.get("previous_secret").is_none(),
        "the old secret is never shown"
    );
    assert!(r["secret_rotated_at"].is_string());
    assert!(r["previous_secret_expires_at"].is_string());
    let get = bed.ok(&ana, "dunning_webhooks_get", json!({"id": wid}));
    assert!(get.get("secret").is_none());

    let t = bed.ok(&ana, "dunning_webhooks_test", json!({"id": wid}));
    assert!(t.get("secret").is_none());

    // Neither secret is in the audit trail or any delivery payload.
    let docs = store::read(bed.domain.store(), |tx| {
        let mut all = tx.find(Kind::Event, &ana.organization, &store::Query::all())?;
        all.extend(tx.find(
            Kind::WebhookDelivery,
            &ana.organization,
            &store::Query::all(),
        )?);
        Ok(all)
    })
    .unwrap();
    let text = serde_json::to_string(&docs).unwrap();
    assert!(!text.contains(&first) && !text.contains(&second));
}

#[test]
fn webhook_signature_verifies_with_hmac_sha256() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let w = hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["export.*"]),
    );
    let secret = w["secret"].as_str().unwrap().to_owned();
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    assert_eq!(deliver(&bed, &ana, &rec), 1);
    let reqs = rec.requests();
    let req = &reqs[0];
    assert_eq!(req.url, "https://x.example.com/h");
    assert_eq!(req.header("X-Kobana-Event"), Some("export.processed"));
    assert_eq!(req.header("Content-Type"), Some("application/json"));
    let body: Value = serde_json::from_str(&req.body).unwrap();
    assert_eq!(body["code"], "export.processed");
    assert_eq!(body["resource_type"], "export");
    assert!(body.get("actor").is_none());
    assert_eq!(req.header("X-Kobana-Event-Id"), body["id"].as_str());

    let header = req.header("X-Kobana-Signature").unwrap();
    let (t, v1) = {
        let parts: Vec<&str> = header.split(',').collect();
        assert_eq!(parts.len(), 2, "one secret, one signature: {header}");
        (
            parts[0].strip_prefix("t=").unwrap(),
            parts[1].strip_prefix("v1=").unwrap(),
        )
    };
    assert_eq!(t, (bed.now.as_millis() / 1000).to_string());
    // An independent HMAC-SHA256 over "<t>.<body>".
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.{}", req.body).as_bytes());
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(v1, expected);
    assert!(verify(header, &secret, &req.body).is_some());
    assert!(verify(header, "whsec_wrong", &req.body).is_none());
    assert!(verify(header, &secret, &req.body.replace("export", "exp0rt")).is_none());

    let d = deliveries(&mut bed, &ana, &id(&w));
    assert_eq!(d[0]["status"], "delivered");
    assert_eq!(d[0]["response_code"], 200);
    assert_eq!(d[0]["attempts"], 1);
    assert_eq!(req.header("X-Kobana-Delivery-Id"), d[0]["id"].as_str());
}

#[test]
fn rotation_signs_with_both_secrets_during_grace() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let w = hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["export.*"]),
    );
    let wid = id(&w);
    let old = w["secret"].as_str().unwrap().to_owned();
    let new = bed.ok(
        &ana,
        "dunning_webhooks_rotate_secret",
        json!({"id": wid, "grace_period_seconds": 3600}),
    )["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    deliver(&bed, &ana, &rec);
    let req = rec.requests().remove(0);
    let header = req.header("X-Kobana-Signature").unwrap().to_owned();
    let sigs: Vec<&str> = header.split(',').filter(|p| p.starts_with("v1=")).collect();
    assert_eq!(sigs.len(), 2, "{header}");
    let t = header.split(',').next().unwrap();
    assert!(
        verify(&format!("{t},{}", sigs[0]), &new, &req.body).is_some(),
        "new first"
    );
    assert!(
        verify(&format!("{t},{}", sigs[1]), &old, &req.body).is_some(),
        "then old"
    );

    // After the grace period only the new secret signs.
    advance_secs(&mut bed, 3601);
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    deliver(&bed, &ana, &rec);
    let req = rec.requests().remove(0);
    let header = req.header("X-Kobana-Signature").unwrap();
    assert_eq!(header.matches("v1=").count(), 1);
    assert!(verify(header, &new, &req.body).is_some());
    assert!(verify(header, &old, &req.body).is_none());

    // Without a grace period the old secret stops at once.
    let newest = bed.ok(&ana, "dunning_webhooks_rotate_secret", json!({"id": wid}))["secret"]
        .as_str()
        .unwrap()
        .to_owned();
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    deliver(&bed, &ana, &rec);
    let req = rec.requests().remove(0);
    let header = req.header("X-Kobana-Signature").unwrap();
    assert_eq!(header.matches("v1=").count(), 1);
    assert!(verify(header, &newest, &req.body).is_some());
    assert!(verify(header, &new, &req.body).is_none());

    for bad in [json!(-1), json!(86_401), json!("10")] {
        let e = bed.err(
            &ana,
            "dunning_webhooks_rotate_secret",
            json!({"id": wid, "grace_period_seconds": bad}),
        );
        assert_eq!(e.code, ToolErrorCode::Validation);
        assert_eq!(e.details[0].field, "grace_period_seconds");
    }
}

#[test]
fn failed_delivery_retries_with_backoff() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["export.*"]),
    ));
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    rec.respond_with(500, &"x".repeat(10_000));
    for (i, delay) in RETRY_SCHEDULE_SECS.iter().enumerate() {
        assert_eq!(deliver(&bed, &ana, &rec), 1, "attempt {}", i + 1);
        let d = &deliveries(&mut bed, &ana, &wid)[0];
        assert_eq!(d["status"], "pending");
        assert_eq!(d["attempts"], i + 1);
        assert_eq!(d["response_code"], 500);
        assert_eq!(
            d["response_body"].as_str().unwrap().len(),
            4096,
            "≤ 4 KB kept"
        );
        assert!(d["error"].as_str().unwrap().contains("500"));
        let wait = millis(&d["next_retry_at"]) - millis(&d["last_attempt_at"]);
        assert_eq!(
            wait,
            i64::try_from(*delay).unwrap() * 1000,
            "attempt {}",
            i + 1
        );
        assert_eq!(deliver(&bed, &ana, &rec), 0, "not due before the delay");
        advance_secs(&mut bed, *delay);
    }
    assert_eq!(deliver(&bed, &ana, &rec), 1, "the last attempt");
    let d = deliveries(&mut bed, &ana, &wid).remove(0);
    assert_eq!(d["status"], "failed");
    assert_eq!(d["attempts"], RETRY_SCHEDULE_SECS.len() + 1);
    assert!(d["failed_at"].is_string() && d["next_retry_at"].is_null());
    assert_eq!(deliver(&bed, &ana, &rec), 0, "failed is final");
    assert_eq!(rec.requests().len(), RETRY_SCHEDULE_SECS.len() + 1);
    let did = id(&d);

    // Resend: failed → pending, re-attempted by the worker with a fresh schedule.
    let r = bed.ok(
        &ana,
        "dunning_webhook_deliveries_resend",
        json!({"id": wid, "delivery_id": did}),
    );
    assert_eq!(r["status"], "pending");
    assert!(r["failed_at"].is_null());
    let e = bed.err(
        &ana,
        "dunning_webhook_deliveries_resend",
        json!({"id": wid, "delivery_id": did}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("pending"), "{}", e.message);
    rec.respond_with(204, "");
    assert_eq!(deliver(&bed, &ana, &rec), 1);
    let d = bed.ok(
        &ana,
        "dunning_webhook_deliveries_get",
        json!({"id": wid, "delivery_id": did}),
    );
    assert_eq!(d["status"], "delivered");
    assert_eq!(d["response_code"], 204);
    assert!(d["payload"].as_str().unwrap().contains("export.processed"));
    let e = bed.err(
        &ana,
        "dunning_webhook_deliveries_resend",
        json!({"id": wid, "delivery_id": did}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message.contains("delivered") && e.message.contains("pending"),
        "{}",
        e.message
    );
}

#[test]
fn inactive_webhooks_get_no_attempts() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    export_processed(&mut bed, &ana);
    bed.ok(
        &ana,
        "dunning_webhooks_update",
        json!({"id": wid, "active": false}),
    );
    let rec = RecordingDriver::new();
    assert_eq!(deliver(&bed, &ana, &rec), 0);
    assert!(rec.requests().is_empty());
    let d = deliveries(&mut bed, &ana, &wid).remove(0);
    assert_eq!(d["status"], "failed");
    assert!(d["error"].as_str().unwrap().contains("inactive"));
    let e = bed.err(
        &ana,
        "dunning_webhook_deliveries_resend",
        json!({"id": wid, "delivery_id": d["id"]}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    let e = bed.err(&ana, "dunning_webhooks_test", json!({"id": wid}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("inactive"));
}

#[test]
fn test_tool_sends_a_ping_now() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["charge.*"]),
    ));
    let d = bed.ok(&ana, "dunning_webhooks_test", json!({"id": wid}));
    assert_eq!(d["event_code"], "webhook.ping");
    assert_eq!(
        d["status"], "delivered",
        "attempted at once through the driver"
    );
    assert_eq!(d["attempts"], 1);
    assert_eq!(d["response_code"], 200);
    let payload: Value = serde_json::from_str(d["payload"].as_str().unwrap()).unwrap();
    assert_eq!(payload["data"]["test"], true);
    let d2 = bed.ok(
        &ana,
        "dunning_webhooks_test",
        json!({"id": wid, "event_code": "charge.paid"}),
    );
    assert_eq!(d2["event_code"], "charge.paid");
    assert_ne!(
        d["id"], d2["id"],
        "not idempotent: every test is a new delivery"
    );
    let e = bed.err(
        &ana,
        "dunning_webhooks_test",
        json!({"id": wid, "event_code": "charge.exploded"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "event_code");
    let listed = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "event_code": "webhook.*"}),
    );
    assert_eq!(listed["meta"]["total"], 1);
    assert!(
        listed["data"][0].get("payload").is_none(),
        "lists stay small"
    );
    // The test is audited, not broadcast to other webhooks.
    let events = bed.ok(
        &ana,
        "dunning_events_list",
        json!({"code": "webhook.tested"}),
    );
    assert_eq!(events["meta"]["total"], 2);
}

#[test]
fn webhook_calls_take_outbound_budget() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    let mut limited = None;
    for _ in 0..100 {
        match bed.call(&ana, "dunning_webhooks_test", json!({"id": wid})) {
            Ok(_) => {}
            Err(e) => {
                limited = Some(e);
                break;
            }
        }
    }
    let e = limited.expect("the outbound limit is reached");
    assert_eq!(e.code, ToolErrorCode::RateLimited);
    assert!(e.retry_after_ms.unwrap() > 0);
    // The worker leaves due deliveries pending while the budget is exhausted.
    export_processed(&mut bed, &ana);
    let rec = RecordingDriver::new();
    assert_eq!(deliver(&bed, &ana, &rec), 0);
    advance_secs(&mut bed, 60);
    assert_eq!(deliver(&bed, &ana, &rec), 1);
}

#[test]
fn deliveries_list_filters_and_validation() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    export_processed(&mut bed, &ana);
    bed.advance_days(2);
    bed.ok(&ana, "dunning_webhooks_test", json!({"id": wid}));
    let all = bed.ok(&ana, "dunning_webhook_deliveries_list", json!({"id": wid}));
    assert_eq!(all["meta"]["total"], 2);
    assert_eq!(all["data"][0]["event_code"], "webhook.ping", "newest first");
    let pending = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "status": "pending"}),
    );
    assert_eq!(pending["meta"]["total"], 1);
    let by_code = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "event_code": "export.processed"}),
    );
    assert_eq!(by_code["meta"]["total"], 1);
    let recent = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "from": "2026-12-02"}),
    );
    assert_eq!(recent["meta"]["total"], 1);
    let old = bed.ok(
        &ana,
        "dunning_webhook_deliveries_list",
        json!({"id": wid, "to": "2026-12-01"}),
    );
    assert_eq!(old["meta"]["total"], 1);
    for (args, field) in [
        (json!({"id": wid, "from": "yesterday"}), "from"),
        (
            json!({"id": wid, "from": "2026-12-05", "to": "2026-12-01"}),
            "to",
        ),
        (json!({"id": wid, "status": "lost"}), "status"),
    ] {
        let e = bed.err(&ana, "dunning_webhook_deliveries_list", args);
        assert_eq!(e.code, ToolErrorCode::Validation);
        assert_eq!(e.details[0].field, field);
    }
    // A delivery is found only under its own webhook.
    let other = id(&hook(
        &mut bed,
        &ana,
        "https://y.example.com/h",
        json!(["*"]),
    ));
    let did = all["data"][0]["id"].clone();
    let e = bed.err(
        &ana,
        "dunning_webhook_deliveries_get",
        json!({"id": other, "delivery_id": did}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn delete_drops_the_deliveries() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    export_processed(&mut bed, &ana);
    bed.call(&ana, "dunning_webhooks_delete", json!({"id": wid}))
        .unwrap();
    let n = store::read(bed.domain.store(), |tx| {
        Ok(tx.count(Kind::WebhookDelivery, &ana.organization, &[])?)
    })
    .unwrap();
    assert_eq!(n, 0);
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    let did = id(&bed.ok(&ana, "dunning_webhooks_test", json!({"id": wid})));
    for (tool, args) in [
        ("dunning_webhooks_get", json!({"id": wid})),
        (
            "dunning_webhooks_update",
            json!({"id": wid, "active": false}),
        ),
        ("dunning_webhooks_delete", json!({"id": wid})),
        ("dunning_webhooks_test", json!({"id": wid})),
        ("dunning_webhooks_rotate_secret", json!({"id": wid})),
        ("dunning_webhook_deliveries_list", json!({"id": wid})),
        (
            "dunning_webhook_deliveries_get",
            json!({"id": wid, "delivery_id": did}),
        ),
        (
            "dunning_webhook_deliveries_resend",
            json!({"id": wid, "delivery_id": did}),
        ),
    ] {
        let e = bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    assert_eq!(
        bed.ok(&carla, "dunning_webhooks_list", json!({}))["meta"]["total"],
        0
    );
}

#[test]
fn idempotency_key_replays_the_create() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let args = json!({"url": "https://x.example.com", "events": ["*"], "idempotency_key": "wh-1"});
    let a = bed.ok(&ana, "dunning_webhooks_create", args.clone());
    let b = bed.ok(&ana, "dunning_webhooks_create", args);
    assert_eq!(a, b, "the same webhook (and secret) is replayed");
    assert_eq!(
        bed.ok(&ana, "dunning_webhooks_list", json!({}))["meta"]["total"],
        1
    );
    let e = bed.err(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://y.example.com", "events": ["*"], "idempotency_key": "wh-1"}),
    );
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn a_star_webhook_gets_catalogue_events_only() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    // Audit-only changes: a debtor, a paused and resumed charge, a ruler.
    let d = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    let c = bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d["id"], "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix"}),
    );
    bed.ok(&ana, "dunning_charges_pause", json!({"id": c["id"]}));
    bed.ok(&ana, "dunning_charges_resume", json!({"id": c["id"]}));
    export_processed(&mut bed, &ana);
    let audited: Vec<String> =
        bed.ok(&ana, "dunning_events_list", json!({"per_page": 100}))["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["code"].as_str().unwrap().to_owned())
            .collect();
    for code in [
        "debtor.created",
        "charge.paused",
        "charge.resumed",
        "webhook.created",
    ] {
        assert!(
            audited.iter().any(|c| c == code),
            "{code} is audited: {audited:?}"
        );
    }
    let catalogue = dunning_domain::mcp::event_catalog();
    let known: Vec<&str> = catalogue["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    let sent: Vec<String> = deliveries(&mut bed, &ana, &wid)
        .iter()
        .map(|d| d["event_code"].as_str().unwrap().to_owned())
        .collect();
    assert!(sent.iter().any(|c| c == "charge.created"), "{sent:?}");
    assert!(sent.iter().any(|c| c == "export.processed"), "{sent:?}");
    for code in &sent {
        assert!(
            known.contains(&code.as_str()),
            "{code} is not a catalogue event"
        );
    }
}

#[test]
fn a_replayed_test_returns_the_delivery_after_its_attempt() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let wid = id(&hook(
        &mut bed,
        &ana,
        "https://x.example.com/h",
        json!(["*"]),
    ));
    let args = json!({"id": wid, "idempotency_key": "t-1"});
    let first = bed.ok(&ana, "dunning_webhooks_test", args.clone());
    assert_eq!(first["status"], "delivered", "{first}");
    assert_eq!(first["attempts"], 1);
    // The remembered answer is the one after the post (not the claimed, pending one),
    // and the replay posts nothing.
    let again = bed.ok(&ana, "dunning_webhooks_test", args);
    assert_eq!(again, first);
    assert_eq!(deliveries(&mut bed, &ana, &wid).len(), 1);
}
