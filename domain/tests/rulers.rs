//! Rulers and steps: happy paths, validation naming the field, the ruler
//! machine, the default ruler, steps ordering, preview, isolation and idempotency.

use dunning_core::{Principal, ToolError, ToolErrorCode};
use dunning_domain::brazil::money::Money;
use dunning_domain::testing::{Bed, id, preflight};
use serde_json::{Value, json};

fn b2c() -> Value {
    json!({
        "name": "B2C",
        "description": "default consumer ruler",
        "filters": {"person_type": "natural"},
        "steps": [
            {"offset_days": -5, "channel": "email",
             "template": {"subject": "Vence em {{charge.due_date}}", "body": "Olá {{debtor.name}}, {{charge.amount}} vence em {{charge.due_date}}."}},
            {"offset_days": 0, "channel": "sms", "template": {"body": "{{debtor.name}}: {{charge.pix.emv}}"}},
            {"offset_days": 3, "channel": "whatsapp", "send_at": "10:30",
             "template": {"body": "{{debtor.name}}, em aberto: {{charge.updated_amount}}"}},
            {"offset_days": 20, "channel": "task", "action": "negativate",
             "conditions": {"min_amount": 100.0}}
        ]
    })
}

fn create(bed: &mut Bed, who: &Principal, args: Value) -> Value {
    bed.ok(who, "dunning_rulers_create", args)
}

#[test]
fn create_get_list_update() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let r = create(&mut bed, &ana, b2c());
    assert_eq!(r["status"], "draft");
    assert_eq!(r["is_default"], false);
    assert_eq!(r["stop_on_payment"], true);
    assert_eq!(r["steps_count"], 4);
    assert_eq!(r["send_window"]["start"], "08:00");
    assert_eq!(r["send_window"]["end"], "20:00");
    assert_eq!(r["send_window"]["saturday_end"], "14:00");
    assert_eq!(
        r["send_window"]["weekdays"],
        json!(["mon", "tue", "wed", "thu", "fri", "sat"])
    );
    let steps = r["steps"].as_array().unwrap();
    let positions: Vec<i64> = steps
        .iter()
        .map(|s| s["position"].as_i64().unwrap())
        .collect();
    assert_eq!(positions, vec![1, 2, 3, 4]);
    assert_eq!(steps[0]["send_at"], "09:00", "default send_at");
    assert_eq!(steps[0]["action"], "notify", "default action");
    assert_eq!(steps[2]["send_at"], "10:30");
    let rid = id(&r);
    let got = bed.ok(&ana, "dunning_rulers_get", json!({"id": rid}));
    assert_eq!(got, r);
    let list = bed.ok(&ana, "dunning_rulers_list", json!({}));
    assert_eq!(list["meta"]["total"], 1);
    assert_eq!(list["data"][0]["steps_count"], 4);
    assert!(list["data"][0].get("steps").is_none());
    let u = bed.ok(
        &ana,
        "dunning_rulers_update",
        json!({"id": rid, "name": "B2C v2", "send_window": {"end": "18:00"}}),
    );
    assert_eq!(u["name"], "B2C v2");
    assert_eq!(u["send_window"]["end"], "18:00");
    assert_eq!(
        u["send_window"]["start"], "08:00",
        "fields not sent are kept"
    );
    assert_eq!(u["steps_count"], 4);
    // Repeating an update changes nothing (idempotent).
    let again = bed.ok(
        &ana,
        "dunning_rulers_update",
        json!({"id": rid, "name": "B2C v2"}),
    );
    assert_eq!(again["updated_at"], u["updated_at"]);
    let events = bed.ok(
        &ana,
        "dunning_events_list",
        json!({"code": "ruler.*", "per_page": 100}),
    );
    let codes: Vec<&str> = events["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes.len(), 2);
    assert!(codes.contains(&"ruler.created") && codes.contains(&"ruler.updated"));
    let step_events = bed.ok(&ana, "dunning_events_list", json!({"code": "step.created"}));
    assert_eq!(step_events["meta"]["total"], 4);
    let drafts = bed.ok(&ana, "dunning_rulers_list", json!({"status": "active"}));
    assert_eq!(drafts["meta"]["total"], 0);
}

fn field_error(bed: &mut Bed, who: &Principal, tool: &str, args: Value) -> ToolError {
    let e = bed.err(who, tool, args);
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    e
}

fn fields(e: &ToolError) -> Vec<String> {
    e.details.iter().map(|d| d.field.clone()).collect()
}

#[test]
fn validation_names_every_offending_field() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_rulers_create",
        json!({"name": "x", "steps": [
            {"offset_days": 400, "channel": "email", "template": {"subject": "s", "body": "b"}},
            {"offset_days": 1, "channel": "fax", "template": {"body": "b"}},
            {"offset_days": 1, "channel": "sms", "template": {"body": "Olá {{debtor.cpf}} {{ charge.amount }} {{foo}}"}},
            {"offset_days": 1, "channel": "email", "action": "negativate"},
            {"offset_days": 1, "channel": "email", "template": {"body": "sem assunto"}},
            {"channel": "sms", "colour": "red", "send_at": "25:00", "template": {"body": "b"}},
            {"offset_days": 1, "channel": "sms", "template": {"body": "b"},
             "conditions": {"charge_status": ["paid"], "min_amount": 1.234}}
        ]}),
    );
    let f = fields(&e);
    for expected in [
        "steps[0].offset_days",
        "steps[1].channel",
        "steps[2].template.body",
        "steps[3].channel",
        "steps[4].template.subject",
        "steps[5].offset_days",
        "steps[5].colour",
        "steps[5].send_at",
        "steps[6].conditions.charge_status",
        "steps[6].conditions.min_amount",
    ] {
        assert!(f.contains(&expected.to_owned()), "{expected} in {f:?}");
    }
    let vars = e
        .details
        .iter()
        .find(|d| d.field == "steps[2].template.body")
        .unwrap();
    assert!(
        vars.issue.contains("{{debtor.cpf}}") && vars.issue.contains("{{foo}}"),
        "{}",
        vars.issue
    );
    assert!(
        !vars.issue.contains("{{charge.amount}}, "),
        "known variables are not named as unknown"
    );
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_rulers_create",
        json!({"name": "x", "send_window": {"weekdays": ["sun", "mon"], "start": "20:00", "end": "08:00"},
               "filters": {"person_type": "company", "min_amount": 50.0, "max_amount": 10.0}}),
    );
    let f = fields(&e);
    for expected in [
        "send_window.weekdays",
        "send_window.end",
        "filters.person_type",
        "filters.max_amount",
    ] {
        assert!(f.contains(&expected.to_owned()), "{expected} in {f:?}");
    }
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_rulers_create",
        json!({"name": "x", "template": {}}),
    );
    assert_eq!(fields(&e), vec!["template"]);
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_rulers_create",
        json!({"name": "x", "steps": [{"offset_days": 1, "channel": "sms", "template": {"body": "{{debtor.name"}}]}),
    );
    assert!(e.details[0].issue.contains("unclosed"));
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_list", json!({}))["meta"]["total"],
        0,
        "nothing created by refused calls"
    );
}

#[test]
fn ruler_machine_transitions() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let empty = id(&create(&mut bed, &ana, json!({"name": "empty"})));
    let e = bed.err(&ana, "dunning_rulers_activate", json!({"id": empty}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("no active steps"), "{}", e.message);
    let e = bed.err(&ana, "dunning_rulers_pause", json!({"id": empty}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(
        e.message.contains("draft") && e.message.contains("paused"),
        "{}",
        e.message
    );
    let rid = id(&create(&mut bed, &ana, b2c()));
    let a = bed.ok(&ana, "dunning_rulers_activate", json!({"id": rid}));
    assert_eq!(a["status"], "active");
    let again = bed.ok(&ana, "dunning_rulers_activate", json!({"id": rid}));
    assert_eq!(again["activated_at"], a["activated_at"], "idempotent");
    let p = bed.ok(
        &ana,
        "dunning_rulers_pause",
        json!({"id": rid, "reason": "review templates"}),
    );
    assert_eq!(p["status"], "paused");
    assert_eq!(p["pause_reason"], "review templates");
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_pause", json!({"id": rid}))["status"],
        "paused"
    );
    let a = bed.ok(&ana, "dunning_rulers_activate", json!({"id": rid}));
    assert_eq!(a["status"], "active");
    assert!(a["pause_reason"].is_null());
    let ar = bed.ok(&ana, "dunning_rulers_archive", json!({"id": rid}));
    assert_eq!(ar["status"], "archived");
    let again = bed.ok(&ana, "dunning_rulers_archive", json!({"id": rid}));
    assert_eq!(again["archived_at"], ar["archived_at"], "idempotent");
    for (tool, to) in [
        ("dunning_rulers_activate", "active"),
        ("dunning_rulers_pause", "paused"),
    ] {
        let e = bed.err(&ana, tool, json!({"id": rid}));
        assert_eq!(e.code, ToolErrorCode::Conflict);
        assert!(
            e.message.contains("archived") && e.message.contains(to),
            "{}",
            e.message
        );
    }
    let e = bed.err(
        &ana,
        "dunning_rulers_update",
        json!({"id": rid, "name": "y"}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("archived"));
    let e = bed.err(
        &ana,
        "dunning_steps_create",
        json!({"id": rid, "offset_days": 1, "channel": "sms", "template": {"body": "b"}}),
    );
    assert_eq!(e.code, ToolErrorCode::Conflict);
    // A draft can be archived directly.
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_archive", json!({"id": empty}))["status"],
        "archived"
    );
    let codes = bed.ok(
        &ana,
        "dunning_events_list",
        json!({"resource_id": rid, "per_page": 100}),
    );
    let codes: Vec<&str> = codes["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap())
        .collect();
    for c in [
        "ruler.created",
        "ruler.activated",
        "ruler.paused",
        "ruler.archived",
    ] {
        assert!(codes.contains(&c), "{c} in {codes:?}");
    }
}

#[test]
fn rule_default_ruler_cannot_be_archived() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let mut args = b2c();
    args["is_default"] = json!(true);
    let first = id(&create(&mut bed, &ana, args.clone()));
    let e = bed.err(&ana, "dunning_rulers_archive", json!({"id": first}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    assert!(e.message.contains("default"), "{}", e.message);
    let e = preflight(&bed, &ana, "dunning_rulers_archive", json!({"id": first})).unwrap_err();
    assert_eq!(
        e.code,
        ToolErrorCode::Conflict,
        "refused before the user is asked"
    );
    // Making another ruler the default moves the flag (one default per organization).
    args["name"] = json!("B2C 2");
    let second = id(&create(&mut bed, &ana, args));
    let list = bed.ok(&ana, "dunning_rulers_list", json!({"sort_by": "name"}));
    let defaults: Vec<&str> = list["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["is_default"] == true)
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(defaults, vec![second.as_str()]);
    let archived = bed.ok(&ana, "dunning_rulers_archive", json!({"id": first}));
    assert_eq!(archived["status"], "archived");
    let e = bed.err(&ana, "dunning_rulers_archive", json!({"id": second}));
    assert_eq!(e.code, ToolErrorCode::Conflict);
    bed.ok(
        &ana,
        "dunning_rulers_update",
        json!({"id": second, "is_default": false}),
    );
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_archive", json!({"id": second}))["status"],
        "archived"
    );
}

#[test]
fn archive_confirmation_names_the_ruler() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let rid = id(&create(&mut bed, &ana, b2c()));
    let msg = preflight(&bed, &ana, "dunning_rulers_archive", json!({"id": rid})).unwrap();
    assert!(
        msg.contains("\"B2C\"") && msg.contains("4 steps") && msg.contains("draft"),
        "{msg}"
    );
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_get", json!({"id": rid}))["status"],
        "draft",
        "the preflight changed nothing"
    );
    let step = bed.ok(&ana, "dunning_rulers_get", json!({"id": rid}))["steps"][1]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let msg = preflight(
        &bed,
        &ana,
        "dunning_steps_delete",
        json!({"id": rid, "step_id": step}),
    )
    .unwrap();
    assert!(
        msg.contains("step 2") && msg.contains("notify sms on the due date"),
        "{msg}"
    );
}

#[test]
fn steps_create_update_delete_and_order() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let r = create(&mut bed, &ana, b2c());
    let rid = id(&r);
    let ids: Vec<String> = r["steps"].as_array().unwrap().iter().map(id).collect();
    let s = bed.ok(
        &ana,
        "dunning_steps_create",
        json!({"id": rid, "position": 2, "offset_days": -1, "channel": "email",
               "template": {"subject": "Amanhã", "body": "{{debtor.name}}, vence amanhã"}}),
    );
    assert_eq!(s["position"], 2);
    assert_eq!(s["ruler_id"], rid.as_str());
    let order = |bed: &mut Bed| -> Vec<String> {
        bed.ok(&ana, "dunning_rulers_get", json!({"id": rid}))["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(id)
            .collect()
    };
    let new = id(&s);
    assert_eq!(
        order(&mut bed),
        vec![
            ids[0].clone(),
            new.clone(),
            ids[1].clone(),
            ids[2].clone(),
            ids[3].clone()
        ]
    );
    let u = bed.ok(
        &ana,
        "dunning_steps_update",
        json!({"id": rid, "step_id": new, "position": 5, "send_at": "11:00", "active": false}),
    );
    assert_eq!(u["position"], 5);
    assert_eq!(u["send_at"], "11:00");
    assert_eq!(u["active"], false);
    assert_eq!(u["offset_days"], -1, "fields not sent are kept");
    assert_eq!(order(&mut bed)[4], new);
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_steps_update",
        json!({"id": rid, "step_id": new, "template": {"body": "{{charge.total}}"}}),
    );
    assert_eq!(fields(&e), vec!["template.body"]);
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_steps_update",
        json!({"id": rid, "step_id": new, "offset_days": -31}),
    );
    assert_eq!(fields(&e), vec!["offset_days"]);
    let e = field_error(
        &mut bed,
        &ana,
        "dunning_steps_create",
        json!({"id": rid, "offset_days": 5, "channel": "email", "template": {"body": "no subject"}}),
    );
    assert_eq!(fields(&e), vec!["template.subject"]);
    let out = bed.ok(
        &ana,
        "dunning_steps_delete",
        json!({"id": rid, "step_id": ids[0]}),
    );
    assert_eq!(out, json!({"status": 204}));
    let after = bed.ok(&ana, "dunning_rulers_get", json!({"id": rid}));
    let positions: Vec<i64> = after["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["position"].as_i64().unwrap())
        .collect();
    assert_eq!(positions, vec![1, 2, 3, 4], "renumbered");
    let e = bed.err(
        &ana,
        "dunning_steps_delete",
        json!({"id": rid, "step_id": ids[0]}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
    // A step of another ruler is not found under this one.
    let other = id(&create(&mut bed, &ana, b2c()));
    let e = bed.err(
        &ana,
        "dunning_steps_update",
        json!({"id": other, "step_id": ids[1], "send_at": "10:00"}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound);
    let e = bed.err(
        &ana,
        "dunning_rulers_update",
        json!({"id": rid, "steps": []}),
    );
    assert_eq!(fields(&e), vec!["steps"]);
}

#[test]
fn other_organizations_ids_are_not_found() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let carla = bed.carla();
    let r = create(&mut bed, &ana, b2c());
    let rid = id(&r);
    let step = r["steps"][0]["id"].as_str().unwrap().to_owned();
    for (tool, args) in [
        ("dunning_rulers_get", json!({"id": rid})),
        ("dunning_rulers_update", json!({"id": rid, "name": "mine"})),
        ("dunning_rulers_activate", json!({"id": rid})),
        ("dunning_rulers_pause", json!({"id": rid})),
        ("dunning_rulers_archive", json!({"id": rid})),
        (
            "dunning_rulers_preview",
            json!({"id": rid, "due_date": "2026-12-10", "amount": 10.0}),
        ),
        (
            "dunning_steps_create",
            json!({"id": rid, "offset_days": 1, "channel": "sms", "template": {"body": "b"}}),
        ),
        (
            "dunning_steps_update",
            json!({"id": rid, "step_id": step, "send_at": "10:00"}),
        ),
        ("dunning_steps_delete", json!({"id": rid, "step_id": step})),
    ] {
        let e = bed.err(&carla, tool, args);
        assert_eq!(e.code, ToolErrorCode::NotFound, "{tool}");
    }
    assert_eq!(
        bed.ok(&carla, "dunning_rulers_list", json!({}))["meta"]["total"],
        0
    );
    assert_eq!(
        bed.ok(&carla, "dunning_events_list", json!({"resource_id": rid}))["meta"]["total"],
        0
    );
}

#[test]
fn idempotency_key_replays_a_create() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let mut args = b2c();
    args["idempotency_key"] = json!("r-1");
    let a = create(&mut bed, &ana, args.clone());
    let b = create(&mut bed, &ana, args.clone());
    assert_eq!(a, b);
    assert_eq!(
        bed.ok(&ana, "dunning_rulers_list", json!({}))["meta"]["total"],
        1
    );
    args["name"] = json!("other");
    let e = bed.err(&ana, "dunning_rulers_create", args);
    assert_eq!(e.code, ToolErrorCode::IdempotencyConflict);
}

#[test]
fn preview_of_a_hypothetical_charge() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let rid = id(&create(
        &mut bed,
        &ana,
        json!({"name": "preview", "steps": [
            {"offset_days": -5, "channel": "email", "template": {"subject": "Vence {{charge.due_date}}", "body": "{{debtor.name}}: {{charge.amount}}"}},
            {"offset_days": 0, "channel": "sms", "send_at": "19:30", "template": {"body": "hoje"}},
            {"offset_days": 3, "channel": "sms", "template": {"body": "calendar"}},
            {"offset_days": 3, "channel": "sms", "business_days_only": true, "template": {"body": "business"}},
            {"offset_days": 20, "channel": "task", "action": "protest", "conditions": {"min_amount": 500.0}}
        ]}),
    ));
    // Due Tuesday 2026-12-22.
    let p = bed.ok(
        &ana,
        "dunning_rulers_preview",
        json!({"id": rid, "due_date": "2026-12-22", "amount": 120.5}),
    );
    assert_eq!(p["due_date"], "2026-12-22");
    assert_eq!(p["effective_due_date"], "2026-12-22");
    let sched = p["schedule"].as_array().unwrap();
    let at: Vec<&str> = sched
        .iter()
        .map(|s| s["scheduled_at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        vec![
            "2026-12-17T09:00:00-03:00",
            "2026-12-22T19:30:00-03:00",
            // 2026-12-25 is Christmas: the next sending time is Saturday morning.
            "2026-12-26T09:00:00-03:00",
            // Business days: 23, 24, (25 holiday, weekend) 28.
            "2026-12-28T09:00:00-03:00",
            // 2027-01-11 is a Monday.
            "2027-01-11T09:00:00-03:00",
        ]
    );
    assert_eq!(sched[2]["planned_date"], "2026-12-25");
    assert_eq!(sched[2]["moved"], true);
    assert!(
        sched[2]["moved_reason"]
            .as_str()
            .unwrap()
            .contains("holiday")
    );
    assert_eq!(sched[0]["moved"], false);
    assert_eq!(sched[4]["applies"], false);
    assert!(
        sched[4]["skipped_reason"]
            .as_str()
            .unwrap()
            .contains("min_amount")
    );
    assert_eq!(sched[0]["subject"], "Vence 22/12/2026");
    let body = sched[0]["body"].as_str().unwrap();
    assert!(
        body.starts_with("Maria da Silva (exemplo): R$ 120,50"),
        "{body}"
    );
    assert!(
        body.contains("Demo Cobranças Ltda") && body.contains("CNPJ 11.222.333/0001-81"),
        "{body}"
    );
    for (args, field) in [
        (json!({"id": rid}), "charge_id"),
        (json!({"id": rid, "due_date": "2026-12-22"}), "amount"),
        (json!({"id": rid, "amount": 10.0}), "due_date"),
        (
            json!({"id": rid, "due_date": "2026-12-22", "amount": 1.0, "charge_id": rid}),
            "charge_id",
        ),
        (
            json!({"id": rid, "due_date": "22/12/2026", "amount": 1.0}),
            "due_date",
        ),
    ] {
        let e = field_error(&mut bed, &ana, "dunning_rulers_preview", args);
        assert_eq!(fields(&e), vec![field]);
    }
}

#[test]
fn preview_of_a_real_charge() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let rid = id(&create(&mut bed, &ana, b2c()));
    let d = id(&bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "João Souza"}),
    ));
    // Saturday due date: payable until Monday, so "+3" counts from Monday 2026-12-14.
    let c = id(&bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 80.0, "due_date": "2026-12-12", "payment_method": "pix"}),
    ));
    let p = bed.ok(
        &ana,
        "dunning_rulers_preview",
        json!({"id": rid, "charge_id": c}),
    );
    assert_eq!(p["effective_due_date"], "2026-12-14");
    assert!(p["stopped"].is_null());
    let sched = p["schedule"].as_array().unwrap();
    assert_eq!(sched[2]["planned_date"], "2026-12-17");
    assert_eq!(sched[2]["scheduled_at"], "2026-12-17T10:30:00-03:00");
    assert!(
        sched[0]["body"]
            .as_str()
            .unwrap()
            .starts_with("Olá João Souza, R$ 80,00 vence em 12/12/2026.")
    );
    assert_eq!(sched[3]["applies"], false, "80.00 is below min_amount 100");
    bed.ok(&ana, "dunning_charges_mark_paid", json!({"id": c}));
    let p = bed.ok(
        &ana,
        "dunning_rulers_preview",
        json!({"id": rid, "charge_id": c}),
    );
    assert!(p["stopped"].as_str().unwrap().contains("paid"));
    let carla = bed.carla();
    let acme_ruler = id(&create(&mut bed, &carla, b2c()));
    let e = bed.err(
        &carla,
        "dunning_rulers_preview",
        json!({"id": acme_ruler, "charge_id": c}),
    );
    assert_eq!(e.code, ToolErrorCode::NotFound, "another org's charge");
}

#[test]
fn segment_rulers_and_the_default_are_resolved() {
    use dunning_domain::ops::rulers::{Filters, resolve_among};
    let b2b = Filters {
        person_type: Some("juridical".into()),
        ..Filters::default()
    };
    let company = json!({"person_type": "juridical", "tags": []});
    let person = json!({"person_type": "natural", "tags": ["vip"]});
    let charge = json!({"amount": 50.0, "tags": []});
    assert!(b2b.matches(&charge, &company));
    assert!(!b2b.matches(&charge, &person));
    let vip = Filters {
        tags: vec!["vip".into()],
        min_amount: Some(Money::from_cents(1_000)),
        ..Filters::default()
    };
    assert!(vip.matches(&charge, &person));
    assert!(!vip.matches(&json!({"amount": 5.0}), &person));
    // End to end through the store.
    let mut bed = Bed::new();
    let ana = bed.ana();
    let mut d = b2c();
    d["is_default"] = json!(true);
    d["filters"] = json!({});
    let default = id(&create(&mut bed, &ana, d));
    let mut s = b2c();
    s["name"] = json!("B2B");
    s["filters"] = json!({"person_type": "juridical"});
    let seg = id(&create(&mut bed, &ana, s));
    bed.ok(&ana, "dunning_rulers_activate", json!({"id": default}));
    let rulers: Vec<dunning_domain::ops::rulers::Ruler> = bed.ok(
        &ana,
        "dunning_rulers_list",
        json!({"sort_by": "created_at", "sort_order": "asc"}),
    )["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect();
    let pick = |c: &Value, d: &Value| resolve_among(&rulers, c, d).map(|r| r.id.clone());
    assert_eq!(
        pick(&charge, &company),
        Some(default.clone()),
        "a draft segment ruler does not capture"
    );
    bed.ok(&ana, "dunning_rulers_activate", json!({"id": seg}));
    let rulers: Vec<dunning_domain::ops::rulers::Ruler> = bed.ok(
        &ana,
        "dunning_rulers_list",
        json!({"sort_by": "created_at", "sort_order": "asc"}),
    )["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| serde_json::from_value(v.clone()).unwrap())
        .collect();
    let pick = |c: &Value, d: &Value| resolve_among(&rulers, c, d).map(|r| r.id.clone());
    assert_eq!(pick(&charge, &company), Some(seg.clone()));
    assert_eq!(pick(&charge, &person), Some(default.clone()));
    let explicit = json!({"amount": 50.0, "ruler_id": default});
    assert_eq!(
        pick(&explicit, &company),
        Some(default.clone()),
        "explicit wins"
    );
}

#[test]
fn window_arithmetic() {
    use chrono::{NaiveDate, NaiveTime};
    use dunning_domain::ops::rulers::{SendWindow, shift_business_days};
    let w = SendWindow::default().window();
    let d = |y, m, day| NaiveDate::from_ymd_opt(y, m, day).unwrap();
    let t = |h, m| NaiveTime::from_hms_opt(h, m, 0).unwrap();
    // Saturday 2026-12-05: 08:00–14:00.
    assert!(w.allows(d(2026, 12, 5).and_time(t(13, 59))));
    assert!(!w.allows(d(2026, 12, 5).and_time(t(14, 0))));
    assert!(!w.allows(d(2026, 12, 6).and_time(t(10, 0))), "Sunday");
    assert!(!w.allows(d(2026, 11, 20).and_time(t(10, 0))), "holiday");
    assert!(!w.allows(d(2026, 12, 7).and_time(t(7, 59))));
    assert!(
        !w.allows(d(2026, 12, 7).and_time(t(20, 0))),
        "end is exclusive"
    );
    assert_eq!(
        w.next_open(d(2026, 12, 5).and_time(t(15, 0))),
        Some(d(2026, 12, 7).and_time(t(8, 0)))
    );
    assert_eq!(
        w.fit(d(2026, 12, 5), t(16, 0)),
        Some(d(2026, 12, 7).and_time(t(16, 0))),
        "a Saturday afternoon step keeps its time on Monday"
    );
    assert_eq!(
        w.fit(d(2026, 12, 7), t(6, 0)),
        Some(d(2026, 12, 7).and_time(t(8, 0)))
    );
    assert_eq!(shift_business_days(d(2026, 12, 28), -3), d(2026, 12, 22));
    assert_eq!(shift_business_days(d(2026, 12, 26), 0), d(2026, 12, 28));
    let desc = SendWindow::default().describe();
    assert_eq!(
        desc,
        "Mon–Fri 08:00–20:00, Sat 08:00–14:00, no Sundays or holidays"
    );
}
