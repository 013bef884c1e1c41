//! Demo deliveries.

use dunning_core::{Output, UnixTime};
use serde_json::{Value, json};

use super::{
    Delivery, creditor, debtor_refusal, delivery_template, pick_contact_point, render_template,
    text,
};
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::rulers;
use crate::status::ChargeStatus;
use crate::status::DeliveryStatus;
use crate::store::{Cond, Kind, Order, Query, find, save};

/// How many demo deliveries.
#[derive(Debug, serde::Deserialize)]
struct DemoCount {
    #[serde(default, deserialize_with = "crate::args::fields::int")]
    count: Option<i64>,
}

/// Demo deliveries in every status for existing charges (the seeding drives this
/// through [`crate::demo::run_as`]): `count` deliveries, statuses in turn.
pub fn seed_demo_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let DemoCount { count } = op.args()?;
    let count = count.unwrap_or(24).max(0) as usize;
    let q = Query {
        conds: vec![Cond::In(
            "status",
            crate::status::values(&[
                ChargeStatus::Pending,
                ChargeStatus::Overdue,
                ChargeStatus::PartiallyPaid,
                ChargeStatus::Paid,
            ]),
        )],
        sort: ("due_date", Order::Asc),
        limit: None,
        offset: 0,
    };
    let charges = op.tx.find(Kind::Charge, op.org, &q)?;
    let steps: Vec<rulers::Step> = find(op.tx, Kind::Step, op.org, &Query::all())?;
    use DeliveryStatus as S;
    let cycle = [
        S::Sent,
        S::Delivered,
        S::Read,
        S::Clicked,
        S::Failed,
        S::Bounced,
        S::Canceled,
        S::Scheduled,
        S::Delivered,
        S::Read,
    ];
    let mut made = 0usize;
    for charge in charges {
        if made >= count {
            break;
        }
        let debtor_id = text(&charge, "debtor_id").unwrap_or_default().to_owned();
        let Some(debtor) = op.tx.get(Kind::Debtor, op.org, &debtor_id)? else {
            continue;
        };
        if debtor_refusal(&debtor).is_some() {
            continue;
        }
        let Some((channel, cp)) = ["email", "sms"].iter().find_map(|ch| {
            pick_contact_point(op.tx, op.org, &debtor_id, ch)
                .ok()
                .flatten()
                .map(|cp| ((*ch).to_owned(), cp))
        }) else {
            continue;
        };
        let status = cycle[made % cycle.len()];
        let paid =
            text(&charge, "status").and_then(ChargeStatus::from_wire) == Some(ChargeStatus::Paid);
        if status == S::Scheduled && paid {
            continue;
        }
        let step = steps
            .iter()
            .find(|s| s.channel == channel && s.action == "notify");
        let days_ago = 1 + (made as u64 % 9);
        let at_ms = op.now.as_millis().saturating_sub(days_ago * 86_400_000);
        let at = if status == S::Scheduled {
            calendar::timestamp(op.now.plus_millis(86_400_000))
        } else {
            calendar::timestamp(UnixTime::from_millis(at_ms))
        };
        let now = op.timestamp();
        // Never handed to a provider.
        let unsent = [S::Scheduled, S::Canceled].contains(&status);
        let mut d = Delivery {
            id: op.new_id(),
            charge_id: text(&charge, "id").unwrap_or_default().to_owned(),
            debtor_id: debtor_id.clone(),
            contact_point_id: text(&cp, "id").map(str::to_owned),
            step_id: step.map(|s| s.id.clone()),
            ruler_id: step.map(|s| s.ruler_id.clone()),
            channel: channel.clone(),
            action: "notify".into(),
            origin: if step.is_some() { "ruler" } else { "manual" }.into(),
            status,
            to: text(&cp, "value").map(str::to_owned),
            template_id: step.is_none().then(|| "reminder".to_owned()),
            scheduled_at: at.clone(),
            attempt: u32::from(!unsent),
            requested_by: Some("system:demo".into()),
            created_at: now.clone(),
            updated_at: now,
            ..Delivery::default()
        };
        if !unsent {
            let c = creditor(op.tx, op.org)?;
            if let Some(t) = delivery_template(op.tx, op.org, &d)? {
                let r = render_template(&t, &charge, &debtor, &c, op.now);
                d.subject = r.subject;
                d.body = Some(r.body);
            }
            d.queued_at = Some(at.clone());
            d.sent_at = Some(at.clone());
            d.provider_message_id = Some(format!("demo-{}", &d.id[..8]));
        }
        match status {
            S::Delivered | S::Read | S::Clicked => d.delivered_at = Some(at.clone()),
            S::Failed | S::Bounced => {
                d.failed_at = Some(at.clone());
                d.error_code = Some(
                    if status == S::Bounced {
                        "mailbox_full"
                    } else {
                        "provider_timeout"
                    }
                    .into(),
                );
                d.error_message = Some("demo failure".into());
            }
            S::Canceled => {
                d.canceled_at = Some(at.clone());
                d.cancel_reason = Some("charge_paused".into());
            }
            _ => {}
        }
        if [S::Read, S::Clicked].contains(&status) {
            d.read_at = Some(at.clone());
        }
        if status == S::Clicked {
            d.clicked_at = Some(at.clone());
        }
        save(op.tx, Kind::Delivery, op.org, &d)?;
        op.event(
            &format!("delivery.{status}"),
            "delivery",
            &d.id,
            &d,
            Value::Null,
        )?;
        made += 1;
    }
    Ok(crate::op::ok(json!({ "created": made })))
}
