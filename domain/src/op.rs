//! [`Op`]: what a tool handler works with — the transaction, the caller, the clock, the
//! arguments — plus the helpers every handler needs (ids, events, list answers). The
//! arguments are read as structs ([`Op::args`], in [`crate::args`]).
//!
//! Time and chance reach the domain only here: an [`Op`] carries the wall-clock time of
//! its request ([`Op::now`]) and the entropy it was lent, from which every id
//! ([`Op::new_id`]) and every secret ([`Op::entropy`]) is derived. A request's op gets
//! both from the transport (the core's `Ctx`); a worker's op (engine, webhook outbox,
//! exports) gets the time from its caller and its entropy from [`WorkerEntropy`]. The
//! domain never reads a clock or an RNG of its own (`domain/tests/no_sockets.rs`).

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::NaiveDate;
use dunning_core::{Body, JsonText, Output, Principal, UnixTime};
use serde::Serialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::brazil::calendar;
use crate::error::DomainError;
use crate::org::Settings;
use crate::store::{Kind, Tx, save};

/// One operation in progress.
pub struct Op<'a> {
    /// The transaction (read-only for reads).
    pub tx: &'a mut dyn Tx,
    /// The caller's organization id.
    pub org: &'a str,
    /// The caller.
    pub principal: &'a Principal,
    /// Wall-clock time of the request.
    pub now: UnixTime,
    /// Arguments (path, query and body flattened).
    pub args: &'a Map<String, Value>,
    /// Request id (audit).
    pub request_id: &'a str,
    /// The organization's settings.
    pub settings: Settings,
    /// A dry run (confirmation preflight): rolled back, no outbound budget consumed.
    pub dry_run: bool,
    /// Outbound limiter (messages to debtors, webhook calls).
    pub outbound: &'a crate::outbound::Outbound,
    /// The tool table, for a handler that runs another tool (an export pages through
    /// a list tool): the domain's, built once.
    pub registry: &'a crate::catalog::Registry,
    /// What a read-only call may reuse of membership's rows (`kept.rs`); `None` for
    /// writes and on a store that cannot tell when they change.
    pub(crate) memo: Option<crate::kept::Memo<'a>>,
    seed: [u8; 32],
    counter: u32,
}

impl std::fmt::Debug for Op<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Op")
            .field("org", &self.org)
            .finish_non_exhaustive()
    }
}

/// Page requested by a list call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    /// 1-based page.
    pub page: u32,
    /// Items per page (1–100).
    pub per_page: u32,
}

impl Page {
    /// Rows to skip.
    pub fn offset(self) -> u32 {
        (self.page - 1).saturating_mul(self.per_page)
    }
}

impl<'a> Op<'a> {
    /// Starts an operation.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tx: &'a mut dyn Tx,
        org: &'a str,
        principal: &'a Principal,
        now: UnixTime,
        args: &'a Map<String, Value>,
        request_id: &'a str,
        seed: [u8; 32],
        settings: Settings,
        outbound: &'a crate::outbound::Outbound,
        registry: &'a crate::catalog::Registry,
    ) -> Self {
        Self {
            tx,
            org,
            principal,
            now,
            args,
            request_id,
            settings,
            dry_run: false,
            outbound,
            registry,
            memo: None,
            seed,
            counter: 0,
        }
    }

    /// A fresh UUID (v4 layout), derived from the request's entropy and a counter.
    pub fn new_id(&mut self) -> String {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(self.counter.to_be_bytes());
        let d = h.finalize();
        let mut b = [0u8; 16];
        b.copy_from_slice(&d[..16]);
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &hex[..8],
            &hex[8..12],
            &hex[12..16],
            &hex[16..20],
            &hex[20..]
        )
    }

    /// 32 fresh bytes from the operation's entropy (secrets). Drawn on the same counter
    /// as the ids but hashed apart from them: no id tells anything of these bytes.
    pub fn entropy(&mut self) -> [u8; 32] {
        self.counter += 1;
        let mut h = Sha256::new();
        h.update(b"dunning-op-entropy\0");
        h.update(self.seed);
        h.update(self.counter.to_be_bytes());
        h.finalize().into()
    }

    /// Now as an RFC 3339 timestamp in the organization's zone.
    pub fn timestamp(&self) -> String {
        calendar::timestamp(self.now)
    }

    /// Today in the organization's zone.
    pub fn today(&self) -> NaiveDate {
        calendar::today(self.now)
    }

    /// Records an audit event (every change writes one) and fans it out to the webhooks
    /// that want it (`webhook.*` events never are: a test delivery must not trigger
    /// deliveries of its own). Returns the stored event.
    pub fn event(
        &mut self,
        code: &str,
        resource_type: &str,
        resource_id: &str,
        data: &impl Serialize,
        changes: Value,
    ) -> Result<Value, DomainError> {
        let id = self.new_id();
        let at = self.timestamp();
        let sequence = self.tx.next_event_sequence(self.org)?;
        let event = json!({
            "id": id,
            "sequence": sequence,
            "code": code,
            "resource_type": resource_type,
            "resource_id": resource_id,
            "occurred_at": at,
            "data": serde_json::to_value(data).unwrap_or(Value::Null),
            "changes": changes,
            "actor": self.principal.subject,
            "request_id": self.request_id,
            "created_at": at,
            "updated_at": at,
        });
        save(self.tx, Kind::Event, self.org, &event)?;
        crate::ops::webhooks::fan_out(self, &event)?;
        Ok(event)
    }
}

/// The entropy of the operations no request lends any (the ruler engine, the webhook
/// outbox, exports): a seed lent once by the process ([`crate::Domain::lend_entropy`];
/// the binary lends fresh OS bytes) and a counter of this domain, hashed with the
/// organization, the time and the phase. Every draw differs from the ones before (the
/// counter) and from other processes' and replicas' (the seed). Without a loan the
/// seed is zero, so tests get repeatable ids.
#[derive(Debug, Default)]
pub struct WorkerEntropy {
    seed: [u8; 32],
    drawn: AtomicU64,
}

impl WorkerEntropy {
    /// Entropy from `seed`.
    pub fn new(seed: [u8; 32]) -> Self {
        Self {
            seed,
            drawn: AtomicU64::new(0),
        }
    }

    /// The seed of one worker [`Op`] of `org` at `now` in `phase`.
    pub fn draw(&self, org: &str, now: UnixTime, phase: &str) -> [u8; 32] {
        let n = self.drawn.fetch_add(1, Ordering::Relaxed);
        let mut h = Sha256::new();
        h.update(self.seed);
        h.update(n.to_be_bytes());
        h.update(now.as_millis().to_be_bytes());
        h.update(org.as_bytes());
        h.update([0]);
        h.update(phase.as_bytes());
        h.finalize().into()
    }
}

/// A list answer `{data, meta}`: the rows serialized once, straight into the body's text
/// (no tree of them is built; `dunning_core::Body`).
pub fn list<T: Serialize>(items: Vec<T>, page: Page, total: u64) -> Output {
    #[derive(Serialize)]
    struct Meta {
        page: u32,
        per_page: u32,
        total: u64,
        total_pages: u64,
    }
    #[derive(Serialize)]
    struct List<T> {
        data: Vec<T>,
        meta: Meta,
    }
    let body = List {
        data: items,
        meta: Meta {
            page: page.page,
            per_page: page.per_page,
            total,
            total_pages: total.div_ceil(u64::from(page.per_page)),
        },
    };
    written(200, &body)
}

/// A `201 Created` JSON output.
pub fn created(body: impl Serialize) -> Output {
    written(201, &body)
}

/// A `200 OK` JSON output.
pub fn ok(body: impl Serialize) -> Output {
    written(200, &body)
}

/// `body` serialized once, into the output's text (`dunning_core::Body`): no tree is
/// built, copied or walked again. Only a map whose keys are not strings fails to
/// serialize, and no output of ours holds one; it would answer `null`, as the tree's
/// conversion did.
fn written(status: u16, body: &impl Serialize) -> Output {
    let text = JsonText::of(body).unwrap_or_else(|_| JsonText::null());
    Output::Json {
        status,
        body: Body::Text(text),
    }
}

/// The `changes` of an event ([`Op::event`]): `{field: {from, to}}` for every top-level
/// field that changed (`updated_at` left out). Every group's updates use it.
pub fn diff<T: Serialize>(before: &T, after: &T) -> Value {
    let (Ok(Value::Object(a)), Ok(Value::Object(b))) =
        (serde_json::to_value(before), serde_json::to_value(after))
    else {
        return Value::Null;
    };
    let mut out = Map::new();
    for (k, v) in &b {
        if k == "updated_at" {
            continue;
        }
        if a.get(k) != Some(v) {
            out.insert(k.clone(), json!({ "from": a.get(k), "to": v }));
        }
    }
    Value::Object(out)
}
