//! Notifications and deliveries and the audit trail: happy paths,
//! the conduct rules, validation naming the field, the delivery machine, the outbound
//! limit, isolation and idempotency.

use dunning_core::{Output, Principal, ToolError, ToolErrorCode};
use dunning_domain::brazil::document::cpf_from_base;
use dunning_domain::engine::{self, RecordingDriver};
use dunning_domain::error::DomainError;
use dunning_domain::op::Op;
use dunning_domain::ops::deliveries;
use dunning_domain::store::{self, Kind};
use dunning_domain::testing::{Bed, id, preflight};
use serde_json::{Value, json};

struct Fx {
    bed: Bed,
    ana: Principal,
    driver: RecordingDriver,
    n: u8,
}

/// One debtor with its contact points and a pending charge.
struct Debt {
    debtor: String,
    email: String,
    sms: String,
    whatsapp: String,
    charge: String,
}

impl Fx {
    fn new() -> Self {
        let bed = Bed::new();
        let ana = bed.ana();
        Self {
            bed,
            ana,
            driver: RecordingDriver::new(),
            n: 0,
        }
    }

    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let who = self.ana.clone();
        self.bed.ok(&who, tool, args)
    }

    fn err(&mut self, tool: &str, args: Value) -> ToolError {
        let who = self.ana.clone();
        self.bed.err(&who, tool, args)
    }

    fn debt(&mut self, whatsapp_consent: &str) -> Debt {
        self.n += 1;
        let n = self.n;
        let debtor = id(&self.ok(
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf_from_base(&[n % 9 + 1, 9, 8, 7, 6, 5, 4, 3, n]), "name": format!("Ana {n}")}),
        ));
        let cp = |fx: &mut Self, channel: &str, value: String, consent: &str| {
            id(&fx.ok(
                "dunning_contact_points_create",
                json!({"id": debtor, "channel": channel, "value": value, "consent": consent}),
            ))
        };
        let email = cp(self, "email", format!("ana{n}@example.com"), "unknown");
        let sms = cp(self, "sms", format!("+55219912345{n:02}"), "unknown");
        let whatsapp = cp(
            self,
            "whatsapp",
            format!("+55219912345{n:02}"),
            whatsapp_consent,
        );
        let charge = id(&self.ok(
            "dunning_charges_create",
            json!({"debtor_id": debtor, "amount": 321.09, "due_date": "2026-12-10",
                   "payment_method": "bolepix", "description": format!("Mensalidade {n}")}),
        ));
        Debt {
            debtor,
            email,
            sms,
            whatsapp,
            charge,
        }
    }

    fn tick(&mut self) -> engine::TickReport {
        engine::tick(&self.bed.domain, self.bed.now, &self.driver).expect("tick")
    }

    fn list(&mut self, filters: Value) -> Value {
        self.ok("dunning_deliveries_list", filters)
    }
}

fn field(e: &ToolError) -> &str {
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    &e.details[0].field
}

fn conflict(e: &ToolError, needle: &str) {
    assert_eq!(e.code, ToolErrorCode::Conflict, "{e:?}");
    assert!(e.message.contains(needle), "{needle} in {}", e.message);
}

#[test]
fn notify_queues_and_the_engine_sends() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let out = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    );
    assert_eq!(out["status"], "queued");
    assert_eq!(out["origin"], "manual");
    assert_eq!(
        out["contact_point_id"],
        d.email.as_str(),
        "the primary e-mail"
    );
    assert_eq!(out["to"], "ana1@example.com");
    assert_eq!(out["scheduled_at"], "2026-12-01T09:00:00-03:00");
    assert_eq!(out["requested_by"], "ana@demo.example");
    let r = fx.tick();
    assert_eq!(r.sent, 1);
    let sent = &fx.list(json!({"charge_id": d.charge}))["data"][0];
    assert_eq!(sent["status"], "sent");
    assert_eq!(sent["subject"], "Lembrete: sua fatura vence em 10/12/2026");
    let body = sent["body"].as_str().unwrap();
    assert!(
        body.starts_with("Olá, Ana 1. Lembramos que sua fatura de R$ 321,09 vence em 10/12/2026."),
        "{body}"
    );
    assert!(
        body.ends_with("Credor: Demo Cobranças Ltda — CNPJ 11.222.333/0001-81"),
        "{body}"
    );
    assert_eq!(fx.driver.messages()[0].rendered.body, body);
    // A free-text SMS to a chosen contact point, with variables.
    let sms = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "contact_point_id": d.sms, "message": "{{debtor.name}}, pague {{charge.amount}} pelo Pix {{charge.pix.emv}}"}),
    );
    assert_eq!(sms["channel"], "sms");
    fx.tick();
    let m = &fx.driver.messages()[1];
    assert!(
        m.rendered
            .body
            .starts_with("Ana 1, pague R$ 321,09 pelo Pix 000201"),
        "{}",
        m.rendered.body
    );
}

#[test]
fn notify_confirmation_names_exactly_what_will_happen() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "whatsapp", "template_id": "overdue"}),
    )
    .unwrap();
    assert_eq!(
        msg,
        "Send a WhatsApp message to Ana 1 (+5521991234501) now about charge Mensalidade 1 of R$ 321,09 due 10/12/2026?"
    );
    assert!(
        fx.list(json!({}))["data"].as_array().unwrap().is_empty(),
        "the preflight sends nothing"
    );
    fx.ok("dunning_charges_mark_paid", json!({"id": d.charge}));
    let e = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "sms", "template_id": "overdue"}),
    )
    .unwrap_err();
    conflict(&e, "paid");
}

#[test]
fn notify_validation_names_the_field() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let other = fx.debt("opted_in");
    let c = d.charge.clone();
    for (args, expected) in [
        (json!({"id": c, "channel": "email"}), "template_id"),
        (
            json!({"id": c, "channel": "email", "template_id": "reminder", "message": "x"}),
            "message",
        ),
        (
            json!({"id": c, "channel": "email", "template_id": "no_such"}),
            "template_id",
        ),
        (
            json!({"id": c, "channel": "sms", "message": "{{debtor.cpf}} deve"}),
            "message",
        ),
        (
            json!({"id": c, "channel": "whatsapp", "message": "texto livre"}),
            "message",
        ),
        (
            json!({"id": c, "contact_point_id": other.email, "template_id": "reminder"}),
            "contact_point_id",
        ),
        (
            json!({"id": c, "channel": "sms", "contact_point_id": d.email, "template_id": "reminder"}),
            "contact_point_id",
        ),
        (
            json!({"id": c, "channel": "email", "template_id": "reminder", "schedule_at": "2026-11-30T10:00:00-03:00"}),
            "schedule_at",
        ),
        (
            json!({"id": c, "channel": "email", "template_id": "reminder", "schedule_at": "amanhã"}),
            "schedule_at",
        ),
        (json!({"id": c, "template_id": "reminder"}), "channel"),
        (
            json!({"id": c, "channel": "email", "template_id": "reminder", "colour": "red"}),
            "colour",
        ),
    ] {
        let e = fx.err("dunning_charges_notify", args.clone());
        assert_eq!(field(&e), expected, "{args}");
    }
    // Outside the window: Sunday 2026-12-06 — the error says when it could go.
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": c, "channel": "email", "template_id": "reminder", "schedule_at": "2026-12-06T10:00:00-03:00"}),
    );
    assert_eq!(field(&e), "schedule_at");
    assert!(
        e.message.contains("Sunday") && e.message.contains("2026-12-07T08:00:00-03:00"),
        "{}",
        e.message
    );
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": c, "channel": "email", "template_id": "reminder", "schedule_at": "2026-12-02T21:00:00-03:00"}),
    );
    assert!(
        e.message.contains("after the window closes (20:00)"),
        "{}",
        e.message
    );
    assert_eq!(fx.list(json!({}))["meta"]["total"], 0);
}

#[test]
fn notify_outside_the_window_is_scheduled_for_the_next_opening() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    fx.bed.now = dunning_core::UnixTime::from_secs(1_796_126_400 + 12 * 3600); // 21:00 local
    let out = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "sms", "template_id": "reminder"}),
    );
    assert_eq!(out["status"], "scheduled");
    assert_eq!(out["scheduled_at"], "2026-12-02T08:00:00-03:00");
    let later = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder", "schedule_at": "2026-12-03T10:15:00-03:00"}),
    );
    assert_eq!(later["status"], "scheduled");
    assert_eq!(later["scheduled_at"], "2026-12-03T10:15:00-03:00");
    assert_eq!(fx.tick().sent, 0);
}

#[test]
fn rule_do_not_contact_refuses_every_channel() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d.debtor, "do_not_contact": true}),
    );
    for ch in ["email", "sms", "whatsapp"] {
        let e = fx.err(
            "dunning_charges_notify",
            json!({"id": d.charge, "channel": ch, "template_id": "reminder"}),
        );
        conflict(&e, "do_not_contact");
    }
    let e = fx.err(
        "dunning_notifications_create",
        json!({"charge_ids": [d.charge], "channel": "sms", "template_id": "reminder"}),
    );
    conflict(&e, "do_not_contact");
}

#[test]
fn rule_opt_out_refuses_the_contact_point() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    fx.ok(
        "dunning_contact_points_update",
        json!({"id": d.debtor, "cp_id": d.email, "consent": "opted_out"}),
    );
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "contact_point_id": d.email, "template_id": "reminder"}),
    );
    conflict(&e, "opted_out");
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    );
    conflict(&e, "opted out");
    // An invalid contact point is refused too.
    let org = fx.ana.organization.clone();
    store::write(fx.bed.domain.store(), store::WriteScope::All, |tx| {
        let mut cp = tx.get(Kind::ContactPoint, &org, &d.sms)?.unwrap();
        cp["status"] = json!("invalid");
        tx.put(Kind::ContactPoint, &org, &cp)?;
        Ok(())
    })
    .unwrap();
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "contact_point_id": d.sms, "template_id": "reminder"}),
    );
    conflict(&e, "contact_point_invalid");
}

#[test]
fn rule_whatsapp_only_opted_in() {
    let mut fx = Fx::new();
    let d = fx.debt("unknown");
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "contact_point_id": d.whatsapp, "template_id": "reminder"}),
    );
    conflict(&e, "whatsapp_not_opted_in");
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "whatsapp", "template_id": "reminder"}),
    );
    conflict(&e, "opted_in");
    fx.ok(
        "dunning_contact_points_update",
        json!({"id": d.debtor, "cp_id": d.whatsapp, "consent": "opted_in"}),
    );
    let ok = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "whatsapp", "template_id": "reminder"}),
    );
    assert_eq!(ok["contact_point_id"], d.whatsapp.as_str());
}

#[test]
fn rule_no_message_about_closed_or_paused_charges() {
    let mut fx = Fx::new();
    let paid = fx.debt("opted_in");
    fx.ok("dunning_charges_mark_paid", json!({"id": paid.charge}));
    let canceled = fx.debt("opted_in");
    fx.ok(
        "dunning_charges_cancel",
        json!({"id": canceled.charge, "reason": "duplicated"}),
    );
    let paused = fx.debt("opted_in");
    fx.ok(
        "dunning_charges_pause",
        json!({"id": paused.charge, "reason": "dispute", "until": "2026-12-20"}),
    );
    for (c, needle) in [
        (&paid.charge, "is paid"),
        (&canceled.charge, "is canceled"),
        (&paused.charge, "paused until 2026-12-20 (dispute)"),
    ] {
        let e = fx.err(
            "dunning_charges_notify",
            json!({"id": c, "channel": "email", "template_id": "reminder"}),
        );
        conflict(&e, needle);
    }
}

#[test]
fn outbound_limit_answers_rate_limited() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    for _ in 0..60 {
        fx.ok(
            "dunning_charges_notify",
            json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
        );
    }
    let e = fx.err(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    );
    assert_eq!(e.code, ToolErrorCode::RateLimited);
    assert!(e.retry_after_ms.is_some_and(|ms| ms > 0 && ms <= 1000));
    assert_eq!(fx.list(json!({}))["meta"]["total"], 60, "nothing created");
    fx.bed.now = fx.bed.now.plus_millis(e.retry_after_ms.unwrap());
    fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    );
}

#[test]
fn notify_is_not_idempotent_unless_keyed() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let args = json!({"id": d.charge, "channel": "sms", "template_id": "due_today"});
    let a = fx.ok("dunning_charges_notify", args.clone());
    let b = fx.ok("dunning_charges_notify", args.clone());
    assert_ne!(a["id"], b["id"], "calling again sends again");
    let mut keyed = args;
    keyed["idempotency_key"] = json!("n-1");
    let c = fx.ok("dunning_charges_notify", keyed.clone());
    let c2 = fx.ok("dunning_charges_notify", keyed);
    assert_eq!(c, c2, "the same key replays");
    assert_eq!(fx.list(json!({}))["meta"]["total"], 3);
}

#[test]
fn bulk_notifications_skip_what_may_not_be_messaged() {
    let mut fx = Fx::new();
    let a = fx.debt("opted_in");
    let b = fx.debt("opted_in");
    let paid = fx.debt("opted_in");
    fx.ok("dunning_charges_mark_paid", json!({"id": paid.charge}));
    let no_wa = fx.debt("unknown");
    let args = json!({"charge_ids": [a.charge, b.charge, paid.charge, no_wa.charge],
                      "channel": "whatsapp", "template_id": "overdue"});
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_notifications_create",
        args.clone(),
    )
    .unwrap();
    assert_eq!(
        msg,
        "Send 2 whatsapp messages to 2 debtors about 2 charges totaling R$ 642,18? 2 charges are skipped (not allowed to be messaged)."
    );
    let out = fx.ok("dunning_notifications_create", args);
    assert_eq!(out["created_count"], 2);
    assert_eq!(out["skipped_count"], 2);
    let skipped: Vec<(&str, &str)> = out["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["charge_id"].as_str().unwrap(),
                s["code"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        skipped,
        vec![
            (paid.charge.as_str(), "charge_paid"),
            (no_wa.charge.as_str(), "whatsapp_not_opted_in")
        ]
    );
    let nid = out["id"].as_str().unwrap();
    for d in out["deliveries"].as_array().unwrap() {
        assert_eq!(d["notification_id"], nid);
        assert_eq!(d["channel"], "whatsapp");
    }
    assert_eq!(fx.tick().sent, 2);
}

#[test]
fn bulk_notifications_validation() {
    let mut fx = Fx::new();
    let a = fx.debt("opted_in");
    let too_many: Vec<String> = (0..501).map(|_| a.charge.clone()).collect();
    for (args, expected) in [
        (
            json!({"charge_ids": [], "channel": "sms", "template_id": "overdue"}),
            "charge_ids",
        ),
        (
            json!({"charge_ids": too_many, "channel": "sms", "template_id": "overdue"}),
            "charge_ids",
        ),
        (
            json!({"charge_ids": [a.charge, a.charge], "channel": "sms", "template_id": "overdue"}),
            "charge_ids",
        ),
        (
            json!({"charge_ids": [a.charge], "channel": "phone", "template_id": "overdue"}),
            "channel",
        ),
        (
            json!({"charge_ids": [a.charge], "channel": "sms"}),
            "template_id",
        ),
    ] {
        let e = fx.err("dunning_notifications_create", args);
        assert_eq!(field(&e), expected);
    }
    let e = fx.err(
        "dunning_notifications_create",
        json!({"charge_ids": [a.charge, "00000000-0000-4000-8000-000000000000"], "channel": "sms", "template_id": "overdue"}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
    fx.ok("dunning_charges_mark_paid", json!({"id": a.charge}));
    let e = fx.err(
        "dunning_notifications_create",
        json!({"charge_ids": [a.charge], "channel": "sms", "template_id": "overdue"}),
    );
    conflict(&e, "none of the 1 charges");
}

#[test]
fn resend_creates_a_new_delivery_and_never_mutates_the_old() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let first = fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "overdue"}),
    );
    let fid = id(&first);
    let e = fx.err("dunning_deliveries_resend", json!({"id": fid}));
    conflict(&e, "not been sent yet");
    fx.tick();
    let sent = fx.list(json!({"status": "sent"}))["data"][0].clone();
    let again = fx.ok("dunning_deliveries_resend", json!({"id": fid}));
    assert_eq!(again["resent_from_id"], fid.as_str());
    assert_eq!(again["template_id"], "overdue");
    assert_eq!(again["attempt"], 1);
    assert_ne!(again["id"], first["id"]);
    let other_sms = fx.ok(
        "dunning_deliveries_resend",
        json!({"id": fid, "contact_point_id": d.sms}),
    );
    assert_eq!(other_sms["channel"], "sms");
    assert_eq!(other_sms["to"], "+5521991234501");
    let old = fx.list(json!({"status": "sent"}))["data"][0].clone();
    assert_eq!(old, sent, "the original is untouched");
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_deliveries_resend",
        json!({"id": fid}),
    )
    .unwrap();
    assert!(
        msg.starts_with(&format!(
            "Resend delivery {fid} (sent) as an e-mail to Ana 1 (ana1@example.com) now"
        )),
        "{msg}"
    );
    fx.ok(
        "dunning_contact_points_update",
        json!({"id": d.debtor, "cp_id": d.email, "consent": "opted_out"}),
    );
    let e = fx.err("dunning_deliveries_resend", json!({"id": fid}));
    conflict(&e, "opted_out");
    let other = fx.debt("opted_in");
    let e = fx.err(
        "dunning_deliveries_resend",
        json!({"id": fid, "contact_point_id": other.email}),
    );
    assert_eq!(field(&e), "contact_point_id");
    // The e-mail resend was queued before the opt-out: canceled, never sent.
    let r = fx.tick();
    assert_eq!((r.sent, r.canceled), (1, 1));
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let del = id(&fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    ));
    fx.tick();
    let carla = fx.bed.carla();
    for (tool, args) in [
        (
            "dunning_charges_notify",
            json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
        ),
        ("dunning_deliveries_resend", json!({"id": del})),
        (
            "dunning_notifications_create",
            json!({"charge_ids": [d.charge], "channel": "email", "template_id": "reminder"}),
        ),
    ] {
        let e = fx.bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    assert_eq!(
        fx.bed.ok(&carla, "dunning_deliveries_list", json!({}))["meta"]["total"],
        0
    );
    assert_eq!(
        fx.bed
            .ok(&carla, "dunning_events_list", json!({"resource_id": del}))["meta"]["total"],
        0
    );
}

#[test]
fn deliveries_list_filters() {
    let mut fx = Fx::new();
    let a = fx.debt("opted_in");
    let b = fx.debt("opted_in");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": a.charge, "channel": "email", "template_id": "reminder"}),
    );
    fx.ok(
        "dunning_charges_notify",
        json!({"id": b.charge, "channel": "sms", "template_id": "reminder",
               "schedule_at": "2026-12-03T10:00:00-03:00"}),
    );
    fx.tick();
    let total = |fx: &mut Fx, f: Value| fx.list(f)["meta"]["total"].as_u64().unwrap();
    assert_eq!(total(&mut fx, json!({})), 2);
    assert_eq!(total(&mut fx, json!({"status": "sent"})), 1);
    assert_eq!(total(&mut fx, json!({"status": "sent,scheduled"})), 2);
    assert_eq!(total(&mut fx, json!({"channel": "sms"})), 1);
    assert_eq!(total(&mut fx, json!({"charge_id": a.charge})), 1);
    assert_eq!(total(&mut fx, json!({"debtor_id": b.debtor})), 1);
    assert_eq!(total(&mut fx, json!({"from": "2026-12-02"})), 1);
    assert_eq!(total(&mut fx, json!({"to": "2026-12-01"})), 1);
    assert_eq!(
        total(
            &mut fx,
            json!({"from": "2026-12-03T12:00:00Z", "to": "2026-12-03T13:00:00Z"})
        ),
        1,
        "UTC bounds are compared in local time"
    );
    assert_eq!(total(&mut fx, json!({"step_id": a.charge})), 0);
    let first = fx.list(json!({"sort_by": "scheduled_at", "sort_order": "asc"}));
    assert_eq!(first["data"][0]["channel"], "email");
    let e = fx.err("dunning_deliveries_list", json!({"from": "yesterday"}));
    assert_eq!(field(&e), "from");
    let e = fx.err(
        "dunning_deliveries_list",
        json!({"from": "2026-12-05", "to": "2026-12-01"}),
    );
    assert_eq!(field(&e), "to");
}

#[test]
fn events_list_filters() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    fx.ok("dunning_charges_mark_paid", json!({"id": d.charge}));
    let total = |fx: &mut Fx, f: Value| {
        fx.ok("dunning_events_list", f)["meta"]["total"]
            .as_u64()
            .unwrap()
    };
    let all = total(&mut fx, json!({}));
    assert!(
        all >= 6,
        "debtor, 3 contact points, charge created, paid: {all}"
    );
    assert_eq!(total(&mut fx, json!({"code": "charge.paid"})), 1);
    assert_eq!(
        total(&mut fx, json!({"code": "charge.paid,debtor.created"})),
        2
    );
    let charge_events = total(&mut fx, json!({"code": "charge.*"}));
    assert!(charge_events >= 2);
    assert_eq!(
        total(
            &mut fx,
            json!({"resource_type": "charge", "resource_id": d.charge})
        ),
        charge_events
    );
    assert_eq!(total(&mut fx, json!({"from": "2026-12-02"})), 0);
    assert_eq!(total(&mut fx, json!({"to": "2026-12-01"})), all);
    let e = fx.err(
        "dunning_events_list",
        json!({"code": "charge.*,debtor.created"}),
    );
    assert_eq!(field(&e), "code");
    let first = fx.ok("dunning_events_list", json!({"per_page": 1}));
    assert_eq!(first["meta"]["total_pages"], all);
    assert_eq!(first["data"][0]["actor"], "ana@demo.example");
}

#[derive(serde::Deserialize)]
struct Advance {
    id: String,
    to: String,
}

fn advance_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let Advance { id, to } = op.args()?;
    let mut d = deliveries::load_delivery(op, &id)?;
    deliveries::advance(op, &mut d, &to, None)?;
    Ok(Output::ok(serde_json::to_value(d).unwrap()))
}

#[test]
fn delivery_machine() {
    // The table itself is held in `status/tests.rs`; this walks a real delivery.
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    let del = id(&fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "email", "template_id": "reminder"}),
    ));
    fx.tick();
    let run = |fx: &mut Fx, to: &str| {
        dunning_domain::demo::run_as(
            &fx.bed.domain,
            &fx.ana,
            fx.bed.now,
            [3u8; 32],
            advance_run,
            json!({"id": del, "to": to}),
        )
    };
    let out = run(&mut fx, "delivered").unwrap().tool_value();
    assert_eq!(out["status"], "delivered");
    assert!(out["delivered_at"].is_string());
    match run(&mut fx, "canceled") {
        Err(DomainError::Conflict(m)) => {
            assert!(m.contains("delivered") && m.contains("canceled"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    let ev = fx.ok("dunning_events_list", json!({"code": "delivery.delivered"}));
    assert_eq!(ev["meta"]["total"], 1);
}

#[test]
fn cancel_pending_for_other_modules() {
    let mut fx = Fx::new();
    let d = fx.debt("opted_in");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": d.charge, "channel": "sms", "template_id": "reminder",
               "schedule_at": "2026-12-02T09:00:00-03:00"}),
    );
    fn cancel(op: &mut Op<'_>) -> Result<Output, DomainError> {
        #[derive(serde::Deserialize)]
        struct Cp {
            cp: String,
        }
        let Cp { cp } = op.args()?;
        let n = deliveries::cancel_pending(
            op,
            store::Cond::Eq("contact_point_id", json!(cp)),
            "opted_out",
            "the debtor opted out",
        )?;
        Ok(Output::ok(json!({ "canceled": n })))
    }
    let out = dunning_domain::demo::run_as(
        &fx.bed.domain,
        &fx.ana,
        fx.bed.now,
        [4u8; 32],
        cancel,
        json!({"cp": d.sms}),
    )
    .unwrap();
    assert_eq!(out.tool_value()["canceled"], 1);
    let dl = &fx.list(json!({}))["data"][0];
    assert_eq!(dl["status"], "canceled");
    assert_eq!(dl["cancel_reason"], "opted_out");
}

#[test]
fn demo_seed_has_rulers_and_deliveries() {
    let mut bed = Bed::demo();
    let ana = bed.ana();
    let rulers = bed.ok(&ana, "dunning_rulers_list", json!({"status": "active"}));
    assert_eq!(rulers["meta"]["total"], 2);
    let default = rulers["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["is_default"] == true)
        .unwrap()
        .clone();
    let full = bed.ok(&ana, "dunning_rulers_get", json!({"id": default["id"]}));
    let shape: Vec<(i64, &str, &str)> = full["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["offset_days"].as_i64().unwrap(),
                s["channel"].as_str().unwrap(),
                s["action"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        vec![
            (-5, "email", "notify"),
            (0, "sms", "notify"),
            (3, "whatsapp", "notify"),
            (10, "email", "notify"),
            (20, "task", "negativate")
        ]
    );
    let carla = bed.carla();
    assert_eq!(
        bed.ok(&carla, "dunning_rulers_list", json!({}))["meta"]["total"],
        1
    );
    let charges = bed.ok(&ana, "dunning_charges_list", json!({}))["meta"]["total"]
        .as_u64()
        .unwrap_or(0);
    if charges > 0 {
        let list = bed.ok(&ana, "dunning_deliveries_list", json!({"per_page": 100}));
        let statuses: std::collections::BTreeSet<&str> = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["status"].as_str().unwrap())
            .collect();
        assert!(statuses.len() >= 6, "{statuses:?}");
        assert!(
            bed.ok(&carla, "dunning_deliveries_list", json!({}))["meta"]["total"]
                .as_u64()
                .unwrap()
                > 0
        );
    }
}
