//! The checks of one call: a case (tool or template, arguments, the `demo` ids they
//! carry), the leak scan, the comparison with ids that exist nowhere (no oracle), and
//! the findings grouped by cause.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use crate::org::Org;
use crate::wire::{Net, Outcome, normalize, truncate, uuids_in, walk_strings};

/// Replacements of ids by placeholders, to compare two answers.
pub(crate) type Subst = Vec<(String, String)>;

/// One call: tool (or URI template), label, arguments, and the `demo` ids they carry.
pub(crate) struct Case {
    pub(crate) what: String,
    pub(crate) label: String,
    pub(crate) args: Map<String, Value>,
    pub(crate) foreign: Vec<String>,
}

impl Case {
    /// The same arguments with each foreign id replaced by an id that exists nowhere, and
    /// the substitutions that make the two answers comparable.
    pub(crate) fn unknown(&self) -> (Map<String, Value>, Subst, Subst) {
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
pub(crate) type Findings = BTreeMap<String, Vec<String>>;

/// One trial's checks: the shared state it reads, and what it found and covered.
pub(crate) struct Check<'a> {
    pub(crate) net: &'a Net,
    pub(crate) demo: &'a Org,
    pub(crate) carla: &'a Org,
    /// `demo`'s UUIDs and words that `acme` does not also have.
    pub(crate) secret_ids: &'a BTreeSet<String>,
    pub(crate) secret_words: &'a BTreeSet<String>,
    pub(crate) findings: Findings,
    /// Tools with at least one case, and how many cases each.
    pub(crate) covered: BTreeMap<String, usize>,
    /// How the filter tools answered (`tool.field` → NOT_FOUND or an empty success).
    pub(crate) filter_answers: BTreeMap<String, BTreeSet<String>>,
    /// Templates with at least one case, and how many reads each.
    pub(crate) templates: BTreeMap<String, usize>,
    /// Other checks run (id-free reads, fixed resources, prompts, completions).
    pub(crate) extra: usize,
}

/// `text` with every UUID replaced by `<id>`.
pub(crate) fn mask_ids(text: &str) -> String {
    let mut out = text.to_owned();
    for u in uuids_in(text) {
        out = out.replace(u, "<id>");
    }
    out
}

impl Check<'_> {
    /// The `demo` markers in an answer, except the ids the call carried.
    pub(crate) fn leaks(&self, raw: &str, allowed: &[String]) -> Vec<String> {
        let mut found = BTreeSet::new();
        for u in uuids_in(raw) {
            if self.secret_ids.contains(u) && !allowed.iter().any(|a| a == u) {
                found.insert(u.to_owned());
            }
        }
        if raw.len() <= 16_384 {
            for w in self.secret_words {
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

    pub(crate) fn finding(
        &mut self,
        case: &Case,
        surface: &str,
        what: &str,
        extra: &str,
        out: &Outcome,
    ) {
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
    pub(crate) fn clean(&mut self, what: &str, out: &Outcome, allowed: &[String]) {
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
    pub(crate) fn common(
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
            let what = "CONFIRMATION ASKED for ids that exist nowhere (refuse first)";
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
    pub(crate) fn reference(&mut self, case: &Case) {
        let tool = case.what.clone();
        let (unknown, fs, us) = case.unknown();
        *self.covered.entry(tool.clone()).or_default() += 1;

        let out = self.net.call(&self.net.carla, &tool, &case.args);
        let same = self.net.call(&self.net.carla, &tool, &unknown);
        if out.asked.is_some() {
            let what = "CONFIRMATION ASKED before refusing (existence is checked first; \
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
    pub(crate) fn filter(&mut self, case: &Case, field: &str) {
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
    pub(crate) fn template(&mut self, template: &str, case: &Case) {
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
pub(crate) fn is_not_found(v: &Value) -> bool {
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
pub(crate) fn id_value(id: &str, array: bool) -> Value {
    if array { json!([id]) } else { json!(id) }
}

/// The `demo` ids (distinct) a set of arguments carries.
pub(crate) fn foreign_ids(args: &Value, secret: &BTreeSet<String>) -> Vec<String> {
    let text = args.to_string();
    uuids_in(&text)
        .into_iter()
        .filter(|u| secret.contains(*u))
        .map(str::to_owned)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}
