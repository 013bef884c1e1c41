//! Charges (#13–#21, #23–#25) and the debtor statement (#8): happy paths, validation,
//! transitions, the Brazilian rules (consumer fine cap, business-day due dates, fine +
//! pro-rata interest, settlement only when paid), isolation and idempotency.
//!
//! The bed's clock starts on Tuesday 2026-12-01, 09:00 in São Paulo.

use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::{Dispatch, Output, Principal, ToolError, ToolErrorCode};
use dunning_domain::error::DomainError;
use dunning_domain::op::Op;
use dunning_domain::ops::charges::{self, Charge};
use dunning_domain::store::{self, Cond, Kind, Query};
use dunning_domain::testing::{Bed, preflight};
use serde_json::{Value, json};

fn maria(bed: &mut Bed, who: &Principal) -> String {
    let d = bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    d["id"].as_str().unwrap().to_owned()
}

fn company(bed: &mut Bed, who: &Principal) -> String {
    let d = bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "11.444.777/0001-61", "name": "Padaria Pão Quente Ltda"}),
    );
    d["id"].as_str().unwrap().to_owned()
}

fn charge(bed: &mut Bed, who: &Principal, debtor: &str, extra: Value) -> Value {
    let mut args = json!({
        "debtor_id": debtor,
        "amount": 1234.56,
        "due_date": "2026-12-10",
        "payment_method": "boleto",
        "description": "Mensalidade de dezembro",
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    bed.ok(who, "dunning_charges_create", args)
}

fn sid(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

fn get(bed: &mut Bed, who: &Principal, id: &str) -> Value {
    bed.ok(who, "dunning_charges_get", json!({"id": id}))
}

fn debtor(bed: &mut Bed, who: &Principal, id: &str) -> Value {
    bed.ok(who, "dunning_debtors_get", json!({"id": id}))
}

static ENTROPY: AtomicU64 = AtomicU64::new(1 << 40);

/// Runs the overdue sweep as the ruler engine does.
fn sweep(bed: &Bed, who: &Principal) -> u32 {
    fn run(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let n = charges::sweep_overdue(op)?;
        Ok(Output::ok(json!(n)))
    }
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&ENTROPY.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    match dunning_domain::demo::run_as(&bed.domain, who, bed.now, entropy, run, json!({})) {
        Ok(Output::Json { body, .. }) => body.as_u64().unwrap() as u32,
        other => panic!("{other:?}"),
    }
}

fn file(out: Output) -> dunning_core::File {
    match out {
        Output::File(f) => f,
        other => panic!("not a file: {other:?}"),
    }
}

/// The codes of a charge's timeline, oldest first.
fn codes(bed: &mut Bed, who: &Principal, id: &str) -> Vec<String> {
    let t = bed.ok(
        who,
        "dunning_charges_timeline",
        json!({"id": id, "per_page": 100}),
    );
    t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_field(e: &ToolError, field: &str) {
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    assert!(
        e.details.iter().any(|d| d.field == field),
        "expected {field}: {e:?}"
    );
}

// ---- create, get, list ----

#[test]
fn rule_registered_charge_has_boleto_and_pix_codes() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"payment_method": "bolepix", "external_id": "FAT-1", "tags": ["dez"]}),
    );
    assert_eq!(c["status"], "pending");
    assert_eq!(c["amount"], 1234.56);
    assert_eq!(c["due_date"], "2026-12-10");
    assert_eq!(c["original_due_date"], "2026-12-10");
    assert_eq!(c["updated_amount"], 1234.56);
    assert_eq!(c["days_overdue"], 0);
    assert_eq!(c["debtor_name"], "Maria Silva");
    let line = c["boleto"]["line"].as_str().unwrap();
    let barcode = c["boleto"]["barcode"].as_str().unwrap();
    assert_eq!(line.len(), 47);
    assert_eq!(barcode.len(), 44);
    assert!(
        line.bytes()
            .chain(barcode.bytes())
            .all(|b| b.is_ascii_digit())
    );
    assert_eq!(&barcode[9..19], "0000123456", "amount in the barcode");
    let txid = c["pix"]["txid"].as_str().unwrap();
    assert!((26..=35).contains(&txid.len()));
    assert!(txid.bytes().all(|b| b.is_ascii_alphanumeric()));
    assert!(c["pix"]["emv"].as_str().unwrap().starts_with("000201"));
    // Methods decide which codes exist.
    let pix = charge(&mut bed, &ana, &d, json!({"payment_method": "pix"}));
    assert!(pix["boleto"].is_null() && pix["pix"].is_object());
    let boleto = charge(&mut bed, &ana, &d, json!({}));
    assert!(boleto["pix"].is_null() && boleto["boleto"].is_object());
    assert_ne!(boleto["boleto"]["line"], c["boleto"]["line"]);
    // Read back, same codes.
    let g = get(&mut bed, &ana, &sid(&c));
    assert_eq!(g["boleto"], c["boleto"]);
    assert_eq!(g["tags"], json!(["dez"]));
    // Aggregates of the debtor.
    let deb = debtor(&mut bed, &ana, &d);
    assert_eq!(deb["open_amount"], 3703.68);
    assert_eq!(deb["overdue_count"], 0);
    assert_eq!(deb["oldest_due_date"], "2026-12-10");
    assert_eq!(codes(&mut bed, &ana, &sid(&c)), ["charge.created"]);
}

#[test]
fn create_validation_names_the_field() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let base =
        json!({"debtor_id": d, "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix"});
    let with = |k: &str, v: Value| {
        let mut a = base.clone();
        a[k] = v;
        a
    };
    for (args, field) in [
        (with("amount", json!(0)), "amount"),
        (with("amount", json!(-5)), "amount"),
        (with("amount", json!(10.123)), "amount"),
        (with("amount", json!(100_000_000.0)), "amount"),
        (with("due_date", json!("2026-11-30")), "due_date"),
        (with("due_date", json!("30/12/2026")), "due_date"),
        (with("payment_method", json!("cash")), "payment_method"),
        (
            with("interest_percentage", json!(-1)),
            "interest_percentage",
        ),
        (
            with("discount", json!({"type": "coupon", "value": 1})),
            "discount.type",
        ),
        (
            with("discount", json!({"type": "fixed", "value": 10})),
            "discount.value",
        ),
        (
            with(
                "discount",
                json!({"type": "percentage", "value": 5, "until": "2026-12-11"}),
            ),
            "discount.until",
        ),
        (
            with(
                "discount",
                json!({"type": "fixed", "value": 1, "code": "X"}),
            ),
            "discount.code",
        ),
        (with("colour", json!("blue")), "colour"),
    ] {
        let e = bed.err(&ana, "dunning_charges_create", args.clone());
        assert_field(&e, field);
    }
    // Today is fine.
    bed.ok(
        &ana,
        "dunning_charges_create",
        with("due_date", json!("2026-12-01")),
    );
}

#[test]
fn create_needs_an_active_debtor_of_the_organization() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let d = maria(&mut bed, &ana);
    let args =
        json!({"debtor_id": d, "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix"});
    let e = bed.err(&carla, "dunning_charges_create", args.clone());
    assert_eq!(e.code, ToolErrorCode::NotFound);
    bed.ok(&ana, "dunning_debtors_archive", json!({"id": d}));
    let e = bed.err(&ana, "dunning_charges_create", args);
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("archived"), "{}", e.message);
}

#[test]
fn external_id_is_unique() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    charge(&mut bed, &ana, &d, json!({"external_id": "FAT-9"}));
    let e = bed.err(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 1.0, "due_date": "2026-12-10", "payment_method": "pix", "external_id": "FAT-9"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
}

#[test]
fn rule_due_date_not_in_the_past() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 10.0, "due_date": "2026-11-30", "payment_method": "pix"}),
    );
    assert_field(&e, "due_date");
    assert!(
        e.message.contains("2026-12-01"),
        "names today: {}",
        e.message
    );
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-01"}),
    ));
    bed.advance_days(3);
    let e = bed.err(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "due_date": "2026-12-03"}),
    );
    assert_field(&e, "due_date");
    bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "due_date": "2026-12-04"}),
    );
}

#[test]
fn rule_consumer_fine_capped_at_two_percent() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let person = maria(&mut bed, &ana);
    let firm = company(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": person, "amount": 100.0, "due_date": "2026-12-10", "payment_method": "boleto", "fine_percentage": 2.5}),
    );
    assert_field(&e, "fine_percentage");
    assert!(e.message.contains("CDC art. 52"), "{}", e.message);
    let ok = charge(&mut bed, &ana, &person, json!({"fine_percentage": 2}));
    assert_eq!(ok["fine_percentage"], 2.0);
    let b2b = charge(&mut bed, &ana, &firm, json!({"fine_percentage": 10}));
    assert_eq!(b2b["fine_percentage"], 10.0, "a company is not a consumer");
}

#[test]
fn list_filters_sorts_and_pages() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let m = maria(&mut bed, &ana);
    let f = company(&mut bed, &ana);
    let a = charge(
        &mut bed,
        &ana,
        &m,
        json!({"amount": 100.0, "due_date": "2026-12-05", "tags": ["vip"]}),
    );
    let b = charge(
        &mut bed,
        &ana,
        &m,
        json!({"amount": 300.0, "due_date": "2026-12-20", "payment_method": "pix", "description": "Aluguel"}),
    );
    let c = charge(
        &mut bed,
        &ana,
        &f,
        json!({"amount": 200.0, "due_date": "2026-12-02"}),
    );
    let ids =
        |v: &Value| -> Vec<String> { v["data"].as_array().unwrap().iter().map(sid).collect() };
    let all = bed.ok(&ana, "dunning_charges_list", json!({}));
    assert_eq!(all["meta"]["total"], 3);
    assert_eq!(
        ids(&all),
        [sid(&c), sid(&a), sid(&b)],
        "due date ascending by default"
    );
    let by_amount = bed.ok(&ana, "dunning_charges_list", json!({"sort_by": "amount"}));
    assert_eq!(ids(&by_amount), [sid(&b), sid(&c), sid(&a)]);
    let page = bed.ok(
        &ana,
        "dunning_charges_list",
        json!({"per_page": 2, "page": 2}),
    );
    assert_eq!(ids(&page), [sid(&b)]);
    assert_eq!(page["meta"]["total_pages"], 2);
    for (args, want) in [
        (json!({"debtor_id": f}), vec![sid(&c)]),
        (
            json!({"due_from": "2026-12-03", "due_to": "2026-12-10"}),
            vec![sid(&a)],
        ),
        (json!({"min_amount": 150, "max_amount": 250}), vec![sid(&c)]),
        (json!({"payment_method": "pix"}), vec![sid(&b)]),
        (json!({"tag": "vip"}), vec![sid(&a)]),
        (json!({"q": "aluguel"}), vec![sid(&b)]),
        (json!({"q": "padaria"}), vec![sid(&c)]),
        (json!({"q": "52998224725"}), vec![sid(&a), sid(&b)]),
        (json!({"status": "overdue,paid"}), vec![]),
        (
            json!({"status": "pending"}),
            vec![sid(&c), sid(&a), sid(&b)],
        ),
    ] {
        let l = bed.ok(&ana, "dunning_charges_list", args.clone());
        assert_eq!(ids(&l), want, "{args}");
        assert_eq!(l["meta"]["total"], want.len(), "{args}");
    }
    let e = bed.err(
        &ana,
        "dunning_charges_list",
        json!({"due_from": "2026-12-10", "due_to": "2026-12-01"}),
    );
    assert_field(&e, "due_to");
    let e = bed.err(
        &ana,
        "dunning_charges_list",
        json!({"min_amount": 10, "max_amount": 1}),
    );
    assert_field(&e, "max_amount");
    // Paid filter and days overdue sort.
    bed.advance_days(10); // 2026-12-11
    sweep(&bed, &ana);
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": sid(&a)}));
    let paid = bed.ok(
        &ana,
        "dunning_charges_list",
        json!({"paid_from": "2026-12-11", "paid_to": "2026-12-11"}),
    );
    assert_eq!(ids(&paid), [sid(&a)]);
    let none = bed.ok(
        &ana,
        "dunning_charges_list",
        json!({"paid_to": "2026-12-10"}),
    );
    assert_eq!(none["meta"]["total"], 0);
    let late = bed.ok(
        &ana,
        "dunning_charges_list",
        json!({"sort_by": "days_overdue", "status": "overdue,pending"}),
    );
    assert_eq!(ids(&late), [sid(&c), sid(&b)]);
    assert_eq!(late["data"][0]["days_overdue"], 9);
}

// ---- the money rules ----

#[test]
fn rule_updated_amount_fine_plus_prorata_interest() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    // Due Thursday 2026-12-10 (a business day): 1 000,00, fine 2 %, interest 1 %/month.
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "fine_percentage": 2, "interest_percentage": 1}),
    );
    let id = sid(&c);
    bed.advance_days(9); // 2026-12-10, the due date itself: on time.
    let on_time = get(&mut bed, &ana, &id);
    assert_eq!(on_time["updated_amount"], 1000.0);
    assert_eq!(on_time["days_overdue"], 0);
    bed.advance_days(15); // 2026-12-25: 15 days late.
    let late = get(&mut bed, &ana, &id);
    assert_eq!(late["days_overdue"], 15);
    // 1 000 + 20 (fine, once) + 1 000 × 1 % × 15/30 = 1 025,00.
    assert_eq!(late["updated_amount"], 1025.0);
    assert_eq!(late["amount_breakdown"]["fine"], 20.0);
    assert_eq!(late["amount_breakdown"]["interest"], 5.0);
    bed.advance_days(30);
    let later = get(&mut bed, &ana, &id);
    assert_eq!(
        later["updated_amount"], 1035.0,
        "interest grows, the fine does not"
    );
    // The pure function the other modules use agrees.
    let parsed: Charge = serde_json::from_value(later.clone()).unwrap();
    let day = chrono::NaiveDate::from_ymd_opt(2027, 1, 24).unwrap();
    assert_eq!(charges::updated_amount(&parsed, day).brl(), 1035.0);
    assert_eq!(charges::days_overdue(&parsed, day), 45);
}

#[test]
fn rule_interest_counts_from_the_effective_due_date() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    // A company: 3 % a month is above a consumer's cap.
    let d = company(&mut bed, &ana);
    // Due Saturday 2026-12-05: paying on Monday 7 is on time.
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 300.0, "due_date": "2026-12-05", "fine_percentage": 2, "interest_percentage": 3}),
    );
    let id = sid(&c);
    assert_eq!(c["effective_due_date"], "2026-12-07");
    bed.advance_days(6); // Monday 2026-12-07
    assert_eq!(get(&mut bed, &ana, &id)["updated_amount"], 300.0);
    bed.advance_days(1); // Tuesday: 1 day late.
    let g = get(&mut bed, &ana, &id);
    assert_eq!(g["days_overdue"], 1);
    // 300 + 6 + 300 × 3 % / 30 = 306,30.
    assert_eq!(g["updated_amount"], 306.3);
}

#[test]
fn rule_discount_until_its_date() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 200.0, "discount": {"type": "percentage", "value": 10, "until": "2026-12-05"}}),
    );
    let f = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 200.0, "discount": {"type": "fixed", "value": 15}}),
    );
    assert_eq!(c["updated_amount"], 180.0);
    assert_eq!(c["amount_breakdown"]["discount"], 20.0);
    assert_eq!(
        f["discount"]["until"], "2026-12-10",
        "defaults to the due date"
    );
    assert_eq!(f["updated_amount"], 185.0);
    bed.advance_days(4); // 2026-12-05: last day of the discount.
    assert_eq!(get(&mut bed, &ana, &sid(&c))["updated_amount"], 180.0);
    bed.advance_days(1);
    assert_eq!(get(&mut bed, &ana, &sid(&c))["updated_amount"], 200.0);
    assert_eq!(get(&mut bed, &ana, &sid(&f))["updated_amount"], 185.0);
}

#[test]
fn rule_overdue_only_after_next_business_day() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    // Saturday 2026-12-05 rolls to Monday 7; Christmas (Friday 25) rolls to Monday 28.
    let weekend = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-05"}),
    ));
    let holiday = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-25"}),
    ));
    bed.advance_days(5); // Sunday 6
    assert_eq!(sweep(&bed, &ana), 0);
    bed.advance_days(1); // Monday 7: still on time.
    assert_eq!(sweep(&bed, &ana), 0);
    assert_eq!(get(&mut bed, &ana, &weekend)["status"], "pending");
    bed.advance_days(1); // Tuesday 8: overdue.
    assert_eq!(sweep(&bed, &ana), 1);
    assert_eq!(get(&mut bed, &ana, &weekend)["status"], "overdue");
    assert_eq!(sweep(&bed, &ana), 0, "the sweep is idempotent");
    bed.advance_days(20); // Monday 28
    assert_eq!(sweep(&bed, &ana), 0);
    bed.advance_days(1); // Tuesday 29
    assert_eq!(sweep(&bed, &ana), 1);
    assert_eq!(get(&mut bed, &ana, &holiday)["status"], "overdue");
    assert_eq!(
        codes(&mut bed, &ana, &weekend),
        ["charge.created", "charge.overdue"]
    );
    let deb = debtor(&mut bed, &ana, &d);
    assert_eq!(deb["overdue_count"], 2);
    assert_eq!(deb["overdue_amount"], 2469.12);
}

// ---- update, delete, cancel ----

#[test]
fn update_pending_or_overdue_only() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let c = charge(&mut bed, &ana, &d, json!({}));
    let id = sid(&c);
    let u = bed.ok(&ana, "dunning_charges_update", json!({"id": id, "amount": 99.9, "due_date": "2026-12-20", "description": "Novo", "tags": ["x"]}));
    assert_eq!(u["amount"], 99.9);
    assert_eq!(u["due_date"], "2026-12-20");
    assert_eq!(u["original_due_date"], "2026-12-10");
    assert_ne!(
        u["boleto"]["line"], c["boleto"]["line"],
        "codes follow amount and date"
    );
    assert_eq!(u["boleto"]["our_number"], c["boleto"]["our_number"]);
    assert_eq!(
        &u["boleto"]["barcode"].as_str().unwrap()[9..19],
        "0000009990"
    );
    assert_eq!(debtor(&mut bed, &ana, &d)["open_amount"], 99.9);
    // Same values again: nothing changes, no event.
    bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "amount": 99.9}),
    );
    assert_eq!(
        codes(&mut bed, &ana, &id),
        ["charge.created", "charge.updated"]
    );
    let e = bed.err(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "due_date": "2026-11-01"}),
    );
    assert_field(&e, "due_date");
    let e = bed.err(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "status": "paid"}),
    );
    assert_field(&e, "status");
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    let e = bed.err(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "amount": 1}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("canceled"), "{}", e.message);
}

#[test]
fn rule_redating_an_overdue_charge_makes_it_pending() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-02"}),
    ));
    bed.advance_days(2);
    sweep(&bed, &ana);
    assert_eq!(get(&mut bed, &ana, &id)["status"], "overdue");
    let u = bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "due_date": "2026-12-15"}),
    );
    assert_eq!(u["status"], "pending");
    assert_eq!(u["days_overdue"], 0);
    assert_eq!(debtor(&mut bed, &ana, &d)["overdue_count"], 0);
}

#[test]
fn rule_only_drafts_can_be_deleted() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let draft = charge(&mut bed, &ana, &d, json!({"draft": true}));
    assert_eq!(draft["status"], "draft");
    assert!(draft["boleto"].is_null(), "a draft is not registered");
    assert_eq!(
        debtor(&mut bed, &ana, &d)["open_amount"],
        0.0,
        "drafts are not owed"
    );
    let pending = charge(&mut bed, &ana, &d, json!({}));
    let e = bed.err(&ana, "dunning_charges_delete", json!({"id": sid(&pending)}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("pending"), "{}", e.message);
    let out = bed.ok(&ana, "dunning_charges_delete", json!({"id": sid(&draft)}));
    assert_eq!(out, json!({"status": 204}));
    let e = bed.err(&ana, "dunning_charges_get", json!({"id": sid(&draft)}));
    assert_eq!(e.code, ToolErrorCode::NotFound);
    let e = bed.err(
        &ana,
        "dunning_charges_update",
        json!({"id": sid(&draft), "amount": 5}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn rule_cancel_only_open_charges_idempotently() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    let c = bed.ok(
        &ana,
        "dunning_charges_cancel",
        json!({"id": id, "reason": "Emitida em duplicidade"}),
    );
    assert_eq!(c["status"], "canceled");
    assert_eq!(c["cancellation_reason"], "Emitida em duplicidade");
    assert_eq!(c["updated_amount"], 0.0);
    assert_eq!(c["dunning_active"], false);
    bed.advance_days(1);
    let again = bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    assert_eq!(
        again["canceled_at"], c["canceled_at"],
        "nothing changes the second time"
    );
    assert_eq!(
        codes(&mut bed, &ana, &id),
        ["charge.created", "charge.canceled"]
    );
    assert_eq!(debtor(&mut bed, &ana, &d)["open_amount"], 0.0);
    // A paid charge cannot be canceled.
    let paid = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": paid}));
    let e = bed.err(&ana, "dunning_charges_cancel", json!({"id": paid}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message.contains("is paid and cannot become canceled"),
        "{}",
        e.message
    );
}

// ---- payments ----

#[test]
fn mark_paid_in_full_at_the_updated_amount() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "fine_percentage": 2, "interest_percentage": 1}),
    ));
    bed.advance_days(24); // 15 days late on 2026-12-25.
    sweep(&bed, &ana);
    let p = bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_via": "pix"}),
    );
    assert_eq!(p["status"], "paid");
    assert_eq!(p["paid_amount"], 1025.0, "fine and interest included");
    assert_eq!(p["paid_via"], "pix");
    assert_eq!(p["paid_at"], "2026-12-25T09:00:00-03:00");
    assert_eq!(p["updated_amount"], 0.0);
    assert_eq!(p["days_overdue"], 0);
    assert_eq!(p["payments"].as_array().unwrap().len(), 1);
    let deb = debtor(&mut bed, &ana, &d);
    assert_eq!(deb["open_amount"], 0.0);
    assert_eq!(deb["overdue_count"], 0);
    assert_eq!(
        codes(&mut bed, &ana, &id),
        ["charge.created", "charge.overdue", "charge.paid"]
    );
    // Idempotent: paying a paid charge changes nothing.
    let again = bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    assert_eq!(again["payments"], p["payments"]);
}

#[test]
fn rule_partial_payment_leaves_a_balance() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({"amount": 500.0})));
    let part = bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_amount": 200.0, "note": "Sinal"}),
    );
    assert_eq!(part["status"], "partially_paid");
    assert_eq!(part["paid_amount"], 200.0);
    assert_eq!(part["updated_amount"], 300.0);
    assert!(
        part["paid_at"].is_null(),
        "paid_at marks the full settlement"
    );
    assert_eq!(debtor(&mut bed, &ana, &d)["open_amount"], 300.0);
    let e = bed.err(&ana, "dunning_charges_settlement_letter", json!({"id": id}));
    assert_eq!(e.code, ToolErrorCode::Unavailable("NOT_SETTLED"));
    let rest = bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    assert_eq!(rest["status"], "paid");
    assert_eq!(rest["paid_amount"], 500.0);
    assert_eq!(rest["payments"].as_array().unwrap().len(), 2);
    assert_eq!(
        codes(&mut bed, &ana, &id),
        ["charge.created", "charge.partially_paid", "charge.paid"]
    );
}

#[test]
fn mark_paid_validation_and_transitions() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    for (args, field) in [
        (
            json!({"id": id, "paid_at": "2026-12-02T10:00:00-03:00"}),
            "paid_at",
        ),
        (json!({"id": id, "paid_at": "yesterday"}), "paid_at"),
        (json!({"id": id, "paid_amount": 0}), "paid_amount"),
        (json!({"id": id, "paid_via": "cash"}), "paid_via"),
    ] {
        let e = bed.err(&ana, "dunning_charges_mark_paid", args);
        assert_field(&e, field);
    }
    // A past date is accepted and normalized to the organization's zone.
    let p = bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_at": "2026-11-30T23:30:00Z"}),
    );
    assert_eq!(p["paid_at"], "2026-11-30T20:30:00-03:00");
    let canceled = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": canceled}));
    let e = bed.err(&ana, "dunning_charges_mark_paid", json!({"id": canceled}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("canceled"), "{}", e.message);
}

// ---- pause, resume, timeline ----

#[test]
fn pause_and_resume() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    let p = bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "until": "2026-12-05", "reason": "Em negociação"}),
    );
    assert_eq!(p["dunning_paused"], true);
    assert_eq!(p["dunning_paused_until"], "2026-12-05");
    assert_eq!(p["dunning_active"], false);
    bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "until": "2026-12-05", "reason": "Em negociação"}),
    );
    let parsed: Charge = serde_json::from_value(p).unwrap();
    let day = |d| chrono::NaiveDate::from_ymd_opt(2026, 12, d).unwrap();
    assert!(charges::is_paused(&parsed, day(5)));
    assert!(
        !charges::is_paused(&parsed, day(6)),
        "a pause ends after its last day"
    );
    bed.advance_days(5);
    assert_eq!(get(&mut bed, &ana, &id)["dunning_active"], true);
    let r = bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    assert_eq!(r["dunning_paused"], false);
    bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    assert_eq!(
        codes(&mut bed, &ana, &id),
        ["charge.created", "charge.paused", "charge.resumed"]
    );
    let e = bed.err(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "until": "2026-12-01"}),
    );
    assert_field(&e, "until");
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    let e = bed.err(&ana, "dunning_charges_pause", json!({"id": id}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
}

#[test]
fn timeline_lists_the_charge_events() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.advance_days(1);
    bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": id, "amount": 10}),
    );
    bed.advance_days(1);
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    let t = bed.ok(&ana, "dunning_charges_timeline", json!({"id": id}));
    let codes: Vec<&str> = t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["charge.created", "charge.updated", "charge.paid"]);
    assert_eq!(
        t["data"][1]["changes"]["amount"],
        json!({"from": 1234.56, "to": 10.0})
    );
    assert_eq!(t["data"][2]["actor"], "ana@demo.example");
    let only = bed.ok(
        &ana,
        "dunning_charges_timeline",
        json!({"id": id, "code": "charge.paid,charge.canceled"}),
    );
    assert_eq!(only["meta"]["total"], 1);
    let desc = bed.ok(
        &ana,
        "dunning_charges_timeline",
        json!({"id": id, "sort_order": "desc", "per_page": 1}),
    );
    assert_eq!(desc["data"][0]["code"], "charge.paid");
}

// ---- documents ----

#[test]
fn rule_settlement_letter_only_when_paid() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    let e = bed.err(&ana, "dunning_charges_settlement_letter", json!({"id": id}));
    assert_eq!(e.code, ToolErrorCode::Unavailable("NOT_SETTLED"));
    assert!(e.message.contains("pending"), "{}", e.message);
    bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_via": "boleto"}),
    );
    let out = bed
        .call(&ana, "dunning_charges_settlement_letter", json!({"id": id}))
        .unwrap();
    let desc = out.tool_value();
    assert_eq!(desc["content_type"], "application/pdf");
    assert_eq!(
        desc["download_path"],
        format!("/v1/charges/{id}/settlement-pdf")
    );
    let f = file(out);
    assert_eq!(desc["byte_size"], f.bytes.len());
    assert!(f.bytes.starts_with(b"%PDF-1."));
    // Idempotent: the same document every time, even days later.
    bed.advance_days(3);
    let again = file(
        bed.call(&ana, "dunning_charges_settlement_letter", json!({"id": id}))
            .unwrap(),
    );
    assert_eq!(f.bytes, again.bytes);
    let text = dunning_domain::documents::check::flat_text(&f.bytes);
    assert!(text.contains("Maria Silva"), "{text}");
    assert!(text.contains("R$ 1.234,56"), "{text}");
    assert!(text.contains("Demo Cobranças Ltda"), "{text}");
}

/// Marks a charge renegotiated into an agreement document stored as-is (the agreements
/// module's own tests cover how agreements get there).
fn fold_into_agreement(bed: &Bed, who: &Principal, charge_id: &str, status: &str) {
    fn run(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let id = op.str("id")?.to_owned();
        let aid = op.str("agreement_id")?.to_owned();
        let status = op.str("status")?.to_owned();
        charges::mark_renegotiated(op, &id, Some(&aid))?;
        let doc = json!({
            "id": aid, "status": status, "completed_at": "2027-02-15T10:00:00-03:00",
            "charges": [{"charge_id": id, "updated_amount": 1300.0}],
            "created_at": "2026-12-20T10:00:00-03:00", "updated_at": "2026-12-20T10:00:00-03:00",
        });
        op.tx.put(Kind::Agreement, op.org, &doc)?;
        Ok(Output::NoContent)
    }
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&ENTROPY.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    let aid = format!(
        "a9d0c7e2-0000-4000-8000-{:012}",
        ENTROPY.load(Ordering::Relaxed) % 1_000_000
    );
    dunning_domain::demo::run_as(
        &bed.domain,
        who,
        bed.now,
        entropy,
        run,
        json!({"id": charge_id, "agreement_id": aid, "status": status}),
    )
    .unwrap();
}

#[test]
fn rule_settlement_letter_after_a_completed_agreement() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let active = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-02"}),
    ));
    let done = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-02"}),
    ));
    bed.advance_days(5);
    sweep(&bed, &ana);
    fold_into_agreement(&bed, &ana, &active, "active");
    fold_into_agreement(&bed, &ana, &done, "completed");
    assert_eq!(get(&mut bed, &ana, &done)["status"], "renegotiated");
    let e = bed.err(
        &ana,
        "dunning_charges_settlement_letter",
        json!({"id": active}),
    );
    assert_eq!(
        e.code,
        ToolErrorCode::Unavailable("NOT_SETTLED"),
        "the agreement is not completed yet"
    );
    let f = file(
        bed.call(
            &ana,
            "dunning_charges_settlement_letter",
            json!({"id": done}),
        )
        .unwrap(),
    );
    let text = dunning_domain::documents::check::flat_text(&f.bytes);
    assert!(text.contains("acordo de renegociação"), "{text}");
    assert!(text.contains("R$ 1.300,00"), "{text}");
    assert!(text.contains("15/02/2027"), "{text}");
}

#[test]
fn rule_statement_totals_come_from_the_server() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let late = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "due_date": "2026-12-02", "fine_percentage": 2, "interest_percentage": 1}),
    ));
    let open = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 100.0, "due_date": "2026-12-30"}),
    ));
    let paid = sid(&charge(&mut bed, &ana, &d, json!({"amount": 50.0})));
    let canceled = sid(&charge(&mut bed, &ana, &d, json!({"amount": 70.0})));
    charge(&mut bed, &ana, &d, json!({"amount": 80.0, "draft": true}));
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": paid}));
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": canceled}));
    bed.advance_days(31); // 2027-01-01, 30 days after 2026-12-02.
    sweep(&bed, &ana);
    let s = bed.ok(&ana, "dunning_debtors_statement", json!({"id": d}));
    assert_eq!(s["as_of"], "2027-01-01");
    assert_eq!(s["debtor"]["name"], "Maria Silva");
    let listed: Vec<String> = s["charges"].as_array().unwrap().iter().map(sid).collect();
    assert_eq!(
        listed,
        [late.clone(), paid.clone(), open.clone()],
        "open, paid; not canceled or draft"
    );
    let t = &s["totals"];
    assert_eq!(t["open_count"], 2);
    assert_eq!(t["open_amount"], 1100.0);
    // 1 000 + 20 + 10 (30 days at 1 %) + 100 (the open one, 2 days late, no penalties).
    assert_eq!(t["updated_amount"], 1130.0);
    assert_eq!(t["overdue_count"], 2);
    assert_eq!(t["paid_count"], 1);
    assert_eq!(t["paid_amount"], 50.0);
    // As of another date: amounts as they will be (or were) that day.
    let earlier = bed.ok(
        &ana,
        "dunning_debtors_statement",
        json!({"id": d, "as_of": "2026-12-02"}),
    );
    assert_eq!(earlier["totals"]["updated_amount"], 1100.0);
    let e = bed.err(
        &ana,
        "dunning_debtors_statement",
        json!({"id": d, "as_of": "01/01/2027"}),
    );
    assert_field(&e, "as_of");
    let out = bed
        .call(
            &ana,
            "dunning_debtors_statement",
            json!({"id": d, "format": "pdf"}),
        )
        .unwrap();
    let desc = out.tool_value();
    assert_eq!(
        desc["download_path"],
        format!("/v1/debtors/{d}/statement?format=pdf")
    );
    let f = file(out);
    assert_eq!(desc["byte_size"], f.bytes.len());
    let text = dunning_domain::documents::check::flat_text(&f.bytes);
    assert!(text.contains("R$ 1.130,00"), "{text}");
    assert!(text.contains("EXTRATO DE DÉBITOS"), "{text}");
    let dated = bed
        .call(
            &ana,
            "dunning_debtors_statement",
            json!({"id": d, "format": "pdf", "as_of": "2026-12-20"}),
        )
        .unwrap();
    assert_eq!(
        dated.tool_value()["download_path"],
        format!("/v1/debtors/{d}/statement?format=pdf&as_of=2026-12-20")
    );
}

// ---- decisions ----

#[test]
fn rule_write_off_only_from_overdue_and_suspend_pauses() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-02"}),
    ));
    let e = bed.err(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "write_off", "reason": "Sem retorno"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("pending"), "{}", e.message);
    let e = bed.err(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "negativate", "reason": "Sem retorno"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    bed.advance_days(5);
    sweep(&bed, &ana);
    let s = bed.ok(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "suspend", "reason": "Cliente em tratamento de saúde"}),
    );
    assert_eq!(s["decision"]["decision"], "suspend");
    assert_eq!(s["decision"]["decided_by"], "ana@demo.example");
    assert_eq!(s["charge"]["dunning_paused"], true);
    assert!(
        s["charge"]["dunning_paused_until"].is_null(),
        "until resumed"
    );
    let c = bed.ok(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "continue", "reason": "Recuperado"}),
    );
    assert_eq!(c["charge"]["dunning_paused"], false);
    let w = bed.ok(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "write_off", "reason": "Dívida incobrável"}),
    );
    assert_eq!(w["charge"]["status"], "written_off");
    assert_eq!(w["decision"]["charge_status"], "overdue");
    assert_eq!(debtor(&mut bed, &ana, &d)["overdue_count"], 0);
    let decisions = store::read(bed.domain.store(), |tx| {
        Ok(tx.count(
            Kind::Decision,
            &ana.organization,
            &[Cond::Eq("charge_id", json!(id))],
        )?)
    })
    .unwrap();
    assert_eq!(decisions, 3, "every decision is audited");
    let e = bed.err(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "continue", "reason": "x y z"}),
    );
    assert_eq!(
        e.code,
        ToolErrorCode::Conflict,
        "no decisions on a closed charge"
    );
    let t = codes(&mut bed, &ana, &id);
    assert!(
        t.contains(&"charge.decided".to_owned()) && t.contains(&"charge.written_off".to_owned()),
        "{t:?}"
    );
}

#[test]
fn decide_validation() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    let e = bed.err(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "forgive", "reason": "Porque sim"}),
    );
    assert_field(&e, "decision");
    let e = bed.err(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "negotiate", "reason": " "}),
    );
    assert_field(&e, "reason");
    let n = bed.ok(
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "negotiate", "reason": "Pediu parcelamento"}),
    );
    assert_eq!(n["charge"]["status"], "pending");
}

// ---- confirmations, isolation, idempotency ----

#[test]
fn confirmations_name_tool_target_amount_and_debtor() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"external_id": "CHG-123"}),
    ));
    let draft = sid(&charge(&mut bed, &ana, &d, json!({"draft": true})));
    let m = preflight(&bed, &ana, "dunning_charges_cancel", json!({"id": id})).unwrap();
    assert!(m.starts_with("Cancel charge"), "{m}");
    for part in [id.as_str(), "CHG-123", "R$ 1.234,56", "Maria Silva"] {
        assert!(m.contains(part), "{m} lacks {part}");
    }
    let m = preflight(
        &bed,
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_amount": 1000}),
    )
    .unwrap();
    assert!(
        m.contains("R$ 1.000,00") && m.contains("partially paid") && m.contains("Maria Silva"),
        "{m}"
    );
    let m = preflight(&bed, &ana, "dunning_charges_delete", json!({"id": draft})).unwrap();
    assert!(
        m.starts_with("Delete draft charge") && m.contains("Maria Silva"),
        "{m}"
    );
    let m = preflight(
        &bed,
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "suspend", "reason": "Teste"}),
    )
    .unwrap();
    assert!(m.contains("suspend") && m.contains("R$ 1.234,56"), "{m}");
    // The preflight runs the same checks: a pending charge cannot be deleted.
    let e = preflight(&bed, &ana, "dunning_charges_delete", json!({"id": id})).unwrap_err();
    assert_eq!(e.code, ToolErrorCode::Conflict);
    // And changes nothing.
    assert_eq!(get(&mut bed, &ana, &id)["status"], "pending");
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    for (tool, args) in [
        ("dunning_charges_get", json!({"id": id})),
        ("dunning_charges_update", json!({"id": id, "amount": 1})),
        ("dunning_charges_delete", json!({"id": id})),
        ("dunning_charges_cancel", json!({"id": id})),
        ("dunning_charges_mark_paid", json!({"id": id})),
        ("dunning_charges_pause", json!({"id": id})),
        ("dunning_charges_resume", json!({"id": id})),
        ("dunning_charges_timeline", json!({"id": id})),
        ("dunning_charges_settlement_letter", json!({"id": id})),
        (
            "dunning_charges_decide",
            json!({"id": id, "decision": "continue", "reason": "abc"}),
        ),
        ("dunning_debtors_statement", json!({"id": d})),
        (
            "dunning_charges_create",
            json!({"debtor_id": d, "amount": 1, "due_date": "2026-12-10", "payment_method": "pix"}),
        ),
    ] {
        let e = bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    let l = bed.ok(&carla, "dunning_charges_list", json!({"debtor_id": d}));
    assert_eq!(l["meta"]["total"], 0);
}

#[test]
fn idempotency_key_replays_and_conflicts() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let args = json!({"debtor_id": d, "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix", "idempotency_key": "c-1"});
    let a = bed.ok(&ana, "dunning_charges_create", args.clone());
    let b = bed.ok(&ana, "dunning_charges_create", args.clone());
    assert_eq!(a, b);
    assert_eq!(
        bed.ok(&ana, "dunning_charges_list", json!({}))["meta"]["total"],
        1
    );
    let mut other = args;
    other["amount"] = json!(11.0);
    let e = bed.err(&ana, "dunning_charges_create", other);
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
    // A replayed confirmation of a partial payment records it once.
    let pay = json!({"id": a["id"], "paid_amount": 4.0});
    bed.call_with(&ana, "dunning_charges_mark_paid", pay.clone(), Some("n-7"))
        .unwrap();
    bed.call_with(&ana, "dunning_charges_mark_paid", pay, Some("n-7"))
        .unwrap();
    assert_eq!(get(&mut bed, &ana, &sid(&a))["paid_amount"], 4.0);
}

#[test]
fn annotations_and_routes_follow_the_catalogue() {
    let bed = Bed::new();
    let tools = bed.domain.catalog().tools;
    let find = |n: &str| {
        tools
            .iter()
            .find(|t| t.name == n)
            .unwrap_or_else(|| panic!("{n}"))
            .clone()
    };
    for (name, method, path, ro, destructive, idem) in [
        (
            "dunning_debtors_statement",
            "GET",
            "/v1/debtors/{id}/statement",
            true,
            false,
            true,
        ),
        (
            "dunning_charges_list",
            "GET",
            "/v1/charges",
            true,
            false,
            true,
        ),
        (
            "dunning_charges_get",
            "GET",
            "/v1/charges/{id}",
            true,
            false,
            true,
        ),
        (
            "dunning_charges_create",
            "POST",
            "/v1/charges",
            false,
            false,
            false,
        ),
        (
            "dunning_charges_update",
            "PATCH",
            "/v1/charges/{id}",
            false,
            false,
            true,
        ),
        (
            "dunning_charges_delete",
            "DELETE",
            "/v1/charges/{id}",
            false,
            true,
            true,
        ),
        (
            "dunning_charges_cancel",
            "POST",
            "/v1/charges/{id}/cancel",
            false,
            true,
            true,
        ),
        (
            "dunning_charges_mark_paid",
            "POST",
            "/v1/charges/{id}/mark-paid",
            false,
            true,
            true,
        ),
        (
            "dunning_charges_pause",
            "POST",
            "/v1/charges/{id}/pause",
            false,
            false,
            true,
        ),
        (
            "dunning_charges_resume",
            "POST",
            "/v1/charges/{id}/resume",
            false,
            false,
            true,
        ),
        (
            "dunning_charges_timeline",
            "GET",
            "/v1/charges/{id}/events",
            true,
            false,
            true,
        ),
        (
            "dunning_charges_settlement_letter",
            "GET",
            "/v1/charges/{id}/settlement-pdf",
            true,
            false,
            true,
        ),
        (
            "dunning_charges_decide",
            "POST",
            "/v1/charges/{id}/decision",
            false,
            true,
            false,
        ),
    ] {
        let t = find(name);
        let r = t.route.as_ref().unwrap();
        assert_eq!((r.method, r.path.as_str()), (method, path), "{name}");
        let a = t.annotations;
        assert_eq!(
            (a.read_only, a.destructive, a.idempotent),
            (ro, destructive, idem),
            "{name}"
        );
    }
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
    assert!(pos("dunning_debtors_archive") < pos("dunning_debtors_statement"));
    assert!(pos("dunning_debtors_statement") < pos("dunning_contact_points_list"));
}

// ---- demo data ----

#[test]
fn demo_charges_cover_every_status_and_keep_aggregates() {
    let mut bed = Bed::demo();
    let ana = bed.ana();
    let carla = bed.carla();
    let count = |bed: &mut Bed, who: &Principal, status: &str| -> u64 {
        bed.ok(
            who,
            "dunning_charges_list",
            json!({"status": status, "per_page": 1}),
        )["meta"]["total"]
            .as_u64()
            .unwrap()
    };
    let all = count(
        &mut bed,
        &ana,
        "draft,pending,overdue,partially_paid,paid,canceled,renegotiated,written_off",
    );
    assert!(all >= 200, "{all}");
    assert!(count(&mut bed, &ana, "pending") >= 10);
    assert!(count(&mut bed, &ana, "overdue") >= 10);
    assert!(count(&mut bed, &ana, "paid") >= 5);
    for s in [
        "partially_paid",
        "canceled",
        "renegotiated",
        "written_off",
        "draft",
    ] {
        assert!(count(&mut bed, &ana, s) >= 1, "{s}");
        assert!(count(&mut bed, &carla, s) >= 1, "acme {s}");
    }
    let acme_total = bed.ok(&carla, "dunning_charges_list", json!({}))["meta"]["total"]
        .as_u64()
        .unwrap();
    assert!(acme_total >= 30, "{acme_total}");
    // Aggregates: every debtor's open amount is the sum of its open charges.
    let org = ana.organization.clone();
    store::read(bed.domain.store(), |tx| {
        let debtors = tx.find(Kind::Debtor, &org, &Query::all())?;
        for d in debtors {
            let q = Query::all()
                .with(Cond::Eq("debtor_id", d["id"].clone()))
                .with(Cond::In(
                    "status",
                    vec![json!("pending"), json!("overdue"), json!("partially_paid")],
                ));
            let open: i64 = tx
                .find(Kind::Charge, &org, &q)?
                .iter()
                .map(|c| {
                    ((c["amount"].as_f64().unwrap() - c["paid_amount"].as_f64().unwrap()) * 100.0)
                        .round() as i64
                })
                .sum();
            assert_eq!(
                (d["open_amount"].as_f64().unwrap() * 100.0).round() as i64,
                open,
                "{}",
                d["name"]
            );
        }
        // Every charge has its creation event; overdue ones their overdue event.
        let created = tx.count(
            Kind::Event,
            &org,
            &[Cond::Eq("code", json!("charge.created"))],
        )?;
        assert!(created >= 200, "{created}");
        Ok(())
    })
    .unwrap();
    // The clock already ran: nothing is left for the sweep.
    assert_eq!(sweep(&bed, &ana), 0);
    // Contact points: every debtor has some, some opted out.
    let debtors = bed.ok(&ana, "dunning_debtors_list", json!({"per_page": 100}));
    let mut opted_out = 0;
    for d in debtors["data"].as_array().unwrap() {
        let cps = bed.ok(&ana, "dunning_contact_points_list", json!({"id": d["id"]}));
        let data = cps["data"].as_array().unwrap();
        assert!(
            data.iter().any(|c| c["channel"] == "email"),
            "{}",
            d["name"]
        );
        assert!(
            data.iter().any(|c| c["channel"] == "whatsapp"),
            "{}",
            d["name"]
        );
        opted_out += data.iter().filter(|c| c["consent"] == "opted_out").count();
    }
    assert!(opted_out >= 5, "{opted_out}");
}

#[test]
fn events_of_one_second_list_in_the_order_they_happened() {
    // The clock does not move between these calls: only the insertion sequence orders them.
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "reason": "Em negociação"}),
    );
    bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "reason": "De novo"}),
    );
    bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    let list = |bed: &mut Bed, order: &str| -> Vec<String> {
        bed.ok(
            &ana,
            "dunning_events_list",
            json!({"resource_id": id, "sort_order": order}),
        )["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["code"].as_str().unwrap().to_owned())
            .collect()
    };
    let asc = list(&mut bed, "asc");
    assert_eq!(
        asc,
        [
            "charge.created",
            "charge.paused",
            "charge.resumed",
            "charge.paused",
            "charge.resumed",
            "charge.canceled"
        ]
    );
    let mut desc = list(&mut bed, "desc");
    desc.reverse();
    assert_eq!(desc, asc);
}

#[test]
fn rule_mark_paid_checks_the_state_before_the_arguments() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    // No paid_amount: the state transition is what is wrong, in the rehearsal that asks
    // for confirmation and in the call itself.
    let e = preflight(&bed, &ana, "dunning_charges_mark_paid", json!({"id": id})).unwrap_err();
    assert_eq!(e.code, ToolErrorCode::Conflict, "{e:?}");
    assert!(e.message.contains("invalid_transition"), "{}", e.message);
    assert!(e.message.contains("canceled"), "{}", e.message);
    let e = bed.err(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    assert_eq!(e.code, ToolErrorCode::Conflict, "{e:?}");
}

#[test]
fn rule_consumer_interest_capped_at_one_percent_a_month() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 100.0, "due_date": "2026-12-10",
               "payment_method": "pix", "interest_percentage": 30}),
    );
    assert_field(&e, "interest_percentage");
    assert!(e.message.contains("1% a month"), "{}", e.message);
    charge(&mut bed, &ana, &d, json!({"interest_percentage": 1}));
    let c = company(&mut bed, &ana);
    charge(&mut bed, &ana, &c, json!({"interest_percentage": 5}));
}

#[test]
fn rule_after_a_partial_payment_interest_accrues_on_the_open_balance() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = company(&mut bed, &ana);
    // Due Thursday 2026-12-10; 2 % fine, 3 % a month.
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "due_date": "2026-12-10", "fine_percentage": 2, "interest_percentage": 3}),
    ));
    bed.advance_days(39); // 2027-01-09: 30 days late.
    let g = get(&mut bed, &ana, &id);
    // 1000 + 20 fine + 1000 × 3 % × 30 / 30 = 1 050.
    assert_eq!(g["updated_amount"], 1050.0);
    // 550 paid: 50 of penalties first, then 500 of principal; 500 stay open.
    bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_amount": 550.0}),
    );
    bed.advance_days(30); // 30 more days: interest on the 500 still open only.
    let g = get(&mut bed, &ana, &id);
    assert_eq!(g["status"], "partially_paid");
    // 1050 + 500 × 3 % − 550 = 515 (on the full 1000 it would be 530).
    assert_eq!(g["updated_amount"], 515.0);
    assert_eq!(g["amount_breakdown"]["interest"], 45.0);
    assert_eq!(g["amount_breakdown"]["paid"], 550.0);
}

#[test]
fn rule_a_draft_is_issued_then_followed() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let draft = charge(
        &mut bed,
        &ana,
        &d,
        json!({"draft": true, "due_date": "2026-12-05", "payment_method": "bolepix"}),
    );
    let id = sid(&draft);
    assert_eq!(draft["status"], "draft");
    assert!(draft["boleto"].is_null() && draft["pix"].is_null());
    // Kept past its due date: it needs a new one.
    bed.advance_days(10); // 2026-12-11
    let e = bed.err(&ana, "dunning_charges_issue", json!({"id": id}));
    assert_field(&e, "due_date");
    let issued = bed.ok(
        &ana,
        "dunning_charges_issue",
        json!({"id": id, "due_date": "2026-12-20"}),
    );
    assert_eq!(issued["status"], "pending");
    assert_eq!(issued["due_date"], "2026-12-20");
    assert_eq!(issued["boleto"]["line"].as_str().map(str::len), Some(47));
    assert!(issued["pix"]["emv"].is_string(), "registered: {issued}");
    assert!(codes(&mut bed, &ana, &id).contains(&"charge.issued".to_owned()));
    // Again: nothing changes; another due date is a conflict; a paid charge cannot be issued.
    let again = bed.ok(&ana, "dunning_charges_issue", json!({"id": id}));
    assert_eq!(again["updated_at"], issued["updated_at"]);
    let e = bed.err(
        &ana,
        "dunning_charges_issue",
        json!({"id": id, "due_date": "2026-12-28"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": id}));
    let e = bed.err(&ana, "dunning_charges_issue", json!({"id": id}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("invalid_transition"), "{}", e.message);
}
