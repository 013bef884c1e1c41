//! Documents: the settlement letter (only when paid, or after a completed agreement) and
//! the debtor statement.

use super::*;

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
    #[derive(serde::Deserialize)]
    struct Fold {
        id: String,
        agreement_id: String,
        status: String,
    }
    fn run(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let Fold {
            id,
            agreement_id: aid,
            status,
        } = op.args()?;
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
