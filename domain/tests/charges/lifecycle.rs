//! A charge's life: update, re-dating, delete, cancel, payments, pause and resume, the
//! timeline, decisions, issuing a draft.

use super::*;

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
