//! Cross-organization isolation over a real socket (product spec §11: `NOT_FOUND` is "no such
//! id in the caller's organization (other orgs' ids are NOT_FOUND too)"; §14: an other-org
//! URI is `-32602` with `data: {uri}`; §13: a call that would fail is refused before the
//! user is asked to confirm it).
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
//! without a mapping here fails the test. Failures are collected and reported together,
//! grouped by cause, each with its tool, arguments and answer.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::{Resp, Srv, V2026};
use dunning_core::mirror;
use serde_json::{Map, Value, json};

/// No request rate limit (the test makes a few thousand requests in seconds), and no
/// periodic job after the one at startup (nothing may change `demo` behind the test).
const CONFIG: &str = "[rate_limit]\nenabled = false\n\n[jobs]\nengine_interval_secs = 86400\nsweep_interval_secs = 86400\n";

/// Keys whose string values identify an organization's data (besides every UUID).
const MARKER_KEYS: &[&str] = &[
    "name",
    "debtor_name",
    "cnpj_cpf",
    "cnpj",
    "email",
    "value",
    "to",
    "url",
    "nickname",
    "contact_person",
    "external_id",
    "txid",
    "emv",
    "line",
    "barcode",
];

/// Arguments named like ids that are not ids of entities (checked, so a new one is a
/// decision): a caller's own key, and free-form document references.
const NOT_IDS: &[(&str, &str)] = &[
    ("dunning_charges_create", "external_id"),
    ("dunning_charges_protest", "document_ids"),
];

// ---- Small helpers ------------------------------------------------------------------------

fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Every UUID-shaped substring of `text`.
fn uuids_in(text: &str) -> Vec<&str> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 36 <= b.len() {
        if b[i + 8] == b'-' && b[i + 13] == b'-' && is_uuid(&b[i..i + 36]) {
            // All ASCII: `i` and `i + 36` are char boundaries.
            out.push(&text[i..i + 36]);
            i += 36;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether a string under a marker key identifies data: not a code (`failed`,
/// `charge.paid`), not a date or time (event `changes` keep those under `value`), not short.
fn distinctive(s: &str) -> bool {
    let b = s.as_bytes();
    let code = b
        .iter()
        .all(|c| c.is_ascii_lowercase() || b"_.*".contains(c));
    let date =
        b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-';
    s.chars().count() >= 6 && !code && !date
}

/// Calls `f(key, value)` for every string in `v` (`key`: the object key it is under).
fn walk_strings<'v>(v: &'v Value, key: Option<&'v str>, f: &mut dyn FnMut(Option<&str>, &'v str)) {
    match v {
        Value::String(s) => f(key, s),
        Value::Array(items) => items.iter().for_each(|x| walk_strings(x, key, f)),
        Value::Object(m) => m.iter().for_each(|(k, x)| walk_strings(x, Some(k), f)),
        _ => {}
    }
}

/// Drops what differs between any two requests (`request_id`, `_meta`) and the text item
/// of a tool result (the structured value pretty-printed, request id included).
fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.remove("request_id");
            m.remove("_meta");
            m.remove("content");
            m.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// `v` with each `from` replaced by its placeholder, without per-request fields.
fn normalize(v: &Value, subst: &[(String, String)]) -> Value {
    let mut s = v.to_string();
    for (from, to) in subst {
        s = s.replace(from.as_str(), to);
    }
    let mut v: Value = serde_json::from_str(&s).expect("still JSON");
    strip(&mut v);
    v
}

fn truncate(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_owned();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

// ---- Kinds of entities --------------------------------------------------------------------

/// The kind an `{id}` names, from the path segment before it (`/v1/<seg>/{id}` or
/// `kobana://dunning/<seg>/{id}`).
fn segment_kind(seg: &str) -> &'static str {
    match seg {
        "debtors" => "debtor",
        "charges" => "charge",
        "credit-bureau-records" | "credit-bureau" => "bureau",
        "protests" => "protest",
        "agreements" => "agreement",
        "rulers" => "ruler",
        "deliveries" => "delivery",
        "exports" => "export",
        "webhooks" => "webhook",
        other => panic!("isolation: map the kind of `{other}/{{id}}` (new route or template?)"),
    }
}

/// The kind of entity an id argument or variable names (`id` by the path it is under).
fn field_kind(path: &str, field: &str) -> &'static str {
    match field {
        "id" => {
            let seg = path
                .trim_start_matches("/v1/")
                .trim_start_matches("kobana://dunning/")
                .split('/')
                .next()
                .unwrap_or_default();
            segment_kind(seg)
        }
        "cp_id" | "contact_point_id" => "contact_point",
        "step_id" | "template_id" => "step",
        "delivery_id" => "webhook_delivery",
        "debtor_id" => "debtor",
        "charge_id" | "charge_ids" => "charge",
        "ruler_id" => "ruler",
        "webhook_id" => "webhook",
        // Events name any resource.
        "resource_id" => "any",
        other => panic!("isolation: map the kind of the id argument `{other}` of {path}"),
    }
}

/// A nested kind: its parent kind and the row field naming the parent.
fn parent_of(kind: &str) -> Option<(&'static str, &'static str)> {
    match kind {
        "contact_point" => Some(("debtor", "debtor_id")),
        "step" => Some(("ruler", "ruler_id")),
        "webhook_delivery" => Some(("webhook", "webhook_id")),
        _ => None,
    }
}

/// Every kind collected, in a stable order.
const KINDS: &[&str] = &[
    "debtor",
    "contact_point",
    "charge",
    "bureau",
    "protest",
    "agreement",
    "ruler",
    "step",
    "delivery",
    "export",
    "webhook",
    "webhook_delivery",
    "event",
];

// ---- The wire -----------------------------------------------------------------------------

/// One answer: HTTP status, JSON (JSON-RPC message or REST body; `null` when not JSON),
/// every raw body seen (for the leak scan), and the confirmation message when one was asked.
#[derive(Clone, Debug)]
struct Outcome {
    status: u16,
    json: Value,
    raw: String,
    asked: Option<String>,
}

impl From<Resp> for Outcome {
    fn from(r: Resp) -> Self {
        Self {
            status: r.status,
            json: serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            raw: r.text(),
            asked: None,
        }
    }
}

impl Outcome {
    /// What two answers are compared on (MCP: the error or the result without its text
    /// item; REST: status and body).
    fn comparable(&self) -> Value {
        json!({
            "status": self.status,
            "error": self.json.get("error"),
            "result": self.json.get("result"),
            "body": if self.json.get("jsonrpc").is_some() { Value::Null } else { self.json.clone() },
        })
    }
}

/// One tool of the catalogue, as served and as routed.
#[derive(Clone, Debug)]
struct ToolInfo {
    name: String,
    schema: Value,
    read_only: bool,
    destructive: bool,
    method: &'static str,
    path: String,
    /// `(argument, header name)` for arguments annotated `x-mcp-header`.
    headers: Vec<(String, String)>,
    /// The id arguments.
    ids: Vec<IdArg>,
}

/// One id argument of a tool.
#[derive(Clone, Debug)]
struct IdArg {
    name: String,
    /// The kind of entity it names.
    kind: &'static str,
    /// An array of ids (`charge_ids`).
    array: bool,
    required: bool,
}

impl ToolInfo {
    fn new(def: &Value, method: &'static str, path: String) -> Self {
        let name = def["name"].as_str().expect("tool name").to_owned();
        let schema = def["inputSchema"].clone();
        let required: BTreeSet<&str> = schema["required"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut ids = Vec::new();
        let mut headers = Vec::new();
        for (k, s) in schema["properties"].as_object().into_iter().flatten() {
            if let Some(h) = s["x-mcp-header"].as_str() {
                headers.push((k.clone(), h.to_owned()));
            }
            let uuid = s["format"] == "uuid";
            let uuids = s["type"] == "array" && s["items"]["format"] == "uuid";
            let named = k == "id" || k.ends_with("_id") || k.ends_with("_ids");
            if uuid || uuids || k == "template_id" {
                ids.push(IdArg {
                    name: k.clone(),
                    kind: field_kind(&path, k),
                    array: uuids,
                    required: required.contains(k.as_str()),
                });
            } else {
                assert!(
                    !named || NOT_IDS.contains(&(name.as_str(), k.as_str())),
                    "isolation: {name}.{k} looks like an id but is not typed as one: map it"
                );
            }
        }
        let ann = &def["annotations"];
        Self {
            read_only: ann["readOnlyHint"] == true,
            destructive: ann["destructiveHint"] == true,
            name,
            schema,
            method,
            path,
            headers,
            ids,
        }
    }

    /// Reads whose ids are all optional query filters (lists, summary).
    fn is_filter(&self) -> bool {
        self.read_only
            && self
                .ids
                .iter()
                .all(|a| !a.required && !self.path.contains(&format!("{{{}}}", a.name)))
    }

    /// The required arguments that are not ids, with plausible values.
    fn plain_args(&self, due: &str) -> Map<String, Value> {
        let mut out = Map::new();
        for k in self.schema["required"].as_array().into_iter().flatten() {
            let k = k.as_str().expect("required names");
            if self.ids.iter().any(|a| a.name == k) {
                continue;
            }
            out.insert(
                k.to_owned(),
                plausible(k, &self.schema["properties"][k], due),
            );
        }
        out
    }
}

/// A plausible value for a required argument, from its schema (a few by name).
fn plausible(field: &str, s: &Value, due: &str) -> Value {
    if let Some(options) = s["enum"].as_array() {
        let preferred = match field {
            "channel" => "email",
            "reason" => "error",
            "mode" => "withdraw",
            "decision" => "continue",
            "bureau" => "serasa",
            "payment_method" => "boleto",
            "title_type" => "duplicata_mercantil",
            _ => "",
        };
        return options
            .iter()
            .find(|o| *o == preferred)
            .unwrap_or(&options[0])
            .clone();
    }
    match field {
        "cnpj_cpf" => return json!("52998224725"),
        "name" => return json!("Isolation Check"),
        "value" => return json!("isolation@acme.example"),
        "url" => return json!("https://hooks.acme.example/isolation"),
        "events" => return json!(["charge.paid"]),
        "document_ids" => return json!(["NF-1"]),
        "amount" | "paid_amount" => return json!(150.0),
        "installments_count" => return json!(2),
        "offset_days" => return json!(3),
        _ => {}
    }
    match (s["type"].as_str(), s["format"].as_str()) {
        (Some("string"), Some("date")) => json!(due),
        (Some("string"), Some("date-time")) => json!(format!("{due}T12:00:00-03:00")),
        (Some("string"), _) => json!("isolation check"),
        (Some("integer"), _) => json!(s["minimum"].as_i64().unwrap_or(1).max(1)),
        (Some("number"), _) => json!(100.0),
        (Some("boolean"), _) => json!(false),
        (Some("array"), _) => json!([plausible("", &s["items"], due)]),
        (Some("object"), _) => json!({}),
        _ => panic!("isolation: no plausible value for {field}: {s}"),
    }
}

/// The server and the three tokens.
struct Net<'s> {
    srv: &'s Srv,
    ana: String,
    carla: String,
    carla_api: String,
    tools: BTreeMap<String, ToolInfo>,
    requests: std::cell::Cell<u64>,
}

impl Net<'_> {
    /// One era-2026 JSON-RPC request; the client declares form elicitation.
    fn rpc(
        &self,
        token: &str,
        method: &str,
        mut params: Value,
        extra: &[(String, String)],
    ) -> Outcome {
        self.requests.set(self.requests.get() + 1);
        let name = params
            .get("name")
            .or_else(|| params.get("uri"))
            .and_then(Value::as_str)
            .map(|n| mirror::encode(n).into_owned());
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            "io.modelcontextprotocol/clientInfo": { "name": "isolation", "version": "1" },
        });
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let auth = format!("Bearer {token}");
        let mut headers: Vec<(&str, &str)> = vec![
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", V2026),
            ("Mcp-Method", method),
        ];
        if let Some(n) = &name {
            headers.push(("Mcp-Name", n));
        }
        for (k, v) in extra {
            headers.push((k, v));
        }
        self.srv
            .request("POST", "/", &headers, body.to_string().as_bytes())
            .into()
    }

    /// `tools/call`; an `input_required` confirmation is answered with the user's
    /// acceptance (§13) and the final answer returned, with the message that was asked.
    fn call(&self, token: &str, tool: &str, args: &Map<String, Value>) -> Outcome {
        let info = &self.tools[tool];
        let extra: Vec<(String, String)> = info
            .headers
            .iter()
            .filter_map(|(arg, h)| {
                let v = args.get(arg)?;
                let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                Some((format!("Mcp-Param-{h}"), mirror::encode(&text).into_owned()))
            })
            .collect();
        let params = json!({ "name": tool, "arguments": args });
        let first = self.rpc(token, "tools/call", params.clone(), &extra);
        if first.json["result"]["resultType"] != "input_required" {
            return first;
        }
        let result = &first.json["result"];
        let asked = result["inputRequests"]["confirm"]["params"]["message"]
            .as_str()
            .unwrap_or("(no message)")
            .to_owned();
        let mut again = params;
        again["requestState"] = result["requestState"].clone();
        again["inputResponses"] =
            json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
        let mut second = self.rpc(token, "tools/call", again, &extra);
        second.raw = format!("{}\n{}", first.raw, second.raw);
        second.asked = Some(asked);
        second
    }

    /// The tool's `/v1` route with carla's API token: path variables from the template,
    /// the rest in the query string (`GET`, `DELETE`) or the JSON body.
    fn rest(&self, tool: &str, args: &Map<String, Value>) -> Outcome {
        self.requests.set(self.requests.get() + 1);
        let info = &self.tools[tool];
        let mut rest = args.clone();
        let mut path = String::new();
        for seg in info.path.split('/').skip(1) {
            path.push('/');
            match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(var) => {
                    let v = rest
                        .remove(var)
                        .unwrap_or_else(|| panic!("{tool}: path variable {var} missing"));
                    path.push_str(&common::pct(
                        v.as_str().expect("path variables are strings"),
                    ));
                }
                None => path.push_str(seg),
            }
        }
        let auth = format!("Bearer {}", self.carla_api);
        let mut headers: Vec<(&str, &str)> =
            vec![("Authorization", &auth), ("Accept", "application/json")];
        let body = if matches!(info.method, "GET" | "DELETE") {
            let query: Vec<String> = rest
                .iter()
                .map(|(k, v)| {
                    format!(
                        "{}={}",
                        common::pct(k),
                        common::pct(&common::query_value(v))
                    )
                })
                .collect();
            if !query.is_empty() {
                path.push('?');
                path.push_str(&query.join("&"));
            }
            Vec::new()
        } else {
            headers.push(("Content-Type", "application/json"));
            serde_json::to_vec(&Value::Object(rest)).expect("body")
        };
        self.srv.request(info.method, &path, &headers, &body).into()
    }

    /// A read that must succeed: its structured value and raw body.
    fn read(&self, token: &str, tool: &str, args: Value) -> (Value, String) {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let out = self.call(token, tool, &args);
        let r = &out.json["result"];
        assert!(
            out.status == 200 && r["isError"] != true && r["structuredContent"].is_object(),
            "{tool} {args:?}: {}",
            truncate(&out.raw, 2000)
        );
        (r["structuredContent"].clone(), out.raw)
    }
}

// ---- One organization's data, as its owner sees it ----------------------------------------

#[derive(Default)]
struct Org {
    /// Every answer of the crawl, in order (the snapshot compared before and after).
    snapshot: Vec<(String, Value)>,
    /// Raw bodies of the crawl (scanned for leaks when the crawler is carla).
    raw: Vec<(String, String)>,
    /// Rows by kind.
    rows: BTreeMap<&'static str, Vec<Value>>,
    /// The consistent set of ids the cases use, by kind.
    picks: BTreeMap<&'static str, String>,
}

impl Org {
    /// One read of the crawl, kept in the snapshot.
    fn get(&mut self, net: &Net<'_>, token: &str, tool: &str, args: Value) -> Value {
        let (v, raw) = net.read(token, tool, args.clone());
        let label = format!("{tool} {args}");
        self.raw.push((label.clone(), raw));
        self.snapshot.push((label, v.clone()));
        v
    }

    /// Every page of a list (100 rows a page).
    fn pages(&mut self, net: &Net<'_>, token: &str, tool: &str, args: Value) -> Vec<Value> {
        let mut rows = Vec::new();
        for page in 1.. {
            let mut a = args.clone();
            a["page"] = json!(page);
            a["per_page"] = json!(100);
            let v = self.get(net, token, tool, a);
            let data = v["data"].as_array().cloned().unwrap_or_default();
            let empty = data.is_empty();
            rows.extend(data);
            if empty || v["meta"]["total_pages"].as_u64().unwrap_or(0) <= page {
                break;
            }
        }
        rows
    }

    fn crawl(net: &Net<'_>, token: &str) -> Self {
        let mut o = Self::default();
        o.get(net, token, "dunning_me", json!({}));
        o.get(net, token, "dunning_summary_get", json!({}));
        let debtors = o.pages(net, token, "dunning_debtors_list", json!({}));
        let mut cps = Vec::new();
        for d in &debtors {
            cps.extend(o.pages(
                net,
                token,
                "dunning_contact_points_list",
                json!({ "id": d["id"] }),
            ));
        }
        let charges = o.pages(net, token, "dunning_charges_list", json!({}));
        let bureau = o.pages(net, token, "dunning_credit_bureau_list", json!({}));
        let protests = o.pages(net, token, "dunning_protests_list", json!({}));
        let agreements = o.pages(net, token, "dunning_agreements_list", json!({}));
        let rulers = o.pages(net, token, "dunning_rulers_list", json!({}));
        let mut steps = Vec::new();
        for r in &rulers {
            let full = o.get(net, token, "dunning_rulers_get", json!({ "id": r["id"] }));
            for mut s in full["steps"].as_array().cloned().unwrap_or_default() {
                s["ruler_id"] = r["id"].clone();
                steps.push(s);
            }
        }
        let deliveries = o.pages(net, token, "dunning_deliveries_list", json!({}));
        let events = o.pages(net, token, "dunning_events_list", json!({}));
        let export_ids: BTreeSet<String> = events
            .iter()
            .filter(|e| e["resource_type"] == "export")
            .filter_map(|e| e["resource_id"].as_str().map(str::to_owned))
            .collect();
        let mut exports = Vec::new();
        for x in export_ids {
            exports.push(o.get(net, token, "dunning_exports_get", json!({ "id": x })));
        }
        let hooks = o.pages(net, token, "dunning_webhooks_list", json!({}));
        let mut hook_deliveries = Vec::new();
        for h in &hooks {
            let rows = o.pages(
                net,
                token,
                "dunning_webhook_deliveries_list",
                json!({ "id": h["id"] }),
            );
            for mut d in rows {
                d["webhook_id"] = h["id"].clone();
                hook_deliveries.push(d);
            }
        }
        for (kind, rows) in [
            ("debtor", debtors),
            ("contact_point", cps),
            ("charge", charges),
            ("bureau", bureau),
            ("protest", protests),
            ("agreement", agreements),
            ("ruler", rulers),
            ("step", steps),
            ("delivery", deliveries),
            ("export", exports),
            ("webhook", hooks),
            ("webhook_delivery", hook_deliveries),
            ("event", events),
        ] {
            o.rows.insert(kind, rows);
        }
        o.choose();
        o
    }

    fn rows(&self, kind: &str) -> &[Value] {
        self.rows.get(kind).map_or(&[], Vec::as_slice)
    }

    /// A consistent set: an overdue charge of a debtor with a contact point (and that
    /// contact point), a ruler with steps (and a step), a webhook with deliveries (and
    /// one), a resendable delivery about an open charge; the first of the other kinds.
    fn choose(&mut self) {
        let id = |v: &Value| v["id"].as_str().map(str::to_owned);
        let with_cp: BTreeSet<&str> = self
            .rows("contact_point")
            .iter()
            .filter_map(|c| c["debtor_id"].as_str())
            .collect();
        let charge = self
            .rows("charge")
            .iter()
            .find(|c| {
                c["status"] == "overdue"
                    && c["debtor_id"].as_str().is_some_and(|d| with_cp.contains(d))
            })
            .or_else(|| self.rows("charge").first())
            .cloned();
        let mut picks = BTreeMap::new();
        if let Some(c) = &charge {
            picks.insert("charge", id(c).expect("charge id"));
            let debtor = c["debtor_id"].as_str().expect("debtor_id").to_owned();
            let cps: Vec<&Value> = self
                .rows("contact_point")
                .iter()
                .filter(|p| p["debtor_id"] == debtor.as_str())
                .collect();
            if let Some(p) = cps
                .iter()
                .find(|p| p["channel"] == "email")
                .or_else(|| cps.first())
            {
                picks.insert("contact_point", id(p).expect("cp id"));
            }
            picks.insert("debtor", debtor);
        } else if let Some(d) = self.rows("debtor").first() {
            picks.insert("debtor", id(d).expect("debtor id"));
        }
        let step = self.rows("step").first().cloned();
        if let Some(s) = &step {
            picks.insert("step", id(s).expect("step id"));
            picks.insert("ruler", s["ruler_id"].as_str().expect("ruler").to_owned());
        } else if let Some(r) = self.rows("ruler").first() {
            picks.insert("ruler", id(r).expect("ruler id"));
        }
        if let Some(d) = self.rows("webhook_delivery").first() {
            picks.insert("webhook_delivery", id(d).expect("delivery id"));
            picks.insert(
                "webhook",
                d["webhook_id"].as_str().expect("hook").to_owned(),
            );
        } else if let Some(h) = self.rows("webhook").first() {
            picks.insert("webhook", id(h).expect("webhook id"));
        }
        let open: BTreeSet<&str> = self
            .rows("charge")
            .iter()
            .filter(|c| matches!(c["status"].as_str(), Some("overdue" | "pending")))
            .filter_map(|c| c["id"].as_str())
            .collect();
        if let Some(d) = self
            .rows("delivery")
            .iter()
            .find(|d| {
                matches!(d["status"].as_str(), Some("sent" | "delivered" | "read"))
                    && d["charge_id"].as_str().is_some_and(|c| open.contains(c))
            })
            .or_else(|| self.rows("delivery").first())
        {
            picks.insert("delivery", id(d).expect("delivery id"));
        }
        for kind in ["bureau", "protest", "agreement", "export", "event"] {
            let first = self
                .rows(kind)
                .iter()
                .find(|x| x["status"] == "processed")
                .or_else(|| self.rows(kind).first());
            if let Some(x) = first {
                picks.insert(kind, id(x).expect("id"));
            }
        }
        self.picks = picks;
    }

    fn pick(&self, kind: &str) -> Option<String> {
        let kind = if kind == "any" { "charge" } else { kind };
        self.picks.get(kind).cloned()
    }

    /// The pick first, then one entity of every other status (every kind for `any`).
    fn reps(&self, kind: &str) -> Vec<String> {
        if kind == "any" {
            return KINDS.iter().filter_map(|k| self.pick(k)).collect();
        }
        let mut out: Vec<String> = self.pick(kind).into_iter().collect();
        let mut seen = BTreeSet::new();
        for r in self.rows(kind) {
            let status = r
                .get("status")
                .or_else(|| r.get("active"))
                .map_or_else(String::new, ToString::to_string);
            let Some(id) = r["id"].as_str() else { continue };
            if kind != "event" && seen.insert(status) && !out.iter().any(|x| x == id) {
                out.push(id.to_owned());
            }
        }
        out
    }

    /// The parent id of a nested entity.
    fn parent(&self, kind: &str, id: &str) -> Option<String> {
        let (_, field) = parent_of(kind)?;
        self.rows(kind)
            .iter()
            .find(|r| r["id"] == id)
            .and_then(|r| r[field].as_str())
            .map(str::to_owned)
    }

    /// Distinctive values: every UUID, and the strings under [`MARKER_KEYS`].
    fn markers(&self) -> (BTreeSet<String>, BTreeSet<String>) {
        let mut uuids = BTreeSet::new();
        let mut words = BTreeSet::new();
        for (_, v) in &self.snapshot {
            walk_strings(v, None, &mut |key, s| {
                if is_uuid(s.as_bytes()) {
                    uuids.insert(s.to_owned());
                } else if key.is_some_and(|k| MARKER_KEYS.contains(&k)) && distinctive(s) {
                    words.insert(s.to_owned());
                }
            });
        }
        (uuids, words)
    }
}

// ---- The checks ---------------------------------------------------------------------------

/// Replacements of ids by placeholders, to compare two answers.
type Subst = Vec<(String, String)>;

/// One call: tool (or URI template), label, arguments, and the `demo` ids they carry.
struct Case {
    what: String,
    label: String,
    args: Map<String, Value>,
    foreign: Vec<String>,
}

impl Case {
    /// The same arguments with each foreign id replaced by an id that exists nowhere, and
    /// the substitutions that make the two answers comparable.
    fn unknown(&self) -> (Map<String, Value>, Subst, Subst) {
        let mut text = Value::Object(self.args.clone()).to_string();
        let mut foreign = Vec::new();
        let mut unknown = Vec::new();
        for (i, id) in self.foreign.iter().enumerate() {
            let nowhere = format!("00000000-0000-4000-8000-{:012x}", 0xdead_0000 + i);
            text = text.replace(id.as_str(), &nowhere);
            foreign.push((id.clone(), format!("<id-{i}>")));
            unknown.push((nowhere, format!("<id-{i}>")));
        }
        let Ok(Value::Object(args)) = serde_json::from_str(&text) else {
            panic!("arguments stay an object")
        };
        (args, foreign, unknown)
    }
}

/// Findings grouped by cause: a summary (tool, surface, what, the answer's code and
/// message with ids masked) → the cases it happened in, with arguments and answer.
type Findings = BTreeMap<String, Vec<String>>;

struct Check<'n, 's> {
    net: &'n Net<'s>,
    demo: Org,
    carla: Org,
    /// `demo`'s UUIDs and words that `acme` does not also have.
    secret_ids: BTreeSet<String>,
    secret_words: BTreeSet<String>,
    findings: Findings,
    /// Tools with at least one case, and how many cases each.
    covered: BTreeMap<String, usize>,
    /// How the filter tools answered (`tool.field` → NOT_FOUND or an empty success).
    filter_answers: BTreeMap<String, BTreeSet<String>>,
    /// Templates with at least one case, and how many reads each.
    templates: BTreeMap<String, usize>,
    /// Other checks run (id-free reads, fixed resources, prompts, completions).
    extra: usize,
}

/// `text` with every UUID replaced by `<id>`.
fn mask_ids(text: &str) -> String {
    let mut out = text.to_owned();
    for u in uuids_in(text) {
        out = out.replace(u, "<id>");
    }
    out
}

impl Check<'_, '_> {
    /// The `demo` markers in an answer, except the ids the call carried.
    fn leaks(&self, raw: &str, allowed: &[String]) -> Vec<String> {
        let mut found = BTreeSet::new();
        for u in uuids_in(raw) {
            if self.secret_ids.contains(u) && !allowed.iter().any(|a| a == u) {
                found.insert(u.to_owned());
            }
        }
        if raw.len() <= 16_384 {
            for w in &self.secret_words {
                if raw.contains(w.as_str()) {
                    found.insert(w.clone());
                }
            }
        } else {
            // Big answers (lists): compare whole string values, in the structured value.
            let v: Value = serde_json::from_str(raw).unwrap_or(Value::Null);
            let v = v
                .get("result")
                .and_then(|r| r.get("structuredContent"))
                .unwrap_or(&v);
            walk_strings(v, None, &mut |_, s| {
                if self.secret_words.contains(s) {
                    found.insert(s.to_owned());
                }
            });
        }
        found.into_iter().collect()
    }

    fn finding(&mut self, case: &Case, surface: &str, what: &str, extra: &str, out: &Outcome) {
        let body = out
            .json
            .get("result")
            .and_then(|r| r.get("structuredContent"))
            .unwrap_or(&out.json);
        let answered = match body.get("error").or_else(|| out.json.get("error")) {
            Some(e) => format!(
                "{} {:?}",
                e["code"],
                mask_ids(e["message"].as_str().unwrap_or_default())
            ),
            None => format!("HTTP {} without an error", out.status),
        };
        let summary = format!("{} via {surface}: {what}; answered {answered}", case.what);
        let mut detail = format!(
            "[{}] arguments {}{extra}\n      answer (HTTP {}): {}",
            case.label,
            Value::Object(case.args.clone()),
            out.status,
            truncate(&out.raw, 900)
        );
        if let Some(asked) = &out.asked {
            let _ = write!(detail, "\n      confirmation asked: {asked:?}");
        }
        self.findings.entry(summary).or_default().push(detail);
    }

    /// A read carla may make that must succeed and show nothing of `demo`.
    fn clean(&mut self, what: &str, out: &Outcome, allowed: &[String]) {
        self.extra += 1;
        let leaks = self.leaks(&out.raw, allowed);
        let failed = out.status != 200
            || out.json.get("result").is_none()
            || out.json["result"]["isError"] == true;
        if failed || !leaks.is_empty() {
            let summary = if leaks.is_empty() {
                format!("{what} as carla: FAILED")
            } else {
                format!("{what} as carla: LEAK of demo's data")
            };
            let detail = format!(
                "demo's data {leaks:?}\n      answer (HTTP {}): {}",
                out.status,
                truncate(&out.raw, 900)
            );
            self.findings.entry(summary).or_default().push(detail);
        }
    }

    /// The leak scan and the comparison with the same call on ids that exist nowhere.
    fn common(
        &mut self,
        case: &Case,
        surface: &str,
        out: &Outcome,
        same: &Outcome,
        subst: (&Subst, &Subst),
    ) {
        let leaks = self.leaks(&out.raw, &case.foreign);
        if !leaks.is_empty() {
            let extra = format!("\n      demo's data in the answer: {leaks:?}");
            self.finding(case, surface, "LEAK of demo's data", &extra, out);
        }
        if same.asked.is_some() {
            let what = "CONFIRMATION ASKED for ids that exist nowhere (§13: refuse first)";
            self.finding(case, surface, what, "", same);
        }
        let a = normalize(&out.comparable(), subst.0);
        let b = normalize(&same.comparable(), subst.1);
        if a != b {
            let extra = format!(
                "\n      ids that exist nowhere answer: {}",
                truncate(&b.to_string(), 600)
            );
            let what = "ORACLE: another answer than for ids that exist nowhere";
            self.finding(case, surface, what, &extra, out);
        }
    }

    /// A reference case on both surfaces: `NOT_FOUND` and nothing else.
    fn reference(&mut self, case: &Case) {
        let tool = case.what.clone();
        let (unknown, fs, us) = case.unknown();
        *self.covered.entry(tool.clone()).or_default() += 1;

        let out = self.net.call(&self.net.carla, &tool, &case.args);
        let same = self.net.call(&self.net.carla, &tool, &unknown);
        if out.asked.is_some() {
            let what = "CONFIRMATION ASKED before refusing (§13: existence is checked first; \
                        the ask names the target)";
            self.finding(case, "MCP", what, "", &out);
        }
        let r = &out.json["result"];
        let not_found = out.status == 200
            && r["resultType"] == "complete"
            && r["isError"] == true
            && is_not_found(&r["structuredContent"]);
        if !not_found {
            self.finding(case, "MCP", "NOT the NOT_FOUND tool error", "", &out);
        }
        self.common(case, "MCP", &out, &same, (&fs, &us));

        let out = self.net.rest(&tool, &case.args);
        let same = self.net.rest(&tool, &unknown);
        if !(out.status == 404 && is_not_found(&out.json)) {
            self.finding(case, "REST", "NOT 404 NOT_FOUND", "", &out);
        }
        self.common(case, "REST", &out, &same, (&fs, &us));
    }

    /// A filter case on both surfaces: like an id that exists nowhere, nothing of `demo`.
    fn filter(&mut self, case: &Case, field: &str) {
        let tool = case.what.clone();
        let (unknown, fs, us) = case.unknown();
        *self.covered.entry(tool.clone()).or_default() += 1;
        for surface in ["MCP", "REST"] {
            let (out, same) = if surface == "MCP" {
                (
                    self.net.call(&self.net.carla, &tool, &case.args),
                    self.net.call(&self.net.carla, &tool, &unknown),
                )
            } else {
                (
                    self.net.rest(&tool, &case.args),
                    self.net.rest(&tool, &unknown),
                )
            };
            let answer = if is_not_found(&out.json["result"]["structuredContent"])
                || is_not_found(&out.json)
            {
                "NOT_FOUND".to_owned()
            } else if out.status == 200 && out.json["result"]["isError"] != true {
                let v = out.json["result"]
                    .get("structuredContent")
                    .unwrap_or(&out.json);
                match v["meta"]["total"].as_u64() {
                    Some(0) => "empty list".to_owned(),
                    Some(n) => format!("{n} rows"),
                    None => "a value".to_owned(),
                }
            } else {
                format!("HTTP {}", out.status)
            };
            self.filter_answers
                .entry(format!("{tool}.{field}"))
                .or_default()
                .insert(answer);
            self.common(case, surface, &out, &same, (&fs, &us));
        }
    }

    /// A template case: `-32602` with `data` exactly `{uri}`, like a URI that exists nowhere.
    fn template(&mut self, template: &str, case: &Case) {
        *self.templates.entry(template.to_owned()).or_default() += 1;
        let uri = case.args["uri"].as_str().expect("uri").to_owned();
        let (unknown, fs, us) = case.unknown();
        let carla = &self.net.carla;
        let out = self
            .net
            .rpc(carla, "resources/read", json!({ "uri": uri }), &[]);
        let same = self
            .net
            .rpc(carla, "resources/read", Value::Object(unknown), &[]);
        let e = &out.json["error"];
        let ok = out.status == 200
            && out.json.get("result").is_none()
            && e["code"] == -32602
            && e["data"] == json!({ "uri": uri });
        if !ok {
            let what = "NOT the resource-not-found error (-32602, data exactly {uri})";
            self.finding(case, "MCP resources/read", what, "", &out);
        }
        self.common(case, "MCP resources/read", &out, &same, (&fs, &us));
    }
}

/// The `NOT_FOUND` error body and nothing else: `{"error":{code,message,request_id}}`.
fn is_not_found(v: &Value) -> bool {
    let Some(top) = v.as_object() else {
        return false;
    };
    let e = &v["error"];
    top.len() == 1
        && e["code"] == "NOT_FOUND"
        && e["message"].is_string()
        && e.as_object().is_some_and(|m| {
            m.keys()
                .all(|k| matches!(k.as_str(), "code" | "message" | "request_id"))
        })
}

/// An id for one field (an array of one for an array field).
fn id_value(id: &str, array: bool) -> Value {
    if array { json!([id]) } else { json!(id) }
}

/// The `demo` ids (distinct) a set of arguments carries.
fn foreign_ids(args: &Value, secret: &BTreeSet<String>) -> Vec<String> {
    let text = args.to_string();
    uuids_in(&text)
        .into_iter()
        .filter(|u| secret.contains(*u))
        .map(str::to_owned)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

// ---- The steps ----------------------------------------------------------------------------

/// The catalogue carla sees (owner: all of it), with the routes of the domain's specs.
fn catalogue(net: &mut Net<'_>) {
    let listed = net.rpc(&net.carla, "tools/list", json!({}), &[]);
    let defs = listed.json["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("tools/list: {}", listed.raw));
    assert!(
        listed.json["result"]["nextCursor"].is_null(),
        "one page of tools"
    );
    let routes: BTreeMap<String, (&'static str, String)> = dunning_domain::all_tools()
        .into_iter()
        .map(|t| {
            let r = t.def.route.expect("every tool has a /v1 route");
            (t.def.name, (r.method, r.path))
        })
        .collect();
    let names: BTreeSet<&str> = defs.iter().filter_map(|d| d["name"].as_str()).collect();
    assert_eq!(
        names,
        routes.keys().map(String::as_str).collect(),
        "carla (owner) is listed the whole catalogue"
    );
    for d in &defs {
        let name = d["name"].as_str().expect("name");
        let (method, path) = routes[name].clone();
        net.tools
            .insert(name.to_owned(), ToolInfo::new(d, method, path));
    }
}

/// `demo` as ana, crawled until two crawls agree (the jobs run once at startup).
fn settled_demo(net: &Net<'_>) -> Org {
    let mut demo = Org::crawl(net, &net.ana);
    for attempt in 0.. {
        std::thread::sleep(Duration::from_millis(200));
        let again = Org::crawl(net, &net.ana);
        if again.snapshot == demo.snapshot {
            break;
        }
        assert!(attempt < 5, "demo keeps changing on its own");
        demo = again;
    }
    for kind in KINDS {
        assert!(
            !demo.rows(kind).is_empty() && (*kind == "event" || demo.pick(kind).is_some()),
            "the demo data has no {kind}"
        );
    }
    demo
}

/// `acme` has no webhook: carla makes one, with a delivery (over `/v1`: no confirmation).
fn carla_webhook(net: &Net<'_>) {
    let auth = format!("Bearer {}", net.carla_api);
    let headers = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = json!({ "url": "https://hooks.acme.example/isolation", "events": ["*"] });
    let hook = net.srv.request(
        "POST",
        "/v1/webhooks",
        &headers,
        body.to_string().as_bytes(),
    );
    assert_eq!(hook.status, 201, "{}", hook.text());
    let id = hook.json()["id"].as_str().expect("webhook id").to_owned();
    let tested = net
        .srv
        .request("POST", &format!("/v1/webhooks/{id}/test"), &headers, b"{}");
    assert!(tested.status < 300, "webhook test: {}", tested.text());
}

/// carla's own lists and reads: her crawl, and every read without required arguments.
fn id_free_reads(c: &mut Check<'_, '_>) {
    for (label, raw) in c.carla.raw.clone() {
        let out = Outcome {
            status: 200,
            json: json!({ "result": {} }),
            raw,
            asked: None,
        };
        c.clean(&label, &out, &[]);
    }
    let net = c.net;
    for info in net.tools.values() {
        let required = info.schema["required"]
            .as_array()
            .is_some_and(|r| !r.is_empty());
        if info.read_only && !required {
            let out = net.call(&net.carla, &info.name, &Map::new());
            c.clean(&format!("{} {{}}", info.name), &out, &[]);
        }
    }
}

/// Every case of one tool with id arguments.
fn tool_cases(c: &mut Check<'_, '_>, info: &ToolInfo, due: &str) {
    let plain = info.plain_args(due);
    let base = |org: &Org| -> Option<Map<String, Value>> {
        let mut a = plain.clone();
        for IdArg {
            name: k,
            kind,
            array,
            ..
        } in &info.ids
        {
            a.insert(k.clone(), id_value(&org.pick(kind)?, *array));
        }
        Some(a)
    };
    if info.is_filter() {
        // One filter at a time (demo's entity of every status), the rest unfiltered.
        for IdArg {
            name: k,
            kind,
            array,
            ..
        } in &info.ids
        {
            for r in c.demo.reps(kind) {
                let mut args = plain.clone();
                args.insert(k.clone(), id_value(&r, *array));
                let case = Case {
                    what: info.name.clone(),
                    label: format!("filter {k}"),
                    args,
                    foreign: vec![r],
                };
                c.filter(&case, k);
            }
        }
        return;
    }
    let all_demo = base(&c.demo).expect("demo has every kind");
    let mut cases = vec![("all demo".to_owned(), all_demo.clone())];
    // Only the required ids (a failing optional reference must not hide the target's check).
    let optional = info.ids.iter().any(|a| !a.required);
    if optional && info.ids.iter().any(|a| a.required) {
        let mut a = all_demo.clone();
        for arg in info.ids.iter().filter(|arg| !arg.required) {
            a.remove(&arg.name);
        }
        if !a.contains_key("template_id") && info.schema["properties"].get("message").is_some() {
            a.insert("message".into(), json!("isolation check"));
        }
        cases.push(("required ids only".to_owned(), a));
    }
    // demo's entities in every status, one field at a time (a nested one with its parent).
    let id_kind = info.ids.iter().find(|a| a.name == "id").map(|a| a.kind);
    for IdArg {
        name: k,
        kind,
        array,
        ..
    } in &info.ids
    {
        for r in c.demo.reps(kind) {
            let mut a = all_demo.clone();
            a.insert(k.clone(), id_value(&r, *array));
            if let (Some((parent_kind, _)), Some(parent)) =
                (parent_of(kind), c.demo.parent(kind, &r))
                && id_kind == Some(parent_kind)
            {
                a.insert("id".into(), json!(parent));
            }
            if !cases.iter().any(|(_, x)| *x == a) {
                cases.push((format!("demo {kind} {k}"), a));
            }
        }
    }
    // carla's own ids everywhere but one field (a foreign reference behind an own target).
    if info.ids.len() > 1 || info.ids.iter().any(|a| a.array) {
        let own = base(&c.carla).unwrap_or_else(|| {
            panic!(
                "{}: acme lacks an entity for the mixed cases: {:?}",
                info.name, c.carla.picks
            )
        });
        for IdArg {
            name: k,
            kind,
            array,
            ..
        } in &info.ids
        {
            let theirs = c.demo.pick(kind).expect("demo pick");
            if info.ids.len() > 1 {
                let mut a = own.clone();
                a.insert(k.clone(), id_value(&theirs, *array));
                cases.push((format!("own ids, demo's {k}"), a));
            }
            if *array {
                let mine = c.carla.pick(kind).expect("carla pick");
                let mut a = own.clone();
                a.insert(k.clone(), json!([mine, theirs]));
                cases.push((format!("own ids, {k} = [own, demo's]"), a));
            }
        }
    }
    for (label, args) in cases {
        let foreign = foreign_ids(&Value::Object(args.clone()), &c.secret_ids);
        assert!(
            !foreign.is_empty(),
            "{}: {label} carries no demo id",
            info.name
        );
        let case = Case {
            what: info.name.clone(),
            label,
            args,
            foreign,
        };
        c.reference(&case);
    }
}

/// Every read of one resource template, and the completions of its variables.
fn template_cases(c: &mut Check<'_, '_>, template: &str) {
    let vars: Vec<(String, &'static str)> = template
        .split('{')
        .skip(1)
        .map(|s| {
            let var = s.split('}').next().expect("closing brace").to_owned();
            let kind = field_kind(template, &var);
            (var, kind)
        })
        .collect();
    let pick_all = |org: &Org| -> Option<BTreeMap<String, String>> {
        vars.iter()
            .map(|(v, k)| Some((v.clone(), org.pick(k)?)))
            .collect()
    };
    let all_demo = pick_all(&c.demo).expect("demo has every kind");
    let mut assigns = vec![("all demo".to_owned(), all_demo.clone())];
    for (var, kind) in &vars {
        for r in c.demo.reps(kind) {
            let mut a = all_demo.clone();
            a.insert(var.clone(), r.clone());
            if let Some(parent) = c.demo.parent(kind, &r) {
                a.insert("id".into(), parent);
            }
            if !assigns.iter().any(|(_, x)| *x == a) {
                assigns.push((format!("demo {kind} {var}"), a));
            }
        }
    }
    if vars.len() > 1 {
        let own = pick_all(&c.carla).expect("acme has every nested kind");
        for (var, kind) in &vars {
            let mut a = own.clone();
            a.insert(var.clone(), c.demo.pick(kind).expect("demo pick"));
            assigns.push((format!("own ids, demo's {var}"), a));
        }
    }
    for (label, a) in assigns {
        let mut uri = template.to_owned();
        for (var, value) in &a {
            uri = uri.replace(&format!("{{{var}}}"), value);
        }
        let mut args = Map::new();
        args.insert("uri".into(), json!(uri));
        let case = Case {
            what: template.to_owned(),
            label,
            foreign: foreign_ids(&Value::Object(args.clone()), &c.secret_ids),
            args,
        };
        c.template(template, &case);
    }
    // Completions of each variable, in the context of demo's other ids.
    let net = c.net;
    let allowed: Vec<String> = all_demo.values().cloned().collect();
    for (var, kind) in &vars {
        let context: Map<String, Value> = all_demo
            .iter()
            .filter(|(v, _)| *v != var)
            .map(|(v, x)| (v.clone(), json!(x)))
            .collect();
        let prefix: String = c.demo.pick(kind).expect("pick").chars().take(3).collect();
        for value in [String::new(), prefix] {
            let out = net.rpc(
                &net.carla,
                "completion/complete",
                json!({
                    "ref": { "type": "ref/resource", "uri": template },
                    "argument": { "name": var, "value": value },
                    "context": { "arguments": context },
                }),
                &[],
            );
            c.clean(
                &format!("completion of {template} {var}={value:?}"),
                &out,
                &allowed,
            );
        }
    }
}

/// Prompts taking ids: like ids that exist nowhere, nothing of `demo`; their completions.
fn prompt_cases(c: &mut Check<'_, '_>) {
    let net = c.net;
    let listed = net.rpc(&net.carla, "prompts/list", json!({}), &[]);
    let prompts = listed.json["result"]["prompts"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("prompts: {}", listed.raw));
    for p in &prompts {
        let name = p["name"].as_str().expect("prompt name");
        let args: Vec<&Value> = p["arguments"].as_array().into_iter().flatten().collect();
        let ids: Vec<(&str, &'static str)> = args
            .iter()
            .filter_map(|a| a["name"].as_str())
            .filter(|a| a.ends_with("_id"))
            .map(|a| (a, field_kind(name, a)))
            .collect();
        if ids.is_empty() {
            continue;
        }
        let mut given = Map::new();
        for a in &args {
            let an = a["name"].as_str().expect("argument name");
            if let Some((_, kind)) = ids.iter().find(|(i, _)| *i == an) {
                given.insert(an.to_owned(), json!(c.demo.pick(kind).expect("pick")));
            } else if a["required"] == true {
                given.insert(an.to_owned(), json!("1"));
            }
        }
        let case = Case {
            what: format!("prompt {name}"),
            label: "demo ids".into(),
            foreign: foreign_ids(&Value::Object(given.clone()), &c.secret_ids),
            args: given,
        };
        let (unknown, fs, us) = case.unknown();
        let get = |args: &Map<String, Value>| {
            net.rpc(
                &net.carla,
                "prompts/get",
                json!({ "name": name, "arguments": args }),
                &[],
            )
        };
        let (out, same) = (get(&case.args), get(&unknown));
        c.extra += 1;
        c.common(&case, "MCP prompts/get", &out, &same, (&fs, &us));
        for (arg, _) in &ids {
            let out = net.rpc(
                &net.carla,
                "completion/complete",
                json!({
                    "ref": { "type": "ref/prompt", "name": name },
                    "argument": { "name": arg, "value": "" },
                }),
                &[],
            );
            c.clean(&format!("completion of prompt {name} {arg}"), &out, &[]);
        }
    }
}

#[test]
fn another_organizations_ids_are_not_found_everywhere() {
    let started = Instant::now();
    let srv = Srv::start(&[], Some(CONFIG));
    let mut net = Net {
        ana: srv.mint(&["--org", "demo", "--person", "ana@demo.example"]),
        carla: srv.mint(&["--org", "acme", "--person", "carla@acme.example"]),
        carla_api: srv.mint_api("acme", "carla@acme.example"),
        srv: &srv,
        tools: BTreeMap::new(),
        requests: std::cell::Cell::new(0),
    };
    catalogue(&mut net);
    let net = net;

    // ---- 1. What demo holds, as ana; what acme holds, as carla -----------------------------
    let demo = settled_demo(&net);
    carla_webhook(&net);
    let carla = Org::crawl(&net, &net.carla);
    let (demo_ids, demo_words) = demo.markers();
    let (acme_ids, acme_words) = carla.markers();
    let secret_ids: BTreeSet<String> = demo_ids.difference(&acme_ids).cloned().collect();
    let secret_words: BTreeSet<String> = demo_words.difference(&acme_words).cloned().collect();
    assert!(secret_ids.len() > 500 && secret_words.len() > 50);
    let before = demo.snapshot.clone();
    let mut c = Check {
        net: &net,
        demo,
        carla,
        secret_ids,
        secret_words,
        findings: Findings::new(),
        covered: BTreeMap::new(),
        filter_answers: BTreeMap::new(),
        templates: BTreeMap::new(),
        extra: 0,
    };
    id_free_reads(&mut c);

    // ---- 2. Every tool with an id argument, with demo's ids ---------------------------------
    let due = common::date_in(10);
    let with_ids: Vec<&ToolInfo> = net.tools.values().filter(|t| !t.ids.is_empty()).collect();
    for info in &with_ids {
        tool_cases(&mut c, info, &due);
    }

    // ---- 3. Resource templates, fixed resources, prompts, completions -----------------------
    let listed = net.rpc(&net.carla, "resources/templates/list", json!({}), &[]);
    let templates: Vec<String> = listed.json["result"]["resourceTemplates"]
        .as_array()
        .unwrap_or_else(|| panic!("templates: {}", listed.raw))
        .iter()
        .map(|t| t["uriTemplate"].as_str().expect("uriTemplate").to_owned())
        .collect();
    for template in &templates {
        template_cases(&mut c, template);
    }
    let listed = net.rpc(&net.carla, "resources/list", json!({}), &[]);
    for r in listed.json["result"]["resources"]
        .as_array()
        .unwrap_or_else(|| panic!("resources: {}", listed.raw))
    {
        let uri = r["uri"].as_str().expect("uri");
        let out = net.rpc(&net.carla, "resources/read", json!({ "uri": uri }), &[]);
        c.clean(&format!("resources/read {uri}"), &out, &[]);
    }
    prompt_cases(&mut c);

    // ---- Coverage: a tool or template added without a case here fails -----------------------
    let expected: BTreeSet<&str> = with_ids.iter().map(|t| t.name.as_str()).collect();
    let covered: BTreeSet<&str> = c.covered.keys().map(String::as_str).collect();
    assert_eq!(
        covered, expected,
        "every catalogue tool with an id argument has cases"
    );
    let expected: BTreeSet<&str> = templates.iter().map(String::as_str).collect();
    let covered: BTreeSet<&str> = c.templates.keys().map(String::as_str).collect();
    assert_eq!(covered, expected, "every resource template has cases");

    // ---- 4. demo unchanged ------------------------------------------------------------------
    let after = Org::crawl(&net, &net.ana).snapshot;
    assert_eq!(after.len(), before.len(), "demo's crawl has another shape");
    for ((label, b), (_, a)) in before.iter().zip(&after) {
        if a != b {
            let detail = format!(
                "before: {}\n      after:  {}",
                truncate(&b.to_string(), 600),
                truncate(&a.to_string(), 600)
            );
            c.findings
                .entry(format!("CHANGED: demo's {label}"))
                .or_default()
                .push(detail);
        }
    }

    // ---- Report -----------------------------------------------------------------------------
    let mut report = String::new();
    let filters = c
        .covered
        .keys()
        .filter(|t| net.tools[*t].is_filter())
        .count();
    let _ = writeln!(
        report,
        "isolation: {} tools with id arguments ({} reference, {filters} filter), {} cases; \
         {} templates, {} reads; {} other checks; {} requests in {:.1?}",
        c.covered.len(),
        c.covered.len() - filters,
        c.covered.values().sum::<usize>(),
        c.templates.len(),
        c.templates.values().sum::<usize>(),
        c.extra,
        net.requests.get(),
        started.elapsed()
    );
    for (tool, n) in &c.covered {
        let info = &net.tools[tool];
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
    for (template, n) in &c.templates {
        let _ = writeln!(report, "  {template:<60} {n:>3} reads");
    }
    for (filter, answers) in &c.filter_answers {
        let _ = writeln!(report, "  filter {filter}: {answers:?}");
    }
    eprintln!("{report}");
    let mut failures = String::new();
    for (summary, cases) in &c.findings {
        let _ = writeln!(failures, "\n* {summary} ({} cases)", cases.len());
        for detail in cases.iter().take(2) {
            let _ = writeln!(failures, "    {detail}");
        }
    }
    assert!(
        c.findings.is_empty(),
        "{} kinds of isolation failure:\n{failures}",
        c.findings.len()
    );
}
