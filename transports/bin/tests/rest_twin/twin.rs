//! The three servers side by side ([`Twin`]): one case runs on each (era 2026 over MCP,
//! `/v1`, era 2025) under the same request counter, and the answers are compared.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use dunning_core::{Audience, Ctx, Dispatch, Env, Scope, ToolDef};
use dunning_domain::testing::T0;
use dunning_tests::client::Resp;
use serde_json::{Map, Value, json};

use crate::common::trials::panic_message;
use crate::common::{pct, query_value};
use crate::side::Side;
use crate::{PERSON, TOKEN, V2025, V2026};

/// The era-2026 answer of a case: `structuredContent` (secrets masked), `isError`, and
/// whether it took the confirmation round trip.
pub(crate) struct Modern {
    pub(crate) value: Value,
    pub(crate) is_error: bool,
    pub(crate) confirmed: bool,
}

/// What a case expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Expect {
    /// A 2xx answer.
    Done,
    /// A tool error with this code.
    Fails(&'static str),
}
use Expect::{Done, Fails};

/// The REST status of a tool error code, written out again here so that the test does
/// not take the product's own mapping (`ToolErrorCode::rest_status`) on trust.
pub(crate) fn rest_status(code: &str) -> u16 {
    match code {
        "VALIDATION_ERROR" | "NOT_SETTLED" => 422,
        "NOT_FOUND" => 404,
        "CONFLICT" | "IDEMPOTENCY_CONFLICT" | "CONFIRMATION_DECLINED" => 409,
        "FORBIDDEN" => 403,
        "CONFIRMATION_REQUIRED" => 428,
        "RATE_LIMITED" => 429,
        other => panic!("unknown tool error code {other}"),
    }
}

/// Credentials and `Accept`, on every request.
pub(crate) fn auth_headers() -> Vec<(String, String)> {
    vec![
        ("Authorization".into(), format!("Bearer {TOKEN}")),
        ("Accept".into(), "application/json".into()),
    ]
}

/// The three servers, the catalogue, and what the sequence covered so far.
pub(crate) struct Twin {
    pub(crate) mcp: Side,
    pub(crate) rest: Side,
    pub(crate) legacy: Side,
    pub(crate) tools: Vec<ToolDef>,
    pub(crate) n: u64,
    /// Tools compared between era 2026 and REST.
    pub(crate) covered: BTreeSet<String>,
    /// Tools checked in era 2025 (same result, or refused for confirmation).
    pub(crate) covered_legacy: BTreeSet<String>,
    /// Destructive tools refused with `CONFIRMATION_REQUIRED` in era 2025.
    pub(crate) refused: BTreeSet<String>,
    /// How many era-2025 refusals (then applied on `/v1`) the sequence made.
    pub(crate) refusals: usize,
    pub(crate) log: String,
    pub(crate) started: Instant,
    /// Every case run, by tool, in order: its label and, when it failed, why.
    pub(crate) cases: BTreeMap<String, Vec<(String, Option<String>)>>,
    /// The label of the first case that failed.
    pub(crate) first_failure: Option<String>,
}

impl Twin {
    pub(crate) fn new() -> Self {
        let (mcp, rest, legacy) = std::thread::scope(|s| {
            let a = s.spawn(Side::start);
            let b = s.spawn(Side::start);
            let c = s.spawn(Side::start);
            (
                a.join().expect("mcp side"),
                b.join().expect("rest side"),
                c.join().expect("legacy side"),
            )
        });
        let tools = mcp.server.dispatch().catalog().tools;
        Self {
            mcp,
            rest,
            legacy,
            tools,
            n: 0,
            covered: BTreeSet::new(),
            covered_legacy: BTreeSet::new(),
            refused: BTreeSet::new(),
            refusals: 0,
            log: String::new(),
            started: Instant::now(),
            cases: BTreeMap::new(),
            first_failure: None,
        }
    }

    pub(crate) fn def(&self, tool: &str) -> &ToolDef {
        self.tools
            .iter()
            .find(|t| t.name == tool)
            .unwrap_or_else(|| panic!("no tool {tool} in the catalogue"))
    }

    /// A read straight from the REST side's domain (no request, no counter): to pick the
    /// demo entities the cases act on.
    pub(crate) fn peek(&self, tool: &str, args: Value) -> Value {
        let dispatch = self.rest.server.dispatch();
        let who = dispatch
            .principal(
                "demo",
                PERSON,
                &Scope::ALL
                    .iter()
                    .map(|&s| dunning_domain::catalog::SCOPES.name(s).to_owned())
                    .collect::<Vec<_>>(),
                Audience::Mcp,
                T0.plus_millis(3_600_000),
            )
            .expect("principal");
        let ctx = Ctx {
            principal: &who,
            now: T0,
            request_id: "peek",
            entropy: &[0; 32],
            ahead: None,
        };
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        match dispatch.read_tool(tool, args, ctx) {
            Some(Ok(out)) => out.tool_value(),
            other => panic!("peek {tool}: {other:?}"),
        }
    }

    /// The rows of a listing (up to 100).
    pub(crate) fn rows(&self, tool: &str, mut args: Value) -> Vec<Value> {
        args["per_page"] = json!(100);
        self.peek(tool, args)["data"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// One case of the sequence, recorded under its tool: a failure (a panic of
    /// [`Twin::run_case`]) is kept with the case and the sequence goes on, the case
    /// answering `null`.
    pub(crate) fn case(&mut self, tool: &str, args: Value, expect: Expect) -> Value {
        let label = format!("case {} {tool} {args}", self.n + 1);
        let run = catch_unwind(AssertUnwindSafe(|| self.run_case(tool, args, expect)));
        let (value, failure) = match run {
            Ok(v) => (v, None),
            Err(p) => {
                let mut msg = panic_message(&*p);
                if let Some(first) = &self.first_failure {
                    let _ = write!(msg, "\n(an earlier case failed, {first}: this may follow)");
                } else {
                    self.first_failure = Some(label.clone());
                }
                (Value::Null, Some(msg))
            }
        };
        self.cases
            .entry(tool.to_owned())
            .or_default()
            .push((label, failure));
        value
    }

    /// Runs one operation on the three servers and compares; returns the REST JSON (the
    /// descriptor for a file).
    fn run_case(&mut self, tool: &str, args: Value, expect: Expect) -> Value {
        self.n += 1;
        let n = 1000 + self.n * 8;
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        let def = self.def(tool).clone();
        let rest = self.rest_call(&self.rest, n, &def, &args);
        let (result, confirmed) = self.mcp_call(n, &def, &args);
        let context = format!("case {} {tool} {}", self.n, Value::Object(args.clone()));
        let (structured, is_error) = tool_value(&context, &result);
        let modern = Modern {
            value: structured.clone(),
            is_error,
            confirmed,
        };
        let outcome;
        let value = if rest.status >= 400 {
            let body = rest.json();
            let code = body["error"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert_eq!(
                rest.status,
                rest_status(&code),
                "{context}: REST status of {code}"
            );
            assert!(
                is_error,
                "{context}: REST failed with {body} but the tool answered {result}"
            );
            assert_eq!(structured, body, "{context}: tool error ≠ REST error body");
            assert!(
                matches!(expect, Fails(c) if c == code),
                "{context}: {expect:?} was expected, not the error {body}"
            );
            outcome = code;
            body
        } else {
            assert!(
                !is_error,
                "{context}: REST {} but the tool failed: {result}",
                rest.status
            );
            assert_eq!(
                expect, Done,
                "{context}: succeeded ({}) but {expect:?} was expected",
                rest.status
            );
            outcome = rest.status.to_string();
            if rest.status == 204 {
                assert!(rest.body.is_empty(), "{context}: 204 with a body");
                assert_eq!(structured, json!({ "status": 204 }), "{context}: 204");
                structured
            } else if rest.is_json() {
                let mut body = rest.json();
                mask_secrets(&mut body, false);
                assert_eq!(structured, body, "{context}: structuredContent ≠ REST body");
                body
            } else {
                self.check_file(n, &context, &rest, &structured);
                structured
            }
        };
        self.covered.insert(tool.to_owned());
        let legacy_outcome = self.check_legacy(
            n,
            &def,
            &args,
            &format!("{context} [era {V2025}]"),
            &modern,
            &rest,
        );
        let _ = writeln!(
            self.log,
            "{:>3} {:<36} {:<7} {:<28} {}",
            self.n,
            tool,
            def.route.as_ref().map_or("", |r| r.method),
            format!("{outcome}{}", if confirmed { " (confirmed)" } else { "" }),
            legacy_outcome
        );
        value
    }

    /// The era-2025 call of a case, against the era-2026 answer and the REST reply. For
    /// a destructive tool, a store snapshot from before the call proves it changed nothing.
    /// Returns the log column.
    pub(crate) fn check_legacy(
        &mut self,
        n: u64,
        def: &ToolDef,
        args: &Map<String, Value>,
        context: &str,
        modern: &Modern,
        rest: &Resp,
    ) -> String {
        let before = def.annotations.destructive.then(|| self.legacy.snapshot());
        let result = self.legacy_call(n, def, args);
        let (value, is_error) = tool_value(context, &result);
        if let Some(before) = before {
            let after = self.legacy.snapshot();
            if after != before {
                let changed: Vec<&String> = after.iter().filter(|d| !before.contains(d)).collect();
                panic!(
                    "{context}: the era-2025 call of a destructive tool changed the store \
                     ({result}): {changed:?}"
                );
            }
        }
        self.covered_legacy.insert(def.name.clone());
        if !modern.confirmed {
            // Not a confirmation in era 2026 (not destructive, or refused by the preflight):
            // era 2025 answers the same.
            assert_eq!(
                is_error, modern.is_error,
                "{context}: isError differs from era 2026: {result}"
            );
            assert_eq!(
                value, modern.value,
                "{context}: structuredContent ≠ era 2026's (and the REST body)"
            );
            if rest.status == 200 && !rest.is_json() {
                let path = value["download_path"].as_str().expect("download_path");
                let again = self.legacy.send(n, "GET", path, &auth_headers(), b"");
                assert_eq!(again.status, 200, "{context}: GET {path}");
                assert_eq!(
                    again.body, rest.body,
                    "{context}: {path} serves other bytes"
                );
            }
            return "same".to_owned();
        }
        // Era 2026 confirmed it; era 2025 cannot: refused with the tool error (REST 428 in
        // `rest_status`, but here an `isError` result), nothing executed.
        assert!(is_error, "{context}: ran without confirmation: {result}");
        let message = value["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(
            value,
            json!({ "error": {
                "code": "CONFIRMATION_REQUIRED",
                "message": message,
                "request_id": Env::fixed(T0, n).request_id,
            } }),
            "{context}: not the CONFIRMATION_REQUIRED tool error"
        );
        assert!(
            message.contains(&def.name) && message.contains(V2026),
            "{context}: the message must name the tool and tell to confirm through a \
             {V2026} client: {message}"
        );
        self.refused.insert(def.name.clone());
        self.refusals += 1;
        // The same operation through `/v1` (REST needs no confirmation), same counter.
        let applied = self.rest_call(&self.legacy, n, def, args);
        assert_eq!(
            (applied.status, applied.header("content-type")),
            (rest.status, rest.header("content-type")),
            "{context}: /v1 on the era-2025 server: {}",
            String::from_utf8_lossy(&applied.body)
        );
        if applied.is_json() {
            let (mut a, mut b) = (applied.json(), rest.json());
            mask_secrets(&mut a, false);
            mask_secrets(&mut b, false);
            assert_eq!(a, b, "{context}: /v1 on the era-2025 server ≠ REST body");
        } else {
            assert_eq!(
                applied.body, rest.body,
                "{context}: /v1 on the era-2025 server ≠ REST body"
            );
        }
        format!("CONFIRMATION_REQUIRED, /v1 {}", applied.status)
    }

    /// An era-2025 `tools/call`: no envelope, no mirrored headers, no handshake.
    pub(crate) fn legacy_call(&self, n: u64, def: &ToolDef, args: &Map<String, Value>) -> Value {
        let mut headers = auth_headers();
        headers.extend([
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("MCP-Protocol-Version".to_owned(), V2025.to_owned()),
        ]);
        let body = json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": { "name": def.name, "arguments": args },
        });
        let reply = self.legacy.send(
            n,
            "POST",
            "/",
            &headers,
            &serde_json::to_vec(&body).expect("body"),
        );
        assert_eq!(
            reply.status,
            200,
            "{} [era {V2025}]: {}",
            def.name,
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.header("mcp-protocol-version"), Some(V2025));
        let msg = reply.json();
        assert_eq!(msg["id"], json!(n), "{} [era {V2025}]: {msg}", def.name);
        let result = msg
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("{} [era {V2025}]: no result in {msg}", def.name));
        for key in ["resultType", "_meta", "ttlMs", "cacheScope"] {
            assert!(
                result.get(key).is_none(),
                "{} [era {V2025}]: an era-2026 field {key} in {result}",
                def.name
            );
        }
        result
    }

    /// A file: the tool's descriptor names the REST answer, and its `download_path` serves
    /// the same bytes.
    pub(crate) fn check_file(&mut self, n: u64, context: &str, rest: &Resp, descriptor: &Value) {
        assert_eq!(rest.status, 200, "{context}: file status");
        assert_eq!(
            descriptor["content_type"].as_str(),
            rest.header("content-type"),
            "{context}: content_type of {descriptor}"
        );
        assert_eq!(
            descriptor["byte_size"].as_u64(),
            Some(rest.body.len() as u64),
            "{context}: byte_size of {descriptor}"
        );
        assert!(!rest.body.is_empty(), "{context}: empty file");
        let path = descriptor["download_path"]
            .as_str()
            .unwrap_or_else(|| panic!("{context}: no download_path in {descriptor}"));
        let again = self.rest.send(n, "GET", path, &auth_headers(), b"");
        assert_eq!(again.status, 200, "{context}: GET {path}");
        assert_eq!(
            again.body, rest.body,
            "{context}: {path} serves other bytes"
        );
    }

    /// The `/v1` route on `side`: path variables from the template, the rest in the query string
    /// (`GET`, `DELETE`) or the JSON body; `idempotency_key` as `X-Idempotency-Key`.
    pub(crate) fn rest_call(
        &self,
        side: &Side,
        n: u64,
        def: &ToolDef,
        args: &Map<String, Value>,
    ) -> Resp {
        let route = def.route.as_ref().expect("every tool has a /v1 route");
        let mut rest = args.clone();
        let mut path = String::new();
        for seg in route.path.split('/').skip(1) {
            path.push('/');
            match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(var) => {
                    let v = rest
                        .remove(var)
                        .unwrap_or_else(|| panic!("{}: path variable {var} missing", def.name));
                    path.push_str(&pct(v.as_str().expect("path variables are strings")));
                }
                None => path.push_str(seg),
            }
        }
        let mut headers = auth_headers();
        if let Some(key) = rest.remove("idempotency_key") {
            let key = key
                .as_str()
                .expect("idempotency_key is a string")
                .to_owned();
            headers.push(("X-Idempotency-Key".into(), key));
        }
        let body = match route.method {
            "GET" | "DELETE" => {
                let query: Vec<String> = rest
                    .iter()
                    .map(|(k, v)| format!("{}={}", pct(k), pct(&query_value(v))))
                    .collect();
                if !query.is_empty() {
                    path.push('?');
                    path.push_str(&query.join("&"));
                }
                Vec::new()
            }
            _ => {
                headers.push(("Content-Type".into(), "application/json".into()));
                serde_json::to_vec(&Value::Object(rest)).expect("body")
            }
        };
        side.send(n, route.method, &path, &headers, &body)
    }

    /// An era-2026 `tools/call`; a destructive tool's `input_required` is answered with
    /// the user's acceptance, under the same request counter. Returns the final result
    /// and whether a confirmation took place.
    pub(crate) fn mcp_call(
        &self,
        n: u64,
        def: &ToolDef,
        args: &Map<String, Value>,
    ) -> (Value, bool) {
        let mut headers = auth_headers();
        headers.extend([
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("MCP-Protocol-Version".to_owned(), V2026.to_owned()),
            ("Mcp-Method".to_owned(), "tools/call".to_owned()),
            (
                "Mcp-Name".to_owned(),
                dunning_core::mirror::encode(&def.name).into_owned(),
            ),
        ]);
        let props = def.input_schema["properties"].as_object();
        for (k, schema) in props.into_iter().flatten() {
            if let (Some(name), Some(v)) = (schema["x-mcp-header"].as_str(), args.get(k)) {
                let text = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                headers.push((
                    format!("Mcp-Param-{name}"),
                    dunning_core::mirror::encode(&text).into_owned(),
                ));
            }
        }
        let mut params = json!({
            "name": def.name,
            "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": V2026,
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
                "io.modelcontextprotocol/clientInfo": { "name": "rest-twin", "version": "1.0.0" },
            },
        });
        let post = |params: &Value| {
            let body =
                json!({ "jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params });
            let reply = self.mcp.send(
                n,
                "POST",
                "/",
                &headers,
                &serde_json::to_vec(&body).expect("body"),
            );
            assert_eq!(
                reply.status,
                200,
                "{}: {}",
                def.name,
                String::from_utf8_lossy(&reply.body)
            );
            assert_eq!(reply.header("mcp-protocol-version"), Some(V2026));
            let msg = reply.json();
            assert_eq!(msg["id"], json!(n), "{}: {msg}", def.name);
            msg.get("result")
                .cloned()
                .unwrap_or_else(|| panic!("{}: no result in {msg}", def.name))
        };
        let first = post(&params);
        match first["resultType"].as_str() {
            Some("complete") => {
                assert!(
                    !def.annotations.destructive || first["isError"] == json!(true),
                    "{}: a destructive tool ran without confirmation: {first}",
                    def.name
                );
                (first, false)
            }
            Some("input_required") => {
                assert!(
                    def.annotations.destructive,
                    "{}: input_required from a tool that is not destructive: {first}",
                    def.name
                );
                let ask = &first["inputRequests"]["confirm"];
                assert_eq!(ask["method"], "elicitation/create", "{}: {first}", def.name);
                assert!(
                    ask["params"]["message"]
                        .as_str()
                        .is_some_and(|m| !m.is_empty()),
                    "{}: confirmation message: {first}",
                    def.name
                );
                params["requestState"] = first["requestState"].clone();
                params["inputResponses"] =
                    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
                let second = post(&params);
                assert_eq!(second["resultType"], "complete", "{}: {second}", def.name);
                (second, true)
            }
            _ => panic!("{}: unexpected result {first}", def.name),
        }
    }

    /// The three stores hold the same data (webhook secrets masked).
    pub(crate) fn stores_agree(&self) -> Result<(), String> {
        let (rest, legacy) = (self.rest.snapshot(), self.legacy.snapshot());
        let mcp = self.mcp.snapshot();
        let (rest, legacy, mcp) = (masked_docs(&rest), masked_docs(&legacy), masked_docs(&mcp));
        if legacy != rest {
            return Err(format!(
                "the era-{V2025} server's store ≠ the REST server's: {}",
                first_difference(&legacy, &rest)
            ));
        }
        if mcp != rest {
            return Err(format!(
                "the era-{V2026} server's store ≠ the REST server's: {}",
                first_difference(&mcp, &rest)
            ));
        }
        Ok(())
    }

    /// The sequence's log and totals.
    pub(crate) fn summary(&self) -> String {
        format!(
            "{}{} tools on both surfaces in era {V2026}, {} in era {V2025} ({} destructive \
             refused there {} times, then applied on /v1), {} operations on three servers, \
             {} documents each, in {:.1?}",
            self.log,
            self.covered.len(),
            self.covered_legacy.len(),
            self.refused.len(),
            self.refusals,
            self.n,
            self.rest.snapshot().len(),
            self.started.elapsed()
        )
    }
}

/// Where two store snapshots first differ (or how their lengths do).
fn first_difference(a: &[Value], b: &[Value]) -> String {
    match a.iter().zip(b).position(|(x, y)| x != y) {
        Some(i) => format!("document {i}: {} ≠ {}", a[i], b[i]),
        None => format!("{} documents ≠ {}", a.len(), b.len()),
    }
}

/// Webhook signing secrets come from the OS generator, on purpose (a secret must not be
/// derivable from a request's entropy), so they differ between the two servers: under the
/// keys that carry them, string values are compared by shape (`whsec_` + 64 hex digits, or
/// the last four of those) and then masked.
pub(crate) fn mask_secrets(v: &mut Value, under_secret: bool) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                let secret = under_secret || matches!(k.as_str(), "secret" | "secret_last4");
                mask_secrets(x, secret);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| mask_secrets(x, under_secret)),
        Value::String(s) if under_secret => {
            let hex = s.strip_prefix("whsec_").unwrap_or(s);
            assert!(
                (hex.len() == 64 || hex.len() == 4) && hex.bytes().all(|b| b.is_ascii_hexdigit()),
                "not a webhook secret: {s}"
            );
            *s = format!("<secret:{}>", s.len());
        }
        _ => {}
    }
}

/// A tool result's `structuredContent`, secrets masked, after checking that its text item
/// is that value pretty-printed; and whether it is an error.
pub(crate) fn tool_value(context: &str, result: &Value) -> (Value, bool) {
    let mut structured = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| panic!("{context}: no structuredContent in {result}"));
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(
        text,
        serde_json::to_string_pretty(&structured).expect("pretty"),
        "{context}: the text item is the structured value pretty-printed"
    );
    mask_secrets(&mut structured, false);
    let is_error = result.get("isError") == Some(&Value::Bool(true));
    (structured, is_error)
}

/// A store snapshot with webhook secrets masked (see [`mask_secrets`]).
pub(crate) fn masked_docs(docs: &[String]) -> Vec<Value> {
    docs.iter()
        .map(|d| {
            let mut v = serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.clone()));
            mask_secrets(&mut v, false);
            v
        })
        .collect()
}

pub(crate) fn id(v: &Value) -> String {
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no id in {v}"))
        .to_owned()
}

pub(crate) fn status_is(v: &Value, status: &str) -> bool {
    v["status"] == status
}
