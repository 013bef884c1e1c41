//! How the store's statements are planned on PostgreSQL: prepared again as the tables
//! grow, with their generic plans, and a page's documents found by primary key.

use super::*;

/// A connection prepares its statements again every [`REPLAN_AFTER`] executions, so a
/// generic plan made on a nearly empty table does not outlive the table's growth.
#[test]
fn statements_are_prepared_again_after_replan_after_executions() {
    let Some(url) = url() else { return };
    let (_first, store) = one_connection(&url);
    let get = |store: &PostgresStore| {
        read(store, |tx| Ok(tx.get(Kind::Charge, "a", "nothing")?)).unwrap();
    };
    get(&store);
    let (_, prepared_and_run) = store.round_trips();
    assert_eq!(prepared_and_run, 2, "the first execution prepares");
    for _ in 1..REPLAN_AFTER {
        get(&store);
    }
    let (_, s) = store.round_trips();
    assert_eq!(s, REPLAN_AFTER + 1, "one prepare, then executions only");
    get(&store);
    let (_, s) = store.round_trips();
    assert_eq!(s, REPLAN_AFTER + 3, "prepared again, then run");
}

/// A connection prepares its statements again once the store has written more than
/// [`REPLAN_ROWS`] rows since, and more than before: a plan made when the tables were
/// small does not outlive their growth.
#[test]
fn statements_are_prepared_again_when_the_tables_grow() {
    let Some(url) = url() else { return };
    let (_first, store) = one_connection(&url);
    let get = |store: &PostgresStore| {
        let (_, s0) = store.round_trips();
        read(store, |tx| Ok(tx.get(Kind::Charge, "a", "nothing")?)).unwrap();
        store.round_trips().1 - s0
    };
    assert_eq!(get(&store), 2, "the first execution prepares");
    assert_eq!(get(&store), 1, "then runs only");
    let grow = |from: u64, n: u64| grow_events(&store, from, n);
    grow(0, REPLAN_ROWS / 2);
    assert_eq!(get(&store), 1, "half the rows: kept");
    grow(REPLAN_ROWS / 2, REPLAN_ROWS);
    assert_eq!(get(&store), 2, "grown past the bound: prepared again");
    assert_eq!(get(&store), 1, "and kept");
    // Prepared again at the latest once 1,500 rows were written (within that write,
    // when its own statements were looked up past the bound): 500 more are not enough.
    grow(REPLAN_ROWS * 3 / 2, REPLAN_ROWS / 2);
    assert_eq!(get(&store), 1, "fewer than the bound since: kept");
    grow(REPLAN_ROWS * 2, REPLAN_ROWS * 2);
    assert_eq!(
        get(&store),
        2,
        "more than were written before: prepared again"
    );
    // Each write deferred far more puts than a pipeline holds (`WRITES_HELD`): all landed.
    let n = read(&store, |tx| Ok(tx.count(Kind::Event, "a", &[])?)).unwrap();
    assert_eq!(n, REPLAN_ROWS * 4);
}

/// The store vacuums and analyzes its tables once it has committed more than a step of
/// rows since the last time (and more than then), on a connection of its own: a table
/// loaded in bulk is planned from its statistics, and its pages are all-visible to its
/// index-only scans, even where autovacuum does not run.
#[test]
fn the_tables_are_analyzed_as_the_store_writes_them() {
    let Some(url) = url() else { return };
    let store = PostgresStore::scratch(&url).unwrap();
    let mut runs = runs_of(&url, &store);
    let grow = |from: u64, n: u64| grow_events(&store, from, n);
    // Within 20 s.
    let eventually = |runs: &mut dyn FnMut(&str) -> (i64, i64), times: i64| {
        let seen = polled(400, Duration::from_millis(50), || {
            let (analyzed, vacuumed) = runs("events");
            analyzed >= times && vacuumed >= times
        });
        assert!(seen, "events not vacuumed and analyzed {times} times");
    };
    grow(0, REPLAN_ROWS);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(runs("events"), (0, 0), "a step's rows, not more: no run");
    grow(REPLAN_ROWS, 1);
    eventually(&mut runs, 1);
    let (analyzed, vacuumed) = runs("charges");
    assert!(
        analyzed >= 1 && vacuumed >= 1,
        "every entity table with them"
    );
    grow(REPLAN_ROWS + 1, REPLAN_ROWS);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        runs("events"),
        (1, 1),
        "fewer rows than at the last run: not again"
    );
    grow(REPLAN_ROWS * 2 + 1, 2);
    eventually(&mut runs, 2);
}

/// A bulk load (the demo's seed) is vacuumed and analyzed when it is done
/// ([`Store::loaded`]), before anything reads it, however few rows it wrote.
#[test]
fn a_bulk_load_is_vacuumed_and_analyzed_when_it_is_done() {
    let Some(url) = url() else { return };
    let store = PostgresStore::scratch(&url).unwrap();
    let mut runs = runs_of(&url, &store);
    grow_events(&store, 0, 10);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(runs("events"), (0, 0), "fewer rows than a step: no run");
    store.loaded();
    assert_eq!(runs("events"), (1, 1), "run on the caller's thread");
    assert_eq!(runs("charges"), (1, 1), "every entity table with it");
}

/// A step's run passes over a table another vacuum holds instead of waiting for it
/// (another replica's run): here a transaction holds `charges` in the lock a vacuum
/// takes, and the run still ends, with every other table vacuumed. (A bulk load's run
/// waits: `a_bulk_loads_run_waits_for_a_table_another_vacuum_holds`.)
#[test]
fn a_run_passes_over_a_table_another_vacuum_holds() {
    let Some(url) = url() else { return };
    let store = PostgresStore::scratch(&url).unwrap();
    let mut runs = runs_of(&url, &store);
    let mut held = holding_charges(&store);
    let config = store.config.clone();
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        statistics::run(&config, statistics::Held::PassOver);
        let _ = done.send(());
    });
    assert!(
        ended.recv_timeout(Duration::from_secs(10)).is_ok(),
        "the run waited for the held table"
    );
    assert_eq!(runs("events"), (1, 1));
    assert_eq!(runs("charges"), (0, 0), "the held table passed over");
    held.batch_execute("ROLLBACK").unwrap();
}

/// A bulk load's run waits for a table another vacuum holds: every row of the load
/// must be vacuumed before it is read, and the other run may have begun before them.
#[test]
fn a_bulk_loads_run_waits_for_a_table_another_vacuum_holds() {
    let Some(url) = url() else { return };
    let store = Arc::new(PostgresStore::scratch(&url).unwrap());
    let mut runs = runs_of(&url, &store);
    let mut held = holding_charges(&store);
    let (done, ended) = std::sync::mpsc::channel();
    let loader = Arc::clone(&store);
    std::thread::spawn(move || {
        loader.loaded();
        let _ = done.send(());
    });
    assert!(
        ended.recv_timeout(Duration::from_millis(500)).is_err(),
        "the load's run passed over the held table"
    );
    held.batch_execute("ROLLBACK").unwrap();
    assert!(ended.recv_timeout(Duration::from_secs(10)).is_ok());
    assert_eq!(runs("charges"), (1, 1));
}

/// A session of `store`'s holding `charges` in the lock a vacuum takes, in a
/// transaction open until it sends `ROLLBACK`.
fn holding_charges(store: &PostgresStore) -> Client {
    let mut holder = blocking(&store.config).unwrap();
    holder
        .batch_execute("BEGIN; LOCK TABLE charges IN SHARE UPDATE EXCLUSIVE MODE")
        .unwrap();
    holder
}

/// `(analyze_count, vacuum_count)` of a table of `store`'s scratch schema.
fn runs_of(url: &str, store: &PostgresStore) -> impl FnMut(&str) -> (i64, i64) {
    let schema = store.scratch_schema().unwrap().to_owned();
    let mut probe = blocking(&parse_url(url).unwrap()).unwrap();
    move |table: &str| {
        let row = probe
            .query_one(
                "SELECT analyze_count, vacuum_count FROM pg_stat_user_tables \
                 WHERE schemaname = $1 AND relname = $2",
                &[&schema, &table],
            )
            .unwrap();
        (row.get(0), row.get(1))
    }
}

/// Every session of the store runs its statements with their generic plans
/// ([`GENERIC_PLANS`]): a count read twenty times on the store's one connection was
/// planned for its arguments never (left to `auto`, the first five runs are).
#[test]
fn statements_run_with_their_generic_plans() {
    let Some(url) = url() else { return };
    let (_first, store) = one_connection(&url);
    let overdue = [crate::store::Cond::Eq("status", json!("overdue"))];
    for _ in 0..20 {
        read(&store, |tx| {
            Ok(tx.count(Kind::Charge, "org-a", &overdue)?)
        })
        .unwrap();
    }
    let mut conn = store.conn().unwrap();
    let plans = conn
        .session
        .prepare(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
             WHERE statement LIKE 'SELECT COUNT(*) FROM charges%'",
        )
        .unwrap();
    let answers = conn
        .session
        .pipeline(&[Item::Statement(&plans, &[])])
        .unwrap();
    let (generic, custom): (i64, i64) = (answers[0].0[0].get(0), answers[0].0[0].get(1));
    assert_eq!(
        (generic >= 20, custom),
        (true, 0),
        "{generic} generic, {custom} custom"
    );
}

/// A page's documents are read in the walk of the page's index from the start of the
/// list, and found by primary key, one lookup per row, past it (`sql::read_direct`); the
/// debtors whose names it carries are found by primary key either way. All in the
/// generic plan every session of the store runs ([`GENERIC_PLANS`]): written as plain
/// joins, PostgreSQL planned hash joins over a scan of every row of the organization
/// (`sql::Dialect::lookup`). The names come from the primary key's covering twin
/// (migration 10), not from a walk of the organization's name index.
#[test]
fn a_pages_documents_are_read_with_its_index_or_by_primary_key() {
    let Some(url) = url() else { return };
    let s = PostgresStore::scratch(&url).unwrap();
    write(&s, WriteScope::All, |tx| {
        for org in ["a", "b"] {
            for d in 0..40 {
                tx.put(
                    Kind::Debtor,
                    org,
                    &json!({"id": format!("d{d}"), "created_at": "2026-01-01",
                        "name": format!("Ana {d}"), "notes": "x".repeat(600)}),
                )?;
            }
            for i in 0..40 {
                let status = if i % 4 == 0 { "overdue" } else { "paid" };
                let doc = json!({"id": format!("c{i}"), "created_at": "2026-01-01",
                    "status": status, "due_date": format!("2026-01-{:02}", i % 28 + 1),
                    "debtor_id": format!("d{i}"), "description": "x".repeat(600)});
                tx.put(Kind::Charge, org, &doc)?;
            }
        }
        Ok(())
    })
    .unwrap();
    let conds = [crate::store::Cond::Eq("status", json!("overdue"))];
    let (clause, _) =
        crate::store::sql::where_clause(Dialect::Postgres, Kind::Charge, "a", &conds).unwrap();
    let count = crate::store::sql::count_sql(Dialect::Postgres, Kind::Charge, &conds, &clause);
    let names = crate::store::Pointed {
        kind: Kind::Debtor,
        via: "debtor_id",
        column: "name",
    };
    let page = |limit: u32, offset: u32| {
        let q = Query {
            conds: conds.to_vec(),
            sort: ("due_date", crate::store::Order::Asc),
            limit: Some(limit),
            offset,
        };
        crate::store::sql::page_sql(
            Dialect::Postgres,
            Kind::Charge,
            &q,
            &clause,
            Some(names),
            Some(&count),
        )
        .unwrap()
    };
    // A session set up as the store's are (its search path, its generic plans).
    let mut config = parse_url(&url).unwrap();
    config.options(format!("-c search_path={}", s.scratch_schema().unwrap()));
    with_option(&mut config, GENERIC_PLANS);
    let mut c = blocking(&config).unwrap();
    // Vacuumed as the store's statistics steps do: every page all-visible, so an index
    // that holds every column a lookup reads answers it alone.
    c.batch_execute("VACUUM (ANALYZE) charges, debtors")
        .unwrap();
    let mut plan_and_rows = |name: &str, sql: &str| {
        c.batch_execute(&format!("PREPARE {name} (text, text) AS {sql}"))
            .unwrap();
        let plan: Vec<String> = c
            .query(
                &format!("EXPLAIN (COSTS OFF) EXECUTE {name} ('a', 'overdue')"),
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("Index Only Scan using debtors_names on debtors found"),
            "{plan}"
        );
        assert!(!plan.contains("Hash"), "{plan}");
        let rows = c
            .query(&format!("EXECUTE {name} ('a', 'overdue')"), &[])
            .unwrap();
        (plan, rows)
    };
    let (first_plan, rows) = plan_and_rows("first", &page(10, 0));
    assert!(
        first_plan.contains("Index Scan using charges_status_due on charges")
            && !first_plan.contains("charges_pkey"),
        "{first_plan}"
    );
    let ids_of = |rows: &[tokio_postgres::Row]| -> Vec<String> {
        rows.iter()
            .map(|r| {
                let doc: String = r.get(1);
                serde_json::from_str::<Value>(&doc).unwrap()["id"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let ids = ids_of(&rows);
    assert_eq!(
        ids,
        [
            "c0", "c28", "c32", "c4", "c36", "c8", "c12", "c16", "c20", "c24"
        ]
    );
    let names: Vec<String> = rows
        .iter()
        .map(|r| {
            let (doc, name): (String, &str) = (r.get(1), r.get(3));
            let debtor = serde_json::from_str::<Value>(&doc).unwrap()["debtor_id"].clone();
            assert_eq!(r.get::<_, &str>(2), debtor, "the row's own debtor");
            name.to_owned()
        })
        .collect();
    assert_eq!(names[..2], ["Ana 0", "Ana 28"]);
    assert!(rows.iter().all(|r| r.get::<_, i64>(0) == 10));
    // Past more entries than it keeps, a page finds its documents by primary key, and
    // is the same rows.
    let (later_plan, later) = plan_and_rows("later", &page(3, 4));
    assert!(
        later_plan.contains("Index Scan using charges_pkey on charges found"),
        "{later_plan}"
    );
    assert_eq!(ids_of(&later), ids[4..7]);
    assert!(later.iter().all(|r| r.get::<_, i64>(0) == 10));
}
