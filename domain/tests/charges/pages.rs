//! A page's rows are kept and reused (`ops/charges/rows.rs`) only while what they are
//! written from is the same: each row follows its charge, its debtor's name and the day.

use super::*;

#[test]
fn rule_a_pages_rows_follow_their_charge_their_debtors_name_and_the_day() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let c = sid(&charge(&mut bed, &ana, &d, json!({})));
    let row = |bed: &mut Bed| bed.ok(&ana, "dunning_charges_list", json!({}))["data"][0].clone();

    let first = row(&mut bed);
    assert_eq!(row(&mut bed), first, "read again");
    let mut got = bed.ok(&ana, "dunning_charges_get", json!({"id": c}));
    got["debtor_name"] = json!("Maria Silva");
    assert_eq!(
        first, got,
        "a row is the charge as `get` reads it, with the name"
    );

    bed.ok(
        &ana,
        "dunning_charges_update",
        json!({"id": c, "description": "Mensalidade corrigida"}),
    );
    assert_eq!(row(&mut bed)["description"], "Mensalidade corrigida");

    bed.ok(
        &ana,
        "dunning_debtors_update",
        json!({"id": d, "name": "Maria Souza"}),
    );
    assert_eq!(row(&mut bed)["debtor_name"], "Maria Souza");

    // Past the due date (2026-12-10) the same stored charge grows by the day.
    bed.advance_days(14);
    let late = row(&mut bed);
    assert_eq!(late["amount_breakdown"]["as_of"], "2026-12-15");
    bed.advance_days(1);
    let later = row(&mut bed);
    assert_eq!(later["amount_breakdown"]["as_of"], "2026-12-16");
    assert_eq!(
        later["days_overdue"].as_i64().unwrap(),
        late["days_overdue"].as_i64().unwrap() + 1
    );
}
