//! Message text: the built-in templates, the creditor line every message carries, how to pay, and rendering a delivery.

use dunning_core::UnixTime;
use serde_json::Value;

use super::{Delivery, Refusal, text};
use crate::brazil::calendar;
use crate::brazil::money::Money;
use crate::engine::Rendered;
use crate::error::DomainError;
use crate::ops::rulers;
use crate::ops::rulers::Template;
use crate::org::Organization;
use crate::store::{Kind, Tx, load, must};

/// Built-in message templates (`template_id`), usable on every channel, WhatsApp
/// included (they are the organization's approved templates). A step id is a template
/// id too.
pub const BUILTIN_TEMPLATES: &[(&str, &str, &str)] = &[
    (
        "reminder",
        "Lembrete: sua fatura vence em {{charge.due_date}}",
        "Olá, {{debtor.name}}. Lembramos que sua fatura de {{charge.amount}} vence em {{charge.due_date}}. Linha digitável: {{charge.boleto.line}}. Pix copia e cola: {{charge.pix.emv}}. {{charge.url}}",
    ),
    (
        "due_today",
        "Sua fatura vence hoje",
        "Olá, {{debtor.name}}. Sua fatura de {{charge.amount}} vence hoje ({{charge.due_date}}). Pague pelo Pix: {{charge.pix.emv}} ou boleto: {{charge.boleto.line}}. {{charge.url}}",
    ),
    (
        "overdue",
        "Fatura em aberto desde {{charge.due_date}}",
        "Olá, {{debtor.name}}. Não identificamos o pagamento da fatura vencida em {{charge.due_date}}. Valor atualizado: {{charge.updated_amount}}. Regularize pelo Pix: {{charge.pix.emv}} ou boleto: {{charge.boleto.line}}. {{charge.url}}",
    ),
    (
        "negativation_notice",
        "Aviso prévio de inclusão em cadastro de inadimplentes",
        "Prezado(a) {{debtor.name}}, a fatura vencida em {{charge.due_date}}, no valor atualizado de {{charge.updated_amount}}, permanece em aberto. Nos termos do art. 43, §2º do Código de Defesa do Consumidor, informamos que, não havendo pagamento, o débito poderá ser incluído no cadastro de proteção ao crédito {{negativation.bureau}} a partir de {{negativation.eligible_date}}. Para regularizar: {{charge.how_to_pay}}",
    ),
    (
        "payment_link",
        "Link para pagamento",
        "Olá, {{debtor.name}}. Segue o link para pagamento da sua fatura de {{charge.amount}}: {{charge.url}}",
    ),
];

/// The organization as it must appear in every message (CDC art. 42-A).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Creditor {
    /// Legal name.
    pub name: String,
    /// CNPJ, digits.
    pub cnpj: String,
}

impl Creditor {
    /// `Credor: Name — CNPJ 11.222.333/0001-81`.
    pub fn line(&self) -> String {
        format!("Credor: {} — CNPJ {}", self.name, format_cnpj(&self.cnpj))
    }
}

/// `11.222.333/0001-81` from its 14 characters (anything else is returned as is).
pub fn format_cnpj(c: &str) -> String {
    if c.len() != 14 || !c.is_ascii() {
        return c.to_owned();
    }
    format!(
        "{}.{}.{}/{}-{}",
        &c[..2],
        &c[2..5],
        &c[5..8],
        &c[8..12],
        &c[12..]
    )
}

/// The organization's identification.
pub fn creditor(tx: &mut dyn Tx, org: &str) -> Result<Creditor, DomainError> {
    let o: Organization = must(tx, Kind::Organization, org, org)?;
    Ok(Creditor {
        name: o.name,
        cnpj: o.cnpj,
    })
}

/// Every way the charge can be paid (boleto line, Pix copy-and-paste code, payment
/// page), or, when it has none, how to reach the creditor: a debtor told to pay must be
/// told how.
pub(super) fn how_to_pay(line: &str, emv: &str, url: &str, creditor: &Creditor) -> String {
    let ways: Vec<String> = [
        ("linha digitável do boleto", line),
        ("Pix copia e cola", emv),
        ("página de pagamento", url),
    ]
    .iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(what, v)| format!("{what} {v}"))
    .collect();
    if ways.is_empty() {
        format!(
            "entre em contato com {} (CNPJ {}) pelos canais de atendimento informados na sua fatura.",
            creditor.name,
            format_cnpj(&creditor.cnpj)
        )
    } else {
        format!("{}.", ways.join("; "))
    }
}

/// `dd/mm/yyyy` from `YYYY-MM-DD`.
pub(super) fn br_date(iso: &str) -> String {
    calendar::parse_date(iso).map_or_else(|| iso.to_owned(), |d| d.format("%d/%m/%Y").to_string())
}

/// The charge's updated amount today (fine and interest after the effective due date,
/// minus payments), computed by the charges module — the same figure every read shows.
pub fn updated_amount(charge: &Value, now: UnixTime) -> Money {
    match serde_json::from_value::<crate::ops::charges::Charge>(charge.clone()) {
        Ok(c) => crate::ops::charges::updated_amount(&c, calendar::today(now)),
        Err(_) => Money::in_doc(charge, "amount"),
    }
}

/// Renders a template for a charge and debtor (JSON documents), appending the creditor's
/// identification to the body.
pub fn render_template(
    template: &Template,
    charge: &Value,
    debtor: &Value,
    creditor: &Creditor,
    now: UnixTime,
) -> Rendered {
    let vars = |name: &str| -> String {
        let nested = |a: &str, b: &str| {
            charge
                .get(a)
                .and_then(|o| o.get(b))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let url = || {
            text(charge, "url")
                .map(str::to_owned)
                .or_else(|| Some(nested("boleto", "url")).filter(|u| !u.is_empty()))
                .or_else(|| Some(nested("pix", "qrcode_png_url")).filter(|u| !u.is_empty()))
                .unwrap_or_default()
        };
        match name {
            "debtor.name" => text(debtor, "name").unwrap_or_default().to_owned(),
            "charge.amount" => Money::in_doc(charge, "amount").to_string(),
            "charge.due_date" => br_date(text(charge, "due_date").unwrap_or_default()),
            "charge.updated_amount" => updated_amount(charge, now).to_string(),
            "charge.boleto.line" => nested("boleto", "line"),
            "charge.pix.emv" => nested("pix", "emv"),
            "charge.url" => url(),
            "charge.how_to_pay" => how_to_pay(
                &nested("boleto", "line"),
                &nested("pix", "emv"),
                &url(),
                creditor,
            ),
            _ => String::new(),
        }
    };
    let subject = template
        .subject
        .as_deref()
        .map(|sj| rulers::render_text(sj, &vars));
    let body = format!(
        "{}\n\n{}",
        rulers::render_text(&template.body, &vars).trim_end(),
        creditor.line()
    );
    let mut variables: Vec<(String, String)> = Vec::new();
    for name in rulers::template_variables(&template.body).unwrap_or_default() {
        if !variables.iter().any(|(n, _)| *n == name) {
            let value = vars(&name);
            variables.push((name, value));
        }
    }
    variables.push(("creditor".into(), creditor.line()));
    Rendered {
        subject,
        body,
        creditor_name: creditor.name.clone(),
        creditor_cnpj: creditor.cnpj.clone(),
        variables,
        ..Rendered::default()
    }
}

/// A built-in template by name, or a step's template by step id.
pub fn find_template(
    tx: &mut dyn Tx,
    org: &str,
    template_id: &str,
) -> Result<Option<Template>, DomainError> {
    if let Some((_, subject, body)) = BUILTIN_TEMPLATES.iter().find(|t| t.0 == template_id) {
        return Ok(Some(Template {
            subject: Some((*subject).to_owned()),
            body: (*body).to_owned(),
        }));
    }
    Ok(load::<rulers::Step>(tx, Kind::Step, org, template_id)?.map(|st| st.template))
}

pub(super) fn task_template(d: &Delivery) -> Template {
    let what = match d.action.as_str() {
        "negativate" => "Avaliar negativação (inclusão em cadastro de inadimplentes)",
        "protest" => "Avaliar protesto em cartório",
        "escalate" => "Escalar cobrança",
        _ => "Acompanhar cobrança",
    };
    Template {
        subject: Some(format!("Tarefa: {what}")),
        body: format!(
            "{what} de {{{{debtor.name}}}}: fatura de {{{{charge.amount}}}} vencida em {{{{charge.due_date}}}} (valor atualizado {{{{charge.updated_amount}}}}). Ação a decidir por uma pessoa; nada foi executado automaticamente."
        ),
    }
}

/// The template of a delivery: its step's, its `template_id`'s, its free message, or
/// (tasks) a standard task text.
pub fn delivery_template(
    tx: &mut dyn Tx,
    org: &str,
    d: &Delivery,
) -> Result<Option<Template>, DomainError> {
    if let Some(step_id) = &d.step_id {
        if let Some(st) = load::<rulers::Step>(tx, Kind::Step, org, step_id)? {
            if st.channel == "task" && st.template.body.trim().is_empty() {
                return Ok(Some(task_template(d)));
            }
            return Ok(Some(st.template));
        }
    }
    if let Some(t) = &d.template_id {
        if let Some(t) = find_template(tx, org, t)? {
            return Ok(Some(t));
        }
    }
    if let Some(m) = &d.message {
        return Ok(Some(Template {
            subject: d.subject.clone(),
            body: m.clone(),
        }));
    }
    if d.channel == "task" {
        return Ok(Some(task_template(d)));
    }
    Ok(None)
}

/// Renders a delivery with the current charge and debtor, or says why it cannot go out.
pub fn render_delivery(
    tx: &mut dyn Tx,
    org: &str,
    d: &Delivery,
    charge: &Value,
    debtor: &Value,
    now: UnixTime,
) -> Result<Result<Rendered, Refusal>, DomainError> {
    let c = creditor(tx, org)?;
    if c.name.trim().is_empty() || c.cnpj.trim().is_empty() {
        return Ok(Err(Refusal::conflict(
            "creditor_identification_missing",
            "the organization has no name or CNPJ: every message must identify the creditor (CDC art. 42-A)".into(),
        )));
    }
    let Some(t) = delivery_template(tx, org, d)? else {
        return Ok(Err(Refusal::conflict(
            "template_missing",
            format!("delivery {} has no template or message to send", d.id),
        )));
    };
    let mut r = render_template(&t, charge, debtor, &c, now);
    r.channel = d.channel.clone();
    r.to.clone_from(&d.to);
    r.org_id = org.to_owned();
    r.delivery_id.clone_from(&d.id);
    r.contact_point_id.clone_from(&d.contact_point_id);
    // The template a provider must have approved: the step's (by its id) or the
    // built-in one named; a free text has none.
    r.template_id = d.step_id.clone().or_else(|| d.template_id.clone());
    if r.subject.is_none() && d.channel == "email" {
        r.subject = Some(format!("Aviso de cobrança — {}", c.name));
    }
    Ok(Ok(r))
}

/// A ruler delivery's id: one per (charge, step), the same on every tick and replica.
pub fn ruler_delivery_id(org: &str, charge_id: &str, step_id: &str) -> String {
    crate::demo::stable_id(&format!("delivery:{org}:{charge_id}:{step_id}"))
}
