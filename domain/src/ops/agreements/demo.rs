//! Demo agreements.

use dunning_core::{Output, UnixTime};
use serde_json::{Value, json};
use std::collections::BTreeSet;

use super::accept::{accept, short};
use super::plan::fmt_date;
use super::{check_broken, create_agreement, end_of_day};
use crate::brazil::calendar;
use crate::demo::{Rng, Seeded};
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::charges::Charge;
use crate::ops::debtors::Debtor;
use crate::status::ChargeStatus;
use crate::store::{Cond, Kind, Order, Query, find, load};
use crate::{Domain, store};

pub(super) const DAY_MS_I: i64 = 86_400_000;

pub(super) fn at(now: UnixTime, days: i64) -> UnixTime {
    let ms = i64::try_from(now.as_millis()).unwrap_or(i64::MAX) + days * DAY_MS_I;
    UnixTime::from_millis(u64::try_from(ms).unwrap_or_default())
}

/// Like [`crate::demo::run_as`], with the organization's settings and its own outbound
/// budget: the demo's history is written at past times, which a shared limiter would
/// refuse.
pub(super) fn demo_run(
    domain: &Domain,
    principal: &dunning_core::Principal,
    now: UnixTime,
    entropy: [u8; 32],
    run: crate::tool::Run,
    args: Value,
) -> Result<Output, DomainError> {
    let outbound = crate::outbound::Outbound::new(1000);
    let org = principal.organization.clone();
    crate::demo::run_with(
        domain,
        (principal, now, entropy),
        run,
        args,
        &outbound,
        |tx| {
            Ok(
                load::<crate::org::Organization>(tx, Kind::Organization, &org, &org)?
                    .map(|o| o.settings)
                    .unwrap_or_default(),
            )
        },
    )
}

pub(super) fn worker_run(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let b = crate::ops::bureau::advance(op)?;
    let p = crate::ops::protests::advance(op)?;
    let a = check_broken(op)?;
    Ok(Output::ok(
        json!({ "bureau": b, "protests": p, "agreements": a }),
    ))
}

/// The demo hook of agreements, credit bureau and protest (the `demo` command): one accepted
/// agreement with its installments, one negativação included after its notice window,
/// one protest at the notary — each through the same handlers the tools run, at the
/// times it would have happened (days before `now`).
pub fn seed_demo(
    domain: &Domain,
    who: &dunning_core::Principal,
    now: UnixTime,
    rng: &mut Rng,
    seeded: &Seeded,
    _charges: usize,
) -> Result<(), DomainError> {
    if seeded.debtors.is_empty() {
        return Ok(());
    }
    let org = who.organization.clone();
    let today = calendar::today(now);
    let old_enough = fmt_date(today - chrono::Duration::days(30));
    let overdue: Vec<Charge> = store::read(domain.store(), |tx| {
        let q = Query {
            conds: vec![
                Cond::Eq("status", json!(ChargeStatus::Overdue)),
                Cond::Le("due_date", json!(old_enough)),
            ],
            sort: ("due_date", Order::Desc),
            limit: None,
            offset: 0,
        };
        find::<Charge>(tx, Kind::Charge, &org, &q)
    })?;
    let mut used: BTreeSet<String> = BTreeSet::new();
    let try_run = |rng: &mut Rng,
                   days: i64,
                   run: crate::tool::Run,
                   args: Value|
     -> Result<Option<Value>, DomainError> {
        match demo_run(domain, who, at(now, days), rng.entropy(), run, args) {
            Ok(Output::Json { body, .. }) => Ok(Some(body.into_value())),
            Ok(_) => Ok(Some(Value::Null)),
            Err(DomainError::Conflict(_) | DomainError::Validation { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    };
    // A negativação: notice 20 days ago, included after the 10-day window.
    for c in &overdue {
        let args = json!({"id": c.id, "bureau": "serasa"});
        if try_run(rng, -20, crate::ops::bureau::seed_demo_run, args)?.is_some() {
            used.insert(c.debtor_id.clone());
            try_run(rng, -19, worker_run, json!({}))?;
            try_run(rng, -9, worker_run, json!({}))?;
            break;
        }
    }
    // A protest: an overdue charge of a company not used above.
    let mut companies: Vec<&Charge> = Vec::new();
    let mut people: Vec<&Charge> = Vec::new();
    for c in overdue.iter().filter(|c| !used.contains(&c.debtor_id)) {
        let juridical = store::read(domain.store(), |tx| {
            Ok(load::<Debtor>(tx, Kind::Debtor, &org, &c.debtor_id)?
                .is_some_and(|d| d.person_type == "juridical"))
        })?;
        if juridical {
            companies.push(c);
        } else {
            people.push(c);
        }
    }
    for c in companies.into_iter().chain(people) {
        let args = json!({
            "id": c.id,
            "title_type": "duplicata_servico",
            "document_ids": [format!("NF-{}", short(&c.id)), "comprovante-de-prestacao"],
        });
        if try_run(rng, -6, crate::ops::protests::seed_demo_run, args)?.is_some() {
            used.insert(c.debtor_id.clone());
            try_run(rng, -5, worker_run, json!({}))?;
            try_run(rng, -4, worker_run, json!({}))?;
            break;
        }
    }
    // An accepted agreement: every overdue charge of another debtor, 10% off, a down
    // payment and three installments.
    let mut by_debtor: Vec<(String, Vec<String>)> = Vec::new();
    for c in &overdue {
        if used.contains(&c.debtor_id) {
            continue;
        }
        match by_debtor.iter_mut().find(|(d, _)| *d == c.debtor_id) {
            Some((_, ids)) => ids.push(c.id.clone()),
            None => by_debtor.push((c.debtor_id.clone(), vec![c.id.clone()])),
        }
    }
    for (debtor_id, ids) in &by_debtor {
        let proposal = json!({
            "debtor_id": debtor_id,
            "charge_ids": ids,
            "installments_count": 3,
            "discount_percentage": 10,
            "down_payment_amount": 50,
            "first_due_date": fmt_date(today + chrono::Duration::days(5)),
            "expires_at": end_of_day(today + chrono::Duration::days(2)),
        });
        let Some(a) = try_run(rng, -3, create_agreement, proposal)? else {
            continue;
        };
        let id = a.get("id").cloned().unwrap_or(Value::Null);
        if try_run(rng, -2, accept, json!({"id": id, "accepted_by": "debtor"}))?.is_some() {
            used.insert(debtor_id.clone());
            break;
        }
    }
    Ok(())
}
