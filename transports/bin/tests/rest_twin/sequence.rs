//! The sequence of cases: the pristine demo data read first, then writes (creates,
//! updates, state changes, destructive tools), then reads again. Each case states the
//! outcome it expects (success or an error code).

use serde_json::{Value, json};

use crate::twin::Expect::{Done, Fails};
use crate::twin::{Twin, id, status_is};

/// Runs every case on `t`, in order (a case depends on what the earlier ones made).
pub(crate) fn run(t: &mut Twin) {
    assert!(
        t.tools.iter().all(|d| d.route.is_some()),
        "every tool has a /v1 route"
    );

    // ---- Pristine reads ----------------------------------------------------------------
    let charges = t.rows("dunning_charges_list", json!({ "sort_by": "created_at" }));
    let charges2 = t.rows(
        "dunning_charges_list",
        json!({ "sort_by": "created_at", "page": 2 }),
    );
    let all: Vec<Value> = charges.into_iter().chain(charges2).collect();
    // Overdue and not paused: a demo charge is paused over a dispute, and a disputed
    // charge can be neither negativated nor protested.
    let overdue: Vec<&Value> = all
        .iter()
        .filter(|c| status_is(c, "overdue") && c["dunning_paused"] != json!(true))
        .collect();
    let pending: Vec<&Value> = all.iter().filter(|c| status_is(c, "pending")).collect();
    let paid: Vec<&Value> = all.iter().filter(|c| status_is(c, "paid")).collect();
    assert!(overdue.len() >= 5 && pending.len() >= 3 && !paid.is_empty());
    let debtor = overdue[0]["debtor_id"].as_str().expect("debtor").to_owned();

    t.case("dunning_me", json!({}), Done);
    t.case("dunning_summary_get", json!({}), Done);
    t.case(
        "dunning_summary_get",
        json!({ "from": "2026-11-01", "to": "2026-11-30" }),
        Done,
    );
    t.case(
        "dunning_debtors_list",
        json!({ "has_overdue": true, "sort_by": "overdue_amount", "sort_order": "desc", "per_page": 10 }),
        Done,
    );
    t.case(
        "dunning_debtors_list",
        json!({ "q": "Silva", "page": 2, "per_page": 3 }),
        Done,
    );
    t.case("dunning_debtors_get", json!({ "id": debtor }), Done);
    t.case("dunning_debtors_statement", json!({ "id": debtor }), Done);
    t.case(
        "dunning_debtors_statement",
        json!({ "id": debtor, "format": "pdf" }),
        Done,
    );
    t.case("dunning_contact_points_list", json!({ "id": debtor }), Done);
    t.case(
        "dunning_contact_points_list",
        json!({ "id": debtor, "channel": "email" }),
        Done,
    );
    t.case(
        "dunning_charges_list",
        json!({ "status": "overdue,pending", "min_amount": 100.5, "sort_by": "amount", "per_page": 20 }),
        Done,
    );
    t.case(
        "dunning_charges_list",
        json!({ "debtor_id": debtor, "due_from": "2026-01-01", "due_to": "2026-12-31" }),
        Done,
    );
    t.case("dunning_charges_get", json!({ "id": id(overdue[0]) }), Done);
    t.case(
        "dunning_charges_timeline",
        json!({ "id": id(overdue[0]) }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": id(paid[0]) }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": id(pending[0]) }),
        Fails("NOT_SETTLED"),
    );
    let bureau = t.rows("dunning_credit_bureau_list", json!({}));
    t.case(
        "dunning_credit_bureau_list",
        json!({ "bureau": "serasa" }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_get",
        json!({ "id": id(&bureau[0]) }),
        Done,
    );
    let protests = t.rows("dunning_protests_list", json!({}));
    t.case("dunning_protests_list", json!({}), Done);
    t.case(
        "dunning_protests_get",
        json!({ "id": id(&protests[0]) }),
        Done,
    );
    let agreements = t.rows("dunning_agreements_list", json!({}));
    t.case(
        "dunning_agreements_list",
        json!({ "status": "accepted" }),
        Done,
    );
    t.case(
        "dunning_agreements_get",
        json!({ "id": id(&agreements[0]) }),
        Done,
    );
    t.case(
        "dunning_agreements_term",
        json!({ "id": id(&agreements[0]) }),
        Done,
    );
    let rulers = t.rows("dunning_rulers_list", json!({}));
    t.case("dunning_rulers_list", json!({ "status": "active" }), Done);
    t.case("dunning_rulers_get", json!({ "id": id(&rulers[0]) }), Done);
    t.case(
        "dunning_rulers_preview",
        json!({ "id": id(&rulers[0]), "charge_id": id(pending[0]) }),
        Done,
    );
    t.case(
        "dunning_rulers_preview",
        json!({ "id": id(&rulers[0]), "due_date": "2026-12-20", "amount": 1234.56 }),
        Done,
    );
    t.case(
        "dunning_deliveries_list",
        json!({ "channel": "email", "per_page": 10 }),
        Done,
    );
    let sent = t
        .rows("dunning_deliveries_list", json!({ "channel": "email" }))
        .iter()
        .find(|d| {
            let open = all.iter().any(|c| {
                c["id"] == d["charge_id"]
                    && matches!(c["status"].as_str(), Some("overdue" | "pending"))
            });
            open && matches!(d["status"].as_str(), Some("sent" | "delivered" | "read"))
        })
        .map(id)
        .expect("a sent e-mail about an open charge in the demo data");
    let processed = t
        .rows("dunning_events_list", json!({ "resource_type": "export" }))
        .iter()
        .filter_map(|e| e["resource_id"].as_str().map(str::to_owned))
        .find(|x| t.peek("dunning_exports_get", json!({ "id": x }))["status"] == "processed")
        .expect("a processed export in the demo data");
    let hooks = t.rows("dunning_webhooks_list", json!({}));
    let hook = id(&hooks[0]);
    t.case("dunning_webhooks_list", json!({ "active": true }), Done);
    t.case("dunning_webhooks_get", json!({ "id": hook }), Done);
    let hook_deliveries = t.rows("dunning_webhook_deliveries_list", json!({ "id": hook }));
    t.case(
        "dunning_webhook_deliveries_list",
        json!({ "id": hook, "per_page": 5 }),
        Done,
    );
    t.case(
        "dunning_webhook_deliveries_get",
        json!({ "id": hook, "delivery_id": id(&hook_deliveries[0]) }),
        Done,
    );
    t.case(
        "dunning_events_list",
        json!({ "resource_type": "charge", "per_page": 10 }),
        Done,
    );
    let debtor_overdue: Vec<String> = overdue
        .iter()
        .filter(|c| c["debtor_id"] == debtor.as_str())
        .map(|c| id(c))
        .collect();
    t.case(
        "dunning_agreements_simulate",
        json!({
            "debtor_id": debtor, "charge_ids": debtor_overdue, "installments_count": 3,
            "first_due_date": "2026-12-15", "discount_percentage": 10.0,
        }),
        Done,
    );

    // Errors on reads: unknown id, unknown argument (strict reads).
    let nobody = "00000000-0000-4000-8000-000000000000";
    t.case(
        "dunning_charges_get",
        json!({ "id": nobody }),
        Fails("NOT_FOUND"),
    );
    t.case(
        "dunning_charges_list",
        json!({ "stauts": "overdue" }),
        Fails("VALIDATION_ERROR"),
    );

    // ---- Writes ------------------------------------------------------------------------
    let new_debtor = t.case(
        "dunning_debtors_create",
        json!({
            "cnpj_cpf": "52998224725", "name": "Zé Twin da Silva", "tags": ["twin"],
            "address": { "street": "Rua A", "number": "1", "neighborhood": "Centro",
                         "city": "São Paulo", "state": "SP", "zipcode": "01001000" },
        }),
        Done,
    );
    let d = id(&new_debtor);
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Zé", "idempotency_key": "twin-debtor-1" }),
        Done,
    );
    // The same key again replays the first result on both surfaces.
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Zé", "idempotency_key": "twin-debtor-1" }),
        Done,
    );
    t.case(
        "dunning_debtors_update",
        json!({ "id": d, "nickname": "Outro", "idempotency_key": "twin-debtor-1" }),
        Fails("IDEMPOTENCY_CONFLICT"),
    );
    let cp = t.case(
        "dunning_contact_points_create",
        json!({ "id": d, "channel": "email", "value": "ze.twin@example.com", "is_primary": true, "consent": "opted_in" }),
        Done,
    );
    let cp2 = t.case(
        "dunning_contact_points_create",
        json!({ "id": d, "channel": "sms", "value": "+5511987654321", "label": "celular" }),
        Done,
    );
    t.case(
        "dunning_contact_points_update",
        json!({ "id": d, "cp_id": id(&cp), "label": "trabalho" }),
        Done,
    );
    t.case(
        "dunning_contact_points_delete",
        json!({ "id": d, "cp_id": id(&cp2) }),
        Done,
    );
    let charge = t.case(
        "dunning_charges_create",
        json!({
            "debtor_id": d, "amount": 350.75, "due_date": "2026-12-20", "payment_method": "pix",
            "description": "Serviço twin", "fine_percentage": 2.0, "interest_percentage": 1.0,
        }),
        Done,
    );
    let c = id(&charge);
    let draft = t.case(
        "dunning_charges_create",
        json!({ "debtor_id": d, "amount": 99.9, "due_date": "2027-01-10", "payment_method": "boleto", "draft": true }),
        Done,
    );
    t.case(
        "dunning_charges_update",
        json!({ "id": c, "amount": 400.0, "description": "Serviço twin (revisto)" }),
        Done,
    );
    t.case(
        "dunning_charges_pause",
        json!({ "id": c, "until": "2026-12-10", "reason": "negociando" }),
        Done,
    );
    t.case("dunning_charges_resume", json!({ "id": c }), Done);
    let notified = t.case(
        "dunning_charges_notify",
        json!({ "id": c, "channel": "email", "message": "Olá, segue sua cobrança." }),
        Done,
    );
    t.case(
        "dunning_notifications_create",
        json!({ "charge_ids": [c], "channel": "email", "message": "Lembrete de vencimento." }),
        Done,
    );
    let delivery = notified["deliveries"][0]["id"]
        .as_str()
        .or_else(|| notified["data"][0]["id"].as_str())
        .or_else(|| notified["id"].as_str())
        .unwrap_or_else(|| panic!("no delivery in {notified}"))
        .to_owned();
    t.case(
        "dunning_deliveries_resend",
        json!({ "id": delivery }),
        Fails("CONFLICT"),
    );
    t.case("dunning_deliveries_resend", json!({ "id": sent }), Done);
    t.case(
        "dunning_charges_mark_paid",
        json!({ "id": c, "paid_amount": 400.0, "paid_via": "pix", "note": "pago no caixa" }),
        Done,
    );
    t.case(
        "dunning_charges_settlement_letter",
        json!({ "id": c }),
        Done,
    );
    t.case(
        "dunning_charges_cancel",
        json!({ "id": c, "reason": "já paga" }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_charges_cancel",
        json!({ "id": id(pending[1]), "reason": "emitida por engano" }),
        Done,
    );
    let to_issue = t.case(
        "dunning_charges_create",
        json!({ "debtor_id": debtor, "amount": 42.0, "due_date": "2027-01-12", "payment_method": "pix", "draft": true }),
        Done,
    );
    t.case(
        "dunning_charges_issue",
        json!({ "id": id(&to_issue), "due_date": "2027-01-15" }),
        Done,
    );
    t.case(
        "dunning_charges_issue",
        json!({ "id": id(pending[2]), "due_date": "2027-02-01" }),
        Fails("CONFLICT"),
    );
    t.case("dunning_charges_delete", json!({ "id": id(&draft) }), Done);
    t.case(
        "dunning_charges_delete",
        json!({ "id": id(pending[2]) }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_charges_delete",
        json!({ "id": nobody }),
        Fails("NOT_FOUND"),
    );
    t.case(
        "dunning_charges_decide",
        json!({ "id": id(overdue[1]), "decision": "negotiate", "reason": "cliente pediu prazo" }),
        Done,
    );
    let record = t.case(
        "dunning_charges_negativate",
        json!({ "id": id(overdue[2]), "bureau": "spc", "notice_days": 10 }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_get",
        json!({ "id": id(&record) }),
        Done,
    );
    t.case(
        "dunning_credit_bureau_remove",
        json!({ "id": id(&bureau[0]), "reason": "error" }),
        Done,
    );
    let protest = t.case(
        "dunning_charges_protest",
        json!({ "id": id(overdue[3]), "title_type": "duplicata_mercantil", "document_ids": ["NF-1", "canhoto"] }),
        Done,
    );
    t.case("dunning_protests_get", json!({ "id": id(&protest) }), Done);
    t.case(
        "dunning_protests_cancel",
        json!({ "id": id(&protests[0]), "mode": "withdraw", "reason": "pagamento combinado" }),
        Done,
    );
    let agreement = t.case(
        "dunning_agreements_create",
        json!({
            "debtor_id": overdue[4]["debtor_id"], "charge_ids": [id(overdue[4])],
            "installments_count": 2, "first_due_date": "2026-12-20",
        }),
        Done,
    );
    t.case(
        "dunning_agreements_accept",
        json!({ "id": id(&agreement), "accepted_by": "operator" }),
        Done,
    );
    t.case(
        "dunning_agreements_term",
        json!({ "id": id(&agreement) }),
        Done,
    );
    t.case(
        "dunning_agreements_cancel",
        json!({ "id": id(&agreement), "reason": "desistiu" }),
        Done,
    );
    let ruler = t.case(
        "dunning_rulers_create",
        json!({
            "name": "Régua twin", "description": "criada pelo teste",
            "steps": [{
                "offset_days": -3, "channel": "email", "name": "Lembrete",
                "template": { "subject": "Sua fatura vence em breve", "body": "Olá {{debtor.name}}, sua fatura vence em {{charge.due_date}}." },
            }],
        }),
        Done,
    );
    let r = id(&ruler);
    t.case(
        "dunning_rulers_update",
        json!({ "id": r, "description": "revista" }),
        Done,
    );
    let step = t.case(
        "dunning_steps_create",
        json!({
            "id": r, "offset_days": 5, "channel": "sms", "name": "Cobrança",
            "template": { "body": "Fatura vencida: {{charge.url}}" },
        }),
        Done,
    );
    t.case(
        "dunning_steps_update",
        json!({ "id": r, "step_id": id(&step), "offset_days": 7 }),
        Done,
    );
    t.case(
        "dunning_steps_delete",
        json!({ "id": r, "step_id": id(&step) }),
        Done,
    );
    t.case("dunning_rulers_activate", json!({ "id": r }), Done);
    t.case(
        "dunning_rulers_pause",
        json!({ "id": r, "reason": "revisão" }),
        Done,
    );
    t.case("dunning_rulers_archive", json!({ "id": r }), Done);
    let export = t.case(
        "dunning_exports_create",
        json!({ "resource": "charges", "format": "csv", "filters": { "status": "overdue" } }),
        Done,
    );
    t.case("dunning_exports_get", json!({ "id": id(&export) }), Done);
    // Exports are processed by the worker: the new one is still queued.
    t.case(
        "dunning_exports_download",
        json!({ "id": id(&export) }),
        Fails("CONFLICT"),
    );
    t.case("dunning_exports_get", json!({ "id": processed }), Done);
    t.case("dunning_exports_download", json!({ "id": processed }), Done);
    let new_hook = t.case(
        "dunning_webhooks_create",
        json!({ "url": "https://erp.twin.example/hooks", "events": ["charge.paid"], "description": "twin" }),
        Done,
    );
    let h = id(&new_hook);
    t.case(
        "dunning_webhooks_update",
        json!({ "id": h, "description": "twin (revisto)" }),
        Done,
    );
    t.case(
        "dunning_webhooks_test",
        json!({ "id": h, "event_code": "ping" }),
        Fails("VALIDATION_ERROR"),
    );
    t.case("dunning_webhooks_test", json!({ "id": h }), Done);
    t.case(
        "dunning_webhooks_test",
        json!({ "id": h, "event_code": "charge.paid" }),
        Done,
    );
    t.case(
        "dunning_webhooks_rotate_secret",
        json!({ "id": h, "grace_period_seconds": 3600 }),
        Done,
    );
    let delivered = hook_deliveries
        .iter()
        .find(|d| d["status"] == "delivered")
        .map(id)
        .expect("a delivered webhook delivery in the demo data");
    let failed = hook_deliveries
        .iter()
        .find(|d| d["status"] == "failed")
        .map(id)
        .expect("a failed webhook delivery in the demo data");
    t.case(
        "dunning_webhook_deliveries_resend",
        json!({ "id": hook, "delivery_id": delivered }),
        Fails("CONFLICT"),
    );
    t.case(
        "dunning_webhook_deliveries_resend",
        json!({ "id": hook, "delivery_id": failed }),
        Done,
    );
    t.case("dunning_webhooks_delete", json!({ "id": h }), Done);
    t.case(
        "dunning_debtors_archive",
        json!({ "id": d, "reason": "teste" }),
        Done,
    );

    // ---- Reads after the writes: both stores hold the same data ------------------------
    t.case("dunning_summary_get", json!({}), Done);
    t.case(
        "dunning_events_list",
        json!({ "per_page": 100, "sort_order": "desc" }),
        Done,
    );
    t.case("dunning_deliveries_list", json!({ "per_page": 100 }), Done);
    t.case("dunning_charges_list", json!({ "debtor_id": d }), Done);
}
