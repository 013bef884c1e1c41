//! The outbox's sending rules with a scripted driver and a clock the test moves: each
//! answer recorded as it comes (`record_send`), bounded back-off, budgets that defer
//! without counting an attempt, claims (a second sender never sends a claimed message;
//! a sender killed mid-send leaves it to another, which sends it again only because no
//! answer was recorded), providers' statuses (monotonic, idempotent, bounces) and the
//! unsubscribe link's opt-out. On SQLite, and on PostgreSQL with `DUNNING_TEST_PG`.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use dunning_core::{Principal, UnixTime};
use dunning_domain::brazil::document::cpf_from_base;
use dunning_domain::engine::{
    self, CLAIM_MS, DeliveryDriver, DriverError, DriverReceipt, Failure, RecordingDriver, Rendered,
    SendPolicy,
};
use dunning_domain::ops::deliveries::{
    Applied, Bounce, ProviderState, Unsubscribed, apply_provider_status, unsubscribe,
};
use dunning_domain::testing::Bed;
use serde_json::{Value, json};

type Answer = Result<DriverReceipt, DriverError>;

/// Answers from a script (then accepts), keeping which deliveries it was handed.
#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    handed: Mutex<Vec<String>>,
    die: AtomicBool,
}

impl Script {
    fn then(self, a: Answer) -> Self {
        self.answers.lock().unwrap().push_back(a);
        self
    }

    fn handed(&self) -> Vec<String> {
        self.handed.lock().unwrap().clone()
    }
}

impl DeliveryDriver for Script {
    fn send(&self, delivery: &Value, _r: &Rendered) -> Answer {
        let id = delivery["id"].as_str().unwrap().to_owned();
        self.handed.lock().unwrap().push(id.clone());
        assert!(!self.die.load(Ordering::SeqCst), "the sender dies mid-send");
        self.answers.lock().unwrap().pop_front().unwrap_or_else(|| {
            Ok(DriverReceipt {
                provider_message_id: format!("pm-{id}"),
            })
        })
    }
}

fn err(kind: Failure, code: &str) -> Answer {
    Err(DriverError::new(kind, code, "scripted"))
}

const POLICY: SendPolicy = SendPolicy {
    base_ms: 60_000,
    max_ms: 120_000,
    max_attempts: 3,
};

struct Fx {
    bed: Bed,
    ana: Principal,
    n: u8,
}

impl Fx {
    fn new() -> Self {
        let bed = Bed::new();
        let ana = bed.ana();
        Self { bed, ana, n: 0 }
    }

    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let who = self.ana.clone();
        self.bed.ok(&who, tool, args)
    }

    /// A debtor with an e-mail, a charge, a notify queued: (delivery, contact point, debtor).
    fn queued(&mut self, extra: Value) -> (String, String, String) {
        self.n += 1;
        let n = self.n;
        let debtor = self.ok(
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf_from_base(&[n % 9 + 1, 1, 2, 3, 4, 5, 6, 7, n]), "name": format!("Bia {n}")}),
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let cp = self.ok(
            "dunning_contact_points_create",
            json!({"id": debtor, "channel": "email", "value": format!("bia{n}@example.com")}),
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let charge = self.ok(
            "dunning_charges_create",
            json!({"debtor_id": debtor, "amount": 50.0, "due_date": "2026-12-20", "payment_method": "pix"}),
        )["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut args = json!({"id": charge, "channel": "email", "template_id": "reminder"});
        args.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        let d = self.ok("dunning_charges_notify", args)["id"]
            .as_str()
            .unwrap()
            .to_owned();
        (d, cp, debtor)
    }

    fn delivery(&mut self, id: &str) -> Value {
        self.ok("dunning_deliveries_list", json!({"per_page": 100}))["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["id"] == id)
            .unwrap_or_else(|| panic!("no delivery {id}"))
            .clone()
    }

    fn contact_point(&mut self, debtor: &str, cp: &str) -> Value {
        self.ok("dunning_contact_points_list", json!({"id": debtor}))["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == cp)
            .unwrap()
            .clone()
    }

    fn tick_at(&mut self, at: UnixTime, driver: &dyn DeliveryDriver) -> engine::TickReport {
        engine::tick_with(&self.bed.domain, &|| at, driver, &POLICY).expect("tick")
    }

    fn events(&mut self, id: &str, code: &str) -> usize {
        self.ok(
            "dunning_events_list",
            json!({"resource_id": id, "code": code}),
        )["data"]
            .as_array()
            .unwrap()
            .len()
    }
}

fn later(t: UnixTime, ms: u64) -> UnixTime {
    t.plus_millis(ms)
}

#[test]
fn temporary_failures_back_off_then_send_or_give_up_after_the_policy() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    let (a, ..) = fx.queued(json!({}));
    let script = Script::default()
        .then(err(Failure::Retry, "smtp_421"))
        .then(err(Failure::Retry, "smtp_421"))
        .then(err(Failure::Retry, "smtp_451"));
    let r = fx.tick_at(t0, &script);
    assert_eq!((r.sent, r.retrying), (0, 1));
    let d = fx.delivery(&a);
    assert_eq!(d["status"], "queued");
    assert_eq!(d["attempt"], 1);
    assert_eq!(d["error_code"], "smtp_421");
    assert!(d.get("claim_token").is_none(), "the claim is released: {d}");
    let next = d["next_attempt_at"].as_str().unwrap().to_owned();
    // Not before the back-off (60 s)...
    fx.tick_at(later(t0, 30_000), &script);
    assert_eq!(script.handed().len(), 1);
    // ...then again, the next wait doubled but capped (120 s), and after the third
    // attempt it fails with the last error.
    fx.tick_at(later(t0, 61_000), &script);
    let d = fx.delivery(&a);
    assert_eq!(
        (d["attempt"].clone(), d["status"].clone()),
        (json!(2), json!("queued"))
    );
    assert!(d["next_attempt_at"].as_str().unwrap() > next.as_str());
    fx.tick_at(later(t0, 61_000 + 119_000), &script);
    assert_eq!(script.handed().len(), 2, "the capped back-off is 120 s");
    fx.tick_at(later(t0, 61_000 + 121_000), &script);
    let d = fx.delivery(&a);
    assert_eq!(d["status"], "failed");
    assert_eq!(d["error_code"], "smtp_451");
    assert!(
        d["error_message"]
            .as_str()
            .unwrap()
            .contains("gave up after 3 attempts"),
        "{d}"
    );
    assert_eq!(d["attempt"], 3);

    // Refused once, then accepted: sent on the second attempt, the error cleared.
    let (b, ..) = fx.queued(json!({}));
    let t1 = later(t0, 300_000);
    let script = Script::default().then(err(Failure::Retry, "smtp_421"));
    fx.tick_at(t1, &script);
    let r = fx.tick_at(later(t1, 60_001), &script);
    assert_eq!(r.sent, 1);
    let d = fx.delivery(&b);
    assert_eq!(
        (d["status"].clone(), d["attempt"].clone()),
        (json!("sent"), json!(2))
    );
    assert!(d["error_code"].is_null(), "{d}");
    assert_eq!(d["provider_message_id"], format!("pm-{b}"));
}

#[test]
fn a_spent_budget_defers_without_counting_an_attempt() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    let (a, ..) = fx.queued(json!({}));
    let script =
        Script::default().then(err(Failure::Deferred { after_ms: 5_000 }, "channel_budget"));
    let r = fx.tick_at(t0, &script);
    assert_eq!((r.sent, r.failed, r.retrying), (0, 0, 0));
    let d = fx.delivery(&a);
    assert_eq!(
        (d["status"].clone(), d["attempt"].clone()),
        (json!("queued"), json!(0))
    );
    fx.tick_at(later(t0, 1_000), &script);
    assert_eq!(script.handed().len(), 1, "not before after_ms");
    fx.tick_at(later(t0, 5_001), &script);
    let d = fx.delivery(&a);
    assert_eq!(
        (d["status"].clone(), d["attempt"].clone()),
        (json!("sent"), json!(1))
    );
}

#[test]
fn a_claimed_message_is_sent_once_and_a_killed_sender_s_is_sent_again_after_its_claim() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    let (a, ..) = fx.queued(json!({}));
    // The sender dies between its claim and the provider's answer.
    let dying = Script::default();
    dying.die.store(true, Ordering::SeqCst);
    let domain = &fx.bed.domain;
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        engine::tick_with(domain, &|| t0, &dying, &POLICY)
    }));
    assert!(died.is_err());
    assert_eq!(dying.handed(), std::slice::from_ref(&a));
    // Another sender during the claim: it leaves the message alone.
    let other = RecordingDriver::new();
    let r = fx.tick_at(later(t0, CLAIM_MS - 1_000), &other);
    assert_eq!(r.sent, 0);
    assert!(other.messages().is_empty());
    // After the claim: no answer was recorded, so it is sent again (attempt 2).
    let r = fx.tick_at(later(t0, CLAIM_MS + 1), &other);
    assert_eq!(r.sent, 1);
    let d = fx.delivery(&a);
    assert_eq!(
        (d["status"].clone(), d["attempt"].clone()),
        (json!("sent"), json!(2))
    );
    // An answered send is never sent again, claim or no claim.
    let r = fx.tick_at(later(t0, 3 * CLAIM_MS), &other);
    assert_eq!((r.sent, other.messages().len()), (0, 1));
}

#[test]
fn two_senders_at_once_send_a_message_once() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    fx.queued(json!({}));
    fx.queued(json!({}));
    /// A sender that, while sending, lets another sender run a whole tick.
    struct Racing<'a> {
        domain: &'a dunning_domain::Domain,
        at: UnixTime,
        other: RecordingDriver,
        inner: Script,
    }
    impl DeliveryDriver for Racing<'_> {
        fn send(&self, delivery: &Value, r: &Rendered) -> Answer {
            engine::tick_with(self.domain, &|| self.at, &self.other, &POLICY).expect("tick");
            self.inner.send(delivery, r)
        }
    }
    let racing = Racing {
        domain: &fx.bed.domain,
        at: later(t0, 1_000),
        other: RecordingDriver::new(),
        inner: Script::default(),
    };
    let r = engine::tick_with(&fx.bed.domain, &|| t0, &racing, &POLICY).unwrap();
    assert_eq!(r.sent, 2);
    assert!(
        racing.other.messages().is_empty(),
        "the other sender sent a claimed message"
    );
    assert_eq!(racing.inner.handed().len(), 2);
}

#[test]
fn a_long_tick_sends_only_within_the_first_half_of_a_claim() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    let (a, ..) = fx.queued(json!({}));
    // Every reading of this clock is three minutes after the last: past half the claim
    // (2.5 min) between the claim and the send.
    let ms = AtomicU64::new(t0.as_millis());
    let clock = || UnixTime::from_millis(ms.fetch_add(180_000, Ordering::SeqCst));
    let script = Script::default();
    let r = engine::tick_with(&fx.bed.domain, &clock, &script, &POLICY).unwrap();
    assert_eq!(r.sent, 0);
    assert!(
        script.handed().is_empty(),
        "nothing sent on a claim past its half"
    );
    let d = fx.delivery(&a);
    assert_eq!(
        (d["status"].clone(), d["attempt"].clone()),
        (json!("queued"), json!(0))
    );
    let r = fx.tick_at(later(t0, 3_600_000), &script);
    assert_eq!(r.sent, 1);
}

#[test]
fn provider_statuses_move_forward_only_once_and_bounces_mark_the_address() {
    let mut fx = Fx::new();
    let t0 = fx.bed.now;
    let (a, cp_a, debtor_a) = fx.queued(json!({}));
    let (b, cp_b, debtor_b) = fx.queued(json!({}));
    fx.tick_at(t0, &Script::default());
    let domain = &fx.bed.domain;
    let apply = |id: &str, s: &ProviderState| {
        apply_provider_status(domain, later(t0, 60_000), "email", &format!("pm-{id}"), s).unwrap()
    };
    // Read before delivered: both stamped; then the late delivered and a replay change nothing.
    assert_eq!(
        apply(&a, &ProviderState::Read),
        Applied::Changed {
            status: "read".into()
        }
    );
    assert_eq!(
        apply(&a, &ProviderState::Delivered),
        Applied::Unchanged {
            status: "read".into()
        }
    );
    assert_eq!(
        apply(&a, &ProviderState::Read),
        Applied::Unchanged {
            status: "read".into()
        }
    );
    assert_eq!(
        apply(&a, &ProviderState::Sent),
        Applied::Unchanged {
            status: "read".into()
        }
    );
    let failed = ProviderState::Failed {
        code: "x_1".into(),
        message: "late failure".into(),
        bounce: Bounce::Hard,
    };
    assert_eq!(
        apply(&a, &failed),
        Applied::Unchanged {
            status: "read".into()
        },
        "a read message never fails"
    );
    let d = fx.delivery(&a);
    assert!(
        d["delivered_at"].is_string() && d["read_at"].is_string(),
        "{d}"
    );
    assert_eq!(fx.events(&a, "delivery.read"), 1);
    assert_eq!(fx.events(&a, "delivery.delivered"), 1);
    assert_eq!(
        fx.contact_point(&debtor_a, &cp_a)["last_delivery_status"],
        "read"
    );
    // Unknown ids, or an id on another channel: nothing.
    let domain = &fx.bed.domain;
    assert_eq!(
        apply_provider_status(domain, t0, "email", "pm-nope", &ProviderState::Read).unwrap(),
        Applied::Unknown
    );
    assert_eq!(
        apply_provider_status(domain, t0, "sms", &format!("pm-{b}"), &ProviderState::Read).unwrap(),
        Applied::Unknown
    );
    // A hard bounce: bounced with the provider's code, counted once, the address invalid.
    let apply = |id: &str, s: &ProviderState| {
        apply_provider_status(domain, later(t0, 60_000), "email", &format!("pm-{id}"), s).unwrap()
    };
    assert_eq!(
        apply(&b, &failed),
        Applied::Changed {
            status: "bounced".into()
        }
    );
    assert_eq!(
        apply(&b, &failed),
        Applied::Unchanged {
            status: "bounced".into()
        }
    );
    assert_eq!(
        apply(&b, &ProviderState::Delivered),
        Applied::Unchanged {
            status: "bounced".into()
        }
    );
    let d = fx.delivery(&b);
    assert_eq!(
        (d["error_code"].clone(), d["error_message"].clone()),
        (json!("x_1"), json!("late failure"))
    );
    let cp = fx.contact_point(&debtor_b, &cp_b);
    assert_eq!(cp["bounce_count"], 1);
    assert_eq!(cp["status"], "invalid");
    assert_eq!(cp["last_delivery_status"], "bounced");
}

#[test]
fn the_unsubscribe_link_opts_out_at_once_and_cancels_what_was_pending() {
    let mut fx = Fx::new();
    let (a, cp, debtor) = fx.queued(json!({"schedule_at": "2026-12-01T15:00:00-03:00"}));
    assert_eq!(fx.delivery(&a)["status"], "scheduled");
    let org = fx.ana.organization.clone();
    let now = fx.bed.now;
    let domain = &fx.bed.domain;
    assert_eq!(
        unsubscribe(domain, now, &org, &cp).unwrap(),
        Unsubscribed::Now
    );
    assert_eq!(
        unsubscribe(domain, now, &org, &cp).unwrap(),
        Unsubscribed::Already
    );
    assert_eq!(
        unsubscribe(domain, now, &org, "no-such-cp").unwrap(),
        Unsubscribed::Unknown
    );
    assert_eq!(
        unsubscribe(domain, now, "no-such-org", &cp).unwrap(),
        Unsubscribed::Unknown
    );
    let c = fx.contact_point(&debtor, &cp);
    assert_eq!(c["consent"], "opted_out");
    assert!(c["opted_out_at"].is_string());
    let d = fx.delivery(&a);
    assert_eq!(
        (d["status"].clone(), d["cancel_reason"].clone()),
        (json!("canceled"), json!("opted_out"))
    );
    assert_eq!(fx.events(&cp, "contact_point.opted_out"), 1);
}
