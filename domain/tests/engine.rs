//! The ruler engine driven by a fixed clock across days: when steps fire, the send
//! window, stops, opt-out, do_not_contact, idempotency, the overdue sweep, tasks and the
//! outbox.

use dunning_core::{Principal, UnixTime};
use dunning_domain::brazil::document::cpf_from_base;
use dunning_domain::engine::{self, DriverError, Failure, RecordingDriver, TickReport};
use dunning_domain::ops::deliveries::ruler_delivery_id;
use dunning_domain::store::{self, Cond, Kind, Query};
use dunning_domain::testing::{Bed, id};
use serde_json::{Value, json};

/// Local (UTC−03:00) wall-clock time.
fn at(date: &str, hm: &str) -> UnixTime {
    let dt = chrono::NaiveDateTime::parse_from_str(&format!("{date} {hm}"), "%Y-%m-%d %H:%M")
        .expect("date time");
    UnixTime::from_secs(u64::try_from(dt.and_utc().timestamp() + 3 * 3600).expect("after epoch"))
}

struct Fx {
    bed: Bed,
    ana: Principal,
    driver: RecordingDriver,
    n: u8,
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

    /// A debtor with an e-mail, an SMS number and a WhatsApp number (opted in).
    fn debtor(&mut self, extra: Value) -> String {
        self.n += 1;
        let n = self.n;
        let mut args = json!({
            "cnpj_cpf": cpf_from_base(&[n % 9 + 1, 2, 3, 4, 5, 6, 7, 8, n]),
            "name": format!("Maria {n}"),
        });
        if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        let d = id(&self.ok("dunning_debtors_create", args));
        self.cp(&d, "email", &format!("maria{n}@example.com"), "unknown");
        self.cp(&d, "sms", &format!("+55119876543{n:02}"), "unknown");
        self.cp(&d, "whatsapp", &format!("+55119876543{n:02}"), "opted_in");
        d
    }

    fn cp(&mut self, debtor: &str, channel: &str, value: &str, consent: &str) -> String {
        id(&self.ok(
            "dunning_contact_points_create",
            json!({"id": debtor, "channel": channel, "value": value, "consent": consent}),
        ))
    }

    fn charge(&mut self, debtor: &str, due: &str) -> String {
        id(&self.ok(
            "dunning_charges_create",
            json!({"debtor_id": debtor, "amount": 150.0, "due_date": due, "payment_method": "bolepix",
                   "fine_percentage": 2, "interest_percentage": 1}),
        ))
    }

    /// The default B2C ruler of the demo: −5 e-mail, 0 SMS, +3 WhatsApp, +10 notice
    /// e-mail, +20 negativation task; active and default.
    fn b2c(&mut self) -> Value {
        let r = self.ok(
            "dunning_rulers_create",
            json!({
                "name": "B2C", "is_default": true,
                "steps": [
                    {"offset_days": -5, "channel": "email", "template": {"subject": "Vence em {{charge.due_date}}", "body": "Olá {{debtor.name}}, {{charge.amount}} vence em {{charge.due_date}}."}},
                    {"offset_days": 0, "channel": "sms", "template": {"body": "{{debtor.name}}, vence hoje: {{charge.pix.emv}}"}},
                    {"offset_days": 3, "channel": "whatsapp", "template": {"body": "{{debtor.name}}, em aberto: {{charge.updated_amount}}"}},
                    {"offset_days": 10, "channel": "email", "template": {"subject": "Aviso de negativação", "body": "{{debtor.name}}, aviso prévio (CDC art. 43 §2)."}},
                    {"offset_days": 20, "channel": "task", "action": "negativate"}
                ]
            }),
        );
        let rid = id(&r);
        self.ok("dunning_rulers_activate", json!({"id": rid}))
    }

    fn tick(&mut self) -> TickReport {
        engine::tick(&self.bed.domain, self.bed.now, &self.driver).expect("tick")
    }

    fn deliveries(&mut self, filters: Value) -> Vec<Value> {
        let mut args = json!({"per_page": 100});
        if let (Some(a), Some(f)) = (args.as_object_mut(), filters.as_object()) {
            a.extend(f.clone());
        }
        self.ok("dunning_deliveries_list", args)["data"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn charge_doc(&mut self, charge: &str) -> Value {
        self.ok("dunning_charges_get", json!({"id": charge}))
    }

    /// Ticks once a day at 09:00 from the current day up to `last` (inclusive).
    fn daily_until(&mut self, last: &str) -> Vec<(String, TickReport)> {
        let mut out = Vec::new();
        loop {
            let day = dunning_domain::brazil::calendar::today(self.bed.now)
                .format("%Y-%m-%d")
                .to_string();
            self.bed.now = at(&day, "09:00");
            let r = self.tick();
            out.push((day.clone(), r));
            if day.as_str() >= last {
                return out;
            }
            self.bed.advance_days(1);
        }
    }
}

/// (step offset, channel, local sent_at) of every sent delivery of a charge, in order.
fn sent_log(fx: &mut Fx, charge: &str, ruler: &Value) -> Vec<(i64, String, String)> {
    let steps = ruler["steps"].as_array().cloned().unwrap_or_default();
    let mut v: Vec<(i64, String, String)> = fx
        .deliveries(json!({"charge_id": charge, "status": "sent"}))
        .iter()
        .map(|d| {
            let offset = steps
                .iter()
                .find(|s| s["id"] == d["step_id"])
                .and_then(|s| s["offset_days"].as_i64())
                .unwrap_or(999);
            (
                offset,
                d["channel"].as_str().unwrap_or_default().to_owned(),
                d["sent_at"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn steps_fire_on_the_right_day_and_time() {
    let mut fx = Fx::new();
    let ruler = fx.b2c();
    let d = fx.debtor(json!({}));
    // Due Thursday 2026-12-10.
    let c = fx.charge(&d, "2026-12-10");
    fx.daily_until("2026-12-31");
    let log = sent_log(&mut fx, &c, &ruler);
    assert_eq!(
        log,
        vec![
            // −5: Saturday 2026-12-05 is a sending day until 14:00.
            (-5, "email".into(), "2026-12-05T09:00:00-03:00".into()),
            (0, "sms".into(), "2026-12-10T09:00:00-03:00".into()),
            // +3: Sunday 2026-12-13 → Monday.
            (3, "whatsapp".into(), "2026-12-14T09:00:00-03:00".into()),
            // +10: Sunday 2026-12-20 → Monday.
            (10, "email".into(), "2026-12-21T09:00:00-03:00".into()),
            (20, "task".into(), "2026-12-30T09:00:00-03:00".into()),
        ]
    );
    let all = fx.deliveries(json!({"charge_id": c}));
    assert_eq!(all.len(), 5, "one delivery per step, nothing else");
}

#[test]
fn the_tick_report_counts_sends_and_cancellations_by_channel_too() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    let sent: Vec<TickReport> = fx
        .daily_until("2026-12-31")
        .into_iter()
        .map(|(_, r)| r)
        .collect();
    let by = |ch: &str| -> (u32, u32, u32) {
        sent.iter()
            .filter_map(|r| r.by_channel.get(ch))
            .fold((0, 0, 0), |a, c| {
                (a.0 + c.sent, a.1 + c.failed, a.2 + c.canceled)
            })
    };
    assert_eq!(by("email"), (2, 0, 0), "the -5 and +10 e-mails");
    assert_eq!(by("sms"), (1, 0, 0));
    assert_eq!(by("whatsapp"), (1, 0, 0));
    assert_eq!(by("task"), (1, 0, 0));
    let total: u32 = sent.iter().map(|r| r.sent).sum();
    assert_eq!(total, 5, "the totals and the channels agree");
    // A cancellation is counted on its channel.
    let c2 = fx.charge(&d, "2027-01-20");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": c2, "channel": "sms", "template_id": "reminder",
               "schedule_at": "2027-01-04T10:00:00-03:00"}),
    );
    fx.ok("dunning_charges_mark_paid", json!({"id": c2}));
    fx.bed.now = at("2027-01-04", "10:00");
    let r = fx.tick();
    assert_eq!(r.canceled, 1, "{r:?}");
    assert_eq!(
        r.by_channel.get("sms").map(|c| c.canceled),
        Some(1),
        "{r:?}"
    );
    let _ = c;
}

#[test]
fn rule_send_window_respected() {
    let mut fx = Fx::new();
    fx.ok(
        "dunning_rulers_create",
        json!({"name": "late", "is_default": true, "steps": [
            {"offset_days": 0, "channel": "email", "send_at": "21:30",
             "template": {"subject": "Hoje", "body": "{{debtor.name}}, vence hoje."}},
            {"offset_days": 1, "channel": "sms", "send_at": "07:00",
             "template": {"body": "{{debtor.name}}, venceu."}}
        ]}),
    );
    let rid = id(&fx.deliveries_ruler());
    fx.ok("dunning_rulers_activate", json!({"id": rid}));
    let d = fx.debtor(json!({}));
    // Due Wednesday 2026-12-02; effective due the same day.
    let c = fx.charge(&d, "2026-12-02");
    // 21:30 is after the 20:00 closing: nothing that evening...
    fx.bed.now = at("2026-12-02", "21:45");
    let r = fx.tick();
    assert_eq!((r.scheduled, r.sent), (0, 0), "{r:?}");
    // ...it goes at the next opening, 08:00 on Thursday; the +1 SMS at 07:00 too.
    fx.bed.now = at("2026-12-03", "07:59");
    let r = fx.tick();
    assert_eq!((r.scheduled, r.sent), (0, 0), "before 08:00 nothing: {r:?}");
    fx.bed.now = at("2026-12-03", "08:00");
    let r = fx.tick();
    assert_eq!((r.scheduled, r.sent), (2, 2), "{r:?}");
    for dl in fx.deliveries(json!({"charge_id": c})) {
        assert_eq!(dl["sent_at"], "2026-12-03T08:00:00-03:00");
    }
    // A manual message queued in the window but not processed before closing waits.
    fx.bed.now = at("2026-12-03", "19:59");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": c, "channel": "email", "template_id": "overdue"}),
    );
    fx.bed.now = at("2026-12-03", "20:00");
    let r = fx.tick();
    assert_eq!((r.sent, r.waiting), (0, 1), "closed at 20:00: {r:?}");
    fx.bed.now = at("2026-12-05", "14:00");
    let r = fx.tick();
    assert_eq!(
        (r.sent, r.waiting),
        (0, 1),
        "Saturday closes at 14:00: {r:?}"
    );
    fx.bed.now = at("2026-12-06", "10:00");
    let r = fx.tick();
    assert_eq!((r.sent, r.waiting), (0, 1), "never on Sundays: {r:?}");
    fx.bed.now = at("2026-12-07", "08:00");
    assert_eq!(fx.tick().sent, 1);
}

impl Fx {
    fn deliveries_ruler(&mut self) -> Value {
        self.ok("dunning_rulers_list", json!({}))["data"][0].clone()
    }
}

#[test]
fn steps_on_sundays_and_holidays_move_to_the_next_allowed_day() {
    let mut fx = Fx::new();
    fx.ok(
        "dunning_rulers_create",
        json!({"name": "due day", "is_default": true, "steps": [
            {"offset_days": 0, "channel": "email",
             "template": {"subject": "Hoje", "body": "{{debtor.name}}, vence hoje."}}
        ]}),
    );
    let rid = id(&fx.deliveries_ruler());
    fx.ok("dunning_rulers_activate", json!({"id": rid}));
    let d = fx.debtor(json!({}));
    let christmas = fx.charge(&d, "2026-12-25"); // Friday, holiday
    let sunday = fx.charge(&d, "2026-12-13");
    let log = fx.daily_until("2026-12-28");
    let sent_on = |fx: &mut Fx, c: &str| {
        let v = fx.deliveries(json!({"charge_id": c, "status": "sent"}));
        assert_eq!(v.len(), 1, "exactly one message");
        v[0]["sent_at"].as_str().unwrap().to_owned()
    };
    assert_eq!(sent_on(&mut fx, &sunday), "2026-12-14T09:00:00-03:00");
    assert_eq!(
        sent_on(&mut fx, &christmas),
        "2026-12-26T09:00:00-03:00",
        "Saturday after Christmas is a (half) sending day"
    );
    let on = |day: &str| log.iter().find(|(d, _)| d == day).unwrap().1.sent;
    assert_eq!(on("2026-12-13"), 0);
    assert_eq!(on("2026-12-25"), 0);
}

#[test]
fn rule_offsets_calendar_days_unless_business_days_only() {
    let mut fx = Fx::new();
    let r = fx.ok(
        "dunning_rulers_create",
        json!({"name": "offsets", "is_default": true, "steps": [
            {"offset_days": 3, "channel": "email", "template": {"subject": "A", "body": "calendar"}},
            {"offset_days": 3, "channel": "sms", "business_days_only": true, "template": {"body": "business"}}
        ]}),
    );
    fx.ok("dunning_rulers_activate", json!({"id": id(&r)}));
    let d = fx.debtor(json!({}));
    // Due Tuesday 2026-12-22: +3 calendar = Friday 25 (Christmas) → Saturday 26;
    // +3 business days = 23, 24, (25 holiday, 26–27 weekend) 28.
    let c = fx.charge(&d, "2026-12-22");
    fx.daily_until("2026-12-29");
    let mut got: Vec<(String, String)> = fx
        .deliveries(json!({"charge_id": c, "status": "sent"}))
        .iter()
        .map(|d| {
            (
                d["channel"].as_str().unwrap().to_owned(),
                d["sent_at"].as_str().unwrap()[..10].to_owned(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        vec![
            ("email".into(), "2026-12-26".into()),
            ("sms".into(), "2026-12-28".into())
        ]
    );
}

#[test]
fn rule_dunning_stops_when_paid_paused_or_in_agreement() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let control = fx.charge(&d, "2026-12-10");
    let paid = fx.charge(&d, "2026-12-10");
    let paused = fx.charge(&d, "2026-12-10");
    let agreed = fx.charge(&d, "2026-12-10");
    // Everyone gets the −5 reminder on 2026-12-05.
    fx.bed.now = at("2026-12-05", "09:00");
    assert_eq!(fx.tick().sent, 4);
    fx.ok("dunning_charges_mark_paid", json!({"id": paid}));
    fx.ok(
        "dunning_charges_pause",
        json!({"id": paused, "reason": "dispute"}),
    );
    // An accepted agreement covering the charge (agreements land in another group:
    // the engine reads the agreement as a document).
    let org = fx.ana.organization.clone();
    store::write(fx.bed.domain.store(), store::WriteScope::All, |tx| {
        let aid = "0b7c2f0e-0000-4000-8000-000000000001";
        tx.put(
            Kind::Agreement,
            &org,
            &json!({"id": aid, "status": "accepted", "debtor_id": d, "charge_ids": [agreed],
                    "created_at": "2026-12-05T09:00:00-03:00", "updated_at": "2026-12-05T09:00:00-03:00"}),
        )?;
        let mut c = tx.get(Kind::Charge, &org, &agreed)?.unwrap();
        c["agreement_id"] = json!(aid);
        tx.put(Kind::Charge, &org, &c)?;
        Ok(())
    })
    .unwrap();
    fx.bed.advance_days(1);
    fx.daily_until("2026-12-31");
    for (c, expected) in [(&control, 5), (&paid, 1), (&paused, 1), (&agreed, 1)] {
        let n = fx
            .deliveries(json!({"charge_id": c, "status": "sent"}))
            .len();
        assert_eq!(n, expected, "charge {c}");
    }
    assert_eq!(
        fx.deliveries(json!({"charge_id": paid})).len(),
        1,
        "a paid charge is not even looked at"
    );
    // Steps that came due during the pause or the agreement are skipped for good,
    // recorded as canceled with the reason.
    for (c, reason) in [(&paused, "charge_paused"), (&agreed, "in_agreement")] {
        let skipped = fx.deliveries(json!({"charge_id": c, "status": "canceled"}));
        assert_eq!(skipped.len(), 4, "charge {c}");
        assert!(skipped.iter().all(|d| d["cancel_reason"] == reason));
    }
    assert_eq!(fx.driver.messages().len(), 5 + 3);
    // A pause with an end date ends: the next due step fires again.
    let later = fx.charge(&d, "2027-01-20");
    fx.ok(
        "dunning_charges_pause",
        json!({"id": later, "until": "2027-01-16", "reason": "promise to pay"}),
    );
    fx.bed.now = at("2027-01-15", "09:00"); // −5 (Friday)
    fx.daily_until("2027-01-20");
    let got: Vec<(String, String)> = fx
        .deliveries(json!({"charge_id": later, "sort_by": "scheduled_at", "sort_order": "asc"}))
        .iter()
        .map(|d| {
            (
                d["channel"].as_str().unwrap().to_owned(),
                d["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("email".to_owned(), "canceled".to_owned()),
            ("sms".to_owned(), "sent".to_owned())
        ],
        "−5 fell in the pause and is skipped, not sent late; 0 fired"
    );
}

#[test]
fn a_scheduled_message_is_canceled_when_the_charge_is_paid_before_it_goes() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": c, "channel": "sms", "template_id": "reminder",
               "schedule_at": "2026-12-02T10:00:00-03:00"}),
    );
    fx.ok("dunning_charges_mark_paid", json!({"id": c}));
    fx.bed.now = at("2026-12-02", "10:00");
    let r = fx.tick();
    assert_eq!((r.sent, r.canceled), (0, 1));
    let dl = &fx.deliveries(json!({"charge_id": c}))[0];
    assert_eq!(dl["status"], "canceled");
    assert_eq!(dl["cancel_reason"], "charge_paid");
    assert!(fx.driver.messages().is_empty());
}

#[test]
fn rule_opt_out_honoured_immediately() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.bed.now = at("2026-12-05", "09:00");
    assert_eq!(fx.tick().sent, 1, "the −5 e-mail");
    // A manual e-mail is scheduled for later, then the debtor opts out of e-mail.
    fx.ok(
        "dunning_charges_notify",
        json!({"id": c, "channel": "email", "template_id": "reminder",
               "schedule_at": "2026-12-07T10:00:00-03:00"}),
    );
    let email = fx.deliveries(json!({"charge_id": c, "channel": "email"}))[0]["contact_point_id"]
        .as_str()
        .unwrap()
        .to_owned();
    fx.ok(
        "dunning_contact_points_update",
        json!({"id": d, "cp_id": email, "consent": "opted_out", "opt_out_reason": "asked by phone"}),
    );
    fx.bed.now = at("2026-12-07", "10:00");
    let r = fx.tick();
    assert_eq!((r.sent, r.canceled), (0, 1), "{r:?}");
    let canceled = fx.deliveries(json!({"charge_id": c, "status": "canceled"}));
    assert_eq!(canceled[0]["cancel_reason"], "opted_out");
    // The +10 e-mail never goes; SMS and WhatsApp (other contact points) still do.
    fx.daily_until("2026-12-31");
    let emails = fx.deliveries(json!({"charge_id": c, "channel": "email", "status": "sent"}));
    assert_eq!(emails.len(), 1, "only the e-mail sent before the opt-out");
    assert_eq!(
        fx.deliveries(json!({"charge_id": c, "channel": "sms,whatsapp", "status": "sent"}))
            .len(),
        2
    );
    assert!(
        fx.driver
            .messages()
            .iter()
            .filter(|m| m.rendered.channel == "email")
            .count()
            == 1
    );
}

#[test]
fn rule_do_not_contact_blocks_all_channels() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({"do_not_contact": true}));
    let c = fx.charge(&d, "2026-12-10");
    fx.daily_until("2026-12-31");
    let all = fx.deliveries(json!({"charge_id": c}));
    assert_eq!(all.len(), 5, "every step is skipped, the task included");
    assert!(
        all.iter()
            .all(|d| d["status"] == "canceled" && d["cancel_reason"] == "do_not_contact")
    );
    assert!(fx.driver.messages().is_empty());
    // Flagged after a message was scheduled: canceled at sending time.
    let d2 = fx.debtor(json!({}));
    let c2 = fx.charge(&d2, "2027-01-29");
    fx.ok(
        "dunning_charges_notify",
        json!({"id": c2, "channel": "whatsapp", "template_id": "reminder"}),
    );
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d2, "do_not_contact": true}),
    );
    let r = fx.tick();
    assert_eq!((r.sent, r.canceled), (0, 1));
    assert_eq!(
        fx.deliveries(json!({"charge_id": c2}))[0]["cancel_reason"],
        "do_not_contact"
    );
}

#[test]
fn rule_whatsapp_only_opted_in_in_the_engine() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = id(&fx.ok(
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "João"}),
    ));
    fx.cp(&d, "whatsapp", "+5511987650001", "unknown");
    let c = fx.charge(&d, "2026-12-10");
    fx.daily_until("2026-12-16");
    let wa = fx.deliveries(json!({"charge_id": c, "channel": "whatsapp"}));
    assert_eq!(wa.len(), 1);
    assert_eq!(
        wa[0]["status"], "canceled",
        "consent unknown is not opted_in"
    );
    assert_eq!(wa[0]["cancel_reason"], "whatsapp_not_opted_in");
    assert!(fx.driver.messages().is_empty());
}

#[test]
fn ticks_are_idempotent() {
    let mut fx = Fx::new();
    let ruler = fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.bed.now = at("2026-12-05", "09:00");
    let first = fx.tick();
    assert_eq!((first.scheduled, first.sent), (1, 1));
    let again = fx.tick();
    assert_eq!(
        (again.scheduled, again.sent, again.canceled),
        (0, 0, 0),
        "{again:?}"
    );
    fx.bed.now = at("2026-12-05", "13:00");
    assert_eq!(
        fx.tick().scheduled,
        0,
        "later the same day: still nothing new"
    );
    let list = fx.deliveries(json!({"charge_id": c}));
    assert_eq!(list.len(), 1);
    let step = ruler["steps"][0]["id"].as_str().unwrap();
    assert_eq!(
        list[0]["id"].as_str().unwrap(),
        ruler_delivery_id(&fx.ana.organization, &c, step),
        "the id derives from (charge, step): the same on every replica"
    );
    assert_eq!(fx.driver.messages().len(), 1);
}

#[test]
fn overdue_flips_the_day_after_the_effective_due_date() {
    let mut fx = Fx::new();
    let d = fx.debtor(json!({}));
    // Saturday 2026-12-12: payable on time until Monday 14; overdue on Tuesday 15.
    let c = fx.charge(&d, "2026-12-12");
    let log = fx.daily_until("2026-12-15");
    for (day, r) in &log {
        let expect = u32::from(day == "2026-12-15");
        assert_eq!(r.overdue, expect, "{day}");
    }
    assert_eq!(fx.charge_doc(&c)["status"], "overdue");
    let events = fx.ok(
        "dunning_events_list",
        json!({"code": "charge.overdue", "resource_id": c}),
    );
    assert_eq!(events["meta"]["total"], 1);
    assert_eq!(events["data"][0]["actor"], engine::ACTOR);
}

#[test]
fn negativate_protest_and_escalate_steps_only_create_tasks() {
    let mut fx = Fx::new();
    let ruler = fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.bed.now = at("2026-12-30", "09:00");
    let r = fx.tick();
    assert_eq!(r.sent, 1, "only the +20 task is within the catch-up window");
    assert_eq!(
        fx.deliveries(json!({"charge_id": c})).len(),
        1,
        "older steps are not sent late"
    );
    let task = &fx.deliveries(json!({"charge_id": c}))[0];
    assert_eq!(task["channel"], "task");
    assert_eq!(task["action"], "negativate");
    assert_eq!(task["step_id"], ruler["steps"][4]["id"]);
    assert!(task["to"].is_null() && task["contact_point_id"].is_null());
    assert!(
        task["body"]
            .as_str()
            .unwrap()
            .contains("nada foi executado automaticamente")
    );
    let charge = fx.charge_doc(&c);
    assert_eq!(charge["status"], "overdue");
    assert!(charge["negativation_status"].is_null(), "never executed");
    let org = fx.ana.organization.clone();
    let records = store::read(fx.bed.domain.store(), |tx| {
        Ok(tx.count(Kind::CreditBureauRecord, &org, &[])?)
    })
    .unwrap();
    assert_eq!(records, 0);
}

#[test]
fn every_message_identifies_the_creditor() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.daily_until("2026-12-31");
    let msgs = fx.driver.messages();
    assert_eq!(msgs.len(), 5);
    for m in &msgs {
        assert!(
            m.rendered.body.contains("Demo Cobranças Ltda")
                && m.rendered.body.contains("CNPJ 11.222.333/0001-81"),
            "{}",
            m.rendered.body
        );
        assert_eq!(m.charge_id, c);
    }
    let sms = msgs.iter().find(|m| m.rendered.channel == "sms").unwrap();
    assert!(sms.rendered.body.starts_with("Maria 1, vence hoje: 000201"));
    let wa = msgs
        .iter()
        .find(|m| m.rendered.channel == "whatsapp")
        .unwrap();
    // 150.00 + 2 % fine + 1 %/month for 4 days late on 2026-12-14.
    assert!(
        wa.rendered.body.contains("R$ 153,20"),
        "{}",
        wa.rendered.body
    );
    let email = msgs.iter().find(|m| m.rendered.channel == "email").unwrap();
    assert_eq!(
        email.rendered.subject.as_deref(),
        Some("Vence em 10/12/2026")
    );
    assert_eq!(email.rendered.to.as_deref(), Some("maria1@example.com"));
    // The delivery keeps what was sent.
    let stored = &fx.deliveries(json!({"charge_id": c, "channel": "sms"}))[0];
    assert_eq!(stored["body"].as_str(), Some(sms.rendered.body.as_str()));
}

#[test]
fn driver_failures_mark_the_delivery_failed_with_the_code() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.driver.fail_with(Some(DriverError::new(
        Failure::Failed,
        "provider_timeout",
        "SMTP timed out",
    )));
    fx.bed.now = at("2026-12-05", "09:00");
    let r = fx.tick();
    assert_eq!((r.sent, r.failed), (0, 1));
    let dl = &fx.deliveries(json!({"charge_id": c}))[0];
    assert_eq!(dl["status"], "failed");
    assert_eq!(dl["error_code"], "provider_timeout");
    assert_eq!(dl["attempt"], 1);
    let ev = fx.ok(
        "dunning_events_list",
        json!({"code": "delivery.failed", "resource_id": dl["id"]}),
    );
    assert_eq!(ev["meta"]["total"], 1);
    // A failed step is not retried by the next tick (at most one delivery per step).
    fx.driver.fail_with(None);
    assert_eq!(fx.tick().scheduled, 0);
    let cp = dl["contact_point_id"].as_str().unwrap();
    let cps = fx.ok("dunning_contact_points_list", json!({"id": d}));
    let cp = cps["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["id"] == cp)
        .unwrap();
    assert_eq!(cp["last_delivery_status"], "failed");
}

#[test]
fn paused_or_archived_rulers_send_nothing_and_explicit_rulers_win() {
    let mut fx = Fx::new();
    let default = fx.b2c();
    let special = fx.ok(
        "dunning_rulers_create",
        json!({"name": "special", "steps": [
            {"offset_days": -5, "channel": "sms", "template": {"body": "special {{debtor.name}}"}}
        ]}),
    );
    let sid = id(&special);
    fx.ok("dunning_rulers_activate", json!({"id": sid}));
    let d = fx.debtor(json!({}));
    let on_default = fx.charge(&d, "2026-12-10");
    let on_special = id(&fx.ok(
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 90.0, "due_date": "2026-12-10", "payment_method": "pix", "ruler_id": sid}),
    ));
    fx.ok("dunning_rulers_pause", json!({"id": id(&default)}));
    fx.bed.now = at("2026-12-05", "09:00");
    fx.tick();
    assert!(fx.deliveries(json!({"charge_id": on_default})).is_empty());
    let s = fx.deliveries(json!({"charge_id": on_special}));
    assert_eq!(s.len(), 1);
    assert_eq!(s[0]["channel"], "sms");
    assert_eq!(s[0]["ruler_id"], sid.as_str());
}

#[test]
fn engine_events_and_outbox_claims() {
    let mut fx = Fx::new();
    fx.b2c();
    let d = fx.debtor(json!({}));
    let c = fx.charge(&d, "2026-12-10");
    fx.bed.now = at("2026-12-05", "09:00");
    fx.tick();
    let dl = fx.deliveries(json!({"charge_id": c}))[0].clone();
    assert!(
        dl.get("claim_token").is_none(),
        "internal claim fields are not shown"
    );
    let codes: Vec<String> = fx.ok(
        "dunning_events_list",
        json!({"resource_id": dl["id"], "sort_order": "asc"}),
    )["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect();
    let mut codes = codes;
    codes.sort();
    // Same second: the order within it is not defined (events carry second precision).
    assert_eq!(codes, vec!["delivery.scheduled", "delivery.sent"]);
    let org = fx.ana.organization.clone();
    let q = Query::all().with(Cond::Eq("status", json!("queued")));
    let queued = store::read(fx.bed.domain.store(), |tx| {
        Ok(tx.find(Kind::Delivery, &org, &q)?)
    })
    .unwrap();
    assert!(queued.is_empty());
}
