//! The demo data's charges, and the order of events within one second.

use super::*;

#[test]
fn demo_charges_cover_every_status_and_keep_aggregates() {
    let mut bed = Bed::demo();
    let ana = bed.ana();
    let carla = bed.carla();
    let count = |bed: &mut Bed, who: &Principal, status: &str| -> u64 {
        bed.ok(
            who,
            "dunning_charges_list",
            json!({"status": status, "per_page": 1}),
        )["meta"]["total"]
            .as_u64()
            .unwrap()
    };
    let all = count(
        &mut bed,
        &ana,
        "draft,pending,overdue,partially_paid,paid,canceled,renegotiated,written_off",
    );
    assert!(all >= 200, "{all}");
    assert!(count(&mut bed, &ana, "pending") >= 10);
    assert!(count(&mut bed, &ana, "overdue") >= 10);
    assert!(count(&mut bed, &ana, "paid") >= 5);
    for s in [
        "partially_paid",
        "canceled",
        "renegotiated",
        "written_off",
        "draft",
    ] {
        assert!(count(&mut bed, &ana, s) >= 1, "{s}");
        assert!(count(&mut bed, &carla, s) >= 1, "acme {s}");
    }
    let acme_total = bed.ok(&carla, "dunning_charges_list", json!({}))["meta"]["total"]
        .as_u64()
        .unwrap();
    assert!(acme_total >= 30, "{acme_total}");
    // Aggregates: every debtor's open amount is the sum of its open charges.
    let org = ana.organization.clone();
    store::read(bed.domain.store(), |tx| {
        let debtors = tx.find(Kind::Debtor, &org, &Query::all())?;
        for d in debtors {
            let q = Query::all()
                .with(Cond::Eq("debtor_id", d["id"].clone()))
                .with(Cond::In(
                    "status",
                    vec![json!("pending"), json!("overdue"), json!("partially_paid")],
                ));
            let open: i64 = tx
                .find(Kind::Charge, &org, &q)?
                .iter()
                .map(|c| {
                    ((c["amount"].as_f64().unwrap() - c["paid_amount"].as_f64().unwrap()) * 100.0)
                        .round() as i64
                })
                .sum();
            assert_eq!(
                (d["open_amount"].as_f64().unwrap() * 100.0).round() as i64,
                open,
                "{}",
                d["name"]
            );
        }
        // Every charge has its creation event; overdue ones their overdue event.
        let created = tx.count(
            Kind::Event,
            &org,
            &[Cond::Eq("code", json!("charge.created"))],
        )?;
        assert!(created >= 200, "{created}");
        Ok(())
    })
    .unwrap();
    // The clock already ran: nothing is left for the sweep.
    assert_eq!(sweep(&bed, &ana), 0);
    // Contact points: every debtor has some, some opted out.
    let debtors = bed.ok(&ana, "dunning_debtors_list", json!({"per_page": 100}));
    let mut opted_out = 0;
    for d in debtors["data"].as_array().unwrap() {
        let cps = bed.ok(&ana, "dunning_contact_points_list", json!({"id": d["id"]}));
        let data = cps["data"].as_array().unwrap();
        assert!(
            data.iter().any(|c| c["channel"] == "email"),
            "{}",
            d["name"]
        );
        assert!(
            data.iter().any(|c| c["channel"] == "whatsapp"),
            "{}",
            d["name"]
        );
        opted_out += data.iter().filter(|c| c["consent"] == "opted_out").count();
    }
    assert!(opted_out >= 5, "{opted_out}");
}

#[test]
fn events_of_one_second_list_in_the_order_they_happened() {
    // The clock does not move between these calls: only the insertion sequence orders them.
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let id = sid(&charge(&mut bed, &ana, &d, json!({})));
    bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "reason": "Em negociação"}),
    );
    bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    bed.ok(
        &ana,
        "dunning_charges_pause",
        json!({"id": id, "reason": "De novo"}),
    );
    bed.ok(&ana, "dunning_charges_resume", json!({"id": id}));
    bed.ok(&ana, "dunning_charges_cancel", json!({"id": id}));
    let list = |bed: &mut Bed, order: &str| -> Vec<String> {
        bed.ok(
            &ana,
            "dunning_events_list",
            json!({"resource_id": id, "sort_order": order}),
        )["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["code"].as_str().unwrap().to_owned())
            .collect()
    };
    let asc = list(&mut bed, "asc");
    assert_eq!(
        asc,
        [
            "charge.created",
            "charge.paused",
            "charge.resumed",
            "charge.paused",
            "charge.resumed",
            "charge.canceled"
        ]
    );
    let mut desc = list(&mut bed, "desc");
    desc.reverse();
    assert_eq!(desc, asc);
}
