//! The two rounds of a confirmed destructive call in era 2026 (`docs/decisions.md`,
//! "Confirmation"), and the
//! reads that check what it did: shared by the confirmation suite and the cluster suite.

use serde_json::{Value, json};

use super::{Resp, Srv, V2026, http};

/// The user's "yes".
pub fn accept() -> Value {
    json!({ "confirm": { "action": "accept", "content": { "confirm": true } } })
}

/// A 2026 `tools/call` from a client that declares form elicitation. `extra` is merged
/// into `params` (`inputResponses`, `requestState`); `target_id` is the mirrored
/// `Mcp-Param-Target-Id` (the `id` argument of a destructive tool).
pub fn call(
    addr: &str,
    token: &str,
    tool: &str,
    args: &Value,
    extra: &Value,
    target_id: Option<&str>,
) -> Resp {
    let mut params = json!({
        "name": tool,
        "arguments": args,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V2026,
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
            "io.modelcontextprotocol/clientInfo": { "name": "confirm-replay", "version": "1" },
        },
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({ "jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": params });
    let auth = format!("Bearer {token}");
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", V2026),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
        ("Authorization", auth.as_str()),
    ];
    if let Some(id) = target_id {
        headers.push(("Mcp-Param-Target-Id", id));
    }
    http(addr, "POST", "/", &headers, body.to_string().as_bytes())
}

/// The first round: asserts an `input_required` result and returns its state and message.
pub fn ask(srv: &Srv, token: &str, tool: &str, args: &Value) -> (String, String) {
    let id = args["id"].as_str();
    let r = call(&srv.addr, token, tool, args, &json!({}), id);
    assert_eq!(r.status, 200, "{}", r.text());
    let result = r.json()["result"].clone();
    assert_eq!(result["resultType"], "input_required", "{result}");
    let request = &result["inputRequests"]["confirm"];
    assert_eq!(request["method"], "elicitation/create", "{result}");
    assert_eq!(request["params"]["mode"], "form", "{result}");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["confirm"]["type"], "boolean",
        "{result}"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert!(state.starts_with("v1."), "{state}");
    let message = request["params"]["message"].as_str().unwrap().to_owned();
    (state, message)
}

/// The second round, accepted.
pub fn confirm(srv: &Srv, token: &str, tool: &str, args: &Value, state: &str) -> Resp {
    let extra = json!({ "inputResponses": accept(), "requestState": state });
    call(&srv.addr, token, tool, args, &extra, args["id"].as_str())
}

/// The `result` of a successful (non-error, final) tool result.
pub fn success(r: &Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let result = v["result"].clone();
    assert!(
        result.is_object() && result["isError"] != true && result["resultType"] == "complete",
        "{v}"
    );
    result
}

/// Asserts a JSON-RPC error `code` and that its message contains `says`.
pub fn refused(r: &Resp, code: i64, says: &str) {
    let v = r.json();
    assert_eq!(v["error"]["code"], code, "{} {v}", r.status);
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} should say {says:?}");
    assert!(v.get("result").is_none(), "{v}");
}

/// A charge as `dunning_charges_get` shows it.
pub fn charge(srv: &Srv, id: &str) -> Value {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_charges_get",
        json!({ "id": id }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let c = r.structured();
    assert_eq!(c["id"], id, "{c}");
    c
}

/// Open (pending) charges of `demo` without payments.
pub fn pending_charges(srv: &Srv, n: usize) -> Vec<String> {
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
        .filter(|c| c["paid_amount"].as_f64().unwrap_or(0.0) == 0.0)
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .take(n)
        .collect();
    assert_eq!(ids.len(), n, "{}", r.text());
    ids
}

/// The codes of the audit events about `id`.
pub fn event_codes(srv: &Srv, id: &str) -> Vec<String> {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_events_list",
        json!({ "resource_id": id, "per_page": 100 }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.structured();
    assert!(v["meta"]["total_pages"].as_u64().unwrap() <= 1, "{v}");
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["code"].as_str().unwrap().to_owned())
        .collect()
}

pub fn count(codes: &[String], code: &str) -> usize {
    codes.iter().filter(|c| *c == code).count()
}

pub fn cents(v: &Value) -> i64 {
    (v.as_f64().unwrap_or(0.0) * 100.0).round() as i64
}
