//! One organization's data as its owner sees it: every list crawled page by page, the
//! snapshot compared before and after, and a consistent pick of ids per kind.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use crate::wire::{KINDS, MARKER_KEYS, Net, distinctive, is_uuid, parent_of, walk_strings};

#[derive(Default)]
pub(crate) struct Org {
    /// Every answer of the crawl, in order (the snapshot compared before and after).
    pub(crate) snapshot: Vec<(String, Value)>,
    /// Raw bodies of the crawl (scanned for leaks when the crawler is carla).
    pub(crate) raw: Vec<(String, String)>,
    /// Rows by kind.
    pub(crate) rows: BTreeMap<&'static str, Vec<Value>>,
    /// The consistent set of ids the cases use, by kind.
    pub(crate) picks: BTreeMap<&'static str, String>,
}

impl Org {
    /// One read of the crawl, kept in the snapshot.
    pub(crate) fn get(&mut self, net: &Net, token: &str, tool: &str, args: Value) -> Value {
        let (v, raw) = net.read(token, tool, args.clone());
        let label = format!("{tool} {args}");
        self.raw.push((label.clone(), raw));
        self.snapshot.push((label, v.clone()));
        v
    }

    /// Every page of a list (100 rows a page).
    pub(crate) fn pages(&mut self, net: &Net, token: &str, tool: &str, args: Value) -> Vec<Value> {
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

    pub(crate) fn crawl(net: &Net, token: &str) -> Self {
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

    pub(crate) fn rows(&self, kind: &str) -> &[Value] {
        self.rows.get(kind).map_or(&[], Vec::as_slice)
    }

    /// A consistent set: an overdue charge of a debtor with a contact point (and that
    /// contact point), a ruler with steps (and a step), a webhook with deliveries (and
    /// one), a resendable delivery about an open charge; the first of the other kinds.
    pub(crate) fn choose(&mut self) {
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

    pub(crate) fn pick(&self, kind: &str) -> Option<String> {
        let kind = if kind == "any" { "charge" } else { kind };
        self.picks.get(kind).cloned()
    }

    /// The pick first, then one entity of every other status (every kind for `any`).
    pub(crate) fn reps(&self, kind: &str) -> Vec<String> {
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
    pub(crate) fn parent(&self, kind: &str, id: &str) -> Option<String> {
        let (_, field) = parent_of(kind)?;
        self.rows(kind)
            .iter()
            .find(|r| r["id"] == id)
            .and_then(|r| r[field].as_str())
            .map(str::to_owned)
    }

    /// Distinctive values: every UUID, and the strings under [`MARKER_KEYS`].
    pub(crate) fn markers(&self) -> (BTreeSet<String>, BTreeSet<String>) {
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
