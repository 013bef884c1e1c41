//! The ruler engine: the clock-driven part of dunning.
//!
//! [`tick`] runs, for every organization, in this order:
//! 1. the `pending→overdue` sweep (the day after the effective due date, rules.md);
//! 2. **planning**: for each open charge that follows an active ruler
//!    ([`rulers::resolve_among`]), every step whose slot (offset in calendar or business
//!    days, `send_at`, send window, holidays — [`rulers::slot`]) has come, within
//!    [`CATCH_UP_DAYS`], gets one delivery in `scheduled`, unless dunning stops on the
//!    charge (rules.md, Collection conduct), the debtor is `do_not_contact`, the step's conditions fail, or no
//!    contact point may receive it (opt-out, invalid, WhatsApp without `opted_in`).
//!    The delivery id derives from (charge, step) ([`deliveries::ruler_delivery_id`]),
//!    so a step fires at most once per charge across ticks and replicas;
//! 3. **outbox**: deliveries whose time has come are re-checked (a stop, an opt-out or
//!    `do_not_contact` arriving after scheduling cancels them), wait while the send
//!    window is closed, are claimed [`CHUNK`] at a time (`queued`, with a lease of
//!    [`CLAIM_MS`] so a crashed sender's work is picked up again), rendered with the
//!    creditor's name and CNPJ (CDC art. 42-A), handed to the [`DeliveryDriver`]
//!    outside any transaction, and each driver's answer recorded at once
//!    (`ops::deliveries::record_send`: `sent`, `failed`, `bounced`, or `queued` again
//!    after a back-off, [`SendPolicy`]).
//!
//! Steps whose action is `negativate`, `protest` or `escalate` only produce a `task`
//! delivery for a person: the engine never negativates, protests or escalates by itself.
//!
//! Not a tool group, so it sits at the crate root rather than under `ops/`: it declares
//! no tool, it is what the worker ([`crate::Worker`]) runs on the clock, across the
//! groups it reads (charges, rulers, deliveries, contact points).

use crate::Worker;
use crate::status::{DeliveryStatus, RulerStatus};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use chrono::Duration;
use dunning_core::UnixTime;
use serde::Serialize;
use serde_json::{Value, json};

use crate::Domain;
use crate::brazil::calendar;
use crate::error::DomainError;
use crate::op::Op;
use crate::ops::deliveries::{self, Delivery, Refusal};
use crate::ops::rulers::{self, DUNNABLE, Ruler, Step};
use crate::ops::{self, charges};
use crate::store::{self, Cond, Kind, Order, Query, find, load, save};

/// A step is sent at most this many days after its slot; older missed slots (a server
/// that was down, a ruler activated on an old debt) are skipped instead of sent in a burst.
pub const CATCH_UP_DAYS: i64 = 3;
/// How long a claimed (`queued`) delivery belongs to the tick that claimed it.
pub const CLAIM_MS: u64 = 5 * 60 * 1000;
/// Most deliveries handed to the driver per organization and tick.
pub const BATCH: u32 = 1000;
/// The actor of the engine's events.
pub const ACTOR: &str = "system:ruler-engine";

/// A message ready to go: what the driver sends.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Rendered {
    /// `email`, `sms`, `whatsapp`, `webhook` or `task`.
    pub channel: String,
    /// Address or number (none for tasks and webhooks).
    pub to: Option<String>,
    /// Subject (e-mail, tasks).
    pub subject: Option<String>,
    /// Body, ending with the creditor's identification.
    pub body: String,
    /// Creditor's legal name.
    pub creditor_name: String,
    /// Creditor's CNPJ.
    pub creditor_cnpj: String,
    /// The organization (a channel driver signs its unsubscribe link with it).
    pub org_id: String,
    /// The delivery.
    pub delivery_id: String,
    /// The contact point it goes to (none for tasks and webhooks).
    pub contact_point_id: Option<String>,
    /// The template used: a built-in template's name or a step id (none for a free
    /// text). WhatsApp sends only templates the provider approved, by this id.
    pub template_id: Option<String>,
    /// The template's variables in order of first appearance, with their values: what
    /// a provider that fills an approved template itself receives (WhatsApp), the
    /// creditor's identification last (`creditor`).
    pub variables: Vec<(String, String)>,
}

/// The provider accepted the message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverReceipt {
    /// The provider's id for it.
    pub provider_message_id: String,
}

/// The provider refused or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    /// Machine code (e.g. `provider_timeout`, `invalid_address`, `smtp_550`).
    pub code: String,
    /// Detail (never the message text or the address).
    pub message: String,
    /// What becomes of the delivery.
    pub kind: Failure,
}

impl DriverError {
    /// A failure of `kind`.
    pub fn new(kind: Failure, code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code: code.into(),
            message: message.into(),
            kind,
        }
    }
}

/// How a send went wrong, which decides what becomes of the delivery
/// ([`crate::ops::deliveries::record_send`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Failure {
    /// Refused for good: `failed`.
    #[default]
    Failed,
    /// The recipient's address was refused: `bounced`, one more bounce on the contact
    /// point; `hard` (the address does not exist) marks the contact point `invalid`.
    Bounced {
        /// The address does not exist.
        hard: bool,
    },
    /// Not accepted this time (a temporary refusal, a connection refused, a timeout:
    /// no answer): tried again after a bounded back-off ([`SendPolicy`]).
    Retry,
    /// Not attempted (the channel's outbound budget is spent, or the claim is too
    /// short to start a send): left `queued` for `after_ms`, not counted as an attempt.
    Deferred {
        /// When to look at it again.
        after_ms: u64,
    },
}

/// Retries of temporary failures: the `n`-th retry waits `base_ms` × 2ⁿ⁻¹, at most
/// `max_ms`; after `max_attempts` attempts the delivery fails with the last error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendPolicy {
    /// The first back-off.
    pub base_ms: u64,
    /// The longest back-off.
    pub max_ms: u64,
    /// Attempts before giving up.
    pub max_attempts: u32,
}

impl Default for SendPolicy {
    fn default() -> Self {
        Self {
            base_ms: 60_000,
            max_ms: 3_600_000,
            max_attempts: 6,
        }
    }
}

impl SendPolicy {
    /// The wait after attempt number `attempt` (1-based) failed for a while.
    pub fn backoff_ms(&self, attempt: u32) -> u64 {
        let shift = attempt.saturating_sub(1).min(30);
        self.base_ms.saturating_mul(1u64 << shift).min(self.max_ms)
    }
}

/// Sends messages (e-mail, SMS and WhatsApp providers, the creditor's webhook, the task
/// queue). Called outside any store transaction.
pub trait DeliveryDriver: Send + Sync {
    /// Sends one delivery (its JSON document) with its rendered content.
    fn send(&self, delivery: &Value, rendered: &Rendered) -> Result<DriverReceipt, DriverError>;
}

/// One message the [`RecordingDriver`] kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Delivery id.
    pub delivery_id: String,
    /// Charge id.
    pub charge_id: String,
    /// Step id, for ruler deliveries.
    pub step_id: Option<String>,
    /// What was sent.
    pub rendered: Rendered,
}

/// The default driver: records every message in memory (and the delivery itself keeps
/// the rendered text in the store); nothing leaves the machine.
#[derive(Debug, Default)]
pub struct RecordingDriver {
    sent: Mutex<Vec<Recorded>>,
    fail_with: Mutex<Option<DriverError>>,
}

impl RecordingDriver {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Everything sent so far.
    pub fn messages(&self) -> Vec<Recorded> {
        self.sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Makes every following send fail with `err` (`None`: succeed again). For tests.
    pub fn fail_with(&self, err: Option<DriverError>) {
        *self
            .fail_with
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = err;
    }
}

impl DeliveryDriver for RecordingDriver {
    fn send(&self, delivery: &Value, rendered: &Rendered) -> Result<DriverReceipt, DriverError> {
        if let Some(e) = self
            .fail_with
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
        {
            return Err(e);
        }
        let id = delivery
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut sent = self
            .sent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        sent.push(Recorded {
            delivery_id: id.clone(),
            charge_id: delivery
                .get("charge_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            step_id: delivery
                .get("step_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
            rendered: rendered.clone(),
        });
        Ok(DriverReceipt {
            provider_message_id: format!("rec-{}-{}", sent.len(), &id[..id.len().min(8)]),
        })
    }
}

/// What one tick did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TickReport {
    /// Organizations visited.
    pub organizations: u32,
    /// Charges that became overdue.
    pub overdue: u32,
    /// Ruler deliveries created (`scheduled`).
    pub scheduled: u32,
    /// Deliveries the driver accepted.
    pub sent: u32,
    /// Deliveries the driver refused or that could not be rendered.
    pub failed: u32,
    /// Deliveries canceled before sending (stop, opt-out, do_not_contact, ...).
    pub canceled: u32,
    /// Deliveries refused for now (temporary failure), to be tried again.
    pub retrying: u32,
    /// Due deliveries waiting for the send window to open.
    pub waiting: u32,
    /// Steps taken by the bureau, protest, agreement and export workflows.
    pub workflow_steps: u32,
    /// `sent`, `failed` and `canceled` again, by the delivery's channel (`email`, `sms`,
    /// ...): the binary's metrics count them per channel, and the domain keeps no
    /// counters of its own (it has no global state; the caller records the report).
    pub by_channel: BTreeMap<String, ChannelCounts>,
}

/// What one tick did on one channel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ChannelCounts {
    /// Deliveries the driver accepted.
    pub sent: u32,
    /// Deliveries the driver refused or that could not be rendered.
    pub failed: u32,
    /// Deliveries canceled before sending.
    pub canceled: u32,
    /// Deliveries refused for now, to be tried again.
    pub retrying: u32,
}

impl TickReport {
    fn channel(&mut self, channel: &str) -> &mut ChannelCounts {
        self.by_channel.entry(channel.to_owned()).or_default()
    }

    /// Counts what became of one send on `channel`.
    fn count(&mut self, channel: &str, outcome: deliveries::SendOutcome) {
        use deliveries::SendOutcome as O;
        match outcome {
            O::Sent => {
                self.sent += 1;
                self.channel(channel).sent += 1;
            }
            O::Failed => {
                self.failed += 1;
                self.channel(channel).failed += 1;
            }
            O::Retrying => {
                self.retrying += 1;
                self.channel(channel).retrying += 1;
            }
            O::Deferred | O::Gone => {}
        }
    }
}

/// Runs the engine once for every organization at `now`.
pub fn tick(
    domain: &Domain,
    now: UnixTime,
    driver: &dyn DeliveryDriver,
) -> Result<TickReport, DomainError> {
    tick_with(domain, &|| now, driver, &SendPolicy::default())
}

/// [`tick`] reading the time from `clock` as it goes (the binary's jobs thread): the
/// outbox claims [`CHUNK`] deliveries at a time, each group stamped with the time it is
/// taken, and records each answer as soon as the driver gives it. So a long tick never
/// sends on an expired claim (a delivery is sent only within the first half of its
/// claim, [`CLAIM_MS`]), and a sender killed mid-tick leaves unrecorded only the one
/// message it was sending, the one whose provider gave no answer yet.
pub fn tick_with(
    domain: &Domain,
    clock: &dyn Fn() -> UnixTime,
    driver: &dyn DeliveryDriver,
    policy: &SendPolicy,
) -> Result<TickReport, DomainError> {
    let orgs = store::read(domain.store(), |tx| Ok(tx.organizations()?))?;
    let mut report = TickReport::default();
    for org in orgs {
        report.organizations += 1;
        tick_org_with(domain, &org, clock, driver, policy, &mut report)?;
    }
    Ok(report)
}

/// The other clock-driven workflows of the domain, in dependency order: bureau records
/// (notice window, inclusion, automatic removal after payment or agreement), protests
/// (the notary's steps), agreements (expiry, completion, breaking) and CSV exports. Each
/// runs in a write transaction of its own and answers how many steps it took.
const WORKFLOWS: [(&str, Workflow); 4] = [
    ("bureau", ops::bureau::advance),
    ("protests", ops::protests::advance),
    ("agreements", ops::agreements::check_broken),
    ("exports", ops::exports::process),
];

/// One clock-driven workflow: its steps due at the op's time.
type Workflow = fn(&mut Op<'_>) -> Result<u32, DomainError>;

/// Runs the engine once for one organization.
pub fn tick_org(
    domain: &Domain,
    org: &str,
    now: UnixTime,
    driver: &dyn DeliveryDriver,
    report: &mut TickReport,
) -> Result<(), DomainError> {
    tick_org_with(domain, org, &|| now, driver, &SendPolicy::default(), report)
}

/// Deliveries claimed at once by the outbox (see [`tick_with`]).
pub const CHUNK: usize = 32;

fn tick_org_with(
    domain: &Domain,
    org: &str,
    clock: &dyn Fn() -> UnixTime,
    driver: &dyn DeliveryDriver,
    policy: &SendPolicy,
    report: &mut TickReport,
) -> Result<(), DomainError> {
    let now = clock();
    report.overdue += with_op(domain, org, now, "sweep", charges::sweep_overdue)?;
    for (phase, step) in WORKFLOWS {
        report.workflow_steps += with_op(domain, org, now, phase, step)?;
    }
    report.scheduled += with_op(domain, org, now, "plan", plan)?;
    let mut taken = 0;
    let mut first = true;
    loop {
        let at = clock();
        let claimed = with_op(domain, org, at, "claim", |op| {
            claim(op, CHUNK, first, report)
        })?;
        first = false;
        let n = claimed.len();
        for c in claimed {
            let fresh = clock().as_millis() < at.as_millis().saturating_add(CLAIM_MS / 2);
            let result = if fresh {
                driver.send(&c.doc, &c.rendered)
            } else {
                Err(DriverError::new(
                    Failure::Deferred { after_ms: 0 },
                    "claim_expiring",
                    "the claim is past its first half: sent on a fresh claim instead",
                ))
            };
            let outcome = with_op(domain, org, clock(), "finish", |op| {
                deliveries::record_send(op, &c.id, &c.token, &c.rendered, result, policy)
            })?;
            report.count(&c.rendered.channel, outcome);
        }
        taken += n;
        if n < CHUNK || taken >= BATCH as usize {
            return Ok(());
        }
    }
}

/// The engine, as a worker.
const ENGINE: Worker = Worker {
    actor: ACTOR,
    scope: dunning_core::Scope::Write,
    request_id: "ruler-engine",
};

/// Runs `f` on an [`Op`] of the engine in a write transaction of `org`.
fn with_op<R>(
    domain: &Domain,
    org: &str,
    now: UnixTime,
    phase: &str,
    f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
) -> Result<R, DomainError> {
    domain.with_worker_op(&ENGINE, org, now, domain.worker_seed(org, now, phase), f)
}

fn text<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// Step 2: creates the deliveries of every step whose slot has come (a step skipped
/// by a stop or a missing contact point is recorded as a canceled delivery). Returns
/// how many were scheduled.
fn plan(op: &mut Op<'_>) -> Result<u32, DomainError> {
    let q = Query::all().with(Cond::In(
        "status",
        crate::status::values(&[RulerStatus::Draft, RulerStatus::Active, RulerStatus::Paused]),
    ));
    let rulers: Vec<Ruler> = find(op.tx, Kind::Ruler, op.org, &q)?;
    if !rulers.iter().any(|r| r.status == RulerStatus::Active) {
        return Ok(0);
    }
    let mut steps: HashMap<String, Vec<Step>> = HashMap::new();
    for r in rulers.iter().filter(|r| r.status == RulerStatus::Active) {
        let s: Vec<Step> = rulers::steps_of(op.tx, op.org, &r.id)?
            .into_iter()
            .filter(|s| s.active)
            .collect();
        steps.insert(r.id.clone(), s);
    }
    let now_local = calendar::local_now(op.now);
    // Only charges whose due date can put a step's slot in the catch-up window: a slot
    // lies within 2×|offset| + a week of the due date (business days, holidays, the
    // send window and the effective due date included).
    let offsets = steps.values().flatten().map(|s| s.offset_days);
    let (lo, hi) = offsets.fold((0i64, 0i64), |(lo, hi), o| (lo.min(o), hi.max(o)));
    let today = op.today();
    let from = today - Duration::days(2 * hi + CATCH_UP_DAYS + 7);
    let to = today + Duration::days(2 * -lo + 7);
    let open = Query {
        conds: vec![
            Cond::In("status", crate::status::values(DUNNABLE)),
            Cond::Ge("due_date", json!(from.format("%Y-%m-%d").to_string())),
            Cond::Le("due_date", json!(to.format("%Y-%m-%d").to_string())),
        ],
        sort: ("due_date", Order::Asc),
        limit: None,
        offset: 0,
    };
    let charges = op.tx.find(Kind::Charge, op.org, &open)?;
    let mut debtors: HashMap<String, Option<Value>> = HashMap::new();
    let mut made = 0;
    for charge in charges {
        let debtor_id = text(&charge, "debtor_id").unwrap_or_default().to_owned();
        if !debtors.contains_key(&debtor_id) {
            let d = op.tx.get(Kind::Debtor, op.org, &debtor_id)?;
            debtors.insert(debtor_id.clone(), d);
        }
        let Some(Some(debtor)) = debtors.get(&debtor_id).cloned() else {
            continue;
        };
        let Some(ruler) = rulers::resolve_among(&rulers, &charge, &debtor) else {
            continue;
        };
        if ruler.status != RulerStatus::Active {
            continue;
        }
        let Some(due) = text(&charge, "due_date").and_then(calendar::parse_date) else {
            continue;
        };
        // A stop (pause, agreement, do_not_contact) skips the steps that come due
        // meanwhile for good: they are recorded as canceled with the reason.
        let stop = match deliveries::charge_stop(op.tx, op.org, &charge, op.now)? {
            Some(r) => Some(r),
            None => deliveries::debtor_refusal(&debtor),
        };
        let window = ruler.send_window.window();
        let charge_id = text(&charge, "id").unwrap_or_default().to_owned();
        for step in steps.get(&ruler.id).map(Vec::as_slice).unwrap_or_default() {
            let Some(at) = rulers::slot(step, &window, due).at else {
                continue;
            };
            if at > now_local || now_local - at > Duration::days(CATCH_UP_DAYS) {
                continue;
            }
            if rulers::condition_refusal(step, &charge).is_some() {
                continue;
            }
            let id = deliveries::ruler_delivery_id(op.org, &charge_id, &step.id);
            if op.tx.get(Kind::Delivery, op.org, &id)?.is_some() {
                continue;
            }
            let mut refusal = stop.clone();
            let mut contact = None;
            if refusal.is_none()
                && step.action == "notify"
                && deliveries::MESSAGE_CHANNELS.contains(&step.channel.as_str())
            {
                match deliveries::pick_contact_point(op.tx, op.org, &debtor_id, &step.channel)? {
                    Some(cp) => contact = Some(cp),
                    None => {
                        refusal = Some(deliveries::no_contact_refusal(
                            op.tx,
                            op.org,
                            &debtor,
                            &step.channel,
                        )?);
                    }
                }
            }
            let ts = op.timestamp();
            let mut d = Delivery {
                id,
                charge_id: charge_id.clone(),
                debtor_id: debtor_id.clone(),
                contact_point_id: contact
                    .as_ref()
                    .and_then(|c| text(c, "id"))
                    .map(str::to_owned),
                step_id: Some(step.id.clone()),
                ruler_id: Some(ruler.id.clone()),
                channel: step.channel.clone(),
                action: step.action.clone(),
                origin: "ruler".into(),
                status: DeliveryStatus::Scheduled,
                to: contact
                    .as_ref()
                    .and_then(|c| text(c, "value"))
                    .map(str::to_owned),
                scheduled_at: calendar::local_timestamp(at),
                requested_by: Some(ACTOR.into()),
                created_at: ts.clone(),
                updated_at: ts.clone(),
                ..Delivery::default()
            };
            match refusal {
                None => {
                    save(op.tx, Kind::Delivery, op.org, &d)?;
                    op.event("delivery.scheduled", "delivery", &d.id, &d, Value::Null)?;
                    made += 1;
                }
                Some(r) => {
                    crate::status::change(&mut d.status, &d.id, DeliveryStatus::Canceled)?;
                    d.canceled_at = Some(ts);
                    d.cancel_reason = Some(r.code);
                    d.error_message = Some(r.message);
                    save(op.tx, Kind::Delivery, op.org, &d)?;
                    op.event("delivery.canceled", "delivery", &d.id, &d, Value::Null)?;
                }
            }
        }
    }
    Ok(made)
}

/// A delivery claimed for sending.
#[derive(Debug)]
struct Claimed {
    id: String,
    token: String,
    doc: Value,
    rendered: Rendered,
}

/// Why a due delivery may no longer go out, re-checked right before sending.
fn recheck(op: &mut Op<'_>, d: &Delivery) -> Result<Option<(Refusal, Value, Value)>, DomainError> {
    let gone = |what: &str, id: &str| Refusal {
        code: format!("{what}_missing"),
        message: format!("{what} {id} no longer exists"),
        field: None,
    };
    let Some(charge) = op.tx.get(Kind::Charge, op.org, &d.charge_id)? else {
        return Ok(Some((
            gone("charge", &d.charge_id),
            Value::Null,
            Value::Null,
        )));
    };
    let Some(debtor) = op.tx.get(Kind::Debtor, op.org, &d.debtor_id)? else {
        return Ok(Some((gone("debtor", &d.debtor_id), charge, Value::Null)));
    };
    if let Some(r) = deliveries::charge_stop(op.tx, op.org, &charge, op.now)? {
        return Ok(Some((r, charge, debtor)));
    }
    if let Some(r) = deliveries::debtor_refusal(&debtor) {
        return Ok(Some((r, charge, debtor)));
    }
    if let Some(cp_id) = &d.contact_point_id {
        match op.tx.get(Kind::ContactPoint, op.org, cp_id)? {
            None => return Ok(Some((gone("contact_point", cp_id), charge, debtor))),
            Some(cp) => {
                if let Some(r) = deliveries::contact_refusal(&cp, &d.channel) {
                    return Ok(Some((r, charge, debtor)));
                }
            }
        }
    }
    if d.origin == "ruler" {
        if let Some(rid) = &d.ruler_id {
            let r: Option<Ruler> = load(op.tx, Kind::Ruler, op.org, rid)?;
            if let Some(r) = r.filter(|r| r.status != RulerStatus::Active) {
                return Ok(Some((
                    Refusal {
                        code: "ruler_not_active".into(),
                        message: format!("ruler {} ({}) is {}", r.id, r.name, r.status),
                        field: None,
                    },
                    charge,
                    debtor,
                )));
            }
        }
        if let Some(sid) = &d.step_id {
            let st: Option<Step> = load(op.tx, Kind::Step, op.org, sid)?;
            match st {
                Some(st) if st.active => {}
                _ => {
                    return Ok(Some((
                        Refusal {
                            code: "step_inactive".into(),
                            message: format!("step {sid} was deactivated or deleted"),
                            field: None,
                        },
                        charge,
                        debtor,
                    )));
                }
            }
        }
    }
    Ok(None)
}

/// The window a delivery waits for: its ruler's, else the charge's ruler's, else the default.
fn window_of(
    op: &mut Op<'_>,
    d: &Delivery,
    charge: &Value,
    debtor: &Value,
) -> Result<rulers::Window, DomainError> {
    if let Some(rid) = &d.ruler_id {
        if let Some(r) = load::<Ruler>(op.tx, Kind::Ruler, op.org, rid)? {
            return Ok(r.send_window.window());
        }
    }
    Ok(deliveries::window_for(op.tx, op.org, charge, debtor)?.1)
}

/// Step 3a: re-checks, cancels or claims (at most `limit` of) the due deliveries;
/// `count_waiting`: the first call of a tick counts those waiting for their window.
fn claim(
    op: &mut Op<'_>,
    limit: usize,
    count_waiting: bool,
    report: &mut TickReport,
) -> Result<Vec<Claimed>, DomainError> {
    let now_ts = op.timestamp();
    let q = Query {
        conds: vec![
            Cond::In(
                "status",
                crate::status::values(&[DeliveryStatus::Scheduled, DeliveryStatus::Queued]),
            ),
            Cond::Le("scheduled_at", json!(now_ts)),
        ],
        sort: ("scheduled_at", Order::Asc),
        limit: Some(BATCH),
        offset: 0,
    };
    let due: Vec<Delivery> = find(op.tx, Kind::Delivery, op.org, &q)?;
    let now_local = calendar::local_now(op.now);
    let mut out = Vec::new();
    for mut d in due {
        if out.len() >= limit {
            break;
        }
        if d.status == DeliveryStatus::Queued
            && [&d.claim_until, &d.next_attempt_at]
                .iter()
                .any(|u| u.as_deref().is_some_and(|u| u > now_ts.as_str()))
        {
            continue;
        }
        let (charge, debtor) = match recheck(op, &d)? {
            Some((r, _, _)) => {
                if d.status.is_waiting() {
                    deliveries::advance_to(
                        op,
                        &mut d,
                        DeliveryStatus::Canceled,
                        Some((&r.code, &r.message)),
                    )?;
                    report.canceled += 1;
                    report.channel(&d.channel).canceled += 1;
                }
                continue;
            }
            None => {
                let c = op
                    .tx
                    .get(Kind::Charge, op.org, &d.charge_id)?
                    .unwrap_or_default();
                let b = op
                    .tx
                    .get(Kind::Debtor, op.org, &d.debtor_id)?
                    .unwrap_or_default();
                (c, b)
            }
        };
        if !window_of(op, &d, &charge, &debtor)?.allows(now_local) {
            report.waiting += u32::from(count_waiting);
            continue;
        }
        let rendered =
            match deliveries::render_delivery(op.tx, op.org, &d, &charge, &debtor, op.now)? {
                Ok(r) => r,
                Err(r) => {
                    if d.status == DeliveryStatus::Scheduled {
                        deliveries::advance_to(op, &mut d, DeliveryStatus::Queued, None)?;
                    }
                    deliveries::advance_to(
                        op,
                        &mut d,
                        DeliveryStatus::Failed,
                        Some((&r.code, &r.message)),
                    )?;
                    report.failed += 1;
                    report.channel(&d.channel).failed += 1;
                    continue;
                }
            };
        let token = op.new_id();
        let until = calendar::timestamp(op.now.plus_millis(CLAIM_MS));
        if d.status == DeliveryStatus::Scheduled {
            crate::status::change(&mut d.status, &d.id, DeliveryStatus::Queued)?;
            d.queued_at = Some(now_ts.clone());
        }
        d.claim_token = Some(token.clone());
        d.claim_until = Some(until);
        d.next_attempt_at = None;
        d.attempt += 1;
        d.updated_at = now_ts.clone();
        save(op.tx, Kind::Delivery, op.org, &d)?;
        let mut doc = serde_json::to_value(&d).unwrap_or(Value::Null);
        if let Some(m) = doc.as_object_mut() {
            m.remove("claim_token");
            m.remove("claim_until");
        }
        out.push(Claimed {
            id: d.id.clone(),
            token,
            doc,
            rendered,
        });
    }
    Ok(out)
}
