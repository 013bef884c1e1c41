//! `serve --store postgres://...`: the product binary on the PostgreSQL
//! store, two processes started together on one new database seeding the demo data
//! once. Runs when `DUNNING_TEST_PG` names a database (CI's PostgreSQL step), on a fresh
//! schema of it dropped at the end; says so and passes otherwise.

mod common;

use std::thread;

use common::pg::{in_schema, pg_url};
use common::{Srv, V2026, scratch};
use dunning_domain::store::postgres::PostgresStore;
use dunning_domain::store::{self, Kind, Order, Query};
use serde_json::json;

#[test]
fn two_servers_on_one_new_postgres_database_answer_and_seed_once() {
    let Some(url) = pg_url() else { return };
    // A new, migrated, empty schema; dropped when `db` is.
    let db = PostgresStore::scratch(&url).unwrap();
    let store_url = in_schema(&url, db.scratch_schema().unwrap());
    let starts: Vec<_> = (0..2)
        .map(|i| {
            let store_url = store_url.clone();
            thread::spawn(move || {
                Srv::start_in(scratch(&format!("pg{i}")), &["--store", &store_url], None)
            })
        })
        .collect();
    let mut servers: Vec<Srv> = starts.into_iter().map(|s| s.join().unwrap()).collect();
    for s in &servers {
        assert!(
            !s.dir.join("dunning.sqlite3").exists(),
            "no SQLite database beside PostgreSQL"
        );
        let me = s.call(&s.token, V2026, "dunning_me", json!({}));
        assert_eq!(me.status, 200, "{}", me.text());
        assert!(me.json()["result"]["isError"].is_null(), "{}", me.text());
    }
    // A write through one server is read through the other: one store.
    let created = servers[0].call(
        &servers[0].token,
        V2026,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Postgres"}),
    );
    assert_eq!(created.status, 200, "{}", created.text());
    let id = created.structured()["id"].as_str().unwrap().to_owned();
    let got = servers[1].call(
        &servers[1].token,
        V2026,
        "dunning_debtors_get",
        json!({"id": id}),
    );
    assert_eq!(got.structured()["name"], "Maria Postgres", "{}", got.text());

    // `token --store` mints from the same database: a member found there.
    let minted = servers[1].mint(&[
        "--org",
        "demo",
        "--person",
        "ana@demo.example",
        "--store",
        &store_url,
    ]);
    let me = servers[1].call(&minted, V2026, "dunning_me", json!({}));
    assert_eq!(me.status, 200, "{}", me.text());
    assert!(me.json()["result"]["isError"].is_null(), "{}", me.text());

    // Seeded once. The demo data's ids are stable, so a second seed would not add
    // documents: it would replace them, and every replaced event would take a new
    // `sequence` (max + 1). Seeded once, the sequences are exactly 1..=count (the
    // workers' later events included).
    for slug in ["demo", "acme"] {
        let org = dunning_domain::demo::stable_id(&format!("org:{slug}"));
        let (count, max) = store::read(&db, |tx| {
            let q = Query {
                sort: ("sequence", Order::Desc),
                limit: Some(1),
                ..Query::all()
            };
            let last = tx.find(Kind::Event, &org, &q)?;
            Ok((
                tx.count(Kind::Event, &org, &[])?,
                last[0]["sequence"].as_u64().unwrap_or_default(),
            ))
        })
        .unwrap();
        assert!(
            count > 50,
            "{slug}: the demo data is there ({count} events)"
        );
        assert_eq!(max, count, "{slug}: the demo data was seeded once");
    }
    for s in &mut servers {
        assert!(s.terminate().success());
    }
}

/// The embedded authorization server's records live in the store: behind one
/// public URL, two replicas sharing their keys and one PostgreSQL database serve one
/// sign-in together. A client registered on one is known to the other; a code issued
/// by one is redeemed on the other, once; a refresh token rotated on one and reused on
/// the other revokes the family for both.
#[test]
fn oauth_grants_are_shared_by_replicas_on_one_database() {
    use common::oauth::{Client, REDIRECT, assert_oauth_error};
    let Some(url) = pg_url() else { return };
    let db = PostgresStore::scratch(&url).unwrap();
    let store_url = in_schema(&url, db.scratch_schema().unwrap());
    let public = "http://127.0.0.1:1";
    let args = ["--store", store_url.as_str(), "--public-url", public];
    let a = Srv::start_in(scratch("pg-oauth-a"), &args, None);
    // Replicas share their keys (the development key signs, the state key seals forms).
    let b_dir = scratch("pg-oauth-b");
    for f in ["dev-signing.key", "request-state.key"] {
        std::fs::copy(a.dir.join(f), b_dir.join(f)).unwrap();
    }
    let b = Srv::start_in(b_dir, &args, None);

    let mut on_a = Client::register(&a, &[REDIRECT]);
    on_a.base = public.into();
    let on_b = Client {
        srv: &b,
        id: on_a.id.clone(),
        base: public.into(),
    };
    let code = on_a.code("ana@demo.example");
    let t = on_b.redeem(&code);
    assert_eq!(t.status, 200, "{}", t.text());
    assert_oauth_error(&on_a.redeem(&code), 400, "invalid_grant");
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    for s in [&a, &b] {
        let me = s.call(&access, V2026, "dunning_me", json!({}));
        assert_eq!(me.status, 200, "{}", me.text());
    }
    // The code's reuse revoked its family; a new sign-in, on B this time.
    let code = on_b.code("ana@demo.example");
    let first = on_b.redeem(&code).json()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = on_a.refresh(&first);
    assert_eq!(r.status, 200, "{}", r.text());
    let second = r.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_oauth_error(&on_b.refresh(&first), 400, "invalid_grant");
    assert_oauth_error(&on_a.refresh(&second), 400, "invalid_grant");
}
