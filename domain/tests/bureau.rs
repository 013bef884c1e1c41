//! Credit bureau (negativação): the notice, the window, inclusion and removal
//! (`domain/src/rules.md`, Negativação), validation naming the field, transitions, isolation and
//! idempotency.

use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::{Principal, ToolError, ToolErrorCode};
use dunning_domain::brazil::document::cpf_from_base;
use dunning_domain::op::Op;
use dunning_domain::ops::{agreements, bureau, charges, protests};
use dunning_domain::org::{Organization, Settings};
use dunning_domain::store::{self, Cond, Kind};
use dunning_domain::testing::{Bed, id, preflight};
use serde_json::{Map, Value, json};

static SEQ: AtomicU64 = AtomicU64::new(1);

/// One run of the worker steps, as the tick runs them, for `who`'s organization.
fn tick(bed: &Bed, who: &Principal) {
    let org = who.organization.clone();
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&SEQ.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    entropy[8..16].copy_from_slice(&bed.now.as_millis().to_be_bytes());
    entropy[16] = 0xb0;
    store::write(bed.domain.store(), store::WriteScope::All, |tx| {
        let settings = store::load::<Organization>(tx, Kind::Organization, &org, &org)?
            .map(|o| o.settings)
            .unwrap_or_default();
        let args = Map::new();
        let mut op = Op::new(
            tx,
            &org,
            who,
            bed.now,
            &args,
            "tick",
            entropy,
            settings,
            bed.domain.outbound(),
            bed.domain.registry(),
        );
        charges::sweep_overdue(&mut op)?;
        bureau::advance(&mut op)?;
        protests::advance(&mut op)?;
        agreements::check_broken(&mut op)?;
        Ok(())
    })
    .expect("tick");
}

fn settings(bed: &Bed, who: &Principal, f: impl FnOnce(&mut Settings)) {
    let org = who.organization.clone();
    store::write(bed.domain.store(), store::WriteScope::All, |tx| {
        let mut o: Organization = store::must(tx, Kind::Organization, &org, &org)?;
        f(&mut o.settings);
        store::save(tx, Kind::Organization, &org, &o)
    })
    .unwrap();
}

fn count(bed: &Bed, who: &Principal, kind: Kind, conds: &[Cond]) -> u64 {
    store::read(bed.domain.store(), |tx| {
        Ok(tx.count(kind, &who.organization, conds)?)
    })
    .unwrap()
}

fn events(bed: &Bed, who: &Principal, code: &str) -> u64 {
    count(bed, who, Kind::Event, &[Cond::Eq("code", json!(code))])
}

struct Fx {
    bed: Bed,
    ana: Principal,
    n: u8,
    due: chrono::NaiveDate,
}

impl Fx {
    fn new() -> Self {
        let bed = Bed::new();
        let ana = bed.ana();
        let due = dunning_domain::brazil::calendar::today(bed.now);
        Self {
            bed,
            ana,
            n: 0,
            due,
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

    fn tick(&self) {
        tick(&self.bed, &self.ana);
    }

    /// A debtor (CPF), with an e-mail contact point when `email`.
    fn debtor(&mut self, email: bool) -> String {
        self.n += 1;
        let n = self.n;
        let d = id(&self.ok(
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf_from_base(&[n, 2, 9, 9, 8, 2, 2, 4, 7]),
                   "name": format!("Devedor {n}"),
                   "address": {"city": "São Paulo", "state": "SP", "zipcode": "01001000"}}),
        ));
        if email {
            self.ok(
                "dunning_contact_points_create",
                json!({"id": d, "channel": "email", "value": format!("devedor{n}@example.com.br")}),
            );
        }
        d
    }

    /// A charge of `debtor` due today (pending).
    fn charge(&mut self, debtor: &str, extra: Value) -> String {
        let today = dunning_domain::brazil::calendar::today(self.bed.now);
        self.due = today;
        let mut args = json!({"debtor_id": debtor, "amount": 1000.0,
                              "due_date": today.format("%Y-%m-%d").to_string(),
                              "payment_method": "boleto", "fine_percentage": 2.0,
                              "interest_percentage": 1.0});
        if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        id(&self.ok("dunning_charges_create", args))
    }

    /// Two days later or more, past the effective due date, with the sweep run: every
    /// charge created today is overdue.
    fn make_overdue(&mut self) {
        let due = dunning_domain::brazil::calendar::effective_due(self.due);
        self.bed.advance_days(2);
        while dunning_domain::brazil::calendar::today(self.bed.now) <= due {
            self.bed.advance_days(1);
        }
        self.tick();
    }

    /// A debtor with an e-mail and an overdue charge.
    fn overdue(&mut self) -> (String, String) {
        let d = self.debtor(true);
        let c = self.charge(&d, json!({}));
        self.make_overdue();
        (d, c)
    }

    fn record(&mut self, rid: &str) -> Value {
        self.ok("dunning_credit_bureau_get", json!({"id": rid}))
    }

    /// An overdue charge whose record is included (notice, window, tick).
    fn included(&mut self) -> (String, String, String) {
        let (d, c) = self.overdue();
        let r = id(&self.ok(
            "dunning_charges_negativate",
            json!({"id": c, "bureau": "serasa"}),
        ));
        self.tick();
        self.bed.advance_days(10);
        self.tick();
        assert_eq!(self.record(&r)["status"], "included");
        (d, c, r)
    }
}

#[test]
fn negativate_sends_the_notice_and_includes_after_the_window() {
    let mut fx = Fx::new();
    let (d, c) = fx.overdue();
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
    assert_eq!(r["status"], "notice_sent");
    assert_eq!(r["bureau"], "serasa");
    assert_eq!(r["debtor_id"], d.as_str());
    assert_eq!(r["notice_channel"], "email");
    assert_eq!(r["notice_days"], 10);
    assert_eq!(
        r["amount"], 1020.67,
        "updated amount: 2% fine + 2 days of 1%/month"
    );
    assert_eq!(r["notice_sent_at"], "2026-12-03T09:00:00-03:00");
    assert_eq!(r["eligible_at"], "2026-12-13T09:00:00-03:00");
    let rid = id(&r);
    let delivery = store::read(fx.bed.domain.store(), |tx| {
        Ok(tx.get(
            Kind::Delivery,
            &fx.ana.organization,
            r["notice_delivery_id"].as_str().unwrap(),
        )?)
    })
    .unwrap()
    .expect("the notice is a delivery");
    assert_eq!(delivery["status"], "sent");
    assert_eq!(delivery["origin"], "api");
    assert_eq!(delivery["charge_id"], c.as_str());
    assert_eq!(delivery["template_id"], "negativation_notice");
    let body = delivery["body"].as_str().unwrap();
    assert!(body.contains("art. 43"), "{body}");
    assert!(
        body.contains("11.222.333/0001-81"),
        "creditor identified: {body}"
    );
    assert_eq!(events(&fx.bed, &fx.ana, "credit_bureau.notice_sent"), 1);
    let charge = fx.ok("dunning_charges_get", json!({"id": c}));
    assert_eq!(charge["negativation_status"], "notice_sent");

    fx.tick();
    assert_eq!(fx.record(&rid)["status"], "awaiting_window");
    fx.bed.advance_days(10);
    fx.tick();
    let r = fx.record(&rid);
    assert_eq!(r["status"], "included");
    assert!(r["protocol"].as_str().unwrap().starts_with("SER-"));
    assert!(r["requested_at"].is_string() && r["included_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "credit_bureau.requested"), 1);
    assert_eq!(events(&fx.bed, &fx.ana, "credit_bureau.included"), 1);
    let charge = fx.ok("dunning_charges_get", json!({"id": c}));
    assert_eq!(charge["negativation_status"], "included");
}

#[test]
fn rule_negativation_only_after_notice_window() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let rid = id(&fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "spc", "notice_days": 15}),
    ));
    for _ in 0..14 {
        fx.bed.advance_days(1);
        fx.tick();
        let r = fx.record(&rid);
        assert_eq!(r["status"], "awaiting_window", "{}", r["eligible_at"]);
        assert!(r["requested_at"].is_null());
    }
    fx.bed.advance_days(1);
    fx.tick();
    assert_eq!(fx.record(&rid)["status"], "included");
    // The window may be longer than the organization's, never shorter.
    let (_, c2) = fx.overdue();
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "spc", "notice_days": 9}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "notice_days");
    settings(&fx.bed, &fx.ana, |s| s.negativation_notice_days = 20);
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "spc", "notice_days": 15}),
    );
    assert_eq!(e.details[0].field, "notice_days");
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "spc"}),
    );
    assert_eq!(r["notice_days"], 20, "default: the organization's setting");
}

#[test]
fn rule_negativation_requires_prior_notice() {
    let mut fx = Fx::new();
    let d = fx.debtor(false);
    let c = fx.charge(&d, json!({}));
    fx.make_overdue();
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("no_notice_address"), "{}", e.message);
    assert!(e.message.contains("art. 43"), "{}", e.message);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::CreditBureauRecord, &[]), 0);
    // An opted-out e-mail is no valid address either.
    let cp = id(&fx.ok(
        "dunning_contact_points_create",
        json!({"id": d, "channel": "email", "value": "sem.aviso@example.com.br"}),
    ));
    fx.ok(
        "dunning_contact_points_update",
        json!({"id": d, "cp_id": cp, "consent": "opted_out", "opt_out_reason": "pediu"}),
    );
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
    assert!(e.message.contains("no_notice_address"), "{}", e.message);
    // A complete postal address is one: the notice goes by letter.
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d, "address": {"street": "Rua Augusta", "number": "100"}}),
    );
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
    assert_eq!(r["notice_channel"], "postal");
    assert!(
        r["notice_to"]
            .as_str()
            .unwrap()
            .contains("Rua Augusta, 100")
    );
    assert!(r["notice_delivery_id"].is_string());
    // do_not_contact blocks every channel, the notice included.
    let d2 = fx.debtor(true);
    let c2 = fx.charge(&d2, json!({}));
    fx.make_overdue();
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d2, "do_not_contact": true}),
    );
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "serasa"}),
    );
    assert!(e.message.contains("do_not_contact"), "{}", e.message);
    // A record never reaches the bureau without a notice that went out: a failed notice
    // cancels it.
    let (_, c3) = fx.overdue();
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": c3, "bureau": "quod"}),
    );
    let did = r["notice_delivery_id"].as_str().unwrap().to_owned();
    let org = fx.ana.organization.clone();
    store::write(fx.bed.domain.store(), store::WriteScope::All, |tx| {
        let mut d = tx.get(Kind::Delivery, &org, &did)?.unwrap();
        d["status"] = json!("bounced");
        tx.put(Kind::Delivery, &org, &d)?;
        Ok(())
    })
    .unwrap();
    fx.bed.advance_days(11);
    fx.tick();
    let r = fx.record(&id(&r));
    assert_eq!(r["status"], "canceled");
    assert!(r["included_at"].is_null());
}

#[test]
fn rule_negativation_refuses_debts_older_than_five_years() {
    let mut fx = Fx::new();
    let d = fx.debtor(true);
    let old = fx.charge(&d, json!({}));
    // Due 2026-12-01: registrable until 2031-12-01.
    fx.bed.advance_days(1826);
    fx.tick();
    let young = fx.charge(&d, json!({}));
    fx.bed.advance_days(2);
    fx.tick();
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": old, "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("debt_too_old"), "{}", e.message);
    assert!(e.message.contains("5 years"), "{}", e.message);
    assert!(e.message.contains("art. 43 §1"), "{}", e.message);
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": young, "bureau": "serasa"}),
    );
    assert_eq!(r["status"], "notice_sent");
}

#[test]
fn rule_negativation_refused_when_debtor_blocked() {
    let mut fx = Fx::new();
    let (d, c) = fx.overdue();
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d, "credit_restriction_blocked": true}),
    );
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "boa_vista"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message.contains("credit_restriction_blocked"),
        "{}",
        e.message
    );
    // Blocked while waiting for the window: nothing reaches the bureau.
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d, "credit_restriction_blocked": false}),
    );
    let r = id(&fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "boa_vista"}),
    ));
    fx.ok(
        "dunning_debtors_update",
        json!({"id": d, "credit_restriction_blocked": true}),
    );
    fx.bed.advance_days(10);
    fx.tick();
    let rec = fx.record(&r);
    assert_eq!(rec["status"], "canceled");
    assert!(
        rec["error_message"]
            .as_str()
            .unwrap()
            .contains("credit_restriction_blocked")
    );
}

#[test]
fn disputed_and_non_overdue_charges_are_refused() {
    let mut fx = Fx::new();
    let d = fx.debtor(true);
    let pending = fx.charge(&d, json!({}));
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": pending, "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("is pending"), "{}", e.message);
    let disputed = fx.charge(&d, json!({"tags": ["disputed"]}));
    fx.make_overdue();
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": disputed, "bureau": "serasa"}),
    );
    assert!(e.message.contains("charge_disputed"), "{}", e.message);
    fx.ok("dunning_charges_mark_paid", json!({"id": pending}));
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": pending, "bureau": "serasa"}),
    );
    assert!(e.message.contains("is paid"), "{}", e.message);
}

#[test]
fn rule_removal_requested_after_payment() {
    let mut fx = Fx::new();
    let (_, c, r) = fx.included();
    fx.ok("dunning_charges_mark_paid", json!({"id": c}));
    fx.tick();
    let rec = fx.record(&r);
    assert_eq!(rec["status"], "removal_requested");
    assert_eq!(rec["removal_reason"], "paid");
    assert_eq!(
        rec["removal_requested_at"],
        dunning_domain::brazil::calendar::timestamp(fx.bed.now),
        "requested on the first tick after payment, well within 5 business days"
    );
    assert_eq!(
        events(&fx.bed, &fx.ana, "credit_bureau.removal_requested"),
        1
    );
    fx.tick();
    let rec = fx.record(&r);
    assert_eq!(rec["status"], "removed");
    assert!(rec["removed_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "credit_bureau.removed"), 1);
    // Paid before inclusion: the record is canceled, nothing reaches the bureau.
    let (_, c2) = fx.overdue();
    let r2 = id(&fx.ok(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "serasa"}),
    ));
    fx.ok("dunning_charges_mark_paid", json!({"id": c2}));
    fx.tick();
    let rec = fx.record(&r2);
    assert_eq!(rec["status"], "canceled");
    assert_eq!(rec["removal_reason"], "paid");
    assert!(rec["requested_at"].is_null());
}

#[test]
fn rule_removal_requested_after_agreement() {
    let mut fx = Fx::new();
    let (d, c, r) = fx.included();
    let today = dunning_domain::brazil::calendar::today(fx.bed.now);
    let a = fx.ok(
        "dunning_agreements_create",
        json!({"debtor_id": d, "charge_ids": [c], "installments_count": 2,
               "first_due_date": (today + chrono::Duration::days(5)).format("%Y-%m-%d").to_string()}),
    );
    assert_eq!(
        fx.record(&r)["status"],
        "included",
        "a proposal changes nothing"
    );
    fx.ok("dunning_agreements_accept", json!({"id": id(&a)}));
    let rec = fx.record(&r);
    assert_eq!(
        rec["status"], "removal_requested",
        "at acceptance, no tick needed"
    );
    assert_eq!(rec["removal_reason"], "agreement");
    fx.tick();
    assert_eq!(fx.record(&r)["status"], "removed");
}

#[test]
fn remove_cancels_early_records_and_requests_removal_of_included_ones() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let early = id(&fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    ));
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_credit_bureau_remove",
        json!({"id": early, "reason": "error"}),
    )
    .unwrap();
    assert!(
        msg.contains("Cancel the pending negativação of Devedor 1"),
        "{msg}"
    );
    assert!(msg.contains("R$ 1.020,67"), "{msg}");
    let rec = fx.ok(
        "dunning_credit_bureau_remove",
        json!({"id": early, "reason": "error"}),
    );
    assert_eq!(rec["status"], "canceled");
    assert_eq!(rec["removal_reason"], "error");
    let again = fx.ok(
        "dunning_credit_bureau_remove",
        json!({"id": early, "reason": "error"}),
    );
    assert_eq!(again, rec, "idempotent");
    // The charge may be negativated again once its record is canceled.
    fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "spc"}),
    );

    let (_, _, inc) = fx.included();
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_credit_bureau_remove",
        json!({"id": inc, "reason": "dispute"}),
    )
    .unwrap();
    assert!(
        msg.contains("Ask Serasa Experian to remove Devedor 2"),
        "{msg}"
    );
    let rec = fx.ok(
        "dunning_credit_bureau_remove",
        json!({"id": inc, "reason": "dispute"}),
    );
    assert_eq!(rec["status"], "removal_requested");
    assert_eq!(rec["removal_reason"], "dispute");
    fx.tick();
    let rec = fx.ok(
        "dunning_credit_bureau_remove",
        json!({"id": inc, "reason": "dispute"}),
    );
    assert_eq!(rec["status"], "removed", "repeating changes nothing");
    let e = fx.err(
        "dunning_credit_bureau_remove",
        json!({"id": inc, "reason": "bored"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "reason");
}

#[test]
fn removal_conflicts_name_the_state() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let r = id(&fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    ));
    let org = fx.ana.organization.clone();
    store::write(fx.bed.domain.store(), store::WriteScope::All, |tx| {
        let mut d = tx.get(Kind::CreditBureauRecord, &org, &r)?.unwrap();
        d["status"] = json!("rejected");
        tx.put(Kind::CreditBureauRecord, &org, &d)?;
        Ok(())
    })
    .unwrap();
    let e = fx.err(
        "dunning_credit_bureau_remove",
        json!({"id": r, "reason": "error"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("invalid_transition"), "{}", e.message);
    assert!(e.message.contains("is rejected"), "{}", e.message);
}

#[test]
fn negativate_confirmation_names_debtor_bureau_amount_and_changes_nothing() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let args = json!({"id": c, "bureau": "serasa"});
    let msg = preflight(&fx.bed, &fx.ana, "dunning_charges_negativate", args.clone()).unwrap();
    assert!(msg.starts_with("Negativate Devedor 1"), "{msg}");
    assert!(msg.contains("Serasa Experian"), "{msg}");
    assert!(msg.contains("R$ 1.000,00"), "{msg}");
    assert!(msg.contains("R$ 1.020,67 updated"), "{msg}");
    assert!(msg.contains("devedor1@example.com.br"), "{msg}");
    assert!(msg.contains("2026-12-13"), "{msg}");
    assert_eq!(count(&fx.bed, &fx.ana, Kind::CreditBureauRecord, &[]), 0);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::Delivery, &[]), 0);
    // Preconditions are checked before the user is asked.
    let e = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "nope"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::Validation);
}

#[test]
fn validation_errors_name_the_field() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "equifax"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "bureau");
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa", "notice_days": 91}),
    );
    assert_eq!(e.details[0].field, "notice_days");
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa", "amount": 10}),
    );
    assert_eq!(e.details[0].field, "amount");
    assert_eq!(e.details[0].issue, "unknown field");
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": "00000000-0000-4000-8000-000000000000", "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn one_active_record_per_charge_and_idempotency_key() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let args = json!({"id": c, "bureau": "serasa", "idempotency_key": "neg-1"});
    let first = fx.ok("dunning_charges_negativate", args.clone());
    let replay = fx.ok("dunning_charges_negativate", args);
    assert_eq!(first, replay);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::CreditBureauRecord, &[]), 1);
    assert_eq!(
        count(&fx.bed, &fx.ana, Kind::Delivery, &[]),
        1,
        "one notice, not two"
    );
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "spc"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("already_negativated"), "{}", e.message);
    assert!(e.message.contains("notice_sent"), "{}", e.message);
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "spc", "idempotency_key": "neg-1"}),
    );
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn list_filters_and_other_organizations() {
    let mut fx = Fx::new();
    let (_, c2, r2) = fx.included();
    let (d1, c1) = fx.overdue();
    fx.ok(
        "dunning_charges_negativate",
        json!({"id": c1, "bureau": "serasa"}),
    );
    let all = fx.ok("dunning_credit_bureau_list", json!({}));
    assert_eq!(all["meta"]["total"], 2);
    let inc = fx.ok(
        "dunning_credit_bureau_list",
        json!({"status": "included,removed"}),
    );
    assert_eq!(inc["meta"]["total"], 1);
    assert_eq!(inc["data"][0]["id"], r2.as_str());
    assert_eq!(
        fx.ok("dunning_credit_bureau_list", json!({"debtor_id": d1}))["meta"]["total"],
        1
    );
    assert_eq!(
        fx.ok("dunning_credit_bureau_list", json!({"charge_id": c2}))["data"][0]["id"],
        r2.as_str()
    );
    assert_eq!(
        fx.ok("dunning_credit_bureau_list", json!({"bureau": "spc"}))["meta"]["total"],
        0
    );
    let carla = fx.bed.carla();
    assert_eq!(
        fx.bed.ok(&carla, "dunning_credit_bureau_list", json!({}))["meta"]["total"],
        0
    );
    for (tool, args) in [
        ("dunning_credit_bureau_get", json!({"id": r2})),
        (
            "dunning_credit_bureau_remove",
            json!({"id": r2, "reason": "error"}),
        ),
        (
            "dunning_charges_negativate",
            json!({"id": c1, "bureau": "serasa"}),
        ),
    ] {
        let e = fx.bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    // Carla's worker run touches nothing of demo's.
    tick(&fx.bed, &carla);
    assert_eq!(fx.record(&r2)["status"], "included");
}

#[test]
fn rule_a_dispute_recorded_as_a_pause_reason_blocks_negativation() {
    let mut fx = Fx::new();
    let d = fx.debtor(true);
    let c = fx.charge(&d, json!({}));
    fx.make_overdue();
    fx.ok(
        "dunning_charges_pause",
        json!({"id": c, "reason": "Devedor contesta o valor cobrado"}),
    );
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("charge_disputed"), "{}", e.message);
    // Resumed, the pause reason no longer holds the charge.
    fx.ok("dunning_charges_resume", json!({"id": c}));
    fx.ok(
        "dunning_charges_negativate",
        json!({"id": c, "bureau": "serasa"}),
    );
}

#[test]
fn dispute_words_in_portuguese_and_english() {
    use dunning_domain::ops::bureau::names_a_dispute;
    for yes in [
        "Devedor contesta o valor",
        "em DISPUTA judicial",
        "Impugnação do título",
        "disputed by the debtor",
        "valor questionado",
        "contestação",
    ] {
        assert!(names_a_dispute(yes), "{yes}");
    }
    for no in ["viagem", "aguardando boleto", "indisponível", ""] {
        assert!(!names_a_dispute(no), "{no}");
    }
}

/// The body of a negativation's prior notice.
fn notice_body(fx: &mut Fx, record: &Value) -> String {
    let delivery = store::read(fx.bed.domain.store(), |tx| {
        Ok(tx.get(
            Kind::Delivery,
            &fx.ana.organization,
            record["notice_delivery_id"].as_str().unwrap(),
        )?)
    })
    .unwrap()
    .expect("the notice is a delivery");
    delivery["body"].as_str().unwrap().to_owned()
}

#[test]
fn rule_the_notice_says_how_to_pay_which_bureau_and_from_when() {
    let mut fx = Fx::new();
    let (_, boleto) = fx.overdue();
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": boleto, "bureau": "serasa", "notice_days": 15}),
    );
    let body = notice_body(&mut fx, &r);
    let charge = fx.ok("dunning_charges_get", json!({"id": boleto}));
    let line = charge["boleto"]["line"].as_str().expect("a boleto line");
    assert!(
        body.contains(&format!(
            "Para regularizar: linha digitável do boleto {line}"
        )),
        "how to pay: {body}"
    );
    assert!(body.contains("Serasa Experian"), "the bureau: {body}");
    // Notice on 2026-12-03 (fx.overdue), 15 days of window.
    assert!(body.contains("a partir de 18/12/2026"), "from when: {body}");
    assert!(!body.contains("{{"), "every variable rendered: {body}");

    let d = fx.debtor(true);
    let pix = fx.charge(&d, json!({"payment_method": "pix"}));
    fx.make_overdue();
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": pix, "bureau": "boa_vista"}),
    );
    let body = notice_body(&mut fx, &r);
    let emv = fx.ok("dunning_charges_get", json!({"id": pix}))["pix"]["emv"]
        .as_str()
        .expect("a Pix code")
        .to_owned();
    assert!(body.contains(&format!("Pix copia e cola {emv}")), "{body}");
    assert!(body.contains("Boa Vista SCPC"), "{body}");
    assert!(!body.trim_end().ends_with("Para regularizar:"), "{body}");
}
