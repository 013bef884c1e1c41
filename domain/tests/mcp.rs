//! Resources, templates, prompts and completions through the real core (no sockets).

use dunning_core::{
    Audience, AuthError, Authenticate, Config, Env, Header, Keys, Principal, Request, Server,
    UnixTime,
};
use dunning_domain::Domain;
use dunning_domain::testing::{Bed, T0};
use serde_json::{Value, json};

struct Tokens(Vec<(&'static str, Principal)>);

impl Authenticate for Tokens {
    fn authenticate(&self, token: &str, _: Audience, _: UnixTime) -> Result<Principal, AuthError> {
        self.0
            .iter()
            .find(|(t, _)| *t == token)
            .map(|(_, p)| p.clone())
            .ok_or(AuthError::Malformed)
    }
}

fn server() -> Server<Domain> {
    let bed = Bed::demo();
    let tokens = Tokens(vec![
        ("ana", bed.ana()),
        ("carla", bed.carla()),
        ("bruno", bed.as_member("bruno@demo.example")),
    ]);
    Server::new(Config::default(), Keys::single(b"k"), bed.domain, tokens).expect("valid catalog")
}

fn rpc(server: &Server<Domain>, token: &str, method: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let auth = format!("Bearer {token}");
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str)
        .map(|n| dunning_core::mirror::encode(n).into_owned());
    let mut headers = vec![
        Header {
            name: "Authorization",
            value: auth.as_bytes(),
        },
        Header {
            name: "Content-Type",
            value: b"application/json",
        },
        Header {
            name: "MCP-Protocol-Version",
            value: b"2026-07-28",
        },
        Header {
            name: "Mcp-Method",
            value: method.as_bytes(),
        },
    ];
    if let Some(n) = &name {
        headers.push(Header {
            name: "Mcp-Name",
            value: n.as_bytes(),
        });
    }
    let req = Request {
        method: "POST",
        target: "/",
        headers: &headers,
        body: body.as_bytes(),
    };
    let resp = server.handle(&req, &Env::fixed(T0, 1));
    serde_json::from_slice(&resp.body).expect("JSON body")
}

#[test]
fn fixed_resources_are_views_of_tools() {
    let s = server();
    let list = rpc(&s, "ana", "resources/list", json!({}));
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"kobana://dunning/me"));
    assert!(uris.contains(&"kobana://dunning/summary"));
    assert!(uris.contains(&"kobana://dunning/rules"));
    let me = rpc(
        &s,
        "ana",
        "resources/read",
        json!({"uri": "kobana://dunning/me"}),
    );
    let text = me["result"]["contents"][0]["text"].as_str().unwrap();
    let me: Value = serde_json::from_str(text).unwrap();
    assert_eq!(me["user"]["email"], "ana@demo.example");
    let rules = rpc(
        &s,
        "ana",
        "resources/read",
        json!({"uri": "kobana://dunning/rules"}),
    );
    assert_eq!(rules["result"]["contents"][0]["mimeType"], "text/markdown");
    assert!(
        rules["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("CDC art. 43")
    );
}

#[test]
fn templates_read_the_callers_organization_only() {
    let s = server();
    let debtors = rpc(
        &s,
        "ana",
        "tools/call",
        json!({"name": "dunning_debtors_list", "arguments": {"per_page": 1}}),
    );
    let id = debtors["result"]["structuredContent"]["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let uri = format!("kobana://dunning/debtors/{id}");
    let got = rpc(&s, "ana", "resources/read", json!({"uri": uri}));
    assert_eq!(got["result"]["contents"][0]["mimeType"], "application/json");
    let other = rpc(&s, "carla", "resources/read", json!({"uri": uri}));
    assert_eq!(other["error"]["code"], -32602);
    assert_eq!(other["error"]["data"]["uri"], uri.as_str());
    let unknown = rpc(
        &s,
        "ana",
        "resources/read",
        json!({"uri": "kobana://dunning/debtors/00000000-0000-4000-8000-000000000000"}),
    );
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn prompts_validate_and_orchestrate() {
    let s = server();
    let list = rpc(&s, "ana", "prompts/list", json!({}));
    let names: Vec<&str> = list["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    for p in [
        "overdue_triage",
        "propose_agreement",
        "negativation_readiness",
        "debtor_360",
        "design_ruler",
        "webhook_troubleshoot",
    ] {
        assert!(names.contains(&p), "{p}");
    }
    let bruno = rpc(&s, "bruno", "prompts/list", json!({}));
    let bruno_names: Vec<&str> = bruno["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        !bruno_names.contains(&"webhook_troubleshoot"),
        "filtered by scope and permission"
    );
    let got = rpc(
        &s,
        "ana",
        "prompts/get",
        json!({"name": "design_ruler", "arguments": {"segment": "b2c"}}),
    );
    let text = got["result"]["messages"][0]["content"]["text"]
        .as_str()
        .unwrap();
    assert!(text.contains("PROPOSAL"), "destructive steps are proposals");
    let bad = rpc(
        &s,
        "ana",
        "prompts/get",
        json!({"name": "design_ruler", "arguments": {"segment": "martians"}}),
    );
    assert_eq!(bad["error"]["code"], -32602);
    let missing = rpc(
        &s,
        "ana",
        "prompts/get",
        json!({"name": "debtor_360", "arguments": {}}),
    );
    assert_eq!(missing["error"]["code"], -32602);
    let foreign = rpc(
        &s,
        "carla",
        "prompts/get",
        json!({"name": "debtor_360", "arguments": {"debtor_id": "00000000-0000-4000-8000-000000000000"}}),
    );
    assert_eq!(foreign["error"]["code"], -32602);
}

#[test]
fn completions_search_within_the_organization() {
    let s = server();
    let debtors = rpc(
        &s,
        "ana",
        "tools/call",
        json!({"name": "dunning_debtors_list", "arguments": {"per_page": 1, "sort_by": "name"}}),
    );
    let first = &debtors["result"]["structuredContent"]["data"][0];
    let name = first["name"].as_str().unwrap();
    let word = name.split(' ').next().unwrap();
    let c = rpc(
        &s,
        "ana",
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": "kobana://dunning/debtors/{id}"},
            "argument": {"name": "id", "value": word}
        }),
    );
    let values = c["result"]["completion"]["values"].as_array().unwrap();
    assert!(values.iter().any(|v| v == &first["id"]), "{c}");
    assert!(c["result"]["completion"]["total"].as_u64().unwrap() >= 1);
    let other = rpc(
        &s,
        "carla",
        "completion/complete",
        json!({
            "ref": {"type": "ref/resource", "uri": "kobana://dunning/debtors/{id}"},
            "argument": {"name": "id", "value": first["id"].as_str().unwrap()}
        }),
    );
    assert_eq!(
        other["result"]["completion"]["values"],
        json!([]),
        "never another org's ids"
    );
    let seg = rpc(
        &s,
        "ana",
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "design_ruler"},
            "argument": {"name": "segment", "value": "b2"}
        }),
    );
    assert_eq!(seg["result"]["completion"]["values"], json!(["b2c", "b2b"]));
}

#[test]
fn summary_is_computed_by_the_server() {
    let s = server();
    let r = rpc(
        &s,
        "ana",
        "tools/call",
        json!({"name": "dunning_summary_get", "arguments": {}}),
    );
    let sc = &r["result"]["structuredContent"];
    assert!(sc["aging"]["90+"].is_object(), "{r}");
    assert!(sc["recovery_rate"].as_f64().is_some());
    let bad = rpc(
        &s,
        "ana",
        "tools/call",
        json!({"name": "dunning_summary_get", "arguments": {"from": "2026-12-01", "to": "2026-11-01"}}),
    );
    assert_eq!(bad["result"]["isError"], true);
}

#[test]
fn completions_search_the_whole_store_with_a_true_total() {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let cpf = |i: u32| {
        let digits: Vec<u8> = format!("{:09}", 100_000_000 + i)
            .bytes()
            .map(|b| b - b'0')
            .collect();
        dunning_domain::brazil::document::cpf_from_base(&digits.try_into().unwrap())
    };
    // 150 debtors before the Marias (by name), 130 Marias: past any first page.
    for i in 0..150 {
        bed.ok(
            &ana,
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf(i), "name": format!("Ana Souza {i:03}")}),
        );
    }
    for i in 150..280 {
        bed.ok(
            &ana,
            "dunning_debtors_create",
            json!({"cnpj_cpf": cpf(i), "name": format!("Maria Lima {i:03}")}),
        );
    }
    let tokens = Tokens(vec![("ana", ana.clone())]);
    let s = Server::new(Config::default(), Keys::single(b"k"), bed.domain, tokens).unwrap();
    let complete = |value: &str| {
        let c = rpc(
            &s,
            "ana",
            "completion/complete",
            json!({
                "ref": {"type": "ref/resource", "uri": "kobana://dunning/debtors/{id}"},
                "argument": {"name": "id", "value": value}
            }),
        );
        c["result"]["completion"].clone()
    };
    let maria = complete("maria");
    assert_eq!(maria["total"], 130, "{maria}");
    assert_eq!(maria["hasMore"], true);
    assert_eq!(maria["values"].as_array().unwrap().len(), 100);
    let one = complete("Maria Lima 279");
    assert_eq!(one["total"], 1);
    assert_eq!(one["hasMore"], false);
    // A CPF typed with its punctuation is found by its digits.
    let doc = cpf(270);
    let typed = format!("{}.{}.{}-{}", &doc[..3], &doc[3..6], &doc[6..9], &doc[9..]);
    let by_doc = complete(&typed);
    assert_eq!(by_doc["total"], 1, "{by_doc}");
    // An id prefix.
    let id = by_doc["values"][0].as_str().unwrap().to_owned();
    let by_id = complete(&id[..13]);
    assert!(
        by_id["values"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v == &json!(id)),
        "{by_id}"
    );
}

/// The product's catalogue fits the kept `tools/list` answers (`core/src/tool_lists.rs`):
/// past the masks' requirements every list would be written per request, as it was
/// unnoticed when the limit was ten.
#[test]
fn the_catalogues_tool_lists_are_kept() {
    assert!(server().keeps_tool_lists());
}
