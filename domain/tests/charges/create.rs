//! Creating, reading and listing charges: codes, validation, the organization's debtors,
//! unique external ids, due dates, the consumer fine cap, list filters.

use super::*;

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
