//! Completions (MCP `completion/complete`) for prompt arguments and resource template
//! variables: which values fit, and how many there are in all.

use crate::catalog::name;
use std::collections::BTreeMap;

use dunning_core::{Completion, CompletionRef, Ctx, Output};
use serde_json::{Map, Value, json};

use crate::Domain;
use crate::status::ChargeStatus;
use crate::store::{self, Cond, Kind, Order, Query};

/// Ids of a list tool's items (the first page of 100: for small sets only, such as an
/// organization's webhooks or one debtor's contact points) whose id starts with `value`
/// or whose `label` fields contain it (case-insensitive).
fn ids(
    domain: &Domain,
    tool: &str,
    extra: &[(&str, Value)],
    value: &str,
    label: &[&str],
    ctx: Ctx<'_>,
) -> Vec<String> {
    let mut args = Map::new();
    args.insert("per_page".into(), json!(100));
    for (k, v) in extra {
        args.insert((*k).into(), v.clone());
    }
    let Some(Ok(Output::Json { body, .. })) = domain.read_tool(tool, args, ctx) else {
        return Vec::new();
    };
    let needle = value.to_lowercase();
    body.into_value()
        .get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|i| {
                    let id = i.get("id").and_then(Value::as_str).unwrap_or_default();
                    id.starts_with(value)
                        || label.iter().any(|f| {
                            i.get(*f)
                                .and_then(Value::as_str)
                                .is_some_and(|s| s.to_lowercase().contains(&needle))
                        })
                })
                .filter_map(|i| i.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// A search in the store, for completions over sets of any size: every document of one
/// kind in the caller's organization.
struct Search<'a> {
    /// The list tool of the kind: the caller must be allowed to run it.
    tool: &'a str,
    kind: Kind,
    /// Text columns searched besides the id.
    fields: &'static [&'static str],
    /// Other conditions (status, parent).
    conds: Vec<Cond>,
    /// Order of the values.
    sort: (&'static str, Order),
}

impl Search<'_> {
    /// The ids of the documents whose id or `fields` contain `value` (a CPF/CNPJ typed
    /// with punctuation is searched by its digits), the first [`MAX_COMPLETIONS`] in
    /// order, and how many match in all.
    fn run(self, domain: &Domain, value: &str, ctx: Ctx<'_>) -> Completion {
        let allowed = domain
            .tool_def(self.tool)
            .is_some_and(|def| ctx.principal.may(&def.access));
        if !allowed {
            return Completion::default();
        }
        let mut conds = self.conds;
        let needle = needle(value);
        if !needle.is_empty() {
            let mut cols = vec!["id"];
            cols.extend_from_slice(self.fields);
            conds.push(Cond::Search(cols, needle));
        }
        let org = &ctx.principal.organization;
        let found = store::read(domain.store(), |tx| {
            let q = Query {
                conds: conds.clone(),
                sort: self.sort,
                limit: Some(MAX_COMPLETIONS),
                offset: 0,
            };
            store::page::<Value>(tx, self.kind, org, &q)
        });
        let Ok((docs, total)) = found else {
            return Completion::default();
        };
        Completion {
            values: docs
                .iter()
                .filter_map(|d| d.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect(),
            total: usize::try_from(total).unwrap_or(usize::MAX),
        }
    }
}

/// Most values one completion answer carries (the MCP limit).
const MAX_COMPLETIONS: u32 = 100;

/// What a typed value is searched as: a document typed with its punctuation
/// (`529.982.247-25`, `11.222.333/0001-81`: digits with dots or a slash) by its digits,
/// anything else (a name, digits alone, an id prefix) as typed.
fn needle(value: &str) -> String {
    let value = value.trim();
    let document = value.contains(['.', '/'])
        && value
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '/' | ' '));
    if document {
        value.chars().filter(char::is_ascii_digit).collect()
    } else {
        value.to_owned()
    }
}

fn fixed(values: &[&str], value: &str) -> Vec<String> {
    values
        .iter()
        .filter(|v| v.starts_with(value))
        .map(|v| (*v).to_owned())
        .collect()
}

/// Completion values for a prompt argument or template variable.
///
/// Sets that grow with the organization (debtors, charges, agreements, ...) are searched
/// in the store ([`Search`]), so every match counts in `total`; small bounded sets
/// (webhooks, one debtor's contact points, one ruler's steps) are filtered from their
/// list tool's first page.
pub fn complete(
    domain: &Domain,
    reference: CompletionRef<'_>,
    argument: &str,
    value: &str,
    context: &BTreeMap<String, String>,
    ctx: Ctx<'_>,
) -> Completion {
    let search = |tool, kind, fields, conds: Vec<Cond>, sort| {
        Search {
            tool,
            kind,
            fields,
            conds,
            sort,
        }
        .run(domain, value, ctx)
    };
    const DEBTOR_TEXT: &[&str] = &["name", "cnpj_cpf", "external_code"];
    const CHARGE_TEXT: &[&str] = &["description", "external_id"];
    let debtors = |conds| {
        search(
            name::DEBTORS_LIST,
            Kind::Debtor,
            DEBTOR_TEXT,
            conds,
            ("name", Order::Asc),
        )
    };
    let charges = |conds| {
        search(
            name::CHARGES_LIST,
            Kind::Charge,
            CHARGE_TEXT,
            conds,
            ("due_date", Order::Asc),
        )
    };
    let rulers = || {
        search(
            name::RULERS_LIST,
            Kind::Ruler,
            &["name"],
            Vec::new(),
            ("name", Order::Asc),
        )
    };
    let status = |s: ChargeStatus| vec![Cond::Eq("status", json!(s))];
    let by_id = |tool, kind| search(tool, kind, &[], Vec::new(), ("created_at", Order::Desc));
    let webhooks = || {
        ids(
            domain,
            name::WEBHOOKS_LIST,
            &[],
            value,
            &["url", "description"],
            ctx,
        )
        .into()
    };
    let fixed = |values: &[&str]| Completion::from(fixed(values, value));
    match (reference, argument) {
        (CompletionRef::Prompt("overdue_triage"), "min_days_overdue") => {
            fixed(&["1", "5", "15", "30", "60", "90"])
        }
        (CompletionRef::Prompt("overdue_triage"), "limit") => fixed(&["10", "25", "50"]),
        (CompletionRef::Prompt(_), "ruler_id") => rulers(),
        (CompletionRef::Prompt("propose_agreement"), "debtor_id") => {
            debtors(vec![Cond::Ge("overdue_amount", json!(0.01))])
        }
        (CompletionRef::Prompt(_), "debtor_id") => debtors(Vec::new()),
        (CompletionRef::Prompt("propose_agreement"), "max_installments") => fixed(&[
            "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12",
        ]),
        (CompletionRef::Prompt("propose_agreement"), "max_discount_percentage") => {
            fixed(&["0", "5", "10", "20"])
        }
        (CompletionRef::Prompt("negativation_readiness"), "charge_id") => {
            charges(status(ChargeStatus::Overdue))
        }
        (CompletionRef::Prompt("settle_and_document"), "charge_id") => {
            charges(status(ChargeStatus::Paid))
        }
        (CompletionRef::Prompt("design_ruler"), "segment") => {
            fixed(&["b2c", "b2b", "high_ticket", "recurring"])
        }
        (CompletionRef::Prompt("design_ruler"), "channels") => fixed(&["email", "sms", "whatsapp"]),
        (CompletionRef::Prompt(_), "webhook_id") => webhooks(),
        (CompletionRef::Prompt("webhook_troubleshoot"), "since") => fixed(&["1h", "24h", "7d"]),
        (CompletionRef::Prompt("monthly_recovery_report"), "month") => {
            let today = crate::brazil::calendar::today(ctx.now);
            let months: Vec<String> = (0..12u32)
                .filter_map(|i| today.checked_sub_months(chrono::Months::new(i)))
                .map(|d| d.format("%Y-%m").to_string())
                .filter(|m| m.starts_with(value))
                .collect();
            months.into()
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/charges/") => {
            charges(Vec::new())
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/debtors/") => {
            debtors(Vec::new())
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/rulers/") => {
            rulers()
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/agreements/") => {
            by_id(name::AGREEMENTS_LIST, Kind::Agreement)
        }
        (CompletionRef::Resource(uri), "id")
            if uri.starts_with("kobana://dunning/credit-bureau/") =>
        {
            by_id(name::CREDIT_BUREAU_LIST, Kind::CreditBureauRecord)
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/protests/") => {
            by_id(name::PROTESTS_LIST, Kind::Protest)
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/exports/") => {
            by_id("dunning_exports_list", Kind::Export)
        }
        (CompletionRef::Resource(uri), "id") if uri.starts_with("kobana://dunning/webhooks/") => {
            webhooks()
        }
        (CompletionRef::Resource(_), "cp_id") => context
            .get("id")
            .map(|d| {
                let args = json!({ "id": d, "per_page": 100 });
                ids_in(domain, name::CONTACT_POINTS_LIST, args, "data", value, ctx)
            })
            .unwrap_or_default()
            .into(),
        (CompletionRef::Resource(_), "step_id") => context
            .get("id")
            .map(|r| {
                ids_in(
                    domain,
                    name::RULERS_GET,
                    json!({ "id": r }),
                    "steps",
                    value,
                    ctx,
                )
            })
            .unwrap_or_default()
            .into(),
        (CompletionRef::Resource(_), "delivery_id") => match context.get("id") {
            Some(w) => search(
                name::WEBHOOK_DELIVERIES_LIST,
                Kind::WebhookDelivery,
                &["event_code"],
                vec![Cond::Eq("webhook_id", json!(w))],
                ("created_at", Order::Desc),
            ),
            None => Completion::default(),
        },
        _ => Completion::default(),
    }
}

/// The ids starting with `prefix` in the array `field` of what the read tool `tool`
/// answers (a debtor's contact points, a ruler's steps: a handful each).
fn ids_in(
    domain: &Domain,
    tool: &str,
    args: Value,
    field: &str,
    prefix: &str,
    ctx: Ctx<'_>,
) -> Vec<String> {
    let Value::Object(args) = args else {
        return Vec::new();
    };
    match domain.read_tool(tool, args, ctx) {
        Some(Ok(Output::Json { body, .. })) => body
            .into_value()
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|i| i.get("id").and_then(Value::as_str))
                    .filter(|id| id.starts_with(prefix))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}
