//! Debtors: happy paths, validation, transitions, isolation, idempotency.

use dunning_core::ToolErrorCode;
use dunning_domain::testing::Bed;
use serde_json::json;

fn maria() -> serde_json::Value {
    json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva", "tags": ["vip"],
           "address": {"city": "São Paulo", "state": "SP", "zipcode": "01001000"}})
}

#[test]
fn create_get_list_update() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = bed.ok(&ana, "dunning_debtors_create", maria());
    assert_eq!(d["person_type"], "natural");
    assert_eq!(d["cnpj_cpf"], "52998224725");
    assert_eq!(d["status"], "active");
    let id = d["id"].as_str().unwrap().to_owned();
    assert_eq!(
        bed.ok(&ana, "dunning_debtors_get", json!({"id": id}))["name"],
        "Maria Silva"
    );
    let list = bed.ok(&ana, "dunning_debtors_list", json!({"q": "maria"}));
    assert_eq!(list["meta"]["total"], 1);
    assert_eq!(list["meta"]["total_pages"], 1);
    let tagged = bed.ok(&ana, "dunning_debtors_list", json!({"tag": "vip"}));
    assert_eq!(tagged["meta"]["total"], 1);
    let by_doc = bed.ok(
        &ana,
        "dunning_debtors_list",
        json!({"cnpj_cpf": "529.982.247-25"}),
    );
    assert_eq!(by_doc["data"][0]["id"], id.as_str());
    let u = bed.ok(
        &ana,
        "dunning_debtors_update",
        json!({"id": id, "nickname": "Mari"}),
    );
    assert_eq!(u["nickname"], "Mari");
    assert_eq!(
        u["address"]["city"], "São Paulo",
        "fields not sent are kept"
    );
    let events = bed.domain.store();
    let n = dunning_domain::store::read(events, |tx| {
        Ok(tx.count(dunning_domain::store::Kind::Event, &ana.organization, &[])?)
    })
    .unwrap();
    assert_eq!(n, 2, "every change writes an event");
}

#[test]
fn document_validation_and_uniqueness() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let e = bed.err(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-24", "name": "X"}),
    );
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "cnpj_cpf");
    bed.ok(&ana, "dunning_debtors_create", maria());
    let e = bed.err(&ana, "dunning_debtors_create", maria());
    assert_eq!(e.code, ToolErrorCode::Conflict);
    let d = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "11.222.333/0001-81", "name": "ACME"}),
    );
    assert_eq!(d["person_type"], "juridical");
}

#[test]
fn unknown_fields_are_refused_by_the_endpoint() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let mut args = maria();
    args["colour"] = json!("blue");
    let e = bed.err(&ana, "dunning_debtors_create", args);
    assert_eq!(e.code, ToolErrorCode::Validation);
    assert_eq!(e.details[0].field, "colour");
    assert_eq!(e.details[0].issue, "unknown field");
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let id = bed.ok(&ana, "dunning_debtors_create", maria())["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for tool in [
        "dunning_debtors_get",
        "dunning_debtors_update",
        "dunning_debtors_archive",
    ] {
        let e = bed.err(&carla, tool, json!({"id": id}));
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    assert_eq!(
        bed.ok(&carla, "dunning_debtors_list", json!({}))["meta"]["total"],
        0
    );
}

#[test]
fn archive_is_idempotent_and_blocks_updates() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = bed.ok(&ana, "dunning_debtors_create", maria())["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let a = bed.ok(
        &ana,
        "dunning_debtors_archive",
        json!({"id": id, "reason": "moved away"}),
    );
    assert_eq!(a["status"], "archived");
    let again = bed.ok(&ana, "dunning_debtors_archive", json!({"id": id}));
    assert_eq!(again["archived_at"], a["archived_at"]);
    let e = bed.err(
        &ana,
        "dunning_debtors_update",
        json!({"id": id, "name": "Y"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("archived"));
}

#[test]
fn idempotency_key_replays_and_conflicts() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let mut args = maria();
    args["idempotency_key"] = json!("k-1");
    let first = bed.ok(&ana, "dunning_debtors_create", args.clone());
    let replay = bed.ok(&ana, "dunning_debtors_create", args.clone());
    assert_eq!(
        first, replay,
        "the stored result is replayed, nothing created twice"
    );
    assert_eq!(
        bed.ok(&ana, "dunning_debtors_list", json!({}))["meta"]["total"],
        1
    );
    args["name"] = json!("Other Name");
    let e = bed.err(&ana, "dunning_debtors_create", args);
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn confirmation_nonce_is_an_idempotency_key() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let id = bed.ok(&ana, "dunning_debtors_create", maria())["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let args = json!({"id": id});
    let a = bed
        .call_with(&ana, "dunning_debtors_archive", args.clone(), Some("n1"))
        .unwrap();
    bed.advance_days(1);
    let b = bed
        .call_with(&ana, "dunning_debtors_archive", args, Some("n1"))
        .unwrap();
    assert_eq!(
        a.tool_value(),
        b.tool_value(),
        "replayed, not executed again"
    );
}

#[test]
fn demo_seed_is_deterministic() {
    let a = Bed::demo();
    let b = Bed::demo();
    let mut a = a;
    let mut b = b;
    let (pa, pb) = (a.ana(), b.ana());
    let la = a.ok(&pa, "dunning_debtors_list", json!({"per_page": 100}));
    let lb = b.ok(&pb, "dunning_debtors_list", json!({"per_page": 100}));
    assert_eq!(la, lb);
    assert!(la["meta"]["total"].as_u64().unwrap() >= 40);
}
