//! One delivery, one worker: the outbox worker never posts a delivery that
//! `dunning_webhooks_test` claimed and is posting after its commit.
//!
//! The racing driver is the one the bed's domain posts `dunning_webhooks_test`
//! through ([`dunning_domain::Domain::set_webhook_driver`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use dunning_core::UnixTime;
use dunning_domain::Domain;
use dunning_domain::ops::webhooks::{
    self, CLAIM_MS, WebhookDriver, WebhookRequest, WebhookResponse,
};
use dunning_domain::testing::Bed;
use serde_json::json;

/// Records every post; on the first (the test delivery, posted after its transaction
/// committed) runs the outbox worker's tick, as the jobs thread may at that moment.
struct Racing {
    worker: Domain,
    now: UnixTime,
    posts: Mutex<Vec<(String, String)>>,
    calls: AtomicU32,
}

impl WebhookDriver for Racing {
    fn post(&self, req: &WebhookRequest) -> WebhookResponse {
        self.posts
            .lock()
            .unwrap()
            .push((req.delivery_id.clone(), req.event_code.clone()));
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            // At once, and just before the test's claim lapses.
            for later in [0, CLAIM_MS - 1000] {
                webhooks::tick(&self.worker, self.now.plus_millis(later), self).unwrap();
            }
        }
        WebhookResponse {
            status: Some(200),
            body: "ok".into(),
            duration_ms: 1,
            error: None,
        }
    }
}

#[test]
fn a_test_delivery_being_posted_is_never_posted_by_the_worker_too() {
    let store = dunning_domain::testing::store();
    let mut bed = Bed::on(store.clone());
    let ana = bed.ana();
    let driver = Arc::new(Racing {
        worker: Domain::new(store),
        now: bed.now,
        posts: Mutex::new(Vec::new()),
        calls: AtomicU32::new(0),
    });
    bed.domain.set_webhook_driver(driver.clone());

    let hook = bed.ok(
        &ana,
        "dunning_webhooks_create",
        json!({"url": "https://x.example.com/h", "events": ["*"]}),
    );
    // A due delivery of a real event, so the worker's tick has work of its own.
    let debtor = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": debtor["id"], "amount": 10.0, "due_date": "2026-12-10", "payment_method": "pix"}),
    );

    let d = bed.ok(&ana, "dunning_webhooks_test", json!({"id": hook["id"]}));
    assert_eq!(d["status"], "delivered", "{d}");
    assert_eq!(d["attempts"], 1, "{d}");

    let posts = driver.posts.lock().unwrap().clone();
    let test_id = d["id"].as_str().unwrap();
    let tests = posts.iter().filter(|(id, _)| id == test_id).count();
    assert_eq!(tests, 1, "the test delivery was posted once: {posts:?}");
    assert!(
        posts.iter().any(|(_, code)| code == "charge.created"),
        "the worker ticked and posted its own due delivery: {posts:?}"
    );
    let mut ids: Vec<&String> = posts.iter().map(|(id, _)| id).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        posts.len(),
        "no delivery posted twice: {posts:?}"
    );
}
