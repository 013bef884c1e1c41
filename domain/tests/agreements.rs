//! Agreements: terms computed by the server, acceptance, cancellation, broken and
//! completed agreements, the term PDF (`domain/src/rules.md`, Agreements and Documents),
//! validation naming the field, transitions, isolation, idempotency and the demo data.

use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::{Output, Principal, ToolError, ToolErrorCode};
use dunning_domain::brazil::document::cpf_from_base;
use dunning_domain::documents::check;
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
    entropy[16] = 0xa9;
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

/// Maria with an e-mail and two charges overdue for 30 days (2026-12-31):
/// R$ 1.000,00 → 1.030,00 and R$ 500,00 → 515,00 (2% fine, 1% a month).
struct Fx {
    bed: Bed,
    ana: Principal,
    debtor: String,
    a: String,
    b: String,
}

impl Fx {
    fn new() -> Self {
        let mut bed = Bed::new();
        let ana = bed.ana();
        let debtor = id(&bed.ok(
            &ana,
            "dunning_debtors_create",
            json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva",
                   "address": {"street": "Rua das Flores", "number": "12", "neighborhood": "Centro",
                               "city": "São Paulo", "state": "SP", "zipcode": "01001000"}}),
        ));
        bed.ok(
            &ana,
            "dunning_contact_points_create",
            json!({"id": debtor, "channel": "email", "value": "maria@example.com.br"}),
        );
        let charge = |bed: &mut Bed, amount: f64, desc: &str| {
            id(&bed.ok(
                &ana,
                "dunning_charges_create",
                json!({"debtor_id": debtor, "amount": amount, "due_date": "2026-12-01",
                       "payment_method": "boleto", "fine_percentage": 2.0,
                       "interest_percentage": 1.0, "description": desc}),
            ))
        };
        let a = charge(&mut bed, 1000.0, "Mensalidade 12/2026");
        let b = charge(&mut bed, 500.0, "Taxa de instalação");
        bed.advance_days(30);
        tick(&bed, &ana);
        Self {
            bed,
            ana,
            debtor,
            a,
            b,
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

    fn terms(&self) -> Value {
        json!({"debtor_id": self.debtor, "charge_ids": [self.a, self.b],
               "installments_count": 3, "discount_percentage": 10,
               "down_payment_amount": 100, "first_due_date": "2027-01-02"})
    }

    fn propose(&mut self) -> String {
        let t = self.terms();
        id(&self.ok("dunning_agreements_create", t))
    }

    fn accepted(&mut self) -> (String, Value) {
        let aid = self.propose();
        let a = self.ok("dunning_agreements_accept", json!({"id": aid}));
        (aid, a)
    }

    fn charge(&mut self, cid: &str) -> Value {
        self.ok("dunning_charges_get", json!({"id": cid}))
    }

    fn get(&mut self, aid: &str) -> Value {
        self.ok("dunning_agreements_get", json!({"id": aid}))
    }

    fn installment_charge(a: &Value, i: usize) -> String {
        a["installments"][i]["charge_id"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    fn term(&mut self, aid: &str) -> (Value, Vec<u8>) {
        let who = self.ana.clone();
        match self
            .bed
            .call(&who, "dunning_agreements_term", json!({"id": aid}))
            .expect("term")
        {
            Output::File(f) => {
                let v = Output::File(f.clone()).tool_value();
                (v, f.bytes)
            }
            other => panic!("not a file: {other:?}"),
        }
    }
}

#[test]
fn simulate_computes_everything_in_centavos_and_saves_nothing() {
    let mut fx = Fx::new();
    let events_before = count(&fx.bed, &fx.ana, Kind::Event, &[]);
    let t = fx.terms();
    let s = fx.ok("dunning_agreements_simulate", t);
    assert_eq!(s["as_of"], "2026-12-31");
    assert_eq!(s["original_amount"], 1500.0);
    assert_eq!(s["fine_amount"], 30.0);
    assert_eq!(s["interest_amount"], 15.0);
    assert_eq!(s["updated_amount"], 1545.0);
    assert_eq!(s["discount_amount"], 154.5);
    assert_eq!(s["interest_waived"], 15.0, "interest is waived first");
    assert_eq!(s["fine_waived"], 30.0, "then the fine");
    assert_eq!(s["total_amount"], 1390.5);
    assert_eq!(s["charges"][0]["updated_amount"], 1030.0);
    assert_eq!(s["charges"][0]["days_overdue"], 30);
    let inst = s["installments"].as_array().unwrap();
    let plan: Vec<(u64, &str, f64, &str)> = inst
        .iter()
        .map(|i| {
            (
                i["number"].as_u64().unwrap(),
                i["kind"].as_str().unwrap(),
                i["amount"].as_f64().unwrap(),
                i["due_date"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        plan,
        vec![
            // Saturday 2027-01-02 rolls to Monday 01-04.
            (1, "down_payment", 100.0, "2027-01-04"),
            (2, "installment", 430.16, "2027-02-02"),
            (3, "installment", 430.16, "2027-03-02"),
            (4, "installment", 430.18, "2027-04-02"),
        ],
        "the last installment absorbs the rounding"
    );
    let sum: i64 = inst
        .iter()
        .map(|i| (i["amount"].as_f64().unwrap() * 100.0).round() as i64)
        .sum();
    assert_eq!(sum, 139_050);
    // Without a down payment the first installment is due on first_due_date.
    let s = fx.ok(
        "dunning_agreements_simulate",
        json!({"debtor_id": fx.debtor, "charge_ids": [fx.a], "installments_count": 1,
               "first_due_date": "2027-01-05"}),
    );
    assert_eq!(s["total_amount"], 1030.0);
    assert_eq!(s["installments"][0]["due_date"], "2027-01-05");
    assert_eq!(s["installments"][0]["amount"], 1030.0);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::Agreement, &[]), 0);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::Event, &[]), events_before);
}

#[test]
fn rule_agreement_discount_capped() {
    let mut fx = Fx::new();
    let mut t = fx.terms();
    t["discount_percentage"] = json!(30.01);
    let e = fx.err("dunning_agreements_simulate", t.clone());
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "discount_percentage");
    assert!(e.message.contains("30%"), "{}", e.message);
    let e = fx.err("dunning_agreements_create", t.clone());
    assert_eq!(e.details[0].field, "discount_percentage");
    t["discount_percentage"] = json!(30);
    assert_eq!(
        fx.ok("dunning_agreements_simulate", t.clone())["discount_amount"],
        463.5
    );
    settings(&fx.bed, &fx.ana, |s| s.max_discount_percentage = 5.0);
    t["discount_percentage"] = json!(10);
    let e = fx.err("dunning_agreements_create", t);
    assert_eq!(e.details[0].field, "discount_percentage");
    assert!(e.message.contains("5%"), "{}", e.message);
}

#[test]
fn create_proposes_without_touching_the_charges() {
    let mut fx = Fx::new();
    let t = fx.terms();
    let a = fx.ok("dunning_agreements_create", t);
    assert_eq!(a["status"], "proposed");
    assert_eq!(a["total_amount"], 1390.5);
    assert_eq!(a["break_after_days"], 30);
    assert_eq!(
        a["expires_at"], "2027-01-02T23:59:59-03:00",
        "7 days by default, capped by the first due date"
    );
    assert_eq!(a["term_url"], format!("/v1/agreements/{}/term-pdf", id(&a)));
    assert!(a["accepted_at"].is_null());
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.proposed"), 1);
    let a_id = fx.a.clone();
    assert_eq!(fx.charge(&a_id)["status"], "overdue");
    let list = fx.ok("dunning_agreements_list", json!({"status": "proposed"}));
    assert_eq!(list["meta"]["total"], 1);
    let list = fx.ok(
        "dunning_agreements_list",
        json!({"debtor_id": fx.debtor.clone(), "status": "accepted,active"}),
    );
    assert_eq!(list["meta"]["total"], 0);
    // A charge already held by an open agreement cannot be proposed again.
    let e = fx.err(
        "dunning_agreements_create",
        json!({"debtor_id": fx.debtor, "charge_ids": [fx.b], "installments_count": 1,
               "first_due_date": "2027-01-05"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("in_agreement"), "{}", e.message);
}

#[test]
fn notify_debtor_schedules_a_message_about_the_proposal() {
    let mut fx = Fx::new();
    let mut t = fx.terms();
    t["notify_debtor"] = json!(true);
    let a = fx.ok("dunning_agreements_create", t);
    let did = a["notification_delivery_id"]
        .as_str()
        .expect("a delivery")
        .to_owned();
    let org = fx.ana.organization.clone();
    let d = store::read(fx.bed.domain.store(), |tx| {
        Ok(tx.get(Kind::Delivery, &org, &did)?)
    })
    .unwrap()
    .unwrap();
    assert_eq!(d["status"], "scheduled");
    assert_eq!(d["channel"], "email");
    assert_eq!(d["to"], "maria@example.com.br");
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("R$ 1.390,50"), "{msg}");
    assert!(msg.contains("04/01/2027"), "{msg}");
    // do_not_contact: the proposal is made, the debtor is not told.
    fx.ok("dunning_agreements_cancel", json!({"id": id(&a)}));
    fx.ok(
        "dunning_debtors_update",
        json!({"id": fx.debtor.clone(), "do_not_contact": true}),
    );
    let mut t = fx.terms();
    t["notify_debtor"] = json!(true);
    let a = fx.ok("dunning_agreements_create", t);
    assert!(a["notification_delivery_id"].is_null());
    assert!(
        a["notification_skipped"]
            .as_str()
            .unwrap()
            .contains("do_not_contact")
    );
}

#[test]
fn rule_agreement_acceptance_generates_installments_and_renegotiates() {
    let mut fx = Fx::new();
    let aid = fx.propose();
    let a = fx.ok(
        "dunning_agreements_accept",
        json!({"id": aid, "accepted_by": "debtor"}),
    );
    assert_eq!(a["status"], "accepted");
    assert_eq!(a["accepted_by"], "debtor");
    assert_eq!(a["accepted_at"], "2026-12-31T09:00:00-03:00");
    let inst = a["installments"].as_array().unwrap().clone();
    assert_eq!(inst.len(), 4);
    for i in &inst {
        let c = fx.charge(i["charge_id"].as_str().unwrap());
        assert_eq!(c["status"], "pending");
        assert_eq!(c["amount"], i["amount"]);
        assert_eq!(c["due_date"], i["due_date"]);
        assert_eq!(c["agreement_id"], aid.as_str());
        assert_eq!(c["debtor_id"], fx.debtor.as_str());
        assert!(c["boleto"]["line"].is_string(), "registered, payable");
        assert_eq!(i["status"], "pending");
    }
    for cid in [fx.a.clone(), fx.b.clone()] {
        let c = fx.charge(&cid);
        assert_eq!(c["status"], "renegotiated");
        assert_eq!(c["agreement_id"], aid.as_str());
    }
    assert_eq!(events(&fx.bed, &fx.ana, "charge.renegotiated"), 2);
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.accepted"), 1);
    let d = fx.ok("dunning_debtors_get", json!({"id": fx.debtor.clone()}));
    assert_eq!(
        d["open_amount"], 1390.5,
        "the debtor now owes the agreement's total"
    );
    assert_eq!(d["overdue_count"], 0);
    // Idempotent: accepting again changes nothing.
    let again = fx.ok("dunning_agreements_accept", json!({"id": aid}));
    assert_eq!(again, a);
    assert_eq!(events(&fx.bed, &fx.ana, "charge.created"), 6);
    // Accepting a canceled or expired agreement is a CONFLICT naming the state.
    fx.ok("dunning_agreements_cancel", json!({"id": aid}));
    let e = fx.err("dunning_agreements_accept", json!({"id": aid}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("is canceled"), "{}", e.message);
}

#[test]
fn cancel_an_accepted_agreement_returns_the_originals_to_dunning() {
    let mut fx = Fx::new();
    let (aid, a) = fx.accepted();
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_agreements_cancel",
        json!({"id": aid, "reason": "desistiu"}),
    )
    .unwrap();
    assert!(msg.contains("Maria Silva"), "{msg}");
    assert!(msg.contains("R$ 1.390,50"), "{msg}");
    assert!(msg.contains("return to dunning"), "{msg}");
    let c = fx.ok(
        "dunning_agreements_cancel",
        json!({"id": aid, "reason": "desistiu"}),
    );
    assert_eq!(c["status"], "canceled");
    assert_eq!(c["cancellation_reason"], "desistiu");
    for i in 0..4 {
        let cid = Fx::installment_charge(&a, i);
        assert_eq!(fx.charge(&cid)["status"], "canceled");
    }
    for cid in [fx.a.clone(), fx.b.clone()] {
        let ch = fx.charge(&cid);
        assert_eq!(ch["status"], "overdue");
        assert!(ch["agreement_id"].is_null());
    }
    let d = fx.ok("dunning_debtors_get", json!({"id": fx.debtor.clone()}));
    assert_eq!(d["overdue_count"], 2);
    assert_eq!(
        fx.ok("dunning_agreements_cancel", json!({"id": aid})),
        c,
        "idempotent"
    );
    // The charges may be renegotiated again.
    fx.propose();
}

#[test]
fn an_active_agreement_cannot_be_canceled() {
    let mut fx = Fx::new();
    let (aid, a) = fx.accepted();
    let down = Fx::installment_charge(&a, 0);
    fx.ok("dunning_charges_mark_paid", json!({"id": down}));
    let e = fx.err("dunning_agreements_cancel", json!({"id": aid}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message.contains("payment on installment 1"),
        "{}",
        e.message
    );
    fx.tick();
    let got = fx.get(&aid);
    assert_eq!(got["status"], "active");
    assert_eq!(got["installments"][0]["status"], "paid");
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.activated"), 1);
    let e = fx.err("dunning_agreements_cancel", json!({"id": aid}));
    assert!(
        e.message.contains("is active and cannot become canceled"),
        "{}",
        e.message
    );
}

#[test]
fn rule_broken_agreement_cancels_remaining_installments() {
    let mut fx = Fx::new();
    let (aid, a) = fx.accepted();
    fx.bed.advance_days(4); // 2027-01-04
    fx.ok(
        "dunning_charges_mark_paid",
        json!({"id": Fx::installment_charge(&a, 0)}),
    );
    fx.tick();
    assert_eq!(fx.get(&aid)["status"], "active");
    // Installment 2 is due 2027-02-02; on 03-04 it is 30 days late: not yet broken.
    fx.bed.advance_days(59);
    fx.tick();
    let got = fx.get(&aid);
    assert_eq!(got["status"], "active");
    assert_eq!(got["installments"][1]["status"], "overdue");
    fx.bed.advance_days(1);
    fx.tick();
    let got = fx.get(&aid);
    assert_eq!(got["status"], "broken");
    assert!(got["broken_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.broken"), 1);
    assert_eq!(fx.charge(&Fx::installment_charge(&a, 0))["status"], "paid");
    for i in 1..4 {
        let c = fx.charge(&Fx::installment_charge(&a, i));
        assert_eq!(c["status"], "canceled", "installment {}", i + 1);
        assert!(
            c["cancellation_reason"]
                .as_str()
                .unwrap()
                .contains("broken")
        );
        assert_eq!(got["installments"][i]["status"], "canceled");
    }
    let balance = got["balance_charge_id"]
        .as_str()
        .expect("the balance")
        .to_owned();
    let bal = fx.charge(&balance);
    assert_eq!(bal["amount"], 1290.5, "total minus the down payment paid");
    assert_eq!(bal["status"], "pending");
    assert_eq!(bal["due_date"], "2027-03-05");
    fx.bed.advance_days(1);
    fx.tick();
    assert_eq!(fx.charge(&balance)["status"], "overdue", "back in dunning");
    assert_eq!(
        fx.get(&aid)["status"],
        "broken",
        "a broken agreement stays broken"
    );
}

#[test]
fn paying_every_installment_completes_the_agreement() {
    let mut fx = Fx::new();
    let (aid, a) = fx.accepted();
    for i in 0..4 {
        fx.ok(
            "dunning_charges_mark_paid",
            json!({"id": Fx::installment_charge(&a, i)}),
        );
    }
    fx.tick();
    let got = fx.get(&aid);
    assert_eq!(got["status"], "completed");
    assert!(got["completed_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.completed"), 1);
    let e = fx.err("dunning_agreements_cancel", json!({"id": aid}));
    assert!(e.message.contains("is completed"), "{}", e.message);
}

#[test]
fn an_expired_proposal_cannot_be_accepted() {
    let mut fx = Fx::new();
    let mut t = fx.terms();
    t["expires_at"] = json!("2027-01-01");
    let a = fx.ok("dunning_agreements_create", t);
    assert_eq!(a["expires_at"], "2027-01-01T23:59:59-03:00");
    let aid = id(&a);
    fx.bed.advance_days(2);
    let e = fx.err("dunning_agreements_accept", json!({"id": aid}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("agreement_expired"), "{}", e.message);
    fx.tick();
    let got = fx.get(&aid);
    assert_eq!(got["status"], "expired");
    assert_eq!(events(&fx.bed, &fx.ana, "agreement.expired"), 1);
    let e = fx.err("dunning_agreements_accept", json!({"id": aid}));
    assert!(
        e.message.contains("is expired and cannot become accepted"),
        "{}",
        e.message
    );
    let e = fx.err("dunning_agreements_cancel", json!({"id": aid}));
    assert!(e.message.contains("is expired"), "{}", e.message);
}

#[test]
fn rule_agreement_term_has_draft_watermark_until_accepted() {
    let mut fx = Fx::new();
    let aid = fx.propose();
    let (desc, draft) = fx.term(&aid);
    assert_eq!(desc["content_type"], "application/pdf");
    assert_eq!(
        desc["download_path"],
        format!("/v1/agreements/{aid}/term-pdf")
    );
    assert_eq!(desc["byte_size"], draft.len());
    check::structure(&draft).expect("a valid PDF");
    let text = check::text(&draft).replace('\n', " ");
    assert!(text.contains("MINUTA — SEM VALOR"), "{text}");
    assert!(
        text.contains("TERMO DE ACORDO E CONFISSÃO DE DÍVIDA"),
        "{text}"
    );
    assert!(text.contains("Maria Silva"), "{text}");
    assert!(text.contains("529.982.247-25"), "{text}");
    assert!(text.contains("11.222.333/0001-81"), "{text}");
    assert!(text.contains("R$ 1.545,00"), "{text}");
    assert!(text.contains("R$ 1.390,50"), "{text}");
    assert!(text.contains("430,18"), "{text}");
    assert!(text.contains("Proposta válida até 02/01/2027"), "{text}");
    assert_eq!(fx.term(&aid).1, draft, "same bytes every time");
    fx.ok("dunning_agreements_accept", json!({"id": aid}));
    let (_, fin) = fx.term(&aid);
    check::structure(&fin).expect("a valid PDF");
    let text = check::text(&fin).replace('\n', " ");
    assert!(!text.contains("MINUTA"), "{text}");
    assert!(text.contains("Acordo aceito em 31/12/2026"), "{text}");
    assert!(
        text.contains("TERMO DE ACORDO E CONFISSÃO DE DÍVIDA"),
        "{text}"
    );
}

#[test]
fn validation_errors_name_the_field() {
    let mut fx = Fx::new();
    let other = id(&fx.ok(
        "dunning_debtors_create",
        json!({"cnpj_cpf": cpf_from_base(&[3, 1, 4, 1, 5, 9, 2, 6, 5]), "name": "Outro"}),
    ));
    let other_charge = id(&fx.ok(
        "dunning_charges_create",
        json!({"debtor_id": other, "amount": 10.0, "due_date": "2026-12-31", "payment_method": "pix"}),
    ));
    let cases: Vec<(&str, Value)> = vec![
        ("charge_ids", json!({"charge_ids": [other_charge]})),
        ("charge_ids", json!({"charge_ids": []})),
        ("charge_ids", json!({"charge_ids": [fx.a, fx.a]})),
        ("installments_count", json!({"installments_count": 13})),
        ("installments_count", json!({"installments_count": 0})),
        ("discount_percentage", json!({"discount_percentage": -1})),
        ("first_due_date", json!({"first_due_date": "2026-12-30"})),
        ("first_due_date", json!({"first_due_date": "2027-04-01"})),
        ("first_due_date", json!({"first_due_date": "31/12/2026"})),
        (
            "down_payment_amount",
            json!({"down_payment_amount": 1390.5}),
        ),
        (
            "down_payment_amount",
            json!({"down_payment_amount": 10.001}),
        ),
        ("payment_method", json!({"payment_method": "cash"})),
        ("colour", json!({"colour": "blue"})),
    ];
    for (field, patch) in cases {
        let mut t = fx.terms();
        for (k, v) in patch.as_object().unwrap() {
            t[k] = v.clone();
        }
        let e = fx.err("dunning_agreements_simulate", t);
        assert_eq!(e.code, ToolErrorCode::Validation, "{field}: {}", e.message);
        assert_eq!(e.details[0].field, field, "{}", e.message);
    }
    for (field, patch) in [
        (
            "expires_at",
            json!({"expires_at": "2026-12-30T10:00:00-03:00"}),
        ),
        ("expires_at", json!({"expires_at": "2027-01-03"})),
        ("break_after_days", json!({"break_after_days": 0})),
    ] {
        let mut t = fx.terms();
        for (k, v) in patch.as_object().unwrap() {
            t[k] = v.clone();
        }
        let e = fx.err("dunning_agreements_create", t);
        assert_eq!(e.details[0].field, field, "{}", e.message);
    }
    let aid = fx.propose();
    let e = fx.err(
        "dunning_agreements_accept",
        json!({"id": aid, "accepted_by": "robot"}),
    );
    assert_eq!(e.details[0].field, "accepted_by");
    let e = fx.err(
        "dunning_agreements_accept",
        json!({"id": aid, "accepted_at": "2027-06-01T10:00:00-03:00"}),
    );
    assert_eq!(e.details[0].field, "accepted_at");
    // A pending charge cannot be renegotiated: a CONFLICT naming its state.
    let pending = id(&fx.ok(
        "dunning_charges_create",
        json!({"debtor_id": fx.debtor.clone(), "amount": 10.0, "due_date": "2027-01-10", "payment_method": "pix"}),
    ));
    let mut t = fx.terms();
    t["charge_ids"] = json!([pending]);
    let e = fx.err("dunning_agreements_simulate", t);
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message
            .contains("is pending and cannot become renegotiated"),
        "{}",
        e.message
    );
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut fx = Fx::new();
    let aid = fx.propose();
    let carla = fx.bed.carla();
    for (tool, args) in [
        ("dunning_agreements_get", json!({"id": aid})),
        ("dunning_agreements_accept", json!({"id": aid})),
        ("dunning_agreements_cancel", json!({"id": aid})),
        ("dunning_agreements_term", json!({"id": aid})),
        ("dunning_agreements_simulate", fx.terms()),
        ("dunning_agreements_create", fx.terms()),
    ] {
        let e = fx.bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    assert_eq!(
        fx.bed.ok(&carla, "dunning_agreements_list", json!({}))["meta"]["total"],
        0
    );
    tick(&fx.bed, &carla);
    assert_eq!(fx.get(&aid)["status"], "proposed");
}

#[test]
fn idempotency_key_replays_a_proposal() {
    let mut fx = Fx::new();
    let mut t = fx.terms();
    t["idempotency_key"] = json!("ag-1");
    let first = fx.ok("dunning_agreements_create", t.clone());
    let replay = fx.ok("dunning_agreements_create", t.clone());
    assert_eq!(first, replay);
    assert_eq!(count(&fx.bed, &fx.ana, Kind::Agreement, &[]), 1);
    t["installments_count"] = json!(2);
    let e = fx.err("dunning_agreements_create", t);
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn demo_has_an_accepted_agreement_a_bureau_record_and_a_protest() {
    let mut bed = Bed::demo();
    let ana = bed.ana();
    let list = bed.ok(
        &ana,
        "dunning_agreements_list",
        json!({"status": "accepted"}),
    );
    assert!(list["meta"]["total"].as_u64().unwrap() >= 1, "{list}");
    let a = &list["data"][0];
    assert_eq!(a["installments"].as_array().unwrap().len(), 4);
    for i in a["installments"].as_array().unwrap() {
        assert!(i["charge_id"].is_string());
    }
    let recs = bed.ok(
        &ana,
        "dunning_credit_bureau_list",
        json!({"status": "included"}),
    );
    assert!(recs["meta"]["total"].as_u64().unwrap() >= 1, "{recs}");
    let protests = bed.ok(&ana, "dunning_protests_list", json!({}));
    assert!(
        protests["meta"]["total"].as_u64().unwrap() >= 1,
        "{protests}"
    );
    let carla = bed.carla();
    assert!(
        bed.ok(&carla, "dunning_agreements_list", json!({}))["meta"]["total"]
            .as_u64()
            .unwrap()
            >= 1,
        "acme has its own"
    );
}
