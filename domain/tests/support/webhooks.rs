//! Helpers of the webhook tests, shared by `domain/tests/webhooks.rs` and the HTTP
//! driver's tests in the binary (`transports/bin/src/webhook_http/tests.rs`), which
//! include this file with `#[path]`.

use dunning_core::Principal;
use dunning_domain::ops::exports;
use dunning_domain::ops::webhooks::{self, WebhookDriver};
use dunning_domain::testing::Bed;
use serde_json::{Value, json};

pub(crate) fn hook(bed: &mut Bed, who: &Principal, url: &str, events: Value) -> Value {
    bed.ok(
        who,
        "dunning_webhooks_create",
        json!({"url": url, "events": events, "description": "ERP"}),
    )
}

pub(crate) use dunning_domain::testing::id;

/// Makes one `export.processed` event in `who`'s organization (and its fan-out).
pub(crate) fn export_processed(bed: &mut Bed, who: &Principal) -> String {
    let e = bed.ok(
        who,
        "dunning_exports_create",
        json!({"resource": "debtors"}),
    );
    for _ in 0..2 {
        run_process(bed, who);
    }
    id(&e)
}

pub(crate) fn run_process(bed: &Bed, who: &Principal) -> u32 {
    webhooks::with_system_op(
        &bed.domain,
        &who.organization,
        bed.now,
        None,
        exports::process,
    )
    .expect("process")
}

pub(crate) fn deliver(bed: &Bed, who: &Principal, driver: &dyn WebhookDriver) -> u32 {
    webhooks::with_system_op(&bed.domain, &who.organization, bed.now, None, |op| {
        webhooks::deliver(op, driver)
    })
    .expect("deliver")
}

pub(crate) fn deliveries(bed: &mut Bed, who: &Principal, hook_id: &str) -> Vec<Value> {
    bed.ok(
        who,
        "dunning_webhook_deliveries_list",
        json!({"id": hook_id, "per_page": 100}),
    )["data"]
        .as_array()
        .unwrap()
        .clone()
}
