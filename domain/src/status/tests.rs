use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;

/// Every variant of `S` reads back from its wire string, through serde (as the bare
/// JSON string) and through `FromStr`, and `ALL`, `NAMES` and `Display` agree.
fn round_trips<S>()
where
    S: Status + Serialize + DeserializeOwned + std::str::FromStr + std::fmt::Display,
{
    assert!(!S::ALL.is_empty());
    for &s in S::ALL {
        let wire = s.as_str();
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, format!("\"{wire}\""));
        assert_eq!(serde_json::from_str::<S>(&json).unwrap(), s);
        assert_eq!(
            serde_json::Value::from(wire),
            serde_json::to_value(s).unwrap()
        );
        assert!(wire.parse::<S>().ok() == Some(s), "{wire}");
        assert_eq!(s.to_string(), wire);
    }
    assert!(serde_json::from_str::<S>("\"nope\"").is_err());
    assert!("nope".parse::<S>().is_err());
}

#[test]
fn every_status_round_trips_to_its_wire_string() {
    round_trips::<ChargeStatus>();
    round_trips::<DebtorStatus>();
    round_trips::<RulerStatus>();
    round_trips::<DeliveryStatus>();
    round_trips::<AgreementStatus>();
    round_trips::<InstallmentStatus>();
    round_trips::<ProtestStatus>();
    round_trips::<ContactPointStatus>();
    round_trips::<ExportStatus>();
    round_trips::<BureauStatus>();
    round_trips::<WebhookDeliveryStatus>();
}

#[test]
fn the_wire_strings_are_the_api_s() {
    assert_eq!(
        ChargeStatus::NAMES,
        [
            "draft",
            "pending",
            "overdue",
            "partially_paid",
            "paid",
            "canceled",
            "renegotiated",
            "written_off",
            "refunded",
            "chargeback",
        ]
    );
    assert_eq!(
        WebhookDeliveryStatus::NAMES,
        ["pending", "delivered", "failed"]
    );
    assert_eq!(
        ExportStatus::NAMES,
        ["queued", "processing", "processed", "failed", "expired"]
    );
    // An installment is scheduled, then carries its charge's status.
    assert_eq!(&InstallmentStatus::NAMES[1..], ChargeStatus::NAMES);
    for &c in ChargeStatus::ALL {
        assert_eq!(InstallmentStatus::from(c).charge(), Some(c));
    }
    assert_eq!(InstallmentStatus::Scheduled.charge(), None);
}

#[test]
fn an_unknown_status_is_a_validation_error_naming_the_known_ones() {
    let e = "sent".parse::<WebhookDeliveryStatus>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "status: sent is not one of pending, delivered, failed"
    );
    assert!(matches!(e, DomainError::Validation { .. }));
}

/// Asserts each pair of `legal` may happen and each of `illegal` may not.
fn table<S: Status + std::str::FromStr>(legal: &[(&str, &str)], illegal: &[(&str, &str)])
where
    S::Err: std::fmt::Debug,
{
    let st = |s: &str| s.parse::<S>().unwrap();
    for (from, to) in legal {
        assert!(st(from).can_become(st(to)), "{from} → {to} should be legal");
    }
    for (from, to) in illegal {
        assert!(
            !st(from).can_become(st(to)),
            "{from} → {to} should be refused"
        );
    }
}

#[test]
fn charge_transitions() {
    table::<ChargeStatus>(
        &[
            ("draft", "pending"),
            ("pending", "overdue"),
            ("overdue", "pending"),
            ("pending", "paid"),
            ("overdue", "partially_paid"),
            ("partially_paid", "partially_paid"),
            ("partially_paid", "paid"),
            ("pending", "canceled"),
            ("partially_paid", "canceled"),
            ("overdue", "renegotiated"),
            ("partially_paid", "renegotiated"),
            ("renegotiated", "overdue"),
            ("renegotiated", "partially_paid"),
            ("overdue", "written_off"),
            ("paid", "refunded"),
            ("paid", "chargeback"),
        ],
        &[
            ("paid", "overdue"),
            ("paid", "paid"),
            ("paid", "canceled"),
            ("draft", "canceled"),
            ("draft", "paid"),
            ("pending", "renegotiated"),
            ("pending", "written_off"),
            ("partially_paid", "written_off"),
            ("partially_paid", "overdue"),
            ("canceled", "pending"),
            ("written_off", "overdue"),
            ("refunded", "paid"),
        ],
    );
    assert!(ChargeStatus::Pending.reaches(ChargeStatus::WrittenOff));
    assert!(ChargeStatus::Overdue.reaches(ChargeStatus::Overdue));
    assert!(!ChargeStatus::Paid.reaches(ChargeStatus::Pending));
}

#[test]
fn debtor_ruler_and_contact_point_transitions() {
    table::<DebtorStatus>(&[("active", "archived")], &[("archived", "active")]);
    table::<RulerStatus>(
        &[
            ("draft", "active"),
            ("active", "paused"),
            ("paused", "active"),
            ("draft", "archived"),
            ("active", "archived"),
            ("paused", "archived"),
        ],
        &[
            ("draft", "paused"),
            ("archived", "active"),
            ("archived", "draft"),
            ("active", "draft"),
        ],
    );
    table::<ContactPointStatus>(&[("active", "invalid")], &[("invalid", "active")]);
}

#[test]
fn delivery_transitions() {
    table::<DeliveryStatus>(
        &[
            ("scheduled", "queued"),
            ("queued", "sent"),
            ("sent", "delivered"),
            ("delivered", "read"),
            ("read", "clicked"),
            ("scheduled", "canceled"),
            ("queued", "canceled"),
            ("queued", "failed"),
            ("sent", "bounced"),
        ],
        &[
            ("sent", "canceled"),
            ("delivered", "failed"),
            ("failed", "sent"),
            ("canceled", "queued"),
            ("scheduled", "sent"),
            ("clicked", "read"),
        ],
    );
}

#[test]
fn agreement_and_installment_transitions() {
    table::<AgreementStatus>(
        &[
            ("draft", "proposed"),
            ("proposed", "accepted"),
            ("proposed", "expired"),
            ("proposed", "canceled"),
            ("accepted", "active"),
            ("accepted", "completed"),
            ("active", "completed"),
            ("accepted", "broken"),
            ("active", "broken"),
            ("accepted", "canceled"),
        ],
        &[
            ("active", "canceled"),
            ("completed", "active"),
            ("expired", "accepted"),
            ("broken", "active"),
            ("proposed", "active"),
        ],
    );
    table::<InstallmentStatus>(
        &[
            ("scheduled", "pending"),
            ("pending", "paid"),
            ("pending", "written_off"),
            ("pending", "canceled"),
        ],
        &[
            ("pending", "scheduled"),
            ("paid", "pending"),
            ("canceled", "pending"),
            ("scheduled", "scheduled"),
        ],
    );
}

#[test]
fn protest_and_bureau_transitions() {
    table::<ProtestStatus>(
        &[
            ("requested", "sent_to_notary"),
            ("sent_to_notary", "intimated"),
            ("intimated", "protested"),
            ("protested", "canceled"),
            ("intimated", "paid_at_notary"),
            ("requested", "withdrawn"),
            ("sent_to_notary", "withdrawn"),
            ("intimated", "withdrawn"),
            ("requested", "rejected"),
            ("requested", "failed"),
        ],
        &[
            ("protested", "withdrawn"),
            ("requested", "canceled"),
            ("sent_to_notary", "paid_at_notary"),
            ("withdrawn", "requested"),
        ],
    );
    table::<BureauStatus>(
        &[
            ("pending_notice", "notice_sent"),
            ("notice_sent", "awaiting_window"),
            ("awaiting_window", "requested"),
            ("requested", "included"),
            ("included", "removal_requested"),
            ("removal_requested", "removed"),
            ("requested", "rejected"),
            ("requested", "failed"),
            ("pending_notice", "canceled"),
            ("notice_sent", "canceled"),
            ("awaiting_window", "canceled"),
        ],
        &[
            ("included", "canceled"),
            ("requested", "canceled"),
            ("removed", "included"),
            ("pending_notice", "included"),
        ],
    );
    assert_eq!(
        names(BureauStatus::ACTIVE),
        [
            "pending_notice",
            "notice_sent",
            "awaiting_window",
            "requested",
            "included",
            "removal_requested",
        ]
    );
    assert_eq!(BureauStatus::EARLY, &BureauStatus::ACTIVE[..3]);
    assert!(BureauStatus::NAMES.ends_with(&["removed", "rejected", "failed", "canceled"]));
}

#[test]
fn export_and_webhook_delivery_transitions() {
    table::<ExportStatus>(
        &[
            ("queued", "processing"),
            ("processing", "processed"),
            ("processing", "failed"),
            ("processed", "expired"),
        ],
        &[
            ("queued", "processed"),
            ("failed", "processing"),
            ("expired", "processed"),
        ],
    );
    table::<WebhookDeliveryStatus>(
        &[
            ("pending", "delivered"),
            ("pending", "failed"),
            ("failed", "pending"),
        ],
        &[("delivered", "pending"), ("delivered", "failed")],
    );
}

#[test]
fn a_change_goes_through_the_table() {
    let mut s = ChargeStatus::Paid;
    let e = change(&mut s, "c1", ChargeStatus::Overdue).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid_transition: charge c1 is paid and cannot become overdue"
    );
    assert!(matches!(e, DomainError::Conflict(_)));
    assert_eq!(s, ChargeStatus::Paid);
    change(&mut s, "c1", ChargeStatus::Refunded).unwrap();
    assert_eq!(s, ChargeStatus::Refunded);
    let mut w = WebhookDeliveryStatus::Delivered;
    assert_eq!(
        change(&mut w, "w1", WebhookDeliveryStatus::Pending)
            .unwrap_err()
            .to_string(),
        "invalid_transition: webhook delivery w1 is delivered and cannot become pending"
    );
}
