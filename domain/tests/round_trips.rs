//! PostgreSQL round trips per tool call: a call is one transaction, and the
//! statements it runs do not grow with the page it answers or with the data around it
//! (no N+1). Counted by the store itself (`PostgresStore::round_trips`). Runs when
//! `DUNNING_TEST_PG` names a database (CI's PostgreSQL step); says so and passes
//! otherwise.

use std::sync::Arc;

use dunning_domain::store::Store as _;
use dunning_domain::store::postgres::PostgresStore;
use dunning_domain::testing::{Bed, pg_url, watched_epoch};
use serde_json::{Value, json};

/// A store of its own and a bed on it, with a debtor of `charges` charges.
fn bed_with(charges: usize) -> Option<(Arc<PostgresStore>, Bed, String)> {
    let Some(url) = pg_url() else {
        eprintln!("DUNNING_TEST_PG is not set: skipped (CI runs it on PostgreSQL)");
        return None;
    };
    let store = Arc::new(PostgresStore::scratch(&url).expect("a scratch schema"));
    let mut bed = Bed::on(store.clone());
    let ana = bed.ana();
    let debtor = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    )["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for i in 0..charges {
        bed.ok(
            &ana,
            "dunning_charges_create",
            json!({
                "debtor_id": debtor, "amount": 100 + i, "due_date": "2026-12-20",
                "payment_method": "boleto", "description": format!("Parcela {i}"),
            }),
        );
    }
    Some((store, bed, debtor))
}

/// Waits (at most 10 s, in counted sleeps) until `store` hears membership changes: from
/// then on read-only calls keep their organization's settings (`Domain::read_settings`),
/// so the statements measured are the steady ones, not the listener's start-up race.
fn settled(store: &PostgresStore) {
    watched_epoch(|| store.members_epoch());
}

/// `(transactions, statements, exchanges)` of one call.
fn cost(store: &PostgresStore, bed: &mut Bed, tool: &str, args: Value) -> (u64, u64, u64) {
    let ana = bed.ana();
    let ((t0, s0), x0) = (store.round_trips(), store.exchanges());
    bed.ok(&ana, tool, args);
    let ((t1, s1), x1) = (store.round_trips(), store.exchanges());
    (t1 - t0, s1 - s0, x1 - x0)
}

#[test]
fn a_list_is_one_transaction_whatever_its_page() {
    let Some((store, mut bed, debtor)) = bed_with(40) else {
        return;
    };
    let list = |per_page: u64| json!({ "debtor_id": debtor, "per_page": per_page });
    settled(&store);
    // Once each to prepare the statements on the connection; then measured.
    cost(&store, &mut bed, "dunning_charges_list", list(5));
    cost(&store, &mut bed, "dunning_charges_list", list(40));
    let small = cost(&store, &mut bed, "dunning_charges_list", list(5));
    let large = cost(&store, &mut bed, "dunning_charges_list", list(40));
    assert_eq!(small.0, 1, "one transaction: {small:?}");
    assert_eq!(large.0, 1, "one transaction: {large:?}");
    assert_eq!(small.1, large.1, "statements do not grow with the page");
    assert_eq!(
        small.2, 1,
        "the frame, the total, the page and its debtors' names together"
    );
    assert!(
        small.1 <= 6,
        "a page costs a handful of statements: {small:?}"
    );
}

#[test]
fn a_write_costs_the_same_however_much_data_surrounds_it() {
    let Some((store, mut bed, debtor)) = bed_with(3) else {
        return;
    };
    let create = |i: u64| {
        json!({
            "debtor_id": debtor, "amount": 50 + i, "due_date": "2026-12-21",
            "payment_method": "boleto", "description": format!("Extra {i}"),
        })
    };
    cost(&store, &mut bed, "dunning_charges_create", create(0));
    let first = cost(&store, &mut bed, "dunning_charges_create", create(1));
    for i in 2..30 {
        cost(&store, &mut bed, "dunning_charges_create", create(i));
    }
    let later = cost(&store, &mut bed, "dunning_charges_create", create(30));
    assert_eq!(first.0, 1, "one transaction: {first:?}");
    assert_eq!(
        later, first,
        "the same round trips with 4 or 33 charges on the debtor"
    );
}

/// A create's writes (the debtor, its event, the idempotency record) wait for nothing:
/// they travel together, with the commit, and the transaction's frame travels with its
/// first read. Exchanges are what a caller waits for, however many statements each
/// carries.
#[test]
fn a_creates_writes_travel_together() {
    let Some((store, mut bed, _)) = bed_with(0) else {
        return;
    };
    settled(&store);
    let create = |i: u8| {
        let cpf = dunning_domain::brazil::document::cpf_from_base(&[1, 2, 3, 4, 5, 6, 7, 8, i]);
        json!({"cnpj_cpf": cpf, "name": format!("D {i}")})
    };
    cost(&store, &mut bed, "dunning_debtors_create", create(1));
    let (transactions, statements, exchanges) =
        cost(&store, &mut bed, "dunning_debtors_create", create(2));
    assert_eq!(transactions, 1);
    // Three reads (the settings, with the frame; the document's duplicate; the last
    // event's number), then the debtor and its event with the commit: four exchanges
    // where one statement each, the frame and the commit apart, would be seven.
    assert_eq!(
        (statements, exchanges),
        (5, 4),
        "statements and exchanges of a create"
    );
}
