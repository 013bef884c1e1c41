//! The steps: the catalogue carla is listed, `demo` settled, carla's webhook, and the
//! cases of each trial (a tool with id arguments, a template, the prompts, the reads
//! without an id).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::check::{Case, Check, foreign_ids, id_value};
use crate::org::Org;
use crate::wire::{IdArg, KINDS, Net, Outcome, ToolInfo, field_kind, parent_of};

/// The catalogue carla sees (owner: all of it), with the routes of the domain's specs.
pub(crate) fn catalogue(net: &mut Net) {
    let listed = net.rpc(&net.carla, "tools/list", json!({}), &[]);
    let defs = listed.json["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("tools/list: {}", listed.raw));
    assert!(
        listed.json["result"]["nextCursor"].is_null(),
        "one page of tools"
    );
    let routes: BTreeMap<String, (&'static str, String)> = dunning_domain::catalog::Registry::new()
        .tools()
        .iter()
        .map(|t| {
            let r = t.def.route.clone().expect("every tool has a /v1 route");
            (t.def.name.clone(), (r.method, r.path))
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
pub(crate) fn settled_demo(net: &Net) -> Org {
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
pub(crate) fn carla_webhook(net: &Net) {
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
pub(crate) fn id_free_reads(c: &mut Check<'_>) {
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
pub(crate) fn tool_cases(c: &mut Check<'_>, info: &ToolInfo, due: &str) {
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
    let all_demo = base(c.demo).expect("demo has every kind");
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
        let own = base(c.carla).unwrap_or_else(|| {
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
        let foreign = foreign_ids(&Value::Object(args.clone()), c.secret_ids);
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
pub(crate) fn template_cases(c: &mut Check<'_>, template: &str) {
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
    let all_demo = pick_all(c.demo).expect("demo has every kind");
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
        let own = pick_all(c.carla).expect("acme has every nested kind");
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
            foreign: foreign_ids(&Value::Object(args.clone()), c.secret_ids),
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
pub(crate) fn prompt_cases(c: &mut Check<'_>) {
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
            foreign: foreign_ids(&Value::Object(given.clone()), c.secret_ids),
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
