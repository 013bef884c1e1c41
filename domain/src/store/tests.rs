//! The store's contract, run on whichever store the tests run on
//! ([`crate::testing::store`]: PostgreSQL when `DUNNING_TEST_PG` is set, else SQLite):
//! both stores must pass the same tests.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{
    Cond, Kind, Order, Pointed, Query, RawPage, Remembered, Store, StoreError, Tx, WriteScope,
    read, rehearse, write,
};
use crate::error::DomainError;
use crate::testing;

fn doc(id: &str, status: &str, amount: f64, tags: &[&str]) -> Value {
    json!({"id": id, "created_at": format!("2026-01-0{id}T00:00:00-03:00"), "status": status,
           "amount": amount, "due_date": "2026-02-01", "tags": tags, "description": "Mensalidade"})
}

#[test]
fn unfiltered_counts_follow_inserts_replacements_deletes_and_rollbacks() {
    let store = testing::store();
    let s = &*store;
    let count = |org: &str| read(s, |tx| Ok(tx.count(Kind::Charge, org, &[])?)).unwrap();
    assert_eq!(count("a"), 0);
    write(s, WriteScope::All, |tx| {
        for id in ["1", "2", "3"] {
            tx.put(Kind::Charge, "a", &doc(id, "pending", 10.0, &[]))?;
        }
        tx.put(Kind::Charge, "b", &doc("4", "pending", 10.0, &[]))?;
        // A replacement is not a new document.
        tx.put(Kind::Charge, "a", &doc("1", "paid", 11.0, &[]))?;
        Ok(())
    })
    .unwrap();
    assert_eq!((count("a"), count("b")), (3, 1));
    assert_eq!(
        read(s, |tx| Ok(tx.get(Kind::Charge, "a", "1")?))
            .unwrap()
            .unwrap()["status"],
        "paid",
        "the upsert replaced the document"
    );
    write(s, WriteScope::All, |tx| {
        assert!(tx.delete(Kind::Charge, "a", "2")?);
        assert!(!tx.delete(Kind::Charge, "a", "2")?);
        Ok(())
    })
    .unwrap();
    assert_eq!(count("a"), 2);
    let failed: Result<(), DomainError> = write(s, WriteScope::All, |tx| {
        tx.put(Kind::Charge, "a", &doc("5", "pending", 10.0, &[]))?;
        Err(DomainError::Conflict("rolled back".into()))
    });
    assert!(failed.is_err());
    assert_eq!(count("a"), 2, "a rolled-back insert is not counted");
    let listed = read(s, |tx| Ok(tx.find(Kind::Charge, "a", &Query::all())?.len())).unwrap();
    assert_eq!(listed as u64, count("a"));
}

#[test]
fn pages_come_in_order_whatever_the_offset() {
    let store = testing::store();
    let s = &*store;
    write(s, WriteScope::All, |tx| {
        for i in 0..50 {
            let mut d = doc("1", "pending", f64::from(i % 7), &[]);
            d["id"] = json!(format!("c{i:02}"));
            tx.put(Kind::Charge, "a", &d)?;
        }
        Ok(())
    })
    .unwrap();
    let page = |offset: u32, order: Order| -> Vec<String> {
        read(s, |tx| {
            let q = Query {
                sort: ("amount", order),
                limit: Some(10),
                offset,
                ..Query::all()
            };
            Ok(tx
                .find(Kind::Charge, "a", &q)?
                .iter()
                .map(|d| d["id"].as_str().unwrap().to_owned())
                .collect())
        })
        .unwrap()
    };
    let mut all: Vec<(i64, String)> = (0..50).map(|i: i64| (i % 7, format!("c{i:02}"))).collect();
    all.sort();
    let asc: Vec<String> = (0..5).flat_map(|p| page(p * 10, Order::Asc)).collect();
    assert_eq!(asc, all.iter().map(|x| x.1.clone()).collect::<Vec<_>>());
    let desc: Vec<String> = (0..5).flat_map(|p| page(p * 10, Order::Desc)).collect();
    assert_eq!(desc, asc.iter().rev().cloned().collect::<Vec<_>>());
    assert!(page(50, Order::Asc).is_empty());
}

/// A list's page, its total and what its rows point to, asked together, are what they
/// are asked apart: the total of every page (the tally without conditions, a count with
/// them), the page's rows in order, the pointed documents' column for exactly the page's
/// rows; past the end, no rows and the total still there.
#[test]
fn a_page_and_its_total_together_are_the_two_apart() {
    let store = testing::store();
    let s = &*store;
    write(s, WriteScope::All, |tx| {
        for i in 0..23 {
            let status = if i % 3 == 0 { "paid" } else { "pending" };
            let mut d = doc("1", status, f64::from(i), &[]);
            d["id"] = json!(format!("c{i:02}"));
            d["debtor_id"] = json!(format!("d{}", i % 5));
            tx.put(Kind::Charge, "a", &d)?;
        }
        for i in 0..4 {
            let mut d = json!({"id": format!("d{i}"), "created_at": "2026-01-01", "name": format!("Debtor {i}")});
            if i == 3 {
                // A pointed document without the column is pointed to all the same.
                d.as_object_mut().unwrap().remove("name");
            }
            tx.put(Kind::Debtor, "a", &d)?;
        }
        // Another organization's debtor of the same id is not pointed to.
        let d = json!({"id": "d4", "created_at": "2026-01-01", "name": "Not a's"});
        tx.put(Kind::Debtor, "b", &d)?;
        tx.put(Kind::Charge, "b", &doc("1", "pending", 1.0, &[]))?;
        Ok(())
    })
    .unwrap();
    let names = Pointed {
        kind: Kind::Debtor,
        via: "debtor_id",
        column: "name",
    };
    let pending = || vec![Cond::Eq("status", json!("pending"))];
    for (conds, offset) in [(vec![], 0), (vec![], 20), (pending(), 5), (pending(), 40)] {
        let q = Query {
            conds,
            sort: ("amount", Order::Desc),
            limit: Some(10),
            offset,
        };
        let (together, apart) = read(s, |tx| {
            let together = tx.page_raw(Kind::Charge, "a", &q, Some(names))?;
            let rows = tx.find_raw(Kind::Charge, "a", &q)?;
            let mut ids: Vec<String> = rows
                .iter()
                .map(|r| {
                    serde_json::from_str::<Value>(r).unwrap()["debtor_id"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            ids.sort();
            ids.dedup();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut pointed = tx.column_by_id(Kind::Debtor, "a", &ids, "name")?;
            pointed.sort();
            let total = tx.count(Kind::Charge, "a", &q.conds)?;
            Ok((
                together,
                RawPage {
                    rows,
                    total,
                    pointed,
                },
            ))
        })
        .unwrap();
        assert_eq!(together, apart, "{q:?}");
        let plain = read(s, |tx| Ok(tx.page_raw(Kind::Charge, "a", &q, None)?)).unwrap();
        assert!(plain.pointed.is_empty(), "nothing pointed unless asked");
        assert_eq!((plain.rows, plain.total), (together.rows, together.total));
    }
    let all = read(s, |tx| {
        Ok(tx.page_raw(Kind::Charge, "a", &Query::all(), Some(names))?)
    })
    .unwrap();
    assert_eq!(
        (all.rows.len(), all.total, all.pointed.len()),
        (23, 23, 4),
        "d4 is b's"
    );
    let past = read(s, |tx| {
        let q = Query {
            conds: pending(),
            limit: Some(10),
            offset: 40,
            ..Query::all()
        };
        Ok(tx.page_raw(Kind::Charge, "a", &q, Some(names))?)
    })
    .unwrap();
    assert_eq!(
        (past.rows.len(), past.total, past.pointed.len()),
        (0, 15, 0),
        "past the end: no rows, the total"
    );
    // A page rides its total on its rows; with none, the total is what a count says:
    // nothing matching, an organization with nothing stored (no tally yet), a page of
    // no rows.
    let none = |org: &str, conds: Vec<Cond>, limit: Option<u32>| {
        let q = Query {
            conds,
            limit,
            ..Query::all()
        };
        let page = read(s, |tx| {
            Ok(tx.page_raw(Kind::Charge, org, &q, Some(names))?)
        })
        .unwrap();
        (page.rows.len(), page.total)
    };
    let canceled = vec![Cond::Eq("status", json!("canceled"))];
    assert_eq!(none("a", canceled, Some(10)), (0, 0), "nothing matches");
    assert_eq!(none("c", vec![], Some(10)), (0, 0), "nothing stored");
    assert_eq!(none("a", pending(), Some(0)), (0, 15), "a page of no rows");
}

#[test]
fn scoped_by_organization_and_queryable() {
    let store = testing::store();
    let s = &*store;
    write(s, WriteScope::All, |tx| {
        tx.put(Kind::Charge, "a", &doc("1", "pending", 10.0, &["vip"]))?;
        tx.put(Kind::Charge, "a", &doc("2", "overdue", 20.5, &[]))?;
        tx.put(Kind::Charge, "b", &doc("3", "pending", 30.0, &["vip"]))?;
        Ok(())
    })
    .unwrap();
    read(s, |tx| {
        assert!(
            tx.get(Kind::Charge, "b", "1")?.is_none(),
            "other org is not found"
        );
        assert_eq!(tx.get(Kind::Charge, "a", "1")?.unwrap()["amount"], 10.0);
        let q = Query::all().with(Cond::In("status", vec![json!("pending"), json!("overdue")]));
        assert_eq!(tx.find(Kind::Charge, "a", &q)?.len(), 2);
        assert_eq!(
            tx.count(Kind::Charge, "a", &[Cond::Tag("tags", "vip".into())])?,
            1
        );
        assert_eq!(
            tx.count(Kind::Charge, "a", &[Cond::Ge("amount", json!(15))])?,
            1
        );
        assert_eq!(
            tx.count(
                Kind::Charge,
                "a",
                &[Cond::Search(vec!["description"], "MENSAL".into())]
            )?,
            2
        );
        let q = Query {
            sort: ("amount", Order::Desc),
            limit: Some(1),
            ..Query::all()
        };
        assert_eq!(tx.find(Kind::Charge, "a", &q)?[0]["id"], "2");
        assert!(
            tx.find(
                Kind::Charge,
                "a",
                &Query {
                    sort: ("nope", Order::Asc),
                    ..Query::all()
                }
            )
            .is_err()
        );
        Ok(())
    })
    .unwrap();
}

#[test]
fn failed_write_rolls_back() {
    let store = testing::store();
    let s = &*store;
    let r: Result<(), _> = write(s, WriteScope::All, |tx| {
        tx.put(Kind::Charge, "a", &doc("1", "pending", 1.0, &[]))?;
        Err(DomainError::Conflict("no".into()))
    });
    assert!(r.is_err());
    let n = read(s, |tx| Ok(tx.count(Kind::Charge, "a", &[])?)).unwrap();
    assert_eq!(n, 0);
}

#[test]
fn idempotency_first_write_wins() {
    let store = testing::store();
    let s = &*store;
    let rem = |d: &str| Remembered {
        tool: "t".into(),
        digest: d.into(),
        result: json!({"a":1}),
        at_ms: 5,
    };
    write(s, WriteScope::All, |tx| {
        tx.remember("o", "k", &rem("x"))?;
        tx.remember("o", "k", &rem("y"))?;
        Ok(())
    })
    .unwrap();
    let got = read(s, |tx| Ok(tx.recall("o", "k")?)).unwrap().unwrap();
    assert_eq!(got.digest, "x");
    assert_eq!(read(s, |tx| Ok(tx.recall("p", "k")?)).unwrap(), None);
    assert_eq!(
        write(s, WriteScope::All, |tx| Ok(tx.forget_before(6)?)).unwrap(),
        1
    );
}

#[test]
fn a_rehearsal_sees_its_own_writes_and_leaves_nothing() {
    let store = testing::store();
    let s = &*store;
    let seen = rehearse(s, WriteScope::All, |tx| {
        tx.put(Kind::Charge, "a", &doc("1", "pending", 1.0, &[]))?;
        Ok(tx.count(Kind::Charge, "a", &[])?)
    })
    .unwrap();
    assert_eq!(seen, 1, "the rehearsal sees its own insert");
    let after = read(s, |tx| Ok(tx.count(Kind::Charge, "a", &[])?)).unwrap();
    assert_eq!(after, 0, "and nothing is left of it");
    assert!(
        read(s, |tx| Ok(tx.get(Kind::Charge, "a", "1")?))
            .unwrap()
            .is_none()
    );
}

/// Text sorts bytewise (uppercase before lowercase before accented letters, as
/// SQLite's BINARY) and NULLs come first going up, last going down.
#[test]
fn sorting_is_bytewise_with_nulls_first_going_up() {
    let store = testing::store();
    let s = &*store;
    write(s, WriteScope::All, |tx| {
        for (id, name) in [
            ("1", json!("beta")),
            ("2", json!("Zeta")),
            ("3", json!("élan")),
            ("4", Value::Null),
            ("5", json!("alfa")),
            ("6", json!("a-b")),
        ] {
            tx.put(
                Kind::Debtor,
                "a",
                &json!({"id": id, "created_at": "2026-01-01", "name": name}),
            )?;
        }
        Ok(())
    })
    .unwrap();
    let ids = |order: Order| -> Vec<String> {
        read(s, |tx| {
            let q = Query {
                sort: ("name", order),
                ..Query::all()
            };
            Ok(tx
                .find(Kind::Debtor, "a", &q)?
                .iter()
                .map(|d| d["id"].as_str().unwrap().to_owned())
                .collect())
        })
        .unwrap()
    };
    assert_eq!(ids(Order::Asc), ["4", "2", "6", "5", "1", "3"]);
    assert_eq!(ids(Order::Desc), ["3", "1", "5", "6", "2", "4"]);
}

/// Every kind of condition, on every column type, as both stores answer it.
#[test]
fn conditions_on_every_column_type() {
    let store = testing::store();
    let s = &*store;
    write(s, WriteScope::All, |tx| {
        tx.put(
            Kind::Webhook,
            "a",
            &json!({"id": "w1", "created_at": "2026-01-01", "active": true}),
        )?;
        tx.put(
            Kind::Webhook,
            "a",
            &json!({"id": "w2", "created_at": "2026-01-02", "active": false}),
        )?;
        tx.put(
            Kind::Step,
            "a",
            &json!({"id": "s1", "created_at": "2026-01-01", "ruler_id": "r", "position": 1}),
        )?;
        tx.put(
            Kind::Step,
            "a",
            &json!({"id": "s2", "created_at": "2026-01-01", "ruler_id": "r", "position": 2}),
        )?;
        tx.put(
            Kind::Step,
            "a",
            &json!({"id": "s3", "created_at": "2026-01-01", "ruler_id": null, "position": 3}),
        )?;
        tx.put(
            Kind::Charge,
            "a",
            &doc("1", "pending", 10.0, &["vip", "a_b"]),
        )?;
        tx.put(Kind::Charge, "a", &doc("2", "paid", 20.0, &["vipx"]))?;
        let mut odd = doc("3", "pending", 30.0, &[]);
        odd["description"] = json!("100% off_now");
        tx.put(Kind::Charge, "a", &odd)?;
        Ok(())
    })
    .unwrap();
    read(s, |tx| {
        let n = |tx: &mut dyn Tx, kind, conds: &[Cond]| tx.count(kind, "a", conds).unwrap();
        assert_eq!(n(tx, Kind::Webhook, &[Cond::Eq("active", json!(true))]), 1);
        assert_eq!(n(tx, Kind::Webhook, &[Cond::Eq("active", json!(false))]), 1);
        assert_eq!(
            n(
                tx,
                Kind::Step,
                &[Cond::In("position", vec![json!(1), json!(3), json!(9)])]
            ),
            2
        );
        assert_eq!(
            n(
                tx,
                Kind::Step,
                &[
                    Cond::Ge("position", json!(2)),
                    Cond::Le("position", json!(2))
                ]
            ),
            1
        );
        assert_eq!(n(tx, Kind::Step, &[Cond::Null("ruler_id", true)]), 1);
        assert_eq!(n(tx, Kind::Step, &[Cond::Null("ruler_id", false)]), 2);
        assert_eq!(n(tx, Kind::Step, &[Cond::In("ruler_id", vec![])]), 0);
        assert_eq!(
            n(tx, Kind::Charge, &[Cond::Tag("tags", "vip".into())]),
            1,
            "a tag is an element, not a substring"
        );
        assert_eq!(n(tx, Kind::Charge, &[Cond::Tag("tags", "a_b".into())]), 1);
        assert_eq!(n(tx, Kind::Charge, &[Cond::Le("amount", json!(20))]), 2);
        assert_eq!(
            n(
                tx,
                Kind::Charge,
                &[Cond::In("amount", vec![json!(10), json!(30.0)])]
            ),
            2
        );
        assert_eq!(
            n(
                tx,
                Kind::Charge,
                &[Cond::Ge("due_date", json!("2026-02-01"))]
            ),
            3
        );
        // `%` and `_` in a search are themselves, not wildcards.
        assert_eq!(
            n(
                tx,
                Kind::Charge,
                &[Cond::Search(vec!["description"], "0% OFF_".into())]
            ),
            1
        );
        assert_eq!(
            n(
                tx,
                Kind::Charge,
                &[Cond::Search(vec!["description"], "_".into())]
            ),
            1
        );
        assert_eq!(
            n(
                tx,
                Kind::Charge,
                &[Cond::Search(vec!["status", "description"], "PAI".into())]
            ),
            1
        );
        Ok(())
    })
    .unwrap();
}

/// Writers run one at a time, so what the domain computes from the last write (an
/// event's number, `Tx::next_event_sequence`) is never computed twice: eight threads
/// appending at once, half as the organization's writer and half as everyone's, still
/// number their documents 1, 2, 3… without a gap or a repeat, and the tally counts each
/// once.
#[test]
fn concurrent_writers_never_compute_the_same_next_number() {
    const THREADS: u64 = 8;
    const EACH: u64 = 15;
    let store: Arc<dyn Store> = testing::store();
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let store = store.clone();
            let scope_of = if t % 2 == 0 {
                WriteScope::All
            } else {
                WriteScope::Org("a")
            };
            scope.spawn(move || {
                for i in 0..EACH {
                    write(&*store, scope_of, |tx| {
                        let next = tx.next_event_sequence("a")?;
                        tx.put(Kind::Event, "a", &json!({"id": format!("e{t}-{i}"), "created_at": "2026-01-01", "sequence": next}))?;
                        Ok(())
                    })
                    .unwrap();
                }
            });
        }
    });
    let (mut seqs, tally) = read(&*store, |tx| {
        let q = Query {
            sort: ("sequence", Order::Asc),
            ..Query::all()
        };
        let seqs: Vec<u64> = tx
            .find(Kind::Event, "a", &q)?
            .iter()
            .map(|e| e["sequence"].as_u64().unwrap())
            .collect();
        Ok((seqs, tx.count(Kind::Event, "a", &[])?))
    })
    .unwrap();
    seqs.dedup();
    assert_eq!(seqs, (1..=THREADS * EACH).collect::<Vec<_>>());
    assert_eq!(tally, THREADS * EACH);
}

/// The first of two writers racing on one idempotency key wins; the second's record is
/// ignored, not an error.
#[test]
fn racing_idempotency_records_keep_the_first() {
    let store: Arc<dyn Store> = testing::store();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let store = store.clone();
            scope.spawn(move || {
                write(&*store, WriteScope::All, |tx| {
                    if tx.recall("o", "k")?.is_none() {
                        tx.remember(
                            "o",
                            "k",
                            &Remembered {
                                tool: "t".into(),
                                digest: format!("d{t}"),
                                result: json!({"t": t}),
                                at_ms: 1,
                            },
                        )?;
                    }
                    Ok(())
                })
                .unwrap();
            });
        }
    });
    let got = read(&*store, |tx| Ok(tx.recall("o", "k")?))
        .unwrap()
        .unwrap();
    assert_eq!(
        got.result,
        json!({"t": got.digest[1..].parse::<u32>().unwrap()})
    );
}

/// A write may write only what its scope names ([`WriteScope`]): another organization's
/// documents and idempotency records, the authorization records and the sweep are each
/// refused, on both stores, and nothing of the refused transaction stays.
#[test]
fn a_write_outside_its_scope_is_refused() {
    let s = &*testing::store();
    let doc = json!({"id": "d1", "created_at": "2026-01-01"});
    let r = Remembered {
        tool: "t".into(),
        digest: "x".into(),
        result: json!({}),
        at_ms: 1,
    };
    let a = WriteScope::Org("a");
    type Attempt<'f> = &'f dyn Fn(&mut dyn Tx) -> Result<(), StoreError>;
    let refused: [(&str, WriteScope<'_>, Attempt<'_>); 6] = [
        ("put", a, &|tx| tx.put(Kind::Debtor, "b", &doc)),
        ("delete", a, &|tx| {
            tx.delete(Kind::Debtor, "b", "d1").map(drop)
        }),
        ("remember", a, &|tx| tx.remember("b", "k", &r)),
        ("sweep", a, &|tx| tx.forget_before(1).map(drop)),
        ("grant", a, &|tx| tx.grant_put("client", "c1", &doc, None)),
        ("org from grants", WriteScope::Grants, &|tx| {
            tx.put(Kind::Debtor, "a", &doc)
        }),
    ];
    for (what, scope, f) in refused {
        let err = write(s, scope, |tx| Ok(f(tx)?)).unwrap_err();
        assert!(err.to_string().contains("may not write"), "{what}: {err}");
    }
    // A transaction that wrote its own organization, then strayed: none of it stays.
    let strayed = write(s, a, |tx| {
        tx.put(Kind::Debtor, "a", &doc)?;
        Ok(tx.put(Kind::Debtor, "b", &doc)?)
    });
    assert!(strayed.is_err());
    assert_eq!(
        read(s, |tx| Ok(
            tx.count(Kind::Debtor, "a", &[])? + tx.count(Kind::Debtor, "b", &[])?
        ))
        .unwrap(),
        0,
        "nothing of a refused transaction stays"
    );
    // Inside the scope, and with `All`, the same writes pass.
    write(s, a, |tx| Ok(tx.put(Kind::Debtor, "a", &doc)?)).unwrap();
    write(s, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Debtor, "b", &doc)?)
    })
    .unwrap();
    write(s, WriteScope::Sweep, |tx| {
        Ok(tx.forget_before(1).map(drop)?)
    })
    .unwrap();
}

/// The two places the stores' SQL once differed: a search over no column finds
/// nothing (it was `AND ()`, a syntax error, on SQLite), and a tag condition on a column
/// that holds no tags is refused (SQLite accepted it and matched text). Now one
/// `where_clause` builds both, and both stores answer the same.
#[test]
fn an_empty_search_finds_nothing_and_a_tag_needs_a_tags_column() {
    let s = &*testing::store();
    let charge = json!({"id": "c1", "created_at": "2026-01-01", "status": "vip", "tags": ["vip"]});
    write(s, WriteScope::All, |tx| {
        Ok(tx.put(Kind::Charge, "a", &charge)?)
    })
    .unwrap();
    let nothing = Cond::Search(Vec::new(), "vip".into());
    let (found, counted) = read(s, |tx| {
        Ok((
            tx.find(Kind::Charge, "a", &Query::all().with(nothing.clone()))?,
            tx.count(Kind::Charge, "a", std::slice::from_ref(&nothing))?,
        ))
    })
    .unwrap();
    assert_eq!((found.len(), counted), (0, 0));
    let err = read(s, |tx| {
        Ok(tx.count(Kind::Charge, "a", &[Cond::Tag("status", "vip".into())])?)
    })
    .unwrap_err();
    assert!(err.to_string().contains("is not a tags column"), "{err}");
    // The tags column itself still matches.
    let n = read(s, |tx| {
        Ok(tx.count(Kind::Charge, "a", &[Cond::Tag("tags", "vip".into())])?)
    })
    .unwrap();
    assert_eq!(n, 1);
}

/// Amounts are indexed as whole centavos: a range or an equality on an amount compares
/// exact centavos, whatever binary fraction the BRL number is (0.1 + 0.2 is 0.30 here,
/// where a `REAL` column held 0.30000000000000004 and missed `= 0.3`).
#[test]
fn amounts_are_compared_as_whole_centavos() {
    let s = &*testing::store();
    let charge =
        |id: &str, amount: f64| json!({"id": id, "created_at": "2026-01-01", "amount": amount});
    write(s, WriteScope::All, |tx| {
        tx.put(Kind::Charge, "a", &charge("sum", 0.1 + 0.2))?;
        tx.put(Kind::Charge, "a", &charge("big", 19_999_999.99))?;
        Ok(tx.put(Kind::Charge, "a", &charge("small", 0.29))?)
    })
    .unwrap();
    let ids = |conds: Vec<Cond>| -> Vec<String> {
        let mut q = Query::all();
        q.conds = conds;
        q.sort = ("amount", Order::Asc);
        read(s, |tx| Ok(tx.find(Kind::Charge, "a", &q)?))
            .unwrap()
            .iter()
            .map(|d| d["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(ids(vec![Cond::Eq("amount", json!(0.3))]), ["sum"]);
    assert_eq!(ids(vec![Cond::Ge("amount", json!(0.3))]), ["sum", "big"]);
    assert_eq!(ids(vec![Cond::Le("amount", json!("0.29"))]), ["small"]);
    assert_eq!(
        ids(vec![Cond::In(
            "amount",
            vec![json!(0.29), json!(19_999_999.99)]
        )]),
        ["small", "big"]
    );
}

/// An organization's next event number: one more than the last stored; within a write,
/// one more than the last taken or put (a writer may number an event itself); a write
/// rolled back leaves no gap; each organization counts on its own, and only the
/// organization a write is scoped to may take one.
#[test]
fn event_numbers_go_on_from_the_last_one_stored_or_taken() {
    let store: Arc<dyn Store> = testing::store();
    let take = |tx: &mut dyn Tx, org: &str, id: &str| -> Result<u64, StoreError> {
        let n = tx.next_event_sequence(org)?;
        tx.put(
            Kind::Event,
            org,
            &json!({"id": id, "created_at": "2026-01-01", "sequence": n}),
        )?;
        Ok(n)
    };
    let taken = write(&*store, WriteScope::Org("a"), |tx| {
        let first = [take(tx, "a", "e1")?, take(tx, "a", "e2")?];
        let elsewhere = tx.next_event_sequence("b").map_err(|e| e.to_string());
        Ok((first, elsewhere))
    })
    .unwrap();
    assert_eq!(taken.0, [1, 2]);
    assert!(taken.1.is_err(), "a write of a takes no number of b");
    let after_own = write(&*store, WriteScope::Org("a"), |tx| {
        tx.put(
            Kind::Event,
            "a",
            &json!({"id": "e10", "created_at": "2026-01-01", "sequence": 10}),
        )?;
        Ok(take(tx, "a", "e11")?)
    })
    .unwrap();
    assert_eq!(after_own, 11);
    let failed = write(&*store, WriteScope::Org("a"), |tx| {
        take(tx, "a", "lost")?;
        Err::<(), _>(DomainError::Conflict("rolled back".into()))
    });
    assert!(failed.is_err());
    let next = write(&*store, WriteScope::Org("a"), |tx| {
        Ok(take(tx, "a", "e12")?)
    })
    .unwrap();
    assert_eq!(next, 12, "the rolled-back number is taken again");
    let b = write(&*store, WriteScope::Org("b"), |tx| Ok(take(tx, "b", "b1")?)).unwrap();
    assert_eq!(b, 1);
}

#[test]
fn a_column_is_read_by_id_within_the_organization_only() {
    let store: Arc<dyn Store> = testing::store();
    write(&*store, WriteScope::All, |tx| {
        for (org, id, name) in [
            ("a", "d1", json!("Ana")),
            ("a", "d2", Value::Null),
            ("b", "d3", json!("Bia")),
        ] {
            tx.put(
                Kind::Debtor,
                org,
                &json!({"id": id, "created_at": "2026-01-01", "name": name}),
            )?;
        }
        Ok(())
    })
    .unwrap();
    let mut got = read(&*store, |tx| {
        Ok(tx.column_by_id(Kind::Debtor, "a", &["d1", "d2", "d3", "none"], "name")?)
    })
    .unwrap();
    got.sort();
    assert_eq!(
        got,
        [
            ("d1".to_owned(), Some("Ana".to_owned())),
            ("d2".to_owned(), None)
        ],
        "b's d3 is not a's; an id not stored is left out"
    );
    let none = read(&*store, |tx| {
        Ok(tx.column_by_id(Kind::Debtor, "a", &[], "name")?)
    });
    assert_eq!(none.unwrap(), []);
    let unknown = read(&*store, |tx| {
        Ok(tx.column_by_id(Kind::Debtor, "a", &["d1"], "doc; --")?)
    });
    assert!(unknown.is_err(), "only a column of the kind is read");
}
