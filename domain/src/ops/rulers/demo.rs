//! Demo rulers: a default consumer ruler and a B2B one per organization.

use serde_json::{Value, json};

use super::handlers::{activate_ruler, create_ruler};
use crate::error::DomainError;
use crate::store::{Kind, load};

pub(super) fn demo_step(
    offset: i64,
    channel: &str,
    action: &str,
    subject: Option<&str>,
    body: &str,
) -> Value {
    let mut v = json!({
        "offset_days": offset, "channel": channel, "action": action,
        "template": { "body": body },
    });
    if let Some(sj) = subject {
        v["template"]["subject"] = json!(sj);
    }
    v
}

pub(super) fn demo_rulers(slug: &str) -> Vec<Value> {
    let remind = "Olá, {{debtor.name}}. Sua fatura de {{charge.amount}} vence em {{charge.due_date}}. Linha digitável: {{charge.boleto.line}}. Pix: {{charge.pix.emv}}";
    let today = "{{debtor.name}}, sua fatura de {{charge.amount}} vence hoje. Pague pelo Pix: {{charge.pix.emv}}";
    let late = "Olá, {{debtor.name}}. A fatura vencida em {{charge.due_date}} está em aberto. Valor atualizado: {{charge.updated_amount}}. {{charge.url}}";
    let notice = "Prezado(a) {{debtor.name}}, a fatura vencida em {{charge.due_date}} (valor atualizado {{charge.updated_amount}}) segue em aberto. Nos termos do art. 43, §2º do CDC, não havendo pagamento em 10 dias o débito poderá ser incluído em cadastro de proteção ao crédito. Regularize: {{charge.url}}";
    let task = "Avaliar {{debtor.name}}: fatura de {{charge.amount}} vencida em {{charge.due_date}}, valor atualizado {{charge.updated_amount}}.";
    match slug {
        "demo" => vec![
            json!({
                "name": "Régua padrão B2C",
                "description": "Pessoas físicas: lembrete, aviso no vencimento, cobrança, aviso de negativação e tarefa de negativação.",
                "is_default": true,
                "steps": [
                    demo_step(-5, "email", "notify", Some("Sua fatura vence em {{charge.due_date}}"), remind),
                    demo_step(0, "sms", "notify", None, today),
                    demo_step(3, "whatsapp", "notify", None, late),
                    demo_step(10, "email", "notify", Some("Aviso prévio de negativação"), notice),
                    demo_step(20, "task", "negativate", Some("Negativar?"), task),
                ],
            }),
            json!({
                "name": "Régua B2B",
                "description": "Empresas: contato por e-mail, escalonamento e protesto decidido por uma pessoa.",
                "filters": { "person_type": "juridical" },
                "send_window": { "start": "09:00", "end": "18:00", "weekdays": ["mon", "tue", "wed", "thu", "fri"] },
                "steps": [
                    demo_step(-3, "email", "notify", Some("Fatura {{charge.amount}} vence em {{charge.due_date}}"), remind),
                    demo_step(1, "email", "notify", Some("Fatura em aberto"), late),
                    json!({
                        "offset_days": 5, "channel": "email", "action": "notify", "business_days_only": true,
                        "template": { "subject": "Segunda via e valor atualizado", "body": late },
                    }),
                    demo_step(15, "task", "escalate", Some("Ligar para o financeiro"), task),
                    json!({
                        "offset_days": 30, "channel": "task", "action": "protest",
                        "conditions": { "min_amount": 1000.0 },
                        "template": { "subject": "Protestar?", "body": task },
                    }),
                ],
            }),
        ],
        _ => vec![json!({
            "name": "Régua padrão",
            "is_default": true,
            "steps": [
                demo_step(-3, "email", "notify", Some("Sua fatura vence em {{charge.due_date}}"), remind),
                demo_step(1, "sms", "notify", None, late),
                demo_step(7, "email", "notify", Some("Fatura em aberto"), late),
                demo_step(15, "task", "escalate", Some("Escalar"), task),
            ],
        })],
    }
}

/// Demo seeding (last of [`crate::ops::DEMO_HOOKS`]: deliveries need charges): the
/// rulers of `demo` (default B2C, and B2B) or `acme` (one default), activated, and
/// deliveries in every status for existing charges.
pub fn seed_demo(
    domain: &crate::Domain,
    who: &dunning_core::Principal,
    now: dunning_core::UnixTime,
    rng: &mut crate::demo::Rng,
    _seeded: &crate::demo::Seeded,
    _charges: usize,
) -> Result<(), DomainError> {
    let slug = crate::store::read(domain.store(), |tx| {
        Ok(load::<crate::org::Organization>(
            tx,
            Kind::Organization,
            &who.organization,
            &who.organization,
        )?
        .map(|o| o.slug)
        .unwrap_or_default())
    })?;
    let existing = crate::store::read(domain.store(), |tx| {
        Ok(tx.count(Kind::Ruler, &who.organization, &[])?)
    })?;
    if existing > 0 {
        return Ok(()); // a re-seed of an existing data dir
    }
    for args in demo_rulers(&slug) {
        let out = crate::demo::run_as(domain, who, now, rng.entropy(), create_ruler, args)?;
        let id = out.tool_value()["id"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        crate::demo::run_as(
            domain,
            who,
            now,
            rng.entropy(),
            activate_ruler,
            json!({ "id": id }),
        )?;
    }
    let count = if slug == "demo" { 30 } else { 8 };
    crate::demo::run_as(
        domain,
        who,
        now,
        rng.entropy(),
        crate::ops::deliveries::seed_demo_deliveries,
        json!({ "count": count }),
    )?;
    Ok(())
}
