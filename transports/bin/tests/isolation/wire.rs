//! The wire side of the isolation suite: what marks a leak, the kinds of entities, one
//! answer ([`Outcome`]), a tool as served ([`ToolInfo`]), and the client ([`Net`]) that
//! calls tools over MCP (completing a confirmation when asked) and on their `/v1` routes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};

use dunning_core::mirror;
use serde_json::{Map, Value, json};

use crate::common::{self, Resp, Srv, V2026};

/// Keys whose string values identify an organization's data (besides every UUID).
pub(crate) const MARKER_KEYS: &[&str] = &[
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
pub(crate) const NOT_IDS: &[(&str, &str)] = &[
    ("dunning_charges_create", "external_id"),
    ("dunning_charges_protest", "document_ids"),
];

// ---- Small helpers ------------------------------------------------------------------------

pub(crate) fn is_uuid(b: &[u8]) -> bool {
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Every UUID-shaped substring of `text`.
pub(crate) fn uuids_in(text: &str) -> Vec<&str> {
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
pub(crate) fn distinctive(s: &str) -> bool {
    let b = s.as_bytes();
    let code = b
        .iter()
        .all(|c| c.is_ascii_lowercase() || b"_.*".contains(c));
    let date =
        b.len() >= 10 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-' && b[7] == b'-';
    s.chars().count() >= 6 && !code && !date
}

/// Calls `f(key, value)` for every string in `v` (`key`: the object key it is under).
pub(crate) fn walk_strings<'v>(
    v: &'v Value,
    key: Option<&'v str>,
    f: &mut dyn FnMut(Option<&str>, &'v str),
) {
    match v {
        Value::String(s) => f(key, s),
        Value::Array(items) => items.iter().for_each(|x| walk_strings(x, key, f)),
        Value::Object(m) => m.iter().for_each(|(k, x)| walk_strings(x, Some(k), f)),
        _ => {}
    }
}

/// Drops what differs between any two requests (`request_id`, `_meta`) and the text item
/// of a tool result (the structured value pretty-printed, request id included).
pub(crate) fn strip(v: &mut Value) {
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
pub(crate) fn normalize(v: &Value, subst: &[(String, String)]) -> Value {
    let mut s = v.to_string();
    for (from, to) in subst {
        s = s.replace(from.as_str(), to);
    }
    let mut v: Value = serde_json::from_str(&s).expect("still JSON");
    strip(&mut v);
    v
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
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
pub(crate) fn segment_kind(seg: &str) -> &'static str {
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
pub(crate) fn field_kind(path: &str, field: &str) -> &'static str {
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
pub(crate) fn parent_of(kind: &str) -> Option<(&'static str, &'static str)> {
    match kind {
        "contact_point" => Some(("debtor", "debtor_id")),
        "step" => Some(("ruler", "ruler_id")),
        "webhook_delivery" => Some(("webhook", "webhook_id")),
        _ => None,
    }
}

/// Every kind collected, in a stable order.
pub(crate) const KINDS: &[&str] = &[
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
pub(crate) struct Outcome {
    pub(crate) status: u16,
    pub(crate) json: Value,
    pub(crate) raw: String,
    pub(crate) asked: Option<String>,
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
    pub(crate) fn comparable(&self) -> Value {
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
pub(crate) struct ToolInfo {
    pub(crate) name: String,
    pub(crate) schema: Value,
    pub(crate) read_only: bool,
    pub(crate) destructive: bool,
    pub(crate) method: &'static str,
    pub(crate) path: String,
    /// `(argument, header name)` for arguments annotated `x-mcp-header`.
    pub(crate) headers: Vec<(String, String)>,
    /// The id arguments.
    pub(crate) ids: Vec<IdArg>,
}

/// One id argument of a tool.
#[derive(Clone, Debug)]
pub(crate) struct IdArg {
    pub(crate) name: String,
    /// The kind of entity it names.
    pub(crate) kind: &'static str,
    /// An array of ids (`charge_ids`).
    pub(crate) array: bool,
    pub(crate) required: bool,
}

impl ToolInfo {
    pub(crate) fn new(def: &Value, method: &'static str, path: String) -> Self {
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
    pub(crate) fn is_filter(&self) -> bool {
        self.read_only
            && self
                .ids
                .iter()
                .all(|a| !a.required && !self.path.contains(&format!("{{{}}}", a.name)))
    }

    /// The required arguments that are not ids, with plausible values.
    pub(crate) fn plain_args(&self, due: &str) -> Map<String, Value> {
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
pub(crate) fn plausible(field: &str, s: &Value, due: &str) -> Value {
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

/// The server, the three tokens (ana's and carla's MCP ones, carla's API one) and the
/// catalogue as carla is listed it.
pub(crate) struct Net {
    pub(crate) srv: Srv,
    pub(crate) ana: String,
    pub(crate) carla: String,
    pub(crate) carla_api: String,
    pub(crate) tools: BTreeMap<String, ToolInfo>,
    /// Requests made (MCP and `/v1`), for the report.
    pub(crate) requests: AtomicU64,
}

impl Net {
    /// One era-2026 JSON-RPC request; the client declares form elicitation.
    pub(crate) fn rpc(
        &self,
        token: &str,
        method: &str,
        mut params: Value,
        extra: &[(String, String)],
    ) -> Outcome {
        self.requests.fetch_add(1, Ordering::Relaxed);
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
    /// acceptance and the final answer returned, with the message that was asked.
    pub(crate) fn call(&self, token: &str, tool: &str, args: &Map<String, Value>) -> Outcome {
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
    pub(crate) fn rest(&self, tool: &str, args: &Map<String, Value>) -> Outcome {
        self.requests.fetch_add(1, Ordering::Relaxed);
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
    pub(crate) fn read(&self, token: &str, tool: &str, args: Value) -> (Value, String) {
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
