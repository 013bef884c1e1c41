//! Every MCP tool and its `/v1` REST twin answer the same JSON (a tool cannot diverge
//! from the endpoint it mirrors; this test proves it by calling both and comparing), over
//! a real socket in both eras (era 2025 cannot confirm, so it refuses destructive tools).
//!
//! Three identical servers — the core [`Server`] over the real [`Domain`], each on its own
//! store seeded with the deterministic demo data (in-memory SQLite, or a fresh PostgreSQL
//! schema when `DUNNING_TEST_PG` names a database) — are served over real
//! loopback sockets by the blocking adapter. All see the same sequence of operations
//! under the same fixed clock and, per operation, the same request counter (so the same
//! entropy and request id): server `mcp` gets each one as an era-2026 `tools/call` (the
//! `_meta` envelope, mirrored `Mcp-*` headers, and for destructive tools the
//! confirmation round trip: `input_required`, then the same call with the accepted answer
//! and the sealed `requestState`), server `rest` gets it on the tool's `/v1` route (path
//! variables, query string for `GET`/`DELETE`, JSON body otherwise, `X-Idempotency-Key`),
//! and server `legacy` gets it as an era-2025 `tools/call` (`MCP-Protocol-Version:
//! 2025-06-18`, no envelope, no mirrored headers, no `initialize`: the transport is
//! stateless). Generated ids and timestamps therefore agree (webhook signing secrets,
//! drawn from the OS on purpose, are compared by shape: see [`mask_secrets`]), and every
//! answer is compared:
//!
//! * JSON: the tool result's `structuredContent` equals the REST body, and its text item is
//!   that value pretty-printed;
//! * `204`: the tool answers `{"status": 204}`;
//! * files (PDF, CSV): the tool's descriptor names the REST `Content-Type`, the size of
//!   the REST body, and a `download_path` that serves the same bytes;
//! * tool errors: `isError` with `structuredContent` equal to the REST error body, whose
//!   HTTP status is the one [`twin::rest_status`] gives the code;
//! * era 2025: the same result as era 2026 (text item, `structuredContent`, `isError`),
//!   without the era-2026 fields (`resultType`, `_meta`, `ttlMs`, `cacheScope`) —
//!   except where era 2026 asked for confirmation: era 2025 cannot confirm, so the tool is
//!   refused with the `CONFIRMATION_REQUIRED` tool error, and the store is checked
//!   unchanged by the refusal (a destructive call that fails its preflight answers the
//!   preflight's error in both eras, and changes nothing either). The operation is then
//!   applied to `legacy` on its `/v1` route, under the same counter, and must answer what
//!   `rest` answered, so the three stores stay identical (checked at the end).
//!
//! The sequence reads the pristine demo data first, then writes (creates, updates, state
//! changes, destructive tools), then reads again. It must cover every tool of the catalogue,
//! in both eras, and refuse every destructive tool at least once in era 2025: a tool added
//! without a case fails the test. Each case also states the outcome it
//! expects (success or an error code), so the comparison is never between two unexpected
//! failures.
//!
//! The principal is the same person and token on both servers: the test authenticator
//! returns it for both audiences. In the product an MCP token is refused on `/v1` and the
//! reverse, and the token's audience is visible by design in `dunning_me`
//! (`token.kind`) and in the `origin` of manual deliveries (`manual` vs `api`); holding it
//! fixed isolates what this test is about, the surface.
//!
//! ## Trials
//!
//! The sequence is one story (a case uses what earlier ones made, and the three stores
//! must end identical), so it runs once, whole, by the first trial that runs; then
//! every trial reports its part of it (`libtest-mimic`):
//!
//! * `tool::<name>`, one per catalogue tool: every case of the tool passed, it was
//!   compared with its REST twin and checked in era 2025, and, destructive, refused
//!   there for confirmation at least once;
//! * `sequence`: the sequence ran to its end (a panic outside a case, e.g. a case that
//!   failed and left no id for the next one, stops it: the tools it did not reach fail);
//! * `stores_agree`: the three stores hold the same data at the end;
//! * `coverage`: the catalogue served is the one the trials were listed from.
//!
//! A failing case does not stop the sequence: it is kept with its tool, with a note when
//! an earlier case failed first (its failure may follow from that one).
//! `cargo test -p kobana-dunning --test rest_twin -- tool::dunning_charges_cancel` runs
//! the sequence and reports that tool only.

#[path = "../common/mod.rs"]
mod common;

mod sequence;
mod side;
mod twin;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use common::trials::{Shared, ensure, panic_message};
use libtest_mimic::{Arguments, Failed, Trial};

use twin::Twin;

/// The person every call runs as (owner of `demo`: every scope, every permission).
const PERSON: &str = "ana@demo.example";
/// The bearer token the test authenticator accepts.
const TOKEN: &str = "twin-token";
/// The modern revision.
const V2026: &str = "2026-07-28";
/// The legacy revision the era-2025 calls name (the newest 2025 one: it has
/// `structuredContent`, which `2025-03-26` predates).
const V2025: &str = "2025-06-18";

/// What the sequence did, kept for the trials once its servers are stopped.
struct Record {
    /// The catalogue served: each tool and whether it is destructive.
    tools: BTreeMap<String, bool>,
    /// Every case run, by tool: its label and, when it failed, why.
    cases: BTreeMap<String, Vec<(String, Option<String>)>>,
    /// Tools compared between era 2026 and REST.
    covered: BTreeSet<String>,
    /// Tools checked in era 2025.
    covered_legacy: BTreeSet<String>,
    /// Destructive tools refused with `CONFIRMATION_REQUIRED` in era 2025.
    refused: BTreeSet<String>,
    /// Why the sequence stopped before its end.
    stopped: Option<String>,
    /// Whether the three stores ended identical, and where not.
    stores: Result<(), String>,
}

/// Runs the sequence on three fresh servers, prints its log, and keeps what it did.
fn run_sequence() -> Record {
    let mut t = Twin::new();
    let stopped = catch_unwind(AssertUnwindSafe(|| sequence::run(&mut t)))
        .err()
        .map(|p| match &t.first_failure {
            Some(first) => format!("{}\n(after the failure of {first})", panic_message(&*p)),
            None => panic_message(&*p),
        });
    let stores = t.stores_agree();
    eprintln!("{}", t.summary());
    Record {
        tools: t
            .tools
            .iter()
            .map(|d| (d.name.clone(), d.annotations.destructive))
            .collect(),
        cases: std::mem::take(&mut t.cases),
        covered: std::mem::take(&mut t.covered),
        covered_legacy: std::mem::take(&mut t.covered_legacy),
        refused: std::mem::take(&mut t.refused),
        stopped,
        stores,
    }
}

/// One tool's part of the sequence.
fn tool_trial(r: &Record, tool: &str) -> Result<(), Failed> {
    let destructive = *r
        .tools
        .get(tool)
        .ok_or_else(|| format!("{tool} is not in the served catalogue"))?;
    let mut problems = String::new();
    for (label, failure) in r.cases.get(tool).into_iter().flatten() {
        if let Some(why) = failure {
            let _ = writeln!(problems, "\n* {label}\n    {why}");
        }
    }
    if !r.covered.contains(tool) {
        let _ = writeln!(problems, "\n* no REST-twin case");
    }
    if !r.covered_legacy.contains(tool) {
        let _ = writeln!(problems, "\n* no era-{V2025} check");
    }
    if destructive && !r.refused.contains(tool) {
        let _ = writeln!(
            problems,
            "\n* destructive, never refused for confirmation in era {V2025}"
        );
    }
    if let (false, Some(why)) = (problems.is_empty(), &r.stopped) {
        let _ = writeln!(problems, "\n(the sequence stopped early: {why})");
    }
    ensure(problems.is_empty(), || format!("{tool}:{problems}"))
}

/// The trials (listed from the domain's catalogue, no server needed), over the sequence
/// run once by the first of them.
fn main() {
    let args = Arguments::from_args();
    let record = Shared::new(run_sequence);
    let trial = |name: String, f: fn(&Record, &str) -> Result<(), Failed>, arg: String| {
        let record = Arc::clone(&record);
        Trial::test(name, move || f(record.get()?, &arg))
    };
    let catalogue: BTreeSet<String> = dunning_domain::catalog::Registry::new()
        .tools()
        .iter()
        .map(|t| t.def.name.clone())
        .collect();
    let mut trials: Vec<Trial> = catalogue
        .iter()
        .map(|tool| trial(format!("tool::{tool}"), tool_trial, tool.clone()))
        .collect();
    trials.push(trial(
        "sequence".into(),
        |r, _| {
            r.stopped.as_ref().map_or(Ok(()), |why| {
                Err(format!("the sequence stopped before its end: {why}").into())
            })
        },
        String::new(),
    ));
    trials.push(trial(
        "stores_agree".into(),
        |r, _| r.stores.clone().map_err(Failed::from),
        String::new(),
    ));
    trials.push(Trial::test("coverage", {
        let record = Arc::clone(&record);
        move || {
            let served: BTreeSet<String> = record.get()?.tools.keys().cloned().collect();
            ensure(served == catalogue, || {
                format!("served {served:?}, listed {catalogue:?}")
            })
        }
    }));
    common::trials::run(&args, trials, record);
}
