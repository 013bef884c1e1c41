//! Hardening of the domain and the core (`docs/decisions.md`, "Hardening: domain and
//! core"), end to end over real sockets: the
//! built binary on loopback, as a client sees it.

mod common;

use common::{Resp, Srv, V2026};
use serde_json::{Value, json};

/// A token whose `exp` is 2^63-1 is refused (`401`), one within the default
/// 24 h lifetime is served, and `[auth] max_token_lifetime_secs` narrows the maximum.
#[test]
fn token_lifetime_is_bounded() {
    let srv = Srv::start(&[], None);
    let ana = ["--org", "demo", "--person", "ana@demo.example"];
    let forever = srv.mint(&[&ana[..], &["--ttl", &i64::MAX.to_string()]].concat());
    let r = srv.call(&forever, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let day = srv.mint(&[&ana[..], &["--ttl", "86400"]].concat());
    let r = srv.call(&day, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    drop(srv);

    let srv = Srv::start(&[], Some("[auth]\nmax_token_lifetime_secs = 600\n"));
    let hour = srv.mint(&[&ana[..], &["--ttl", "3600"]].concat());
    let r = srv.call(&hour, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    let short = srv.mint(&[&ana[..], &["--ttl", "600"]].concat());
    let r = srv.call(&short, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A `/v1` request with an API token; JSON body when given.
fn rest(srv: &Srv, api: &str, method: &str, path: &str, body: Option<&Value>) -> Resp {
    let auth = format!("Bearer {api}");
    let text = body.map(Value::to_string).unwrap_or_default();
    srv.request(
        method,
        path,
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json"),
        ],
        text.as_bytes(),
    )
}

/// A 2026 `tools/call` from a client that declares form elicitation; `extra` is merged
/// into `params` (`inputResponses`, `requestState`).
fn confirmable(srv: &Srv, tool: &str, args: &Value, extra: &Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "hardening", "version": "1" },
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params });
    let auth = format!("Bearer {}", srv.token);
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V2026),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
        ("Authorization", auth.as_str()),
    ];
    if let Some(id) = args["id"].as_str() {
        headers.push(("Mcp-Param-Target-Id", id));
    }
    let r = srv.request("POST", "/", &headers, body.to_string().as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"].clone()
}

fn answer(action: &str) -> Value {
    json!({ "confirm": { "action": action, "content": { "confirm": action == "accept" } } })
}

/// `n` pending charges of `demo`.
fn pending(srv: &Srv, n: usize) -> Vec<String> {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_charges_list",
        json!({ "status": "pending", "per_page": 100 }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ids: Vec<String> = r.structured()["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["paid_amount"] == 0.0 || c["paid_amount"].is_null())
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .take(n)
        .collect();
    assert_eq!(ids.len(), n);
    ids
}

fn status_of(srv: &Srv, id: &str) -> Value {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_charges_get",
        json!({ "id": id }),
    );
    r.structured()["status"].clone()
}

/// A declined `requestState` re-sent with `accept` never executes.
#[test]
fn a_decline_consumes_the_request_state() {
    let srv = Srv::start(&[], None);
    let id = pending(&srv, 1).remove(0);
    let args = json!({ "id": id });
    let asked = confirmable(&srv, "dunning_charges_cancel", &args, &json!({}));
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].clone();
    let declined = confirmable(
        &srv,
        "dunning_charges_cancel",
        &args,
        &json!({ "inputResponses": answer("decline"), "requestState": state }),
    );
    assert_eq!(
        declined["structuredContent"]["error"]["code"], "CONFIRMATION_DECLINED",
        "{declined}"
    );
    let replayed = confirmable(
        &srv,
        "dunning_charges_cancel",
        &args,
        &json!({ "inputResponses": answer("accept"), "requestState": state }),
    );
    assert_eq!(
        replayed["structuredContent"]["error"]["code"], "CONFIRMATION_DECLINED",
        "{replayed}"
    );
    assert_eq!(status_of(&srv, &id), "pending", "nothing was executed");
}

/// An `idempotency_key` reused with other arguments is refused at once, without
/// asking the user (checks that need no consent come before the question).
#[test]
fn a_reused_idempotency_key_is_refused_before_asking() {
    let srv = Srv::start(&[], None);
    let ids = pending(&srv, 2);
    let first = json!({ "id": ids[0], "idempotency_key": "hardening-k1" });
    let asked = confirmable(&srv, "dunning_charges_cancel", &first, &json!({}));
    let state = asked["requestState"].clone();
    let done = confirmable(
        &srv,
        "dunning_charges_cancel",
        &first,
        &json!({ "inputResponses": answer("accept"), "requestState": state }),
    );
    assert_eq!(done["structuredContent"]["status"], "canceled", "{done}");
    let other = json!({ "id": ids[1], "idempotency_key": "hardening-k1" });
    let refused = confirmable(&srv, "dunning_charges_cancel", &other, &json!({}));
    assert_ne!(refused["resultType"], "input_required", "{refused}");
    assert_eq!(
        refused["structuredContent"]["error"]["code"], "IDEMPOTENCY_CONFLICT",
        "{refused}"
    );
    assert_eq!(status_of(&srv, &ids[1]), "pending");
}

/// NUL, BEL and ESC in a name are refused on both surfaces.
#[test]
fn control_characters_are_refused_on_mcp_and_rest() {
    let srv = Srv::start(&[], None);
    let api = srv.mint_api("demo", "ana@demo.example");
    for bad in [
        "Maria\u{0}Silva",
        "Maria\u{7}Silva",
        "Maria \u{1b}[31mSilva",
    ] {
        let args = json!({ "cnpj_cpf": "529.982.247-25", "name": bad });
        let r = srv.call(&srv.token, V2026, "dunning_debtors_create", args.clone());
        let e = &r.structured()["error"];
        assert_eq!(e["code"], "VALIDATION_ERROR", "{bad:?}: {}", r.text());
        assert_eq!(e["details"][0]["field"], "name", "{e}");
        let r = rest(&srv, &api, "POST", "/v1/debtors", Some(&args));
        assert_eq!(r.status, 422, "{bad:?}: {}", r.text());
        assert_eq!(r.json()["error"]["details"][0]["field"], "name");
    }
}

/// The statement comes a page at a time, with totals over every charge.
#[test]
fn the_statement_is_paginated() {
    let srv = Srv::start(&[], None);
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_debtors_list",
        json!({ "per_page": 100 }),
    );
    let debtors = r.structured()["data"].as_array().unwrap().clone();
    let (id, whole) = debtors
        .iter()
        .find_map(|d| {
            let id = d["id"].as_str().unwrap();
            let s = srv
                .call(
                    &srv.token,
                    V2026,
                    "dunning_debtors_statement",
                    json!({ "id": id }),
                )
                .structured();
            (s["meta"]["total"].as_u64() >= Some(2)).then(|| (id.to_owned(), s))
        })
        .expect("a demo debtor with two charges on the statement");
    let total = whole["meta"]["total"].as_u64().unwrap();
    let page = srv
        .call(
            &srv.token,
            V2026,
            "dunning_debtors_statement",
            json!({ "id": id, "per_page": 1, "page": 2 }),
        )
        .structured();
    assert_eq!(page["charges"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["charges"][0], whole["charges"][1]);
    assert_eq!(page["meta"]["total_pages"], total);
    assert_eq!(page["totals"], whole["totals"]);
}

/// With the HTTP driver, a receiver behind a non-global address is refused
/// before any connection (`address_not_allowed`).
#[test]
fn webhook_receivers_behind_non_global_addresses_are_refused() {
    let srv = Srv::start(&[], Some("[webhooks]\ndriver = \"http\"\n"));
    let api = srv.mint_api("demo", "ana@demo.example");
    for host in [
        "[::127.0.0.1]",
        "[::ffff:0:7f00:1]",
        "[64:ff9b::7f00:1]",
        "[2002:7f00:1::1]",
        "192.0.0.8",
    ] {
        let url = format!("https://{host}:9/hook");
        let r = rest(
            &srv,
            &api,
            "POST",
            "/v1/webhooks",
            // One rare event: the jobs thread's own deliveries stay out of the way.
            Some(&json!({ "url": url, "events": ["charge.written_off"] })),
        );
        assert_eq!(r.status, 201, "{host}: {}", r.text());
        let id = r.json()["id"].as_str().unwrap().to_owned();
        let r = rest(
            &srv,
            &api,
            "POST",
            &format!("/v1/webhooks/{id}/test"),
            Some(&json!({})),
        );
        assert!(r.status < 300, "{host}: {} {}", r.status, r.text());
        let d = r.json();
        assert_ne!(d["status"], "delivered", "{host}: {d}");
        let error = d["error"].as_str().unwrap_or_default();
        assert!(error.starts_with("address_not_allowed"), "{host}: {d}");
    }
}
