//! Protests: the notary machine, `domain/src/rules.md`'s Protest (only overdue, the
//! 7-day withdrawal window, never together with a negativação unless allowed, consent
//! letter after protest), validation naming the field, transitions, isolation.

use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::{Principal, ToolError, ToolErrorCode};
use dunning_domain::brazil::document::cnpj_from_base;
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
    entropy[16] = 0x9e;
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

fn events(bed: &Bed, who: &Principal, code: &str) -> u64 {
    store::read(bed.domain.store(), |tx| {
        Ok(tx.count(
            Kind::Event,
            &who.organization,
            &[Cond::Eq("code", json!(code))],
        )?)
    })
    .unwrap()
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

    /// A company with an e-mail, in Campinas.
    fn debtor(&mut self) -> String {
        self.n += 1;
        let n = self.n;
        let d = id(&self.ok(
            "dunning_debtors_create",
            json!({"cnpj_cpf": cnpj_from_base(&[n, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 1]),
                   "name": format!("Empresa {n} Ltda"),
                   "address": {"street": "Av. Brasil", "number": "10", "city": "Campinas",
                               "state": "SP", "zipcode": "13010000"}}),
        ));
        self.ok(
            "dunning_contact_points_create",
            json!({"id": d, "channel": "email", "value": format!("fin{n}@example.com.br")}),
        );
        d
    }

    fn charge(&mut self, debtor: &str, extra: Value) -> String {
        let today = dunning_domain::brazil::calendar::today(self.bed.now);
        self.due = today;
        let mut args = json!({"debtor_id": debtor, "amount": 2500.0,
                              "due_date": today.format("%Y-%m-%d").to_string(),
                              "payment_method": "boleto", "description": "Serviço de instalação"});
        if let (Some(a), Some(e)) = (args.as_object_mut(), extra.as_object()) {
            a.extend(e.clone());
        }
        id(&self.ok("dunning_charges_create", args))
    }

    fn make_overdue(&mut self) {
        let due = dunning_domain::brazil::calendar::effective_due(self.due);
        self.bed.advance_days(2);
        while dunning_domain::brazil::calendar::today(self.bed.now) <= due {
            self.bed.advance_days(1);
        }
        self.tick();
    }

    fn overdue(&mut self) -> (String, String) {
        let d = self.debtor();
        let c = self.charge(&d, json!({}));
        self.make_overdue();
        (d, c)
    }

    fn protest(&mut self, charge: &str) -> Value {
        self.ok(
            "dunning_charges_protest",
            json!({"id": charge, "title_type": "duplicata_servico", "document_ids": ["NF-123", "OS-9"]}),
        )
    }

    fn get(&mut self, pid: &str) -> Value {
        self.ok("dunning_protests_get", json!({"id": pid}))
    }

    /// A protest carried to `protested`.
    fn protested(&mut self) -> (String, String) {
        let (_, c) = self.overdue();
        let p = id(&self.protest(&c));
        self.tick();
        self.tick();
        self.bed.advance_days(7);
        self.tick();
        assert_eq!(self.get(&p)["status"], "protested");
        (c, p)
    }
}

#[test]
fn protest_goes_to_the_notary_and_is_protested_after_three_business_days() {
    let mut fx = Fx::new();
    let (d, c) = fx.overdue();
    let p = fx.protest(&c);
    assert_eq!(p["status"], "requested");
    assert_eq!(p["debtor_id"], d.as_str());
    assert_eq!(p["title_type"], "duplicata_servico");
    assert_eq!(p["document_ids"], json!(["NF-123", "OS-9"]));
    assert_eq!(p["amount"], 2500.0);
    assert_eq!(
        p["notary_office"],
        "Tabelionato de Protesto de Letras e Títulos de Campinas/SP"
    );
    assert_eq!(events(&fx.bed, &fx.ana, "protest.requested"), 1);
    assert_eq!(
        fx.ok("dunning_charges_get", json!({"id": c}))["protest_status"],
        "requested"
    );
    let pid = id(&p);
    fx.tick();
    let p = fx.get(&pid);
    assert_eq!(p["status"], "sent_to_notary");
    assert!(p["protocol"].as_str().unwrap().starts_with("PROT-"));
    // Thursday 2026-12-03: intimated; 3 business days to pay, until Tuesday 12-08.
    fx.tick();
    let p = fx.get(&pid);
    assert_eq!(p["status"], "intimated");
    assert_eq!(p["payment_deadline"], "2026-12-08");
    fx.bed.advance_days(5);
    fx.tick();
    assert_eq!(
        fx.get(&pid)["status"],
        "intimated",
        "still inside the deadline"
    );
    fx.bed.advance_days(1);
    fx.tick();
    let p = fx.get(&pid);
    assert_eq!(p["status"], "protested");
    assert!(p["protested_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "protest.protested"), 1);
    assert_eq!(
        fx.ok("dunning_charges_get", json!({"id": c}))["protest_status"],
        "protested"
    );
}

#[test]
fn payment_while_intimated_ends_paid_at_notary() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let pid = id(&fx.protest(&c));
    fx.tick();
    fx.tick();
    fx.ok("dunning_charges_mark_paid", json!({"id": c}));
    fx.tick();
    let p = fx.get(&pid);
    assert_eq!(p["status"], "paid_at_notary");
    assert!(p["finished_at"].is_string());
    assert_eq!(events(&fx.bed, &fx.ana, "protest.paid_at_notary"), 1);
}

#[test]
fn rule_protest_only_overdue() {
    let mut fx = Fx::new();
    let d = fx.debtor();
    let pending = fx.charge(&d, json!({}));
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": pending, "title_type": "contrato", "document_ids": ["C-1"]}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("invalid_transition"), "{}", e.message);
    assert!(e.message.contains("is pending"), "{}", e.message);
    assert!(e.message.contains("only overdue"), "{}", e.message);
    fx.make_overdue();
    fx.ok("dunning_charges_mark_paid", json!({"id": pending}));
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": pending, "title_type": "contrato", "document_ids": ["C-1"]}),
    );
    assert!(e.message.contains("is paid"), "{}", e.message);
}

#[test]
fn rule_no_protest_within_seven_day_withdrawal_window() {
    let mut fx = Fx::new();
    let d = fx.debtor();
    // Sold online on 2026-12-01 (today): the consumer may withdraw until 12-08.
    let c = fx.charge(&d, json!({"tags": ["distance_sale"]}));
    fx.make_overdue();
    let args = json!({"id": c, "title_type": "duplicata_mercantil", "document_ids": ["NF-1"]});
    let e = fx.err("dunning_charges_protest", args.clone());
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("withdrawal_window"), "{}", e.message);
    assert!(e.message.contains("CDC art. 49"), "{}", e.message);
    assert!(e.message.contains("2026-12-08"), "{}", e.message);
    fx.bed.advance_days(5); // 12-08, last day of the window
    assert_eq!(
        fx.err("dunning_charges_protest", args.clone()).code,
        ToolErrorCode::Conflict
    );
    fx.bed.advance_days(1);
    assert_eq!(
        fx.ok("dunning_charges_protest", args)["status"],
        "requested"
    );
    // The sale date may be given explicitly.
    let c2 = fx.charge(
        &d,
        json!({"custom_data": {"distance_sale": true, "sale_date": "2026-12-08"}}),
    );
    fx.make_overdue(); // 12-11
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c2, "title_type": "duplicata_mercantil", "document_ids": ["NF-2"]}),
    );
    assert!(e.message.contains("2026-12-15"), "{}", e.message);
}

#[test]
fn rule_no_negativation_and_protest_together_unless_allowed() {
    let mut fx = Fx::new();
    let (_, c1) = fx.overdue();
    let r = fx.ok(
        "dunning_charges_negativate",
        json!({"id": c1, "bureau": "serasa"}),
    );
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c1, "title_type": "duplicata_servico", "document_ids": ["NF-1"]}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("negativation_active"), "{}", e.message);
    assert!(
        e.message.contains(r["id"].as_str().unwrap()),
        "{}",
        e.message
    );
    let (_, c2) = fx.overdue();
    fx.protest(&c2);
    let e = fx.err(
        "dunning_charges_negativate",
        json!({"id": c2, "bureau": "serasa"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("protest_active"), "{}", e.message);
    // A finished protest no longer blocks.
    let (_, c3) = fx.overdue();
    let p3 = id(&fx.protest(&c3));
    fx.ok(
        "dunning_protests_cancel",
        json!({"id": p3, "mode": "withdraw", "reason": "erro"}),
    );
    fx.ok(
        "dunning_charges_negativate",
        json!({"id": c3, "bureau": "serasa"}),
    );
    // The organization may allow both.
    settings(&fx.bed, &fx.ana, |s| {
        s.allow_negativation_with_protest = true
    });
    assert_eq!(fx.protest(&c1)["status"], "requested");
    assert_eq!(
        fx.ok(
            "dunning_charges_negativate",
            json!({"id": c2, "bureau": "spc"})
        )["status"],
        "notice_sent"
    );
}

#[test]
fn rule_protest_cancel_after_protested_needs_consent() {
    let mut fx = Fx::new();
    let (_, p) = fx.protested();
    let e = fx.err(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "cancel", "reason": "acordo"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "consent_letter");
    assert!(e.message.contains("carta de anuência"), "{}", e.message);
    let e = fx.err(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "cancel", "consent_letter": false}),
    );
    assert_eq!(e.details[0].field, "consent_letter");
    let e = fx.err(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "withdraw"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("is protested"), "{}", e.message);
    let args = json!({"id": p, "mode": "cancel", "consent_letter": true, "reason": "acordo"});
    let msg = preflight(&fx.bed, &fx.ana, "dunning_protests_cancel", args.clone()).unwrap();
    assert!(msg.contains("Cancel the protested title"), "{msg}");
    assert!(msg.contains("R$ 2.500,00"), "{msg}");
    assert!(msg.contains("Empresa 1 Ltda"), "{msg}");
    let out = fx.ok("dunning_protests_cancel", args.clone());
    assert_eq!(out["status"], "canceled");
    assert_eq!(out["consent_letter"], true);
    assert_eq!(out["cancellation_reason"], "acordo");
    assert_eq!(fx.ok("dunning_protests_cancel", args), out, "idempotent");
    assert_eq!(events(&fx.bed, &fx.ana, "protest.canceled"), 1);
}

#[test]
fn withdraw_before_protest_and_transitions_name_the_state() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let p = id(&fx.protest(&c));
    let e = fx.err(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "cancel", "consent_letter": true}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("is requested"), "{}", e.message);
    assert!(e.message.contains("mode=withdraw"), "{}", e.message);
    fx.tick();
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_protests_cancel",
        json!({"id": p, "mode": "withdraw"}),
    )
    .unwrap();
    assert!(msg.starts_with("Withdraw the protest of charge"), "{msg}");
    assert!(msg.contains("sent_to_notary"), "{msg}");
    let w = fx.ok(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "withdraw"}),
    );
    assert_eq!(w["status"], "withdrawn");
    assert_eq!(w["withdrawal_reason"], "desistência do credor");
    assert_eq!(
        fx.ok(
            "dunning_protests_cancel",
            json!({"id": p, "mode": "withdraw"})
        ),
        w
    );
    let e = fx.err(
        "dunning_protests_cancel",
        json!({"id": p, "mode": "cancel", "consent_letter": true}),
    );
    assert!(e.message.contains("is withdrawn"), "{}", e.message);
    assert_eq!(
        fx.ok("dunning_charges_get", json!({"id": c}))["protest_status"],
        "withdrawn"
    );
    // A new protest of the same charge is possible again.
    assert_eq!(fx.protest(&c)["status"], "requested");
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c, "title_type": "contrato", "document_ids": ["X"]}),
    );
    assert!(e.message.contains("already_protested"), "{}", e.message);
}

#[test]
fn validation_errors_name_the_field() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c, "title_type": "boleto", "document_ids": ["A"]}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "title_type");
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c, "title_type": "cheque", "document_ids": []}),
    );
    assert_eq!(e.details[0].field, "document_ids");
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c, "title_type": "cheque"}),
    );
    assert_eq!(e.details[0].field, "document_ids");
    let e = fx.err(
        "dunning_charges_protest",
        json!({"id": c, "title_type": "cheque", "document_ids": ["A"], "notary": "x"}),
    );
    assert_eq!(e.details[0].field, "notary");
    let p = id(&fx.protest(&c));
    let e = fx.err("dunning_protests_cancel", json!({"id": p, "mode": "erase"}));
    assert_eq!(e.details[0].field, "mode");
}

#[test]
fn protest_confirmation_names_charge_amount_debtor_and_title() {
    let mut fx = Fx::new();
    let (_, c) = fx.overdue();
    let msg = preflight(
        &fx.bed,
        &fx.ana,
        "dunning_charges_protest",
        json!({"id": c, "title_type": "nota_promissoria", "document_ids": ["NP-1"]}),
    )
    .unwrap();
    assert!(msg.starts_with(&format!("Protest charge {c}")), "{msg}");
    assert!(msg.contains("R$ 2.500,00"), "{msg}");
    assert!(msg.contains("Empresa 1 Ltda"), "{msg}");
    assert!(msg.contains("nota promissória"), "{msg}");
    assert!(msg.contains("Campinas"), "{msg}");
    assert_eq!(
        fx.ok("dunning_protests_list", json!({}))["meta"]["total"],
        0
    );
}

#[test]
fn list_filters_isolation_and_withdrawal_when_the_charge_leaves_dunning() {
    let mut fx = Fx::new();
    let (d1, c1) = fx.overdue();
    let p1 = id(&fx.protest(&c1));
    let (_, c2) = fx.overdue();
    let p2 = id(&fx.protest(&c2));
    assert_eq!(
        fx.ok("dunning_protests_list", json!({}))["meta"]["total"],
        2
    );
    assert_eq!(
        fx.ok("dunning_protests_list", json!({"debtor_id": d1}))["data"][0]["id"],
        p1.as_str()
    );
    assert_eq!(
        fx.ok("dunning_protests_list", json!({"charge_id": c2}))["data"][0]["id"],
        p2.as_str()
    );
    let carla = fx.bed.carla();
    assert_eq!(
        fx.bed.ok(&carla, "dunning_protests_list", json!({}))["meta"]["total"],
        0
    );
    for (tool, args) in [
        ("dunning_protests_get", json!({"id": p1})),
        (
            "dunning_protests_cancel",
            json!({"id": p1, "mode": "withdraw"}),
        ),
        (
            "dunning_charges_protest",
            json!({"id": c1, "title_type": "contrato", "document_ids": ["A"]}),
        ),
    ] {
        assert_eq!(
            fx.bed.err(&carla, tool, args).code,
            ToolErrorCode::NotFound,
            "{tool}"
        );
    }
    // Canceled before the notary intimated: the protest is withdrawn.
    fx.ok(
        "dunning_charges_cancel",
        json!({"id": c2, "reason": "erro"}),
    );
    fx.tick();
    let p = fx.get(&p2);
    assert_eq!(p["status"], "withdrawn");
    assert!(
        p["withdrawal_reason"]
            .as_str()
            .unwrap()
            .contains("canceled")
    );
    assert_eq!(
        fx.ok("dunning_protests_list", json!({"status": "intimated"}))["data"][0]["id"],
        p1.as_str()
    );
}

#[test]
fn rule_a_disputed_charge_cannot_be_protested() {
    let mut fx = Fx::new();
    let (_, tagged) = fx.overdue();
    fx.ok(
        "dunning_charges_update",
        json!({"id": tagged, "tags": ["contestada"]}),
    );
    let (_, paused) = fx.overdue();
    fx.ok(
        "dunning_charges_pause",
        json!({"id": paused, "reason": "Cliente em disputa sobre a entrega"}),
    );
    for c in [&tagged, &paused] {
        let e = fx.err(
            "dunning_charges_protest",
            json!({"id": c, "title_type": "duplicata_servico", "document_ids": ["NF-123"]}),
        );
        assert_eq!(e.code, ToolErrorCode::Conflict, "{c}");
        assert!(e.message.contains("charge_disputed"), "{}", e.message);
    }
}
