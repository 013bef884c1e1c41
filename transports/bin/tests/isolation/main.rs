//! Cross-organization isolation over a real socket: `NOT_FOUND` means "no such id in the
//! caller's organization", so another organization's ids are `NOT_FOUND` too
//! (`docs/decisions.md`, "Domain"); another organization's resource URI is `-32602` with
//! `data: {uri}`; a call that would fail is refused before the user is asked to confirm
//! it (checks that need no consent come first).
//!
//! The built binary serves a copy of the seeded demo data, which holds two organizations:
//! `demo` (ana, owner) and `acme` (carla, owner: every scope and permission).
//!
//! 1. As ana, every list of `demo` is crawled over MCP: the real ids of every kind (debtors,
//!    their contact points, charges in every status, credit-bureau records, protests,
//!    agreements, rulers and their steps, deliveries, exports, webhooks and their
//!    deliveries, events) and `demo`'s data, whose distinctive values (every UUID; names,
//!    documents, e-mails, phone numbers, URLs, Pix codes...) minus anything `acme` also
//!    has become the markers of a leak.
//! 2. As carla, every catalogue tool whose input schema takes an id (`id`, `*_id`,
//!    `*_ids`, and `template_id`, which may name a ruler step) is called with `demo`'s ids
//!    and otherwise plausible arguments built from its schema, over MCP (era 2026, the
//!    client able to confirm) and on its `/v1` route with an API-audience token:
//!    * reference tools (the id names what to read, change or use): the answer is the
//!      `NOT_FOUND` tool error (`isError`, REST `404`) and nothing else; a destructive tool
//!      refuses before asking for confirmation (were it to ask, the round trip is completed
//!      and the ask itself is reported). Each tool runs with `demo`'s entities in every
//!      status, and, when it takes several ids, with carla's own ids in all fields but one
//!      (a foreign reference hidden behind an own target);
//!    * filter tools (reads whose ids are only optional query filters: lists, summary):
//!      a filter on another organization's id matches nothing, like an id that exists
//!      nowhere;
//!    * in both cases the answer is the same as for an id that exists nowhere (only the id
//!      differs: no oracle), and contains none of `demo`'s markers except the ids the
//!      call itself carried (echoed in the error message).
//!
//!    Every list and read without an id argument, run as carla, shows none of `demo`'s data.
//! 3. Every resource template, read as carla with `demo`'s ids, is the resource-not-found
//!    error (`-32602`, `data` exactly `{uri}`, no `reason`: not even "exists but is not
//!    settled"); fixed resources, prompts and completions show nothing of `demo` either.
//! 4. As ana, `demo` is crawled again: nothing changed.
//!
//! Every catalogue tool with an id argument and every template must be covered: one added
//! without a mapping here fails. Within a trial, failures are collected and reported
//! together, grouped by cause, each with its tool, arguments and answer.
//!
//! ## Trials
//!
//! One named trial per tool or case (`libtest-mimic`), against one server started, and
//! steps 1's crawls made, by the first trial that runs (the shared set-up):
//!
//! * `setup`: the server, carla listed the whole catalogue, `demo` settled with every
//!   kind of entity, carla's webhook, the markers;
//! * `reads_without_ids`: carla's own crawl and every read she can make without an id;
//! * `tool::<name>`: one per catalogue tool with an id argument (step 2);
//! * `template::<uri template>`: one per resource template, with its completions;
//! * `resources` (fixed resources), `prompts` (with their completions);
//! * `coverage`: the tools and templates served are exactly those with a trial;
//! * `demo_unchanged` (step 4), last, then the report of every trial that ran.
//!
//! The trial list comes from the domain's own catalogue (no server needed to list them);
//! `cargo test -p kobana-dunning --test isolation -- tool::dunning_charges_cancel` runs
//! the set-up and that trial only. Trials run one at a time, in this order, whatever
//! `--test-threads` says: they share one server, as the single test did, and
//! `demo_unchanged` must come after every other call.

#[path = "../common/mod.rs"]
mod common;

mod cases;
mod check;
mod org;
mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use common::Srv;
use common::trials::{Shared, ensure, panic_message};
use dunning_core::Dispatch;
use dunning_domain::Domain;
use dunning_domain::store::sqlite::SqliteStore;
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::json;

use check::{Check, Findings};
use org::Org;
use wire::{Net, ToolInfo, truncate};

/// No request rate limit (the suite makes a few thousand requests in seconds), and no
/// periodic job after the one at startup (nothing may change `demo` behind the suite).
const CONFIG: &str = "[rate_limit]\nenabled = false\n\n[jobs]\nengine_interval_secs = 86400\nsweep_interval_secs = 86400\n";

/// What every trial reads: the server and tokens, both organizations' crawls, `demo`'s
/// markers, and the report the trials add to.
struct World {
    net: Net,
    demo: Org,
    carla: Org,
    secret_ids: BTreeSet<String>,
    secret_words: BTreeSet<String>,
    /// The resource templates carla is listed.
    templates: Vec<String>,
    /// A due date for the arguments that take one.
    due: String,
    started: Instant,
    report: Mutex<Report>,
}

/// What the trials that ran covered, for the report `demo_unchanged` prints.
#[derive(Default)]
struct Report {
    covered: BTreeMap<String, usize>,
    templates: BTreeMap<String, usize>,
    filter_answers: BTreeMap<String, BTreeSet<String>>,
    extra: usize,
}

/// Step 1 and what it needs: the server, the catalogue carla is listed, `demo` as ana
/// (settled), carla's webhook and crawl, and the markers of `demo`'s data.
fn setup() -> World {
    let started = Instant::now();
    let srv = Srv::start(&[], Some(CONFIG));
    let mut net = Net {
        ana: srv.mint(&["--org", "demo", "--person", "ana@demo.example"]),
        carla: srv.mint(&["--org", "acme", "--person", "carla@acme.example"]),
        carla_api: srv.mint_api("acme", "carla@acme.example"),
        srv,
        tools: BTreeMap::new(),
        requests: Default::default(),
    };
    cases::catalogue(&mut net);
    let demo = cases::settled_demo(&net);
    cases::carla_webhook(&net);
    let carla = Org::crawl(&net, &net.carla);
    let (demo_ids, demo_words) = demo.markers();
    let (acme_ids, acme_words) = carla.markers();
    let secret_ids: BTreeSet<String> = demo_ids.difference(&acme_ids).cloned().collect();
    let secret_words: BTreeSet<String> = demo_words.difference(&acme_words).cloned().collect();
    assert!(secret_ids.len() > 500 && secret_words.len() > 50);
    let listed = net.rpc(&net.carla, "resources/templates/list", json!({}), &[]);
    let templates: Vec<String> = listed.json["result"]["resourceTemplates"]
        .as_array()
        .unwrap_or_else(|| panic!("templates: {}", listed.raw))
        .iter()
        .map(|t| t["uriTemplate"].as_str().expect("uriTemplate").to_owned())
        .collect();
    World {
        net,
        demo,
        carla,
        secret_ids,
        secret_words,
        templates,
        due: common::date_in(10),
        started,
        report: Mutex::default(),
    }
}

impl World {
    fn check(&self) -> Check<'_> {
        Check {
            net: &self.net,
            demo: &self.demo,
            carla: &self.carla,
            secret_ids: &self.secret_ids,
            secret_words: &self.secret_words,
            findings: Findings::new(),
            covered: BTreeMap::new(),
            filter_answers: BTreeMap::new(),
            templates: BTreeMap::new(),
            extra: 0,
        }
    }

    /// Adds what a trial covered to the report; fails with its findings, grouped by cause.
    fn finish(&self, c: Check<'_>) -> Result<(), Failed> {
        let mut r = self.report.lock().unwrap_or_else(|p| p.into_inner());
        for (k, n) in &c.covered {
            *r.covered.entry(k.clone()).or_default() += n;
        }
        for (k, n) in &c.templates {
            *r.templates.entry(k.clone()).or_default() += n;
        }
        for (k, a) in c.filter_answers {
            r.filter_answers.entry(k).or_default().extend(a);
        }
        r.extra += c.extra;
        drop(r);
        failures(&c.findings)
    }

    fn print_report(&self) {
        let r = self.report.lock().unwrap_or_else(|p| p.into_inner());
        let tools = &self.net.tools;
        let mut report = String::new();
        let filters = r.covered.keys().filter(|t| tools[*t].is_filter()).count();
        let _ = writeln!(
            report,
            "isolation: {} tools with id arguments ({} reference, {filters} filter), {} cases; \
             {} templates, {} reads; {} other checks; {} requests in {:.1?}",
            r.covered.len(),
            r.covered.len() - filters,
            r.covered.values().sum::<usize>(),
            r.templates.len(),
            r.templates.values().sum::<usize>(),
            r.extra,
            self.net.requests.load(Ordering::Relaxed),
            self.started.elapsed()
        );
        for (tool, n) in &r.covered {
            let info = &tools[tool];
            let class = if info.is_filter() {
                "filter"
            } else if info.destructive {
                "destructive"
            } else {
                "reference"
            };
            let _ = writeln!(
                report,
                "  {tool:<36} {:<6} {class:<11} {n:>3} cases",
                info.method
            );
        }
        for (template, n) in &r.templates {
            let _ = writeln!(report, "  {template:<60} {n:>3} reads");
        }
        for (filter, answers) in &r.filter_answers {
            let _ = writeln!(report, "  filter {filter}: {answers:?}");
        }
        eprintln!("{report}");
    }
}

/// `Err` listing the findings (two cases of each cause), when there are any.
fn failures(findings: &Findings) -> Result<(), Failed> {
    let mut text = String::new();
    for (summary, cases) in findings {
        let _ = writeln!(text, "\n* {summary} ({} cases)", cases.len());
        for detail in cases.iter().take(2) {
            let _ = writeln!(text, "    {detail}");
        }
    }
    ensure(findings.is_empty(), || {
        format!("{} kinds of isolation failure:\n{text}", findings.len())
    })
}

/// One trial over the shared world.
fn trial(
    world: &Arc<Shared<World>>,
    name: String,
    f: impl FnOnce(&World) -> Result<(), Failed> + Send + 'static,
) -> Trial {
    let world = Arc::clone(world);
    Trial::test(name, move || f(world.get()?))
}

/// Step 2, one tool: its cases, on both surfaces.
fn tool_trial(w: &World, tool: &str) -> Result<(), Failed> {
    let info = w
        .net
        .tools
        .get(tool)
        .ok_or_else(|| format!("{tool} is not listed to carla"))?;
    let mut c = w.check();
    cases::tool_cases(&mut c, info, &w.due);
    let n = c.covered.get(tool).copied().unwrap_or(0);
    ensure(n > 0, || format!("{tool}: no case"))?;
    w.finish(c)
}

/// Step 3, one template: its reads and its completions.
fn template_trial(w: &World, template: &str) -> Result<(), Failed> {
    ensure(w.templates.iter().any(|t| t == template), || {
        format!("{template} is not listed to carla")
    })?;
    let mut c = w.check();
    cases::template_cases(&mut c, template);
    let n = c.templates.get(template).copied().unwrap_or(0);
    ensure(n > 0, || format!("{template}: no read"))?;
    w.finish(c)
}

/// Step 3, fixed resources: read as carla, nothing of `demo`.
fn resources_trial(w: &World) -> Result<(), Failed> {
    let net = &w.net;
    let mut c = w.check();
    let listed = net.rpc(&net.carla, "resources/list", json!({}), &[]);
    for r in listed.json["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("resources: {}", listed.raw))
    {
        let uri = r["uri"].as_str().expect("uri");
        let out = net.rpc(&net.carla, "resources/read", json!({ "uri": uri }), &[]);
        c.clean(&format!("resources/read {uri}"), &out, &[]);
    }
    w.finish(c)
}

/// Every tool with an id argument and every template served has its trial.
fn coverage_trial(w: &World, tools: &BTreeSet<String>, templates: &BTreeSet<String>) {
    let served: BTreeSet<String> = w
        .net
        .tools
        .values()
        .filter(|t| !t.ids.is_empty())
        .map(|t| t.name.clone())
        .collect();
    assert_eq!(
        &served, tools,
        "every catalogue tool with an id argument has cases"
    );
    let served: BTreeSet<String> = w.templates.iter().cloned().collect();
    assert_eq!(&served, templates, "every resource template has cases");
}

/// Step 4: `demo`, crawled again as ana, is what it was; then the report.
fn unchanged_trial(w: &World) -> Result<(), Failed> {
    let net = &w.net;
    let before = &w.demo.snapshot;
    let after = Org::crawl(net, &net.ana).snapshot;
    assert_eq!(after.len(), before.len(), "demo's crawl has another shape");
    let mut findings = Findings::new();
    for ((label, b), (_, a)) in before.iter().zip(&after) {
        if a != b {
            let detail = format!(
                "before: {}\n      after:  {}",
                truncate(&b.to_string(), 600),
                truncate(&a.to_string(), 600)
            );
            findings
                .entry(format!("CHANGED: demo's {label}"))
                .or_default()
                .push(detail);
        }
    }
    w.print_report();
    failures(&findings)
}

/// The tools with id arguments and the templates, from the domain's catalogue (as
/// served: the same definitions), so the trials are listed without a server.
fn catalogue() -> (BTreeSet<String>, BTreeSet<String>) {
    let store = SqliteStore::in_memory().expect("in-memory SQLite");
    let catalog = Domain::new(Arc::new(store)).catalog();
    let tools = catalog
        .tools
        .iter()
        .filter_map(|d| {
            let route = d.route.as_ref().expect("every tool has a /v1 route");
            let def = json!({
                "name": d.name,
                "inputSchema": d.input_schema,
                "annotations": d.annotations.to_json(&d.title),
            });
            let info = ToolInfo::new(&def, route.method, route.path.clone());
            (!info.ids.is_empty()).then_some(info.name)
        })
        .collect();
    let templates = catalog
        .templates
        .iter()
        .map(|t| t.uri_template.clone())
        .collect();
    (tools, templates)
}

fn main() {
    let mut args = Arguments::from_args();
    // One at a time, in order: see the module documentation.
    args.test_threads = Some(1);
    let world = Shared::new(setup);
    let mut trials = vec![trial(&world, "setup".into(), |_| Ok(()))];
    match std::panic::catch_unwind(catalogue) {
        Ok((tools, templates)) => {
            trials.push(trial(&world, "reads_without_ids".into(), |w| {
                let mut c = w.check();
                cases::id_free_reads(&mut c);
                w.finish(c)
            }));
            for tool in &tools {
                let t = tool.clone();
                trials.push(trial(&world, format!("tool::{tool}"), move |w| {
                    tool_trial(w, &t)
                }));
            }
            for template in &templates {
                let t = template.clone();
                trials.push(trial(&world, format!("template::{template}"), move |w| {
                    template_trial(w, &t)
                }));
            }
            trials.push(trial(&world, "resources".into(), resources_trial));
            trials.push(trial(&world, "prompts".into(), |w| {
                let mut c = w.check();
                cases::prompt_cases(&mut c);
                w.finish(c)
            }));
            trials.push(trial(&world, "coverage".into(), move |w| {
                coverage_trial(w, &tools, &templates);
                Ok(())
            }));
        }
        // A tool whose id arguments the suite cannot map: one failing trial says which.
        Err(p) => {
            let msg = panic_message(&*p);
            trials.push(Trial::test("catalogue", move || Err(msg.into())));
        }
    }
    trials.push(trial(&world, "demo_unchanged".into(), unchanged_trial));
    common::trials::run(&args, trials, world);
}
