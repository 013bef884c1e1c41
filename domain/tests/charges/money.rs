//! The money rules: the updated amount (fine plus pro-rata interest from the effective due
//! date), discounts, when a charge becomes overdue, the consumer interest cap, interest on
//! an open balance.

use super::*;

#[test]
fn rule_updated_amount_fine_plus_prorata_interest() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    // Due Thursday 2026-12-10 (a business day): 1 000,00, fine 2 %, interest 1 %/month.
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "fine_percentage": 2, "interest_percentage": 1}),
    );
    let id = sid(&c);
    bed.advance_days(9); // 2026-12-10, the due date itself: on time.
    let on_time = get(&mut bed, &ana, &id);
    assert_eq!(on_time["updated_amount"], 1000.0);
    assert_eq!(on_time["days_overdue"], 0);
    bed.advance_days(15); // 2026-12-25: 15 days late.
    let late = get(&mut bed, &ana, &id);
    assert_eq!(late["days_overdue"], 15);
    // 1 000 + 20 (fine, once) + 1 000 × 1 % × 15/30 = 1 025,00.
    assert_eq!(late["updated_amount"], 1025.0);
    assert_eq!(late["amount_breakdown"]["fine"], 20.0);
    assert_eq!(late["amount_breakdown"]["interest"], 5.0);
    bed.advance_days(30);
    let later = get(&mut bed, &ana, &id);
    assert_eq!(
        later["updated_amount"], 1035.0,
        "interest grows, the fine does not"
    );
    // The pure function the other modules use agrees.
    let parsed: Charge = serde_json::from_value(later.clone()).unwrap();
    let day = chrono::NaiveDate::from_ymd_opt(2027, 1, 24).unwrap();
    assert_eq!(charges::updated_amount(&parsed, day).brl(), 1035.0);
    assert_eq!(charges::days_overdue(&parsed, day), 45);
}

#[test]
fn rule_interest_counts_from_the_effective_due_date() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    // A company: 3 % a month is above a consumer's cap.
    let d = company(&mut bed, &ana);
    // Due Saturday 2026-12-05: paying on Monday 7 is on time.
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 300.0, "due_date": "2026-12-05", "fine_percentage": 2, "interest_percentage": 3}),
    );
    let id = sid(&c);
    assert_eq!(c["effective_due_date"], "2026-12-07");
    bed.advance_days(6); // Monday 2026-12-07
    assert_eq!(get(&mut bed, &ana, &id)["updated_amount"], 300.0);
    bed.advance_days(1); // Tuesday: 1 day late.
    let g = get(&mut bed, &ana, &id);
    assert_eq!(g["days_overdue"], 1);
    // 300 + 6 + 300 × 3 % / 30 = 306,30.
    assert_eq!(g["updated_amount"], 306.3);
}

#[test]
fn rule_discount_until_its_date() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let c = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 200.0, "discount": {"type": "percentage", "value": 10, "until": "2026-12-05"}}),
    );
    let f = charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 200.0, "discount": {"type": "fixed", "value": 15}}),
    );
    assert_eq!(c["updated_amount"], 180.0);
    assert_eq!(c["amount_breakdown"]["discount"], 20.0);
    assert_eq!(
        f["discount"]["until"], "2026-12-10",
        "defaults to the due date"
    );
    assert_eq!(f["updated_amount"], 185.0);
    bed.advance_days(4); // 2026-12-05: last day of the discount.
    assert_eq!(get(&mut bed, &ana, &sid(&c))["updated_amount"], 180.0);
    bed.advance_days(1);
    assert_eq!(get(&mut bed, &ana, &sid(&c))["updated_amount"], 200.0);
    assert_eq!(get(&mut bed, &ana, &sid(&f))["updated_amount"], 185.0);
}

#[test]
fn rule_overdue_only_after_next_business_day() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    // Saturday 2026-12-05 rolls to Monday 7; Christmas (Friday 25) rolls to Monday 28.
    let weekend = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-05"}),
    ));
    let holiday = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"due_date": "2026-12-25"}),
    ));
    bed.advance_days(5); // Sunday 6
    assert_eq!(sweep(&bed, &ana), 0);
    bed.advance_days(1); // Monday 7: still on time.
    assert_eq!(sweep(&bed, &ana), 0);
    assert_eq!(get(&mut bed, &ana, &weekend)["status"], "pending");
    bed.advance_days(1); // Tuesday 8: overdue.
    assert_eq!(sweep(&bed, &ana), 1);
    assert_eq!(get(&mut bed, &ana, &weekend)["status"], "overdue");
    assert_eq!(sweep(&bed, &ana), 0, "the sweep is idempotent");
    bed.advance_days(20); // Monday 28
    assert_eq!(sweep(&bed, &ana), 0);
    bed.advance_days(1); // Tuesday 29
    assert_eq!(sweep(&bed, &ana), 1);
    assert_eq!(get(&mut bed, &ana, &holiday)["status"], "overdue");
    assert_eq!(
        codes(&mut bed, &ana, &weekend),
        ["charge.created", "charge.overdue"]
    );
    let deb = debtor(&mut bed, &ana, &d);
    assert_eq!(deb["overdue_count"], 2);
    assert_eq!(deb["overdue_amount"], 2469.12);
}

#[test]
fn rule_consumer_interest_capped_at_one_percent_a_month() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = maria(&mut bed, &ana);
    let e = bed.err(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 100.0, "due_date": "2026-12-10",
               "payment_method": "pix", "interest_percentage": 30}),
    );
    assert_field(&e, "interest_percentage");
    assert!(e.message.contains("1% a month"), "{}", e.message);
    charge(&mut bed, &ana, &d, json!({"interest_percentage": 1}));
    let c = company(&mut bed, &ana);
    charge(&mut bed, &ana, &c, json!({"interest_percentage": 5}));
}

#[test]
fn rule_after_a_partial_payment_interest_accrues_on_the_open_balance() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let d = company(&mut bed, &ana);
    // Due Thursday 2026-12-10; 2 % fine, 3 % a month.
    let id = sid(&charge(
        &mut bed,
        &ana,
        &d,
        json!({"amount": 1000.0, "due_date": "2026-12-10", "fine_percentage": 2, "interest_percentage": 3}),
    ));
    bed.advance_days(39); // 2027-01-09: 30 days late.
    let g = get(&mut bed, &ana, &id);
    // 1000 + 20 fine + 1000 × 3 % × 30 / 30 = 1 050.
    assert_eq!(g["updated_amount"], 1050.0);
    // 550 paid: 50 of penalties first, then 500 of principal; 500 stay open.
    bed.ok(
        &ana,
        "dunning_charges_mark_paid",
        json!({"id": id, "paid_amount": 550.0}),
    );
    bed.advance_days(30); // 30 more days: interest on the 500 still open only.
    let g = get(&mut bed, &ana, &id);
    assert_eq!(g["status"], "partially_paid");
    // 1050 + 500 × 3 % − 550 = 515 (on the full 1000 it would be 530).
    assert_eq!(g["updated_amount"], 515.0);
    assert_eq!(g["amount_breakdown"]["interest"], 45.0);
    assert_eq!(g["amount_breakdown"]["paid"], 550.0);
}
