//! Hardening, domain side (`docs/decisions.md`, "Hardening: domain and core"): control
//! characters in text fields, the confirmation's order and memory, outbound budgets per
//! kind, a debtor's aggregates kept by deltas and the statement's pages and the answer
//! ceiling.

use dunning_core::{Ctx, Dispatch, Output, Principal, ToolCall, ToolError, ToolErrorCode};
use dunning_domain::error::DomainError;
use dunning_domain::op::Op;
use dunning_domain::ops::charges;
use dunning_domain::ops::webhooks::{self, RecordingDriver};
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

fn charge(bed: &mut Bed, who: &Principal, debtor: &str) -> String {
    let c = bed.ok(
        who,
        "dunning_charges_create",
        json!({
            "debtor_id": debtor, "amount": 1234.56, "due_date": "2026-12-10",
            "payment_method": "boleto", "description": "Mensalidade",
        }),
    );
    c["id"].as_str().unwrap().to_owned()
}

/// Runs `f` on a `ToolCall` of `tool` as `who`, with the given confirmation nonce.
fn with_call<R>(
    bed: &Bed,
    who: &Principal,
    tool: &str,
    args: &Value,
    nonce: Option<&str>,
    f: impl FnOnce(&ToolCall<'_>) -> R,
) -> R {
    let def = bed
        .domain
        .catalog()
        .tools
        .into_iter()
        .find(|t| t.name == tool)
        .unwrap();
    let args = args.as_object().cloned().unwrap();
    let entropy = [7u8; 32];
    let call = ToolCall {
        tool: &def,
        args: &args,
        ctx: Ctx {
            principal: who,
            now: bed.now,
            request_id: "hardening",
            entropy: &entropy,
            ahead: None,
        },
        confirmation_key: nonce,
    };
    f(&call)
}

// ---- control characters ----

#[test]
fn control_characters_in_text_fields_are_validation_errors() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    for (bad, shown) in [
        ("\u{0}", "U+0000"),
        ("\u{7}", "U+0007"),
        ("\u{1b}", "U+001B"),
    ] {
        let e = bed.err(
            &ana,
            "dunning_debtors_create",
            json!({"cnpj_cpf": "529.982.247-25", "name": format!("Maria{bad}Silva")}),
        );
        assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
        assert_eq!(e.details.len(), 1, "{e:?}");
        assert_eq!(e.details[0].field, "name");
        assert!(e.details[0].issue.contains(shown), "{e:?}");
    }
    // Nothing was stored.
    let l = bed.ok(&ana, "dunning_debtors_list", json!({}));
    assert_eq!(l["meta"]["total"], 0, "{l}");
    // Tab and newline are text.
    let d = maria(&mut bed, &ana);
    let c = bed.ok(
        &ana,
        "dunning_charges_create",
        json!({
            "debtor_id": d, "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix",
            "description": "linha 1\nlinha 2\tfim",
        }),
    );
    assert_eq!(c["description"], "linha 1\nlinha 2\tfim");
    // Nested fields are named by path, every one of them; updates are checked too.
    let e = bed.err(
        &ana,
        "dunning_debtors_update",
        json!({"id": d, "name": "A\u{1b}[2J", "email": "a\u{0}@b.example"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    let mut fields: Vec<&str> = e.details.iter().map(|i| i.field.as_str()).collect();
    fields.sort_unstable();
    assert_eq!(fields, ["email", "name"], "{e:?}");
}

#[test]
fn control_characters_are_refused_before_a_confirmation_is_asked() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = charge(&mut bed, &ana, &d);
    let e = preflight(
        &bed,
        &ana,
        "dunning_charges_decide",
        json!({"id": id, "decision": "suspend", "reason": "bell\u{7}"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    assert_eq!(e.details[0].field, "reason");
}

// ---- confirmation ----

#[test]
fn a_declined_state_never_executes_afterwards() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = charge(&mut bed, &ana, &d);
    let args = json!({"id": id});
    with_call(
        &bed,
        &ana,
        "dunning_charges_cancel",
        &args,
        Some("n-1"),
        |c| bed.domain.decline(c),
    )
    .unwrap();
    // The same state comes back with `accept`: refused, nothing changes.
    let e = bed
        .call_with(&ana, "dunning_charges_cancel", args.clone(), Some("n-1"))
        .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::ConfirmationDeclined, "{e:?}");
    let c = bed.ok(&ana, "dunning_charges_get", json!({"id": id}));
    assert_eq!(c["status"], "pending");
    // A decline is idempotent; a fresh confirmation (another nonce) still works.
    with_call(
        &bed,
        &ana,
        "dunning_charges_cancel",
        &args,
        Some("n-1"),
        |c| bed.domain.decline(c),
    )
    .unwrap();
    bed.call_with(&ana, "dunning_charges_cancel", args.clone(), Some("n-2"))
        .unwrap();
    let c = bed.ok(&ana, "dunning_charges_get", json!({"id": id}));
    assert_eq!(c["status"], "canceled");
    // Declining a state that was already accepted and executed is a conflict: the
    // decline came too late to undo anything.
    let e = with_call(
        &bed,
        &ana,
        "dunning_charges_cancel",
        &args,
        Some("n-2"),
        |c| bed.domain.decline(c),
    )
    .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::Conflict, "{e:?}");
}

#[test]
fn a_reused_idempotency_key_is_refused_before_asking() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let a = charge(&mut bed, &ana, &d);
    let b = charge(&mut bed, &ana, &d);
    bed.call_with(
        &ana,
        "dunning_charges_cancel",
        json!({"id": a, "idempotency_key": "k-1"}),
        Some("n-a"),
    )
    .unwrap();
    // Same key, other arguments: refused by the preflight, so the user is never asked.
    let e = preflight(
        &bed,
        &ana,
        "dunning_charges_cancel",
        json!({"id": b, "idempotency_key": "k-1"}),
    )
    .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict, "{e:?}");
    // An unused key is no conflict: the preflight goes on to ask.
    assert!(
        preflight(
            &bed,
            &ana,
            "dunning_charges_cancel",
            json!({"id": b, "idempotency_key": "k-2"}),
        )
        .is_ok()
    );
}

// ---- a debtor's aggregates by deltas ----

/// The debtor's stored aggregates and the full recount, side by side.
fn aggregates(bed: &mut Bed, who: &Principal, debtor: &str) -> (Value, Value) {
    fn recount(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let dunning_domain::args::ById { id } = op.args()?;
        let (open, overdue, n, oldest) = dunning_domain::ops::aggregates::recount(op, &id)?;
        Ok(Output::ok(json!([open, overdue, n, oldest])))
    }
    let d = bed.ok(who, "dunning_debtors_get", json!({"id": debtor}));
    let stored = json!([
        d["open_amount"],
        d["overdue_amount"],
        d["overdue_count"],
        d["oldest_due_date"]
    ]);
    let recounted = match dunning_domain::demo::run_as(
        &bed.domain,
        who,
        bed.now,
        [3u8; 32],
        recount,
        json!({"id": debtor}),
    ) {
        Ok(Output::Json { body, .. }) => body.into_value(),
        other => panic!("{other:?}"),
    };
    (stored, recounted)
}

fn sweep(bed: &Bed, who: &Principal) {
    fn run(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let n = charges::sweep_overdue(op)?;
        Ok(Output::ok(json!(n)))
    }
    dunning_domain::demo::run_as(&bed.domain, who, bed.now, [4u8; 32], run, json!({}))
        .expect("sweep");
}

#[test]
fn debtor_aggregates_follow_every_charge_change_without_a_recount() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let check = |bed: &mut Bed, step: &str| {
        let (stored, recounted) = aggregates(bed, &ana, &d);
        assert_eq!(stored, recounted, "after {step}");
    };
    let mut ids = Vec::new();
    for (amount, due) in [
        (100.0, "2026-12-03"),
        (250.5, "2026-12-02"),
        (80.0, "2026-12-20"),
        (40.0, "2026-12-02"),
    ] {
        let c = bed.ok(
            &ana,
            "dunning_charges_create",
            json!({"debtor_id": d, "amount": amount, "due_date": due, "payment_method": "pix"}),
        );
        ids.push(c["id"].as_str().unwrap().to_owned());
        check(&mut bed, "create");
    }
    let draft = bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 5.0, "due_date": "2026-12-01", "payment_method": "pix", "draft": true}),
    );
    check(&mut bed, "draft");
    bed.ok(&ana, "dunning_charges_delete", json!({"id": draft["id"]}));
    check(&mut bed, "delete");
    // The oldest (two on 12-02) closes one by one: the next oldest comes from the index.
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": ids[1]}));
    check(&mut bed, "paid (oldest)");
    bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": ids[3], "paid_amount": 10.0}),
    );
    check(&mut bed, "partially paid");
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": ids[3]}));
    check(&mut bed, "canceled (oldest)");
    bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": ids[0], "due_date": "2026-12-30", "amount": 120.0}),
    );
    check(&mut bed, "update (due date moves past another)");
    bed.advance_days(25);
    sweep(&bed, &ana);
    check(&mut bed, "overdue sweep");
    let (stored, _) = aggregates(&mut bed, &ana, &d);
    assert_eq!(stored[2], 1, "one overdue charge: {stored}");
}

// ---- statement pages and the answer ceiling ----

#[test]
fn the_statement_comes_a_page_at_a_time_with_totals_over_every_charge() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    for _ in 0..130 {
        charge(&mut bed, &ana, &d);
    }
    let first = bed.ok(&ana, "dunning_debtors_statement", json!({"id": d}));
    assert_eq!(first["charges"].as_array().unwrap().len(), 100);
    assert_eq!(
        first["meta"],
        json!({"page": 1, "per_page": 100, "total": 130, "total_pages": 2})
    );
    assert_eq!(first["totals"]["open_count"], 130);
    let second = bed.ok(
        &ana,
        "dunning_debtors_statement",
        json!({"id": d, "page": 2}),
    );
    assert_eq!(second["charges"].as_array().unwrap().len(), 30);
    assert_eq!(
        second["totals"], first["totals"],
        "totals cover every charge"
    );
    let small = bed.ok(
        &ana,
        "dunning_debtors_statement",
        json!({"id": d, "page": 3, "per_page": 50}),
    );
    assert_eq!(small["charges"].as_array().unwrap().len(), 30);
    // Pages do not overlap and together list every charge once.
    let mut ids: Vec<&str> = first["charges"]
        .as_array()
        .unwrap()
        .iter()
        .chain(second["charges"].as_array().unwrap())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 130);
}

#[test]
fn an_answer_over_the_ceiling_is_refused_naming_the_limit() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    for _ in 0..30 {
        charge(&mut bed, &ana, &d);
    }
    bed.domain.set_answer_limit(20_000);
    let e = bed.err(&ana, "dunning_charges_list", json!({"per_page": 100}));
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    assert!(e.message.contains("limit of 20000 bytes"), "{}", e.message);
    assert_eq!(e.details[0].field, "per_page");
    // A smaller page fits.
    let l = bed.ok(&ana, "dunning_charges_list", json!({"per_page": 5}));
    assert_eq!(l["data"].as_array().unwrap().len(), 5);
    // Writes are never refused for their answer: they are committed by then.
    charge(&mut bed, &ana, &d);
}

// ---- one outbound budget per kind, honest hints ----

/// A debtor with an e-mail contact point and a pending charge; the charge's id.
fn reachable_charge(bed: &mut Bed, who: &Principal) -> String {
    let d = maria(bed, who);
    bed.ok(
        who,
        "dunning_contact_points_create",
        json!({"id": d, "channel": "email", "value": "maria@example.com", "consent": "unknown"}),
    );
    charge(bed, who, &d)
}

fn notify(bed: &mut Bed, who: &Principal, charge: &str) -> Result<Output, ToolError> {
    bed.call(
        who,
        "dunning_charges_notify",
        json!({"id": charge, "channel": "email", "template_id": "reminder"}),
    )
}

#[test]
fn a_webhook_backlog_does_not_starve_messages_to_debtors() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    bed.ok(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://erp.example.com/hook", "events": ["charge.created"]}),
    );
    let c = reachable_charge(&mut bed, &ana);
    let d = bed.ok(&ana, "dunning_charges_get", json!({"id": c}))["debtor_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // A backlog: more deliveries than a minute's webhook budget.
    for _ in 0..80 {
        charge(&mut bed, &ana, &d);
    }
    let driver = RecordingDriver::new();
    let report = webhooks::tick(&bed.domain, bed.now, &driver).unwrap();
    assert!(report.attempts >= 50, "{report:?}");
    // The outbox spent its budget down to the reserve; messages have their own.
    for _ in 0..5 {
        notify(&mut bed, &ana, &c).expect("a message while webhooks are backlogged");
    }
    // The unit the outbox left is a person's: a webhook test gets it.
    let hooks = bed.ok(&ana, "dunning_webhooks_list", json!({}));
    let hook = hooks["data"][0]["id"].as_str().unwrap().to_owned();
    bed.ok(&ana, "dunning_webhooks_test", json!({"id": hook}));
}

#[test]
fn a_followed_retry_after_is_honoured() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    bed.ok(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://erp.example.com/hook", "events": ["charge.created"]}),
    );
    let c = reachable_charge(&mut bed, &ana);
    let d = bed.ok(&ana, "dunning_charges_get", json!({"id": c}))["debtor_id"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..150 {
        charge(&mut bed, &ana, &d);
    }
    let refused = loop {
        match notify(&mut bed, &ana, &c) {
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(refused.code, ToolErrorCode::RateLimited, "{refused:?}");
    let wait = refused.retry_after_ms.expect("retry_after_ms");
    assert!(wait > 0 && wait <= 1_000, "{wait}");
    // The caller comes back exactly when told; the webhook outbox, with its backlog,
    // ran just before, as fast as it may.
    bed.now = bed.now.plus_millis(wait);
    let report = webhooks::tick(&bed.domain, bed.now, &RecordingDriver::new()).unwrap();
    assert!(report.attempts > 0, "a backlog to deliver: {report:?}");
    notify(&mut bed, &ana, &c).expect("the hint was honest");
}
