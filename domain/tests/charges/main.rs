//! Charges and the debtor statement: happy paths, validation,
//! transitions, the Brazilian rules (consumer fine cap, business-day due dates, fine +
//! pro-rata interest, settlement only when paid), isolation and idempotency.
//!
//! The bed's clock starts on Tuesday 2026-12-01, 09:00 in São Paulo.
//!
//! One file per subject (the modules below), sharing the helpers here.

mod contract;
mod create;
mod demo;
mod documents;
mod lifecycle;
mod money;
mod pages;

use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::{Dispatch, Output, Principal, ToolError, ToolErrorCode};
use dunning_domain::error::DomainError;
use dunning_domain::op::Op;
use dunning_domain::ops::charges::{self, Charge};
use dunning_domain::store::{self, Cond, Kind, Query};
use dunning_domain::testing::{Bed, preflight};
use serde_json::{Value, json};

fn maria(bed: &mut Bed, who: &Principal) -> String {
    let d = bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    d["id"].as_str().unwrap().to_owned()
}

fn company(bed: &mut Bed, who: &Principal) -> String {
    let d = bed.ok(
        who,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "11.444.777/0001-61", "name": "Padaria Pão Quente Ltda"}),
    );
    d["id"].as_str().unwrap().to_owned()
}

fn charge(bed: &mut Bed, who: &Principal, debtor: &str, extra: Value) -> Value {
    let mut args = json!({
        "debtor_id": debtor,
        "amount": 1234.56,
        "due_date": "2026-12-10",
        "payment_method": "boleto",
        "description": "Mensalidade de dezembro",
    });
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    bed.ok(who, "dunning_charges_create", args)
}

fn sid(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

fn get(bed: &mut Bed, who: &Principal, id: &str) -> Value {
    bed.ok(who, "dunning_charges_get", json!({"id": id}))
}

fn debtor(bed: &mut Bed, who: &Principal, id: &str) -> Value {
    bed.ok(who, "dunning_debtors_get", json!({"id": id}))
}

static ENTROPY: AtomicU64 = AtomicU64::new(1 << 40);

/// Runs the overdue sweep as the ruler engine does.
fn sweep(bed: &Bed, who: &Principal) -> u32 {
    fn run(op: &mut Op<'_>) -> Result<Output, DomainError> {
        let n = charges::sweep_overdue(op)?;
        Ok(Output::ok(json!(n)))
    }
    let mut entropy = [0u8; 32];
    entropy[..8].copy_from_slice(&ENTROPY.fetch_add(1, Ordering::Relaxed).to_be_bytes());
    match dunning_domain::demo::run_as(&bed.domain, who, bed.now, entropy, run, json!({})) {
        Ok(Output::Json { body, .. }) => body.into_value().as_u64().unwrap() as u32,
        other => panic!("{other:?}"),
    }
}

fn file(out: Output) -> dunning_core::File {
    match out {
        Output::File(f) => f,
        other => panic!("not a file: {other:?}"),
    }
}

/// The codes of a charge's timeline, oldest first.
fn codes(bed: &mut Bed, who: &Principal, id: &str) -> Vec<String> {
    let t = bed.ok(
        who,
        "dunning_charges_timeline",
        json!({"id": id, "per_page": 100}),
    );
    t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect()
}

fn assert_field(e: &ToolError, field: &str) {
    assert_eq!(e.code, ToolErrorCode::Validation, "{e:?}");
    assert!(
        e.details.iter().any(|d| d.field == field),
        "expected {field}: {e:?}"
    );
}
