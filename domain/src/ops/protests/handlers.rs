//! The handlers of the protest tools (protest, list, get, cancel) and their arguments.

use chrono::Duration;
use dunning_core::Output;
use serde::Deserialize;
use serde_json::Value;

use super::{
    MAX_DOCUMENTS, Protest, TITLE_TYPES, WITHDRAWABLE, WITHDRAWAL_DAYS, active_protest, commit,
    distance_sale, load_protest,
};
use crate::args::ById;
use crate::error::DomainError;
use crate::list::{Filter, Listing};
use crate::op::{Op, created, ok};
use crate::ops::charges::{self, Charge};
use crate::ops::debtors::Debtor;
use crate::status::{ChargeStatus, ProtestStatus};
use crate::store::{Kind, Order, load, must};

pub(super) struct Plan {
    charge: Charge,
    debtor: Debtor,
    title_type: String,
    document_ids: Vec<String>,
}

/// `dunning_charges_protest` (the documents are checked below, worded for the notary).
#[derive(Debug, Deserialize)]
pub(super) struct ProtestArgs {
    id: String,
    title_type: String,
    document_ids: Value,
}

/// `dunning_protests_cancel`.
#[derive(Debug, Deserialize)]
pub(super) struct CancelArgs {
    id: String,
    mode: String,
    reason: Option<String>,
    consent_letter: Option<bool>,
}

pub(super) fn documents_arg(document_ids: &Value) -> Result<Vec<String>, DomainError> {
    let arr = document_ids.as_array().ok_or_else(|| {
        DomainError::field(
            "document_ids",
            "is required: at least one proof-of-debt document",
        )
    })?;
    if arr.is_empty() {
        return Err(DomainError::field(
            "document_ids",
            "must list at least one proof-of-debt document (Lei 9.492/1997)",
        ));
    }
    if arr.len() > MAX_DOCUMENTS {
        return Err(DomainError::field(
            "document_ids",
            format!("at most {MAX_DOCUMENTS} documents"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(arr.len());
    for v in arr {
        let d = v
            .as_str()
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .ok_or_else(|| DomainError::field("document_ids", "must be non-empty strings"))?;
        if !out.iter().any(|x| x == d) {
            out.push(d.to_owned());
        }
    }
    Ok(out)
}

pub(super) fn plan(op: &mut Op<'_>) -> Result<Plan, DomainError> {
    let args: ProtestArgs = op.args_strict()?;
    let (id, title_type) = (args.id.as_str(), args.title_type.as_str());
    if !TITLE_TYPES.contains(&title_type) {
        return Err(DomainError::field(
            "title_type",
            format!(
                "must be a protestable title: one of {}",
                TITLE_TYPES.join(", ")
            ),
        ));
    }
    let document_ids = documents_arg(&args.document_ids)?;
    let charge = charges::load_charge(op, id)?;
    if charge.status != ChargeStatus::Overdue {
        return Err(DomainError::Conflict(format!(
            "invalid_transition: charge {id} is {}; only overdue charges can be protested",
            charge.status
        )));
    }
    if crate::ops::bureau::is_disputed(&charge) {
        return Err(DomainError::Conflict(format!(
            "charge_disputed: charge {id} is disputed by the debtor; a disputed debt cannot be protested"
        )));
    }
    if let Some(sale) = distance_sale(&charge) {
        let last = sale + Duration::days(WITHDRAWAL_DAYS);
        if op.today() <= last {
            return Err(DomainError::Conflict(format!(
                "withdrawal_window: charge {id} comes from a distance sale on {sale}; the consumer may withdraw until {last} (CDC art. 49), so it cannot be protested before {}",
                last + Duration::days(1)
            )));
        }
    }
    if let Some(p) = active_protest(op, id)? {
        return Err(DomainError::Conflict(format!(
            "already_protested: charge {id} already has protest {} ({})",
            p.id, p.status
        )));
    }
    if !op.settings.allow_negativation_with_protest {
        if let Some(r) = crate::ops::bureau::active_record(op, id)? {
            return Err(DomainError::Conflict(format!(
                "negativation_active: charge {id} has credit-bureau record {} ({}); the organization does not allow an active negativação and an active protest on the same charge",
                r.id, r.status
            )));
        }
    }
    let debtor: Debtor = must(op.tx, Kind::Debtor, op.org, &charge.debtor_id)?;
    Ok(Plan {
        charge,
        debtor,
        title_type: title_type.to_owned(),
        document_ids,
    })
}

pub(super) fn notary_office(d: &Debtor) -> String {
    let city = if d.address.city.trim().is_empty() {
        "São Paulo".to_owned()
    } else {
        d.address.city.clone()
    };
    let state = if d.address.state.trim().is_empty() {
        String::new()
    } else {
        format!("/{}", d.address.state)
    };
    format!("Tabelionato de Protesto de Letras e Títulos de {city}{state}")
}

pub(super) fn title_name(t: &str) -> &'static str {
    match t {
        "duplicata_mercantil" => "duplicata mercantil",
        "duplicata_servico" => "duplicata de serviço",
        "contrato" => "contrato",
        "nota_promissoria" => "nota promissória",
        "cheque" => "cheque",
        _ => "título",
    }
}

pub(super) fn describe_protest(op: &mut Op<'_>) -> Result<String, DomainError> {
    let p = plan(op)?;
    let updated = charges::updated_amount(&p.charge, op.today());
    Ok(format!(
        "Protest {} of {} ({} updated) owed by {} ({}) as a {} at the {}, with {} proof document(s)? The debtor will be intimated by the notary.",
        charges::label(&p.charge),
        p.charge.amount,
        updated,
        p.debtor.name,
        crate::documents::format_document(&p.debtor.cnpj_cpf),
        title_name(&p.title_type),
        notary_office(&p.debtor),
        p.document_ids.len(),
    ))
}

pub(super) fn protest(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let plan = plan(op)?;
    let now = op.timestamp();
    let mut p = Protest {
        id: op.new_id(),
        charge_id: plan.charge.id.clone(),
        debtor_id: plan.debtor.id.clone(),
        status: ProtestStatus::Requested,
        title_type: plan.title_type,
        document_ids: plan.document_ids,
        amount: charges::updated_amount(&plan.charge, op.today()),
        notary_office: notary_office(&plan.debtor),
        requested_at: Some(now.clone()),
        requested_by: op.principal.subject.clone(),
        created_at: now.clone(),
        updated_at: now,
        ..Protest::default()
    };
    commit(op, "protest.requested", None, &mut p)?;
    Ok(created(p))
}

// ---------------------------------------------------------------------------------
// List, get, cancel
// ---------------------------------------------------------------------------------

/// `dunning_protests_list`.
pub(super) const LISTING: Listing = Listing {
    kind: Kind::Protest,
    filters: &[
        Filter::In("status", "status"),
        Filter::Eq("debtor_id", "debtor_id"),
        Filter::Eq("charge_id", "charge_id"),
    ],
    sorts: &[("created_at", "created_at", Order::Desc)],
};

pub(super) fn list_protests(op: &mut Op<'_>) -> Result<Output, DomainError> {
    LISTING.run(op)
}

pub(super) fn get_protest(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let ById { id } = op.args()?;
    Ok(ok(load_protest(op, &id)?))
}

/// What a cancel call will do: `Some(target status)`, `None` when already done.
pub(super) fn cancel_effect(
    args: &CancelArgs,
    p: &Protest,
) -> Result<Option<ProtestStatus>, DomainError> {
    match args.mode.as_str() {
        "withdraw" => {
            if p.status == ProtestStatus::Withdrawn {
                Ok(None)
            } else if p.status.is_withdrawable() {
                Ok(Some(ProtestStatus::Withdrawn))
            } else {
                Err(DomainError::Conflict(format!(
                    "invalid_transition: protest {} is {} and cannot become withdrawn; only {} protests can be withdrawn{}",
                    p.id,
                    p.status,
                    crate::status::joined(WITHDRAWABLE),
                    if p.status == ProtestStatus::Protested {
                        " (a protested title is canceled with mode=cancel and a consent letter)"
                    } else {
                        ""
                    }
                )))
            }
        }
        "cancel" => {
            if p.status == ProtestStatus::Canceled {
                return Ok(None);
            }
            if p.status != ProtestStatus::Protested {
                return Err(DomainError::Conflict(format!(
                    "invalid_transition: protest {} is {} and cannot become canceled; only a protested title can be canceled{}",
                    p.id,
                    p.status,
                    if p.status.is_withdrawable() {
                        " (before protest, use mode=withdraw)"
                    } else {
                        ""
                    }
                )));
            }
            if args.consent_letter != Some(true) {
                return Err(DomainError::field(
                    "consent_letter",
                    "must be true: cancelling a protested title needs the creditor's consent letter (carta de anuência, Lei 9.492/1997 art. 26)",
                ));
            }
            Ok(Some(ProtestStatus::Canceled))
        }
        other => Err(DomainError::field(
            "mode",
            format!("must be withdraw or cancel, not {other}"),
        )),
    }
}

pub(super) fn describe_cancel(op: &mut Op<'_>) -> Result<String, DomainError> {
    let args: CancelArgs = op.args()?;
    let id = args.id.as_str();
    let p = load_protest(op, id)?;
    let effect = cancel_effect(&args, &p)?;
    let name = load::<Debtor>(op.tx, Kind::Debtor, op.org, &p.debtor_id)?
        .map(|d| d.name)
        .unwrap_or_default();
    let amount = p.amount.to_string();
    Ok(match effect {
        Some(ProtestStatus::Withdrawn) => format!(
            "Withdraw the protest of charge {} ({amount}) against {name} at the {} (currently {})?",
            p.charge_id, p.notary_office, p.status
        ),
        Some(_) => format!(
            "Cancel the protested title of charge {} ({amount}) against {name} at the {}, with the creditor's consent letter?",
            p.charge_id, p.notary_office
        ),
        None => format!(
            "Protest {id} against {name} is already {}; nothing will change. Continue?",
            p.status
        ),
    })
}

pub(super) fn cancel(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let args: CancelArgs = op.args_strict()?;
    let mut p = load_protest(op, &args.id)?;
    let Some(to) = cancel_effect(&args, &p)? else {
        return Ok(ok(p));
    };
    let before = p.clone();
    let reason = args.reason;
    crate::status::change(&mut p.status, &p.id, to)?;
    p.finished_at = Some(op.timestamp());
    if to == ProtestStatus::Withdrawn {
        p.withdrawal_reason = reason.or_else(|| Some("desistência do credor".into()));
    } else {
        p.cancellation_reason = reason.or_else(|| Some("carta de anuência do credor".into()));
        p.consent_letter = true;
    }
    commit(op, "protest.canceled", Some(&before), &mut p)?;
    Ok(ok(p))
}

// ---------------------------------------------------------------------------------
// Worker
// ---------------------------------------------------------------------------------

pub(super) fn notary_protocol(p: &Protest) -> String {
    let digits: String =
        p.id.chars()
            .filter(char::is_ascii_hexdigit)
            .take(10)
            .collect();
    format!("PROT-{}", digits.to_uppercase())
}
