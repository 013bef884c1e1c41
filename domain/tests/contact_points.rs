//! Contact points: happy paths, per-channel validation, one primary per channel,
//! opt-out, isolation, idempotency and the delete confirmation.

use dunning_core::{Dispatch, Principal, ToolErrorCode};
use dunning_domain::ops::contact_points::{ContactPoint, normalize, reachable};
use dunning_domain::store::{self, Cond, Kind};
use dunning_domain::testing::{Bed, preflight};
use serde_json::{Value, json};

fn debtor(bed: &mut Bed, who: &Principal) -> String {
    let d = bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    d["id"].as_str().unwrap().to_owned()
}

fn add(bed: &mut Bed, who: &Principal, id: &str, channel: &str, value: &str) -> Value {
    bed.ok(
        who,
        "dunning_contact_points_create",
        json!({"id": id, "channel": channel, "value": value}),
    )
}

fn sid(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
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

#[test]
fn create_list_update_delete() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let email = add(&mut bed, &ana, &id, "email", " Maria.Silva@Example.COM ");
    assert_eq!(email["value"], "maria.silva@example.com", "normalized");
    assert_eq!(email["consent"], "unknown");
    assert_eq!(email["status"], "active");
    assert_eq!(email["is_primary"], true, "first of its channel");
    assert_eq!(email["debtor_id"], id.as_str());
    let phone = add(&mut bed, &ana, &id, "whatsapp", "(11) 98765-4321");
    assert_eq!(phone["value"], "+5511987654321");
    let list = bed.ok(&ana, "dunning_contact_points_list", json!({"id": id}));
    assert_eq!(list["meta"]["total"], 2);
    let only = bed.ok(
        &ana,
        "dunning_contact_points_list",
        json!({"id": id, "channel": "whatsapp"}),
    );
    assert_eq!(only["meta"]["total"], 1);
    assert_eq!(only["data"][0]["value"], "+5511987654321");
    let u = bed.ok(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&email), "label": "pessoal", "consent": "opted_in"}),
    );
    assert_eq!(u["label"], "pessoal");
    assert_eq!(u["consent"], "opted_in");
    let gone = bed.ok(
        &ana,
        "dunning_contact_points_delete",
        json!({"id": id, "cp_id": sid(&phone)}),
    );
    assert_eq!(gone, json!({"status": 204}));
    let e = bed.err(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&phone), "label": "x"}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
    assert_eq!(events(&bed, &ana, "contact_point.created"), 2);
    assert_eq!(events(&bed, &ana, "contact_point.updated"), 1);
    assert_eq!(events(&bed, &ana, "contact_point.deleted"), 1);
}

#[test]
fn rule_email_shape_validated() {
    for bad in [
        "maria",
        "maria@",
        "@example.com",
        "maria@example",
        "ma ria@example.com",
        "a..b@example.com",
    ] {
        let e = normalize("email", bad).unwrap_err();
        assert!(e.to_string().starts_with("value:"), "{bad}: {e}");
    }
    assert_eq!(
        normalize("email", "Joao+cobranca@Empresa.com.br").unwrap(),
        "joao+cobranca@empresa.com.br"
    );
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "not-an-email"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "value");
}

#[test]
fn rule_phone_numbers_are_brazilian_e164() {
    for (raw, want) in [
        ("+55 11 98765-4321", "+5511987654321"),
        ("5511987654321", "+5511987654321"),
        ("(21) 3333-4444", "+552133334444"),
        ("+55 (31) 2345-6789", "+553123456789"),
    ] {
        assert_eq!(normalize("phone", raw).unwrap(), want, "{raw}");
    }
    for bad in [
        "+1 212 555 1234",
        "11 8765-4321x",
        "(01) 98765-4321",
        "123",
        "+55 11 88765-4321",
        "+55 11 987654-32100",
    ] {
        assert!(normalize("whatsapp", bad).is_err(), "{bad}");
    }
}

#[test]
fn rule_sms_needs_a_mobile_number() {
    assert!(normalize("sms", "(11) 3333-4444").is_err());
    assert_eq!(
        normalize("sms", "(11) 93333-4444").unwrap(),
        "+5511933334444"
    );
    assert_eq!(
        normalize("phone", "(11) 3333-4444").unwrap(),
        "+551133334444",
        "a landline is fine for calls"
    );
}

#[test]
fn postal_is_free_text_and_channel_is_checked() {
    assert_eq!(
        normalize("postal", "  Rua das Flores, 10\n Centro, São Paulo/SP ").unwrap(),
        "Rua das Flores, 10 Centro, São Paulo/SP"
    );
    assert!(normalize("postal", "Rua").is_err());
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "fax", "value": "+5511987654321"}),
    );
    assert_eq!(e.details[0].field, "channel");
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "a@b.com", "colour": "blue"}),
    );
    assert_eq!(e.details[0].field, "colour");
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "a@b.com", "consent": "maybe"}),
    );
    assert_eq!(e.details[0].field, "consent");
}

#[test]
fn duplicates_are_a_conflict_and_archived_debtors_take_none() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    add(&mut bed, &ana, &id, "email", "maria@example.com");
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "MARIA@example.com"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    // The same number on another channel is another contact point.
    add(&mut bed, &ana, &id, "sms", "+5511987654321");
    add(&mut bed, &ana, &id, "whatsapp", "+5511987654321");
    bed.ok(&ana, "dunning_debtors_archive", json!({"id": id}));
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "other@example.com"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("archived"), "{}", e.message);
}

#[test]
fn rule_one_primary_per_channel() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    add(&mut bed, &ana, &id, "email", "a@example.com");
    bed.advance_days(1);
    let b = bed.ok(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "b@example.com", "is_primary": true}),
    );
    let c = add(&mut bed, &ana, &id, "email", "c@example.com");
    let w = add(&mut bed, &ana, &id, "whatsapp", "+5511987654321");
    assert_eq!(b["is_primary"], true);
    assert_eq!(c["is_primary"], false, "a channel already has its primary");
    assert_eq!(w["is_primary"], true, "other channels are independent");
    let primaries = |bed: &mut Bed| -> Vec<String> {
        let l = bed.ok(
            &ana,
            "dunning_contact_points_list",
            json!({"id": id, "channel": "email"}),
        );
        l["data"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["is_primary"] == true)
            .map(|c| c["value"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(primaries(&mut bed), ["b@example.com"]);
    bed.ok(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&c), "is_primary": true}),
    );
    assert_eq!(primaries(&mut bed), ["c@example.com"]);
    // Deleting the primary promotes the oldest remaining one of the channel.
    bed.ok(
        &ana,
        "dunning_contact_points_delete",
        json!({"id": id, "cp_id": sid(&c)}),
    );
    assert_eq!(primaries(&mut bed), ["a@example.com"]);
}

#[test]
fn rule_opt_out_is_recorded_at_once() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let w = bed.ok(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "whatsapp", "value": "+5511987654321", "consent": "opted_in"}),
    );
    let cp: ContactPoint = serde_json::from_value(w.clone()).unwrap();
    assert!(reachable(&cp));
    assert!(w["opted_out_at"].is_null());
    bed.advance_days(1);
    let o = bed.ok(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&w), "consent": "opted_out", "opt_out_reason": "Respondeu SAIR"}),
    );
    assert_eq!(o["consent"], "opted_out");
    assert_eq!(o["opted_out_at"], "2026-12-02T09:00:00-03:00");
    assert_eq!(o["opt_out_reason"], "Respondeu SAIR");
    let cp: ContactPoint = serde_json::from_value(o.clone()).unwrap();
    assert!(!reachable(&cp), "an opted-out contact point is never used");
    assert_eq!(events(&bed, &ana, "contact_point.opted_out"), 1);
    // Repeating the opt-out changes nothing (idempotent update).
    let again = bed.ok(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&w), "consent": "opted_out"}),
    );
    assert_eq!(again["opted_out_at"], o["opted_out_at"]);
    assert_eq!(events(&bed, &ana, "contact_point.opted_out"), 1);
    // Opting in again clears the opt-out.
    let back = bed.ok(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&w), "consent": "opted_in"}),
    );
    assert!(back["opted_out_at"].is_null());
    assert!(back["opt_out_reason"].is_null());
    // A reason only goes with an opt-out.
    let e = bed.err(
        &ana,
        "dunning_contact_points_update",
        json!({"id": id, "cp_id": sid(&w), "opt_out_reason": "x"}),
    );
    assert_eq!(e.details[0].field, "opt_out_reason");
    // Created already opted out: stamped and evented too.
    let e2 = bed.ok(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "m@example.com", "consent": "opted_out"}),
    );
    assert!(e2["opted_out_at"].is_string());
    assert_eq!(events(&bed, &ana, "contact_point.opted_out"), 2);
}

#[test]
fn rule_whatsapp_needs_explicit_opt_in() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let w = add(&mut bed, &ana, &id, "whatsapp", "+5511987654321");
    let e = add(&mut bed, &ana, &id, "email", "m@example.com");
    let w: ContactPoint = serde_json::from_value(w).unwrap();
    let e: ContactPoint = serde_json::from_value(e).unwrap();
    assert!(!reachable(&w), "unknown consent is not enough for WhatsApp");
    assert!(reachable(&e), "e-mail with unknown consent may be used");
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let id = debtor(&mut bed, &ana);
    let cp = sid(&add(&mut bed, &ana, &id, "email", "m@example.com"));
    for (tool, args) in [
        ("dunning_contact_points_list", json!({"id": id})),
        (
            "dunning_contact_points_create",
            json!({"id": id, "channel": "email", "value": "x@example.com"}),
        ),
        (
            "dunning_contact_points_update",
            json!({"id": id, "cp_id": cp, "label": "x"}),
        ),
        (
            "dunning_contact_points_delete",
            json!({"id": id, "cp_id": cp}),
        ),
    ] {
        let e = bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    // Carla's own debtor with Ana's contact point id: not found either.
    let other = bed.ok(
        &carla,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "111.444.777-35", "name": "João Souza"}),
    );
    let e = bed.err(
        &carla,
        "dunning_contact_points_update",
        json!({"id": other["id"], "cp_id": cp, "label": "x"}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
    // Within one organization, a contact point belongs to its own debtor only.
    let second = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "111.444.777-35", "name": "João Souza"}),
    );
    let e = bed.err(
        &ana,
        "dunning_contact_points_delete",
        json!({"id": second["id"], "cp_id": cp}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn idempotency_key_and_confirmation_nonce() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let args =
        json!({"id": id, "channel": "email", "value": "m@example.com", "idempotency_key": "cp-1"});
    let a = bed.ok(&ana, "dunning_contact_points_create", args.clone());
    let b = bed.ok(&ana, "dunning_contact_points_create", args);
    assert_eq!(a, b, "replayed, not a duplicate CONFLICT");
    let e = bed.err(
        &ana,
        "dunning_contact_points_create",
        json!({"id": id, "channel": "email", "value": "z@example.com", "idempotency_key": "cp-1"}),
    );
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
    let del = json!({"id": id, "cp_id": sid(&a)});
    let first = bed
        .call_with(
            &ana,
            "dunning_contact_points_delete",
            del.clone(),
            Some("n-1"),
        )
        .unwrap();
    let replay = bed
        .call_with(&ana, "dunning_contact_points_delete", del, Some("n-1"))
        .unwrap();
    assert_eq!(first, replay, "a replayed confirmation does not run twice");
}

#[test]
fn delete_confirmation_names_the_contact_point_and_the_debtor() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = debtor(&mut bed, &ana);
    let cp = sid(&add(&mut bed, &ana, &id, "whatsapp", "+5511987654321"));
    let msg = preflight(
        &bed,
        &ana,
        "dunning_contact_points_delete",
        json!({"id": id, "cp_id": cp}),
    )
    .unwrap();
    assert!(msg.contains("whatsapp"), "{msg}");
    assert!(msg.contains("+5511987654321"), "{msg}");
    assert!(msg.contains("Maria Silva"), "{msg}");
    // The preflight changed nothing.
    let l = bed.ok(&ana, "dunning_contact_points_list", json!({"id": id}));
    assert_eq!(l["meta"]["total"], 1);
    let carla = bed.carla();
    let e = preflight(
        &bed,
        &carla,
        "dunning_contact_points_delete",
        json!({"id": id, "cp_id": cp}),
    )
    .unwrap_err();
    assert_eq!(e.code, ToolErrorCode::NotFound);
}

#[test]
fn annotations_follow_the_catalogue() {
    let bed = Bed::new();
    let tools = bed.domain.catalog().tools;
    let get = |n: &str| tools.iter().find(|t| t.name == n).unwrap().clone();
    let list = get("dunning_contact_points_list");
    assert!(list.annotations.read_only && list.annotations.idempotent);
    let create = get("dunning_contact_points_create");
    assert!(!create.annotations.idempotent && !create.annotations.destructive);
    let update = get("dunning_contact_points_update");
    assert!(update.annotations.idempotent && !update.annotations.destructive);
    let delete = get("dunning_contact_points_delete");
    assert!(delete.annotations.destructive && delete.annotations.idempotent);
    assert_eq!(
        delete.input_schema["properties"]["id"]["x-mcp-header"],
        "Target-Id"
    );
    assert_eq!(
        delete.route.as_ref().unwrap().path,
        "/v1/debtors/{id}/contact-points/{cp_id}"
    );
}
