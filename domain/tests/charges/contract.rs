//! What every tool owes: confirmation messages, other organizations' ids, idempotency keys,
//! annotations and routes.

use super::*;

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
