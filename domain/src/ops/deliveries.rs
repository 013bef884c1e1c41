//! Notifications and deliveries (domain.md §1, tools #22, #52–#54): every message to a
//! debtor, manual or from a ruler step, is a delivery in an outbox that the engine
//! ([`crate::engine`]) hands to the delivery driver.
//!
//! Machine (domain §1.1): `scheduled→queued→sent→delivered→read→clicked`;
//! `scheduled|queued→canceled` (charge paid/canceled/paused, opt-out, ...);
//! `queued|sent→failed|bounced`. Resend never mutates: it creates a new delivery with
//! `resent_from_id`.
//!
//! Collection conduct (domain §1.2 rule 4), enforced here for manual messages and by the
//! engine again right before anything is handed to the driver: no message to a
//! `do_not_contact` debtor, to an opted-out or invalid contact point, WhatsApp only to
//! `opted_in` contact points and only with templates, never outside the send window, and
//! every message carries the creditor's name and CNPJ (CDC art. 42-A). Charges that are
//! paid, canceled, renegotiated or written off, paused, or in an accepted/active
//! agreement get nothing (rule 6).

use chrono::NaiveDateTime;
use dunning_core::{Output, Scope, UnixTime};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::engine::Rendered;
use crate::error::DomainError;
use crate::op::{Op, created, list};
use crate::ops::rulers::{self, DUNNABLE, SendWindow, Template, Window};
use crate::org::Organization;
use crate::outbound::Budget;
use crate::rules::{calendar, money};
use crate::schema as s;
use crate::spec::{ToolSpec, tool};
use crate::store::{Cond, Kind, Order, Query, Tx, find, load, must, save};

/// Delivery statuses.
pub const STATUSES: &[&str] = &[
    "scheduled",
    "queued",
    "sent",
    "delivered",
    "read",
    "clicked",
    "canceled",
    "failed",
    "bounced",
];
/// Channels a person can message a debtor on.
pub const MESSAGE_CHANNELS: &[&str] = &["email", "sms", "whatsapp"];
/// Delivery channels (step channels).
pub const CHANNELS: &[&str] = &["email", "sms", "whatsapp", "webhook", "task"];
/// Most charges in one notification.
pub const MAX_BULK: usize = 500;

/// A message (or a task for a person) about one charge.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Delivery {
    /// UUID (ruler deliveries: derived from charge and step, see [`ruler_delivery_id`]).
    pub id: String,
    /// The notification (send request) it belongs to, for manual and bulk sends.
    pub notification_id: Option<String>,
    /// The charge.
    pub charge_id: String,
    /// The debtor.
    pub debtor_id: String,
    /// The contact point (none for `task` and `webhook`).
    pub contact_point_id: Option<String>,
    /// The ruler step that made it.
    pub step_id: Option<String>,
    /// The ruler of that step.
    pub ruler_id: Option<String>,
    /// `email`, `sms`, `whatsapp`, `webhook` or `task`.
    pub channel: String,
    /// `notify`, or `negativate`/`protest`/`escalate` for a task a person must decide.
    pub action: String,
    /// `ruler`, `manual` or `api`.
    pub origin: String,
    /// Status (see the module docs).
    pub status: String,
    /// Address or number the message goes to.
    pub to: Option<String>,
    /// Built-in template name or step id used.
    pub template_id: Option<String>,
    /// Free-text message (manual sends), with variables.
    pub message: Option<String>,
    /// Subject of the message (rendered once sent).
    pub subject: Option<String>,
    /// Body as sent (rendered, with the creditor's identification).
    pub body: Option<String>,
    /// When it goes out (local RFC 3339).
    pub scheduled_at: String,
    /// When it entered the outbox queue.
    pub queued_at: Option<String>,
    /// When the driver accepted it.
    pub sent_at: Option<String>,
    /// When the provider confirmed delivery.
    pub delivered_at: Option<String>,
    /// When the debtor read it.
    pub read_at: Option<String>,
    /// When the debtor clicked its link.
    pub clicked_at: Option<String>,
    /// When it failed or bounced.
    pub failed_at: Option<String>,
    /// When it was canceled.
    pub canceled_at: Option<String>,
    /// Why it was canceled (machine code, e.g. `opted_out`).
    pub cancel_reason: Option<String>,
    /// Failure code.
    pub error_code: Option<String>,
    /// Failure or cancellation detail.
    pub error_message: Option<String>,
    /// The provider's id for the message.
    pub provider_message_id: Option<String>,
    /// Send attempts so far (a resend starts from the original's count).
    pub attempt: u32,
    /// The delivery this one re-sends.
    pub resent_from_id: Option<String>,
    /// Who asked for it (person), or the engine.
    pub requested_by: Option<String>,
    /// Outbox claim (internal): who is sending it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_token: Option<String>,
    /// Outbox claim (internal): until when.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_until: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Last change.
    pub updated_at: String,
}

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

/// Why a message may not go out: a machine `code`, a precise message, and the argument
/// it is about when the caller chose it (then it is a validation error, else a conflict).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Machine code, e.g. `do_not_contact`, `opted_out`, `charge_paid`.
    pub code: String,
    /// What is wrong, naming the entity and its state.
    pub message: String,
    /// The argument at fault (validation) or `None` (conflict with a state).
    pub field: Option<&'static str>,
}

impl Refusal {
    fn conflict(code: impl Into<String>, message: String) -> Self {
        Self {
            code: code.into(),
            message,
            field: None,
        }
    }

    /// The refusal as the tool error.
    pub fn into_error(self) -> DomainError {
        match self.field {
            Some(f) => DomainError::field(f, self.message),
            None => DomainError::Conflict(format!("{}: {}", self.code, self.message)),
        }
    }
}

fn text<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// Whether dunning of a charge is paused at `now`, and until when: `dunning_paused`
/// with `dunning_paused_until` (a date, inclusive, or a timestamp; none: until resumed).
pub fn paused(charge: &Value, now: UnixTime) -> Option<String> {
    let until = text(charge, "dunning_paused_until");
    let flag = charge
        .get("dunning_paused")
        .and_then(Value::as_bool)
        .unwrap_or_else(|| until.is_some());
    if !flag {
        return None;
    }
    match until {
        None => Some("resumed".to_owned()),
        Some(until) => {
            let still = match calendar::parse_date(until) {
                Some(d) => calendar::today(now) <= d,
                None => calendar::parse_timestamp(until).is_none_or(|t| {
                    t.timestamp_millis() > i64::try_from(now.as_millis()).unwrap_or(i64::MAX)
                }),
            };
            still.then(|| until.to_owned())
        }
    }
}

/// Why a charge gets no dunning at `now` (rule 6), or `None`.
pub fn charge_stop(
    tx: &mut dyn Tx,
    org: &str,
    charge: &Value,
    now: UnixTime,
) -> Result<Option<Refusal>, DomainError> {
    let id = text(charge, "id").unwrap_or_default();
    let status = text(charge, "status").unwrap_or_default();
    if !DUNNABLE.contains(&status) {
        let why = match status {
            "draft" => "it has not been issued yet",
            "paid" | "refunded" | "chargeback" => "it is paid",
            "canceled" => "it was canceled",
            "renegotiated" => "it was renegotiated in an agreement",
            "written_off" => "it was written off",
            _ => "dunning stops on it",
        };
        return Ok(Some(Refusal::conflict(
            format!("charge_{status}"),
            format!("charge {id} is {status}: {why}, so the debtor is not contacted about it"),
        )));
    }
    if let Some(until) = paused(charge, now) {
        let reason = text(charge, "pause_reason")
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        return Ok(Some(Refusal::conflict(
            "charge_paused",
            format!("charge {id} has dunning paused until {until}{reason}; resume it first"),
        )));
    }
    if let Some(aid) = text(charge, "agreement_id") {
        if let Some(a) = tx.get(Kind::Agreement, org, aid)? {
            let st = text(&a, "status").unwrap_or_default();
            if matches!(st, "accepted" | "active") {
                return Ok(Some(Refusal::conflict(
                    "in_agreement",
                    format!(
                        "charge {id} is in agreement {aid}, which is {st}: the agreement's installments are collected instead"
                    ),
                )));
            }
        }
    }
    Ok(None)
}

/// Why a debtor may not be contacted at all, or `None`.
pub fn debtor_refusal(debtor: &Value) -> Option<Refusal> {
    let id = text(debtor, "id").unwrap_or_default();
    let name = text(debtor, "name").unwrap_or_default();
    if debtor.get("do_not_contact").and_then(Value::as_bool) == Some(true) {
        return Some(Refusal::conflict(
            "do_not_contact",
            format!("debtor {id} ({name}) is marked do_not_contact: no channel may be used"),
        ));
    }
    if text(debtor, "status") == Some("archived") {
        return Some(Refusal::conflict(
            "debtor_archived",
            format!("debtor {id} ({name}) is archived"),
        ));
    }
    None
}

/// Why a contact point may not receive a message on `channel`, or `None`.
pub fn contact_refusal(cp: &Value, channel: &str) -> Option<Refusal> {
    let id = text(cp, "id").unwrap_or_default();
    let value = text(cp, "value").unwrap_or_default();
    let cp_channel = text(cp, "channel").unwrap_or_default();
    if cp_channel != channel {
        return Some(Refusal {
            code: "channel_mismatch".into(),
            message: format!("contact point {id} is a {cp_channel} contact, not {channel}"),
            field: Some("contact_point_id"),
        });
    }
    if text(cp, "status") == Some("invalid") {
        return Some(Refusal::conflict(
            "contact_point_invalid",
            format!("contact point {id} ({value}) is invalid"),
        ));
    }
    let consent = text(cp, "consent").unwrap_or("unknown");
    if consent == "opted_out" {
        return Some(Refusal::conflict(
            "opted_out",
            format!(
                "contact point {id} ({value}) opted out of messages (LGPD): it is never contacted again"
            ),
        ));
    }
    if channel == "whatsapp" && consent != "opted_in" {
        return Some(Refusal::conflict(
            "whatsapp_not_opted_in",
            format!(
                "contact point {id} ({value}) has consent {consent}: WhatsApp goes only to opted_in contacts"
            ),
        ));
    }
    None
}

/// The contact point a message on `channel` goes to: the debtor's primary eligible one,
/// else the oldest eligible one.
pub fn pick_contact_point(
    tx: &mut dyn Tx,
    org: &str,
    debtor_id: &str,
    channel: &str,
) -> Result<Option<Value>, DomainError> {
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::Eq("channel", json!(channel)));
    let eligible: Vec<Value> = tx
        .find(Kind::ContactPoint, org, &q)?
        .into_iter()
        .filter(|cp| contact_refusal(cp, channel).is_none())
        .collect();
    let primary = eligible
        .iter()
        .position(|cp| cp.get("is_primary").and_then(Value::as_bool) == Some(true));
    Ok(primary
        .or_else(|| (!eligible.is_empty()).then_some(0))
        .map(|i| eligible[i].clone()))
}

/// Why a debtor has no contact point for a message on `channel`: the refusal of the
/// best one there is (primary first: opted out, invalid, WhatsApp not opted in), or
/// `no_contact_point` when there is none.
pub fn no_contact_refusal(
    tx: &mut dyn Tx,
    org: &str,
    debtor: &Value,
    channel: &str,
) -> Result<Refusal, DomainError> {
    let debtor_id = text(debtor, "id").unwrap_or_default();
    let q = Query::all()
        .with(Cond::Eq("debtor_id", json!(debtor_id)))
        .with(Cond::Eq("channel", json!(channel)));
    let mut cps = tx.find(Kind::ContactPoint, org, &q)?;
    cps.sort_by_key(|cp| cp.get("is_primary").and_then(Value::as_bool) != Some(true));
    if let Some(r) = cps.iter().find_map(|cp| contact_refusal(cp, channel)) {
        return Ok(r);
    }
    let name = text(debtor, "name").unwrap_or_default();
    let need = if channel == "whatsapp" {
        "active and opted_in"
    } else {
        "active and not opted out"
    };
    Ok(Refusal::conflict(
        "no_contact_point",
        format!(
            "debtor {debtor_id} ({name}) has no {channel} contact point that may receive messages ({need})"
        ),
    ))
}

/// Every way the charge can be paid (boleto line, Pix copy-and-paste code, payment
/// page), or, when it has none, how to reach the creditor: a debtor told to pay must be
/// told how.
fn how_to_pay(line: &str, emv: &str, url: &str, creditor: &Creditor) -> String {
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
fn br_date(iso: &str) -> String {
    calendar::parse_date(iso).map_or_else(|| iso.to_owned(), |d| d.format("%d/%m/%Y").to_string())
}

fn brl(x: f64) -> String {
    money::format_brl(money::cents(money::round2(x)).unwrap_or_default())
}

/// The charge's updated amount today (fine and interest after the effective due date,
/// minus payments), computed by the charges module — the same figure every read shows.
pub fn updated_amount(charge: &Value, now: UnixTime) -> f64 {
    match serde_json::from_value::<crate::ops::charges::Charge>(charge.clone()) {
        Ok(c) => crate::ops::charges::updated_amount(&c, calendar::today(now)),
        Err(_) => charge
            .get("amount")
            .and_then(Value::as_f64)
            .unwrap_or_default(),
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
            "charge.amount" => brl(charge
                .get("amount")
                .and_then(Value::as_f64)
                .unwrap_or_default()),
            "charge.due_date" => br_date(text(charge, "due_date").unwrap_or_default()),
            "charge.updated_amount" => brl(updated_amount(charge, now)),
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
    Rendered {
        channel: String::new(),
        to: None,
        subject,
        body,
        creditor_name: creditor.name.clone(),
        creditor_cnpj: creditor.cnpj.clone(),
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

fn task_template(d: &Delivery) -> Template {
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
    if r.subject.is_none() && d.channel == "email" {
        r.subject = Some(format!("Aviso de cobrança — {}", c.name));
    }
    Ok(Ok(r))
}

/// A ruler delivery's id: one per (charge, step), the same on every tick and replica.
pub fn ruler_delivery_id(org: &str, charge_id: &str, step_id: &str) -> String {
    crate::demo::stable_id(&format!("delivery:{org}:{charge_id}:{step_id}"))
}

/// The send window that applies to a charge's messages: its ruler's, else the default.
pub fn window_for(
    tx: &mut dyn Tx,
    org: &str,
    charge: &Value,
    debtor: &Value,
) -> Result<(SendWindow, Window), DomainError> {
    let w = rulers::resolve(tx, org, charge, debtor)?
        .map(|r| r.send_window)
        .unwrap_or_default();
    let parsed = w.window();
    Ok((w, parsed))
}

/// Local wall-clock time of `now`.
pub fn local_now(now: UnixTime) -> NaiveDateTime {
    calendar::local(now).naive_local()
}

/// Allowed transitions of the delivery machine.
pub fn can_transition(from: &str, to: &str) -> bool {
    matches!(
        (from, to),
        ("scheduled", "queued")
            | ("queued", "sent")
            | ("sent", "delivered")
            | ("delivered", "read")
            | ("read", "clicked")
            | ("scheduled" | "queued", "canceled")
            | ("queued" | "sent", "failed" | "bounced")
    )
}

/// Moves a delivery along its machine (`delivered`, `read`, `clicked`, `bounced`,
/// `failed`, `canceled` — provider callbacks and cancellations), stamping the time and
/// writing `delivery.<status>`. Anything else is a CONFLICT naming both states.
pub fn advance(
    op: &mut Op<'_>,
    d: &mut Delivery,
    to: &str,
    code: Option<(&str, &str)>,
) -> Result<(), DomainError> {
    if !can_transition(&d.status, to) {
        return Err(DomainError::transition("delivery", &d.id, &d.status, to));
    }
    let now = op.timestamp();
    let before = d.clone();
    match to {
        "queued" => d.queued_at = Some(now.clone()),
        "sent" => d.sent_at = Some(now.clone()),
        "delivered" => d.delivered_at = Some(now.clone()),
        "read" => d.read_at = Some(now.clone()),
        "clicked" => d.clicked_at = Some(now.clone()),
        "failed" | "bounced" => d.failed_at = Some(now.clone()),
        "canceled" => d.canceled_at = Some(now.clone()),
        _ => {}
    }
    if let Some((c, m)) = code {
        if to == "canceled" {
            d.cancel_reason = Some(c.to_owned());
        } else {
            d.error_code = Some(c.to_owned());
        }
        d.error_message = Some(m.to_owned());
    }
    if to != "queued" {
        d.claim_token = None;
        d.claim_until = None;
    }
    d.status = to.to_owned();
    d.updated_at = now;
    save(op.tx, Kind::Delivery, op.org, &*d)?;
    let changes = crate::ops::debtors::diff(&before, &*d);
    op.event(
        &format!("delivery.{to}"),
        "delivery",
        &d.id.clone(),
        &*d,
        changes,
    )
}

/// Cancels every scheduled or queued delivery matching `cond` (e.g.
/// `Cond::Eq("contact_point_id", ..)` on opt-out, `Cond::Eq("charge_id", ..)` when a
/// charge is paid, canceled or paused). Returns how many. Other groups call this so that
/// a stop takes effect at once; the engine re-checks before sending anyway.
pub fn cancel_pending(
    op: &mut Op<'_>,
    cond: Cond,
    code: &str,
    message: &str,
) -> Result<u32, DomainError> {
    let q = Query::all().with(cond).with(Cond::In(
        "status",
        vec![json!("scheduled"), json!("queued")],
    ));
    let pending: Vec<Delivery> = find(op.tx, Kind::Delivery, op.org, &q)?;
    let mut n = 0;
    for mut d in pending {
        advance(op, &mut d, "canceled", Some((code, message)))?;
        n += 1;
    }
    Ok(n)
}

// ---------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------

fn delivery_output() -> Value {
    s::entity_output(&["id", "charge_id", "channel", "status", "scheduled_at"])
}

fn template_id_schema() -> Value {
    let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|t| t.0).collect();
    s::text(
        &format!(
            "Template: a built-in one ({}) or the id of a ruler step whose template to use. Give template_id or message",
            names.join(", ")
        ),
        1,
        100,
    )
}

fn message_schema() -> Value {
    s::text(
        &format!(
            "Free text (not for WhatsApp, which only carries templates), with the variables {}. The creditor's name and CNPJ are added. Give template_id or message",
            rulers::VARIABLES
                .iter()
                .map(|v| format!("{{{{{v}}}}}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        1,
        2000,
    )
}

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        tool("dunning_charges_notify", "Notify a debtor about a charge", "POST", "/v1/charges/{id}/notify")
            .describe("Sends one message about a charge now (or at schedule_at) on email, sms or whatsapp, to the given contact point or the debtor's primary one on that channel. Refused for do_not_contact debtors, opted-out or invalid contact points, WhatsApp to contacts not opted in, charges that are paid, canceled, renegotiated, written off, paused or in an agreement, and times outside the send window. Counts against the outbound message limit.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("id", s::id("Charge id"))
            .arg("channel", s::one_of("Channel (default: the contact point's)", MESSAGE_CHANNELS))
            .arg("contact_point_id", s::id("Contact point of the charge's debtor (default: the primary one on the channel)"))
            .arg("template_id", template_id_schema())
            .arg("message", message_schema())
            .arg("subject", s::text("E-mail subject for a free-text message", 1, 200))
            .arg("schedule_at", s::datetime("When to send (default now); must be inside the send window"))
            .output(delivery_output())
            .confirm(describe_notify)
            .run(notify),
        tool("dunning_deliveries_list", "List deliveries", "GET", "/v1/deliveries")
            .describe("Lists messages (and tasks) sent or scheduled: status, channel, timestamps, errors. Filters: status, channel, charge_id, debtor_id, step_id, and from/to on the scheduled time.")
            .read()
            .access(Scope::Read, Some("notifications.view"))
            .arg("status", s::csv_of("Delivery status", STATUSES))
            .arg("channel", s::csv_of("Channel", CHANNELS))
            .arg("charge_id", s::id("Only deliveries about this charge"))
            .arg("debtor_id", s::id("Only deliveries to this debtor"))
            .arg("step_id", s::id("Only deliveries made by this ruler step"))
            .arg("from", s::string("Scheduled at or after (date YYYY-MM-DD or RFC 3339)"))
            .arg("to", s::string("Scheduled at or before (date YYYY-MM-DD, inclusive, or RFC 3339)"))
            .list(&["scheduled_at", "created_at"])
            .output(s::list_output(delivery_output()))
            .run(list_deliveries),
        tool("dunning_notifications_create", "Notify debtors about charges", "POST", "/v1/notifications")
            .describe("Sends one message per charge (up to 500) on one channel, to each debtor's primary contact point on it. Charges that may not be messaged (paid, paused, do_not_contact, no eligible contact point, ...) are skipped and listed with the reason. Not idempotent: calling again sends again.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("charge_ids", s::array_max("Charges to notify about", s::id("Charge id"), 500))
            .req("channel", s::one_of("Channel", MESSAGE_CHANNELS))
            .arg("template_id", template_id_schema())
            .arg("message", message_schema())
            .arg("subject", s::text("E-mail subject for a free-text message", 1, 200))
            .arg("schedule_at", s::datetime("When to send (default now); must be inside the send window"))
            .output(s::entity_output(&["id", "created_count", "skipped", "deliveries"]))
            .confirm(describe_bulk)
            .run(bulk_notify),
        tool("dunning_deliveries_resend", "Resend a delivery", "POST", "/v1/deliveries/{id}/resend")
            .describe("Sends a message again as a new delivery (resent_from_id points to the original, which never changes), optionally to another contact point of the same debtor. The same conduct rules as a new message apply.")
            .destructive()
            .access(Scope::Write, Some("notifications.send"))
            .req("id", s::id("Delivery id"))
            .arg("contact_point_id", s::id("Another contact point of the same debtor"))
            .output(delivery_output())
            .confirm(describe_resend)
            .run(resend),
    ]
}

const SORTS: &[(&str, &str, Order)] = &[
    ("scheduled_at", "scheduled_at", Order::Desc),
    ("created_at", "created_at", Order::Desc),
];

/// A date or timestamp argument as a local RFC 3339 bound (`end`: a date means its last second).
pub fn time_bound(op: &Op<'_>, k: &str, end: bool) -> Result<Option<String>, DomainError> {
    let Some(raw) = op.opt_str(k) else {
        return Ok(None);
    };
    if let Some(d) = calendar::parse_date(raw) {
        let t = if end { "23:59:59" } else { "00:00:00" };
        return Ok(Some(format!("{}T{t}-03:00", d.format("%Y-%m-%d"))));
    }
    let t = calendar::parse_timestamp(raw).ok_or_else(|| {
        DomainError::field(k, "must be a date YYYY-MM-DD or an RFC 3339 timestamp")
    })?;
    Ok(Some(
        t.with_timezone(&calendar::offset())
            .format("%Y-%m-%dT%H:%M:%S%:z")
            .to_string(),
    ))
}

fn list_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let mut conds = Vec::new();
    if let Some(st) = op.csv("status") {
        conds.push(Cond::In("status", st));
    }
    if let Some(ch) = op.csv("channel") {
        conds.push(Cond::In("channel", ch));
    }
    for k in ["charge_id", "debtor_id", "step_id"] {
        if let Some(v) = op.opt_str(k) {
            let col = match k {
                "charge_id" => "charge_id",
                "debtor_id" => "debtor_id",
                _ => "step_id",
            };
            conds.push(Cond::Eq(col, json!(v)));
        }
    }
    let from = time_bound(op, "from", false)?;
    let to = time_bound(op, "to", true)?;
    if let (Some(f), Some(t)) = (&from, &to) {
        if f > t {
            return Err(DomainError::field("to", "must not be before from"));
        }
    }
    if let Some(f) = from {
        conds.push(Cond::Ge("scheduled_at", json!(f)));
    }
    if let Some(t) = to {
        conds.push(Cond::Le("scheduled_at", json!(t)));
    }
    let page = op.page();
    let total = op.tx.count(Kind::Delivery, op.org, &conds)?;
    let q = Query {
        conds,
        sort: op.sort(SORTS),
        limit: Some(page.per_page),
        offset: page.offset(),
    };
    let items = op.tx.find(Kind::Delivery, op.org, &q)?;
    Ok(list(items, page, total))
}

/// What a message should say: a template or a free text.
#[derive(Clone, Debug)]
struct Content {
    template_id: Option<String>,
    message: Option<String>,
    subject: Option<String>,
}

fn content(op: &mut Op<'_>, channel: Option<&str>) -> Result<Content, DomainError> {
    let template_id = op.opt_str("template_id").map(str::to_owned);
    let message = op.opt_str("message").map(str::to_owned);
    let subject = op.opt_str("subject").map(str::to_owned);
    let mut issues = Vec::new();
    match (&template_id, &message) {
        (Some(_), Some(_)) => {
            return Err(DomainError::field(
                "message",
                "give either template_id or message, not both",
            ));
        }
        (None, None) => {
            return Err(DomainError::field(
                "template_id",
                "give template_id or message",
            ));
        }
        (Some(t), None) => {
            find_template(op.tx, op.org, t)?.ok_or_else(|| {
                // A step id that is not this organization's is not found, like any id of
                // another organization (§11); an unknown name is a validation error that
                // lists the names there are.
                let is_id = t.len() == 36 && t.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
                if is_id {
                    return DomainError::not_found("template", t);
                }
                let names: Vec<&str> = BUILTIN_TEMPLATES.iter().map(|t| t.0).collect();
                DomainError::field(
                    "template_id",
                    format!(
                        "no template {t}; use a built-in one ({}) or a step id of this organization",
                        names.join(", ")
                    ),
                )
            })?;
        }
        (None, Some(m)) => {
            if channel == Some("whatsapp") {
                return Err(DomainError::field(
                    "message",
                    "WhatsApp only carries approved templates: use template_id",
                ));
            }
            if m.trim().is_empty() {
                return Err(DomainError::field("message", "must not be blank"));
            }
            rulers::check_template_text("message", m, &mut issues);
            if let Some(sj) = &subject {
                rulers::check_template_text("subject", sj, &mut issues);
            }
        }
    }
    if !issues.is_empty() {
        let message = issues
            .iter()
            .map(|i| format!("{}: {}", i.field, i.issue))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(DomainError::Validation {
            message,
            details: issues,
        });
    }
    Ok(Content {
        template_id,
        message,
        subject,
    })
}

/// When a manual message goes out: `schedule_at` (checked against the window) or now
/// (or the next opening when the window is closed). Returns the local time and whether
/// it is due now.
fn when(
    op: &Op<'_>,
    window: &Window,
    sw: &SendWindow,
) -> Result<(NaiveDateTime, bool), DomainError> {
    let now = local_now(op.now);
    match op.opt_str("schedule_at") {
        Some(raw) => {
            let t = calendar::parse_timestamp(raw).ok_or_else(|| {
                DomainError::field("schedule_at", "must be an RFC 3339 timestamp")
            })?;
            let at = t.with_timezone(&calendar::offset()).naive_local();
            if at + chrono::Duration::minutes(1) < now {
                return Err(DomainError::field(
                    "schedule_at",
                    format!("{raw} is in the past"),
                ));
            }
            if !window.allows(at) {
                let next = window
                    .next_open(at)
                    .map(rulers::local_timestamp)
                    .unwrap_or_default();
                return Err(DomainError::field(
                    "schedule_at",
                    format!(
                        "{raw} is outside the send window ({}): {}; the next allowed time is {next}",
                        sw.describe(),
                        window.why_closed(at.date(), at.time())
                    ),
                ));
            }
            Ok((at, at <= now))
        }
        None => {
            if window.allows(now) {
                Ok((now, true))
            } else {
                let next = window
                    .next_open(now)
                    .ok_or_else(|| DomainError::Conflict("the send window never opens".into()))?;
                Ok((next, false))
            }
        }
    }
}

/// Everything decided about one manual message before anything is written.
#[derive(Clone, Debug)]
struct Plan {
    charge: Value,
    debtor: Value,
    contact: Value,
    channel: String,
}

fn origin(op: &Op<'_>) -> &'static str {
    match op.principal.audience {
        dunning_core::Audience::Api => "api",
        dunning_core::Audience::Mcp => "manual",
    }
}

/// Checks one charge for a message on `channel` (to `cp_id` when given).
fn plan_one(
    op: &mut Op<'_>,
    charge: Value,
    channel: Option<&str>,
    cp_id: Option<&str>,
) -> Result<Result<Plan, Refusal>, DomainError> {
    if let Some(stop) = charge_stop(op.tx, op.org, &charge, op.now)? {
        return Ok(Err(stop));
    }
    let debtor_id = text(&charge, "debtor_id").unwrap_or_default().to_owned();
    let debtor = op
        .tx
        .get(Kind::Debtor, op.org, &debtor_id)?
        .ok_or_else(|| DomainError::not_found("debtor", &debtor_id))?;
    if let Some(r) = debtor_refusal(&debtor) {
        return Ok(Err(r));
    }
    let contact = match cp_id {
        Some(cp_id) => {
            let cp = op
                .tx
                .get(Kind::ContactPoint, op.org, cp_id)?
                .ok_or_else(|| DomainError::not_found("contact point", cp_id))?;
            if text(&cp, "debtor_id") != Some(debtor_id.as_str()) {
                return Ok(Err(Refusal {
                    code: "other_debtor".into(),
                    message: format!(
                        "contact point {cp_id} belongs to another debtor, not to {debtor_id} who owes this charge"
                    ),
                    field: Some("contact_point_id"),
                }));
            }
            let cp_channel = text(&cp, "channel").unwrap_or_default().to_owned();
            if !MESSAGE_CHANNELS.contains(&cp_channel.as_str()) {
                return Ok(Err(Refusal {
                    code: "not_a_message_channel".into(),
                    message: format!(
                        "contact point {cp_id} is a {cp_channel} contact; messages go by email, sms or whatsapp"
                    ),
                    field: Some("contact_point_id"),
                }));
            }
            let ch = channel.unwrap_or(&cp_channel).to_owned();
            if let Some(r) = contact_refusal(&cp, &ch) {
                return Ok(Err(r));
            }
            cp
        }
        None => {
            let Some(ch) = channel else {
                return Err(DomainError::field(
                    "channel",
                    "give channel or contact_point_id",
                ));
            };
            match pick_contact_point(op.tx, op.org, &debtor_id, ch)? {
                Some(cp) => cp,
                None => return Ok(Err(no_contact_refusal(op.tx, op.org, &debtor, ch)?)),
            }
        }
    };
    let channel = text(&contact, "channel").unwrap_or_default().to_owned();
    Ok(Ok(Plan {
        charge,
        debtor,
        contact,
        channel,
    }))
}

fn load_charge(op: &mut Op<'_>, id: &str) -> Result<Value, DomainError> {
    op.tx
        .get(Kind::Charge, op.org, id)?
        .ok_or_else(|| DomainError::not_found("charge", id))
}

/// Builds (without saving) a manual delivery.
fn manual_delivery(
    op: &mut Op<'_>,
    plan: &Plan,
    c: &Content,
    at: NaiveDateTime,
    due_now: bool,
) -> Delivery {
    let now = op.timestamp();
    Delivery {
        id: op.new_id(),
        charge_id: text(&plan.charge, "id").unwrap_or_default().to_owned(),
        debtor_id: text(&plan.debtor, "id").unwrap_or_default().to_owned(),
        contact_point_id: text(&plan.contact, "id").map(str::to_owned),
        channel: plan.channel.clone(),
        action: "notify".into(),
        origin: origin(op).into(),
        status: if due_now { "queued" } else { "scheduled" }.into(),
        to: text(&plan.contact, "value").map(str::to_owned),
        template_id: c.template_id.clone(),
        message: c.message.clone(),
        subject: c.subject.clone(),
        scheduled_at: rulers::local_timestamp(at),
        queued_at: due_now.then(|| now.clone()),
        requested_by: Some(op.principal.subject.clone()),
        created_at: now.clone(),
        updated_at: now,
        ..Delivery::default()
    }
}

fn take_budget(op: &Op<'_>, n: u32) -> Result<(), DomainError> {
    op.outbound
        .take(op.org, Budget::Messages, n, op.now, op.dry_run)
        .map_err(|retry_after_ms| DomainError::RateLimited { retry_after_ms })
}

fn notify_known(op: &Op<'_>) -> Result<(), DomainError> {
    op.only(&[
        "id",
        "channel",
        "contact_point_id",
        "template_id",
        "message",
        "subject",
        "schedule_at",
    ])
}

fn plan_notify(op: &mut Op<'_>) -> Result<(Plan, Content, NaiveDateTime, bool), DomainError> {
    notify_known(op)?;
    let id = op.str("id")?;
    let charge = load_charge(op, id)?;
    let channel = op.opt_str("channel");
    let cp_id = op.opt_str("contact_point_id");
    let plan = plan_one(op, charge, channel, cp_id)?.map_err(Refusal::into_error)?;
    let c = content(op, Some(&plan.channel))?;
    let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
    let (at, due_now) = when(op, &window, &sw)?;
    Ok((plan, c, at, due_now))
}

fn channel_name(ch: &str) -> &str {
    match ch {
        "email" => "an e-mail",
        "sms" => "an SMS",
        "whatsapp" => "a WhatsApp message",
        other => other,
    }
}

fn charge_label(charge: &Value) -> String {
    let amount = brl(charge
        .get("amount")
        .and_then(Value::as_f64)
        .unwrap_or_default());
    let due = br_date(text(charge, "due_date").unwrap_or_default());
    let name = text(charge, "external_id")
        .or_else(|| text(charge, "description"))
        .or_else(|| text(charge, "id"))
        .unwrap_or_default();
    format!("charge {name} of {amount} due {due}")
}

fn describe_notify(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (plan, _, at, due_now) = plan_notify(op)?;
    let when = if due_now {
        "now".to_owned()
    } else {
        format!("at {}", rulers::local_timestamp(at))
    };
    Ok(format!(
        "Send {} to {} ({}) {when} about {}?",
        channel_name(&plan.channel),
        text(&plan.debtor, "name").unwrap_or_default(),
        text(&plan.contact, "value").unwrap_or_default(),
        charge_label(&plan.charge)
    ))
}

fn notify(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (plan, c, at, due_now) = plan_notify(op)?;
    take_budget(op, 1)?;
    let d = manual_delivery(op, &plan, &c, at, due_now);
    save(op.tx, Kind::Delivery, op.org, &d)?;
    let code = if due_now {
        "delivery.queued"
    } else {
        "delivery.scheduled"
    };
    op.event(code, "delivery", &d.id, &d, Value::Null)?;
    Ok(created(d))
}

/// One bulk request checked: the messages to send and the charges skipped.
struct Bulk {
    content: Content,
    plans: Vec<(Plan, NaiveDateTime, bool)>,
    skipped: Vec<Value>,
}

fn plan_bulk(op: &mut Op<'_>) -> Result<Bulk, DomainError> {
    op.only(&[
        "charge_ids",
        "channel",
        "template_id",
        "message",
        "subject",
        "schedule_at",
    ])?;
    let ids: Vec<String> = match op.args.get("charge_ids") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| DomainError::field("charge_ids", "must be a list of charge ids"))?,
        _ => return Err(DomainError::field("charge_ids", "is required")),
    };
    if ids.is_empty() {
        return Err(DomainError::field(
            "charge_ids",
            "must name at least one charge",
        ));
    }
    if ids.len() > MAX_BULK {
        return Err(DomainError::field(
            "charge_ids",
            format!(
                "at most {MAX_BULK} charges per notification ({} given)",
                ids.len()
            ),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = ids.iter().find(|i| !seen.insert(i.as_str())) {
        return Err(DomainError::field(
            "charge_ids",
            format!("charge {dup} is listed twice"),
        ));
    }
    let channel = op.str("channel")?.to_owned();
    if !MESSAGE_CHANNELS.contains(&channel.as_str()) {
        return Err(DomainError::field(
            "channel",
            "must be email, sms or whatsapp",
        ));
    }
    let content = content(op, Some(&channel))?;
    let mut charges = Vec::with_capacity(ids.len());
    for id in &ids {
        charges.push(load_charge(op, id)?);
    }
    let mut plans = Vec::new();
    let mut skipped = Vec::new();
    for charge in charges {
        let cid = text(&charge, "id").unwrap_or_default().to_owned();
        match plan_one(op, charge, Some(&channel), None)? {
            Ok(plan) => {
                let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
                let (at, due_now) = when(op, &window, &sw)?;
                plans.push((plan, at, due_now));
            }
            Err(r) => {
                skipped.push(json!({ "charge_id": cid, "code": r.code, "reason": r.message }))
            }
        }
    }
    if plans.is_empty() {
        let reasons: Vec<String> = skipped
            .iter()
            .take(5)
            .filter_map(|s| s.get("reason").and_then(Value::as_str).map(str::to_owned))
            .collect();
        return Err(DomainError::Conflict(format!(
            "none of the {} charges may be notified on {channel}: {}",
            ids.len(),
            reasons.join("; ")
        )));
    }
    Ok(Bulk {
        content,
        plans,
        skipped,
    })
}

fn describe_bulk(op: &mut Op<'_>) -> Result<String, DomainError> {
    let b = plan_bulk(op)?;
    let total: i64 = b
        .plans
        .iter()
        .map(|(p, ..)| {
            money::cents(
                p.charge
                    .get("amount")
                    .and_then(Value::as_f64)
                    .unwrap_or_default(),
            )
            .unwrap_or_default()
        })
        .sum();
    let debtors: std::collections::BTreeSet<&str> = b
        .plans
        .iter()
        .filter_map(|(p, ..)| text(&p.debtor, "id"))
        .collect();
    let channel = op.opt_str("channel").unwrap_or_default();
    let skipped = if b.skipped.is_empty() {
        String::new()
    } else {
        format!(
            " {} charges are skipped (not allowed to be messaged).",
            b.skipped.len()
        )
    };
    Ok(format!(
        "Send {} {channel} messages to {} debtors about {} charges totaling {}?{skipped}",
        b.plans.len(),
        debtors.len(),
        b.plans.len(),
        money::format_brl(total)
    ))
}

fn bulk_notify(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let b = plan_bulk(op)?;
    let n = u32::try_from(b.plans.len()).unwrap_or(u32::MAX);
    take_budget(op, n.min(op.settings.outbound_per_minute.max(1)))?;
    let notification_id = op.new_id();
    let mut deliveries = Vec::with_capacity(b.plans.len());
    for (plan, at, due_now) in &b.plans {
        let mut d = manual_delivery(op, plan, &b.content, *at, *due_now);
        d.notification_id = Some(notification_id.clone());
        save(op.tx, Kind::Delivery, op.org, &d)?;
        let code = if *due_now {
            "delivery.queued"
        } else {
            "delivery.scheduled"
        };
        op.event(code, "delivery", &d.id, &d, Value::Null)?;
        deliveries.push(d);
    }
    let channel = op.opt_str("channel").unwrap_or_default();
    Ok(created(json!({
        "id": notification_id,
        "channel": channel,
        "origin": origin(op),
        "template_id": b.content.template_id,
        "requested_count": deliveries.len() + b.skipped.len(),
        "created_count": deliveries.len(),
        "skipped_count": b.skipped.len(),
        "skipped": b.skipped,
        "deliveries": deliveries,
        "created_at": op.timestamp(),
    })))
}

fn plan_resend(op: &mut Op<'_>) -> Result<(Delivery, Plan, NaiveDateTime, bool), DomainError> {
    op.only(&["id", "contact_point_id"])?;
    let id = op.str("id")?;
    let src: Delivery = must(op.tx, Kind::Delivery, op.org, id)?;
    if matches!(src.status.as_str(), "scheduled" | "queued") {
        return Err(DomainError::Conflict(format!(
            "delivery {id} is {} and has not been sent yet; nothing to resend",
            src.status
        )));
    }
    if !MESSAGE_CHANNELS.contains(&src.channel.as_str()) {
        return Err(DomainError::Conflict(format!(
            "delivery {id} is a {} delivery, not a message to the debtor; only e-mail, SMS and WhatsApp messages can be resent",
            src.channel
        )));
    }
    let charge = load_charge(op, &src.charge_id)?;
    let cp_id = op
        .opt_str("contact_point_id")
        .map(str::to_owned)
        .or_else(|| src.contact_point_id.clone());
    let channel = if op.opt_str("contact_point_id").is_some() {
        None
    } else {
        Some(src.channel.as_str())
    };
    let plan = plan_one(op, charge, channel, cp_id.as_deref())?.map_err(Refusal::into_error)?;
    if plan.channel == "whatsapp"
        && src.message.is_some()
        && src.step_id.is_none()
        && src.template_id.is_none()
    {
        return Err(DomainError::field(
            "contact_point_id",
            "the original is a free-text message and WhatsApp only carries approved templates",
        ));
    }
    let (sw, window) = window_for(op.tx, op.org, &plan.charge, &plan.debtor)?;
    let (at, due_now) = when(op, &window, &sw)?;
    Ok((src, plan, at, due_now))
}

fn describe_resend(op: &mut Op<'_>) -> Result<String, DomainError> {
    let (src, plan, at, due_now) = plan_resend(op)?;
    let when = if due_now {
        "now".to_owned()
    } else {
        format!("at {}", rulers::local_timestamp(at))
    };
    Ok(format!(
        "Resend delivery {} ({}) as {} to {} ({}) {when} about {}?",
        src.id,
        src.status,
        channel_name(&plan.channel),
        text(&plan.debtor, "name").unwrap_or_default(),
        text(&plan.contact, "value").unwrap_or_default(),
        charge_label(&plan.charge)
    ))
}

fn resend(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let (src, plan, at, due_now) = plan_resend(op)?;
    take_budget(op, 1)?;
    let c = Content {
        template_id: src.template_id.clone(),
        message: src.message.clone(),
        subject: src.subject.clone(),
    };
    let mut d = manual_delivery(op, &plan, &c, at, due_now);
    d.step_id.clone_from(&src.step_id);
    d.ruler_id.clone_from(&src.ruler_id);
    d.notification_id.clone_from(&src.notification_id);
    d.resent_from_id = Some(src.id.clone());
    d.attempt = src.attempt;
    if src.step_id.is_none() && src.template_id.is_none() && src.message.is_none() {
        // A message whose template is gone: send the same text again.
        d.message.clone_from(&src.body);
    }
    save(op.tx, Kind::Delivery, op.org, &d)?;
    let code = if due_now {
        "delivery.queued"
    } else {
        "delivery.scheduled"
    };
    op.event(
        code,
        "delivery",
        &d.id,
        &d,
        json!({ "resent_from_id": src.id }),
    )?;
    Ok(created(d))
}

/// Loads a delivery of the caller's organization or answers `NOT_FOUND`.
pub fn load_delivery(op: &mut Op<'_>, id: &str) -> Result<Delivery, DomainError> {
    must(op.tx, Kind::Delivery, op.org, id)
}

/// Demo deliveries in every status for existing charges (the seeding drives this
/// through [`crate::demo::run_as`]): `count` deliveries, statuses in turn.
pub fn seed_demo_deliveries(op: &mut Op<'_>) -> Result<Output, DomainError> {
    let count = op.opt_i64("count").unwrap_or(24).max(0) as usize;
    let q = Query {
        conds: vec![Cond::In(
            "status",
            vec![
                json!("pending"),
                json!("overdue"),
                json!("partially_paid"),
                json!("paid"),
            ],
        )],
        sort: ("due_date", Order::Asc),
        limit: None,
        offset: 0,
    };
    let charges = op.tx.find(Kind::Charge, op.org, &q)?;
    let steps: Vec<rulers::Step> = find(op.tx, Kind::Step, op.org, &Query::all())?;
    let cycle = [
        "sent",
        "delivered",
        "read",
        "clicked",
        "failed",
        "bounced",
        "canceled",
        "scheduled",
        "delivered",
        "read",
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
        let paid = text(&charge, "status") == Some("paid");
        if status == "scheduled" && paid {
            continue;
        }
        let step = steps
            .iter()
            .find(|s| s.channel == channel && s.action == "notify");
        let days_ago = 1 + (made as u64 % 9);
        let at_ms = op.now.as_millis().saturating_sub(days_ago * 86_400_000);
        let at = if status == "scheduled" {
            calendar::timestamp(op.now.plus_millis(86_400_000))
        } else {
            calendar::timestamp(UnixTime::from_millis(at_ms))
        };
        let now = op.timestamp();
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
            status: status.into(),
            to: text(&cp, "value").map(str::to_owned),
            template_id: step.is_none().then(|| "reminder".to_owned()),
            scheduled_at: at.clone(),
            attempt: u32::from(status != "scheduled" && status != "canceled"),
            requested_by: Some("system:demo".into()),
            created_at: now.clone(),
            updated_at: now,
            ..Delivery::default()
        };
        if status != "scheduled" && status != "canceled" {
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
            "delivered" | "read" | "clicked" => d.delivered_at = Some(at.clone()),
            "failed" | "bounced" => {
                d.failed_at = Some(at.clone());
                d.error_code = Some(
                    if status == "bounced" {
                        "mailbox_full"
                    } else {
                        "provider_timeout"
                    }
                    .into(),
                );
                d.error_message = Some("demo failure".into());
            }
            "canceled" => {
                d.canceled_at = Some(at.clone());
                d.cancel_reason = Some("charge_paused".into());
            }
            _ => {}
        }
        if matches!(status, "read" | "clicked") {
            d.read_at = Some(at.clone());
        }
        if status == "clicked" {
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
