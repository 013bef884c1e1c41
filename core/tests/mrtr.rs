//! Generic multi-round-trip results (`crate::mrtr`) end to end through `Server::handle`:
//! a domain that asks for input, keeps state across rounds, needs capabilities, returns
//! its own content blocks and reports progress. The conformance suite's MRTR scenarios
//! run the same paths against `tests/peers` in CI; these pin them without a network.

mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use common::{envelope, post};
use dunning_core::catalog::{Annotations, Catalog, PromptDef, ToolDef};
use dunning_core::dispatch::{Ctx, Dispatch, Output, ToolCall, ToolError};
use dunning_core::fuzzing::{RawRequest, TestAuth, env};
use dunning_core::{
    Access, Config, InputRequired, Keys, Progress, PromptReply, Response, Round, Server, ToolReply,
};
use serde_json::{Map, Value, json};

/// Tools: `ask` (elicits a name over two rounds, with state), `sample` (asks for sampling),
/// `roots` (needs the roots capability), `blocks` (own content), `progress`, `plain`.
/// Prompt `p` elicits a topic first.
struct Asker;

fn tool(name: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: name.into(),
        description: name.into(),
        input_schema: json!({ "type": "object", "properties": { "n": { "type": "integer" } } }),
        output_schema: None,
        annotations: Annotations {
            read_only: true,
            ..Annotations::default()
        },
        access: Access::read(),
        route: None,
    }
}

fn elicit(key: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        key.into(),
        json!({ "method": "elicitation/create", "params": { "message": "Name?",
            "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } } } } }),
    );
    m
}

fn text(t: &str) -> ToolReply {
    ToolReply::Content {
        content: vec![json!({ "type": "text", "text": t })],
        structured: None,
        is_error: false,
    }
}

impl Dispatch for Asker {
    fn catalog(&self) -> Catalog {
        Catalog {
            tools: ["ask", "sample", "roots", "blocks", "progress", "plain"]
                .map(tool)
                .to_vec(),
            prompts: vec![PromptDef {
                name: "p".into(),
                title: "p".into(),
                description: "p".into(),
                arguments: vec![],
                access: Access::read(),
            }],
            ..Catalog::default()
        }
    }

    fn call_tool(&self, _call: &ToolCall<'_>) -> Result<Output, ToolError> {
        Ok(Output::ok(json!({ "plain": true })))
    }

    fn call_tool_mrtr(
        &self,
        call: &ToolCall<'_>,
        round: &Round<'_>,
    ) -> Result<ToolReply, ToolError> {
        Ok(match call.tool.name.as_str() {
            "ask" => {
                let name = round
                    .response("who")
                    .and_then(|r| r.get("content"))
                    .and_then(|c| c.get("name"))
                    .and_then(Value::as_str);
                match (round.request_state, name) {
                    (Some("asked"), Some(n)) => text(&format!("Hello, {n}!")),
                    _ => ToolReply::InputRequired(InputRequired {
                        input_requests: elicit("who"),
                        request_state: Some("asked".into()),
                    }),
                }
            }
            "sample" => {
                let mut m = Map::new();
                m.insert(
                    "s".into(),
                    json!({ "method": "sampling/createMessage", "params": { "messages": [], "maxTokens": 5 } }),
                );
                ToolReply::InputRequired(InputRequired {
                    input_requests: m,
                    request_state: None,
                })
            }
            "roots" => ToolReply::MissingCapability(json!({ "roots": {} })),
            "blocks" => ToolReply::Content {
                content: vec![json!({ "type": "image", "data": "AA==", "mimeType": "image/png" })],
                structured: Some(json!({ "n": 1 })),
                is_error: true,
            },
            "progress" => ToolReply::WithProgress {
                steps: vec![
                    Progress {
                        progress: 1.0,
                        total: Some(2.0),
                        message: None,
                    },
                    Progress {
                        progress: 2.0,
                        total: Some(2.0),
                        message: Some("done".into()),
                    },
                ],
                reply: Box::new(text("finished")),
            },
            _ => return self.call_tool(call).map(ToolReply::Output),
        })
    }

    fn preflight(&self, _call: &ToolCall<'_>) -> Result<String, ToolError> {
        Ok(String::new())
    }

    fn get_prompt(
        &self,
        _name: &str,
        _args: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        Err("needs a round".into())
    }

    fn get_prompt_mrtr(
        &self,
        _name: &str,
        _args: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
        round: &Round<'_>,
    ) -> Result<PromptReply, String> {
        Ok(match round.response("who") {
            Some(_) => PromptReply::Messages {
                description: None,
                messages: vec![
                    json!({ "role": "user", "content": { "type": "text", "text": "ok" } }),
                ],
            },
            None => PromptReply::InputRequired(InputRequired {
                input_requests: elicit("who"),
                request_state: None,
            }),
        })
    }
}

fn server() -> &'static Server<Asker> {
    static S: OnceLock<Server<Asker>> = OnceLock::new();
    S.get_or_init(|| {
        Server::new(
            Config::default(),
            Keys::single(b"mrtr-test-key"),
            Asker,
            TestAuth,
        )
        .expect("valid catalog")
    })
}

fn send(req: &RawRequest) -> Response {
    req.with(|r| server().handle(r, &env()))
}

fn json_body(resp: &Response) -> Value {
    serde_json::from_slice(&resp.body).unwrap_or(Value::Null)
}

/// An era-2026 call with the given capabilities and extra params.
fn call(method: &str, name: &str, caps: Value, extra: Value, accept: &str) -> RawRequest {
    let mut params = json!({ "name": name, "arguments": {} });
    if method == "prompts/get" {
        params = json!({ "name": name });
    }
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        p.extend(e);
    }
    let mut meta = envelope(caps);
    if let Some(m) = params.get("_meta").and_then(Value::as_object) {
        meta.as_object_mut().unwrap().extend(m.clone());
    }
    params["_meta"] = meta;
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    post(
        &body,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", method),
            ("Mcp-Name", name),
            ("Accept", accept),
        ],
    )
}

fn legacy_call(name: &str, meta: Value) -> RawRequest {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": name, "arguments": {}, "_meta": meta } });
    post(
        &body,
        &[
            ("MCP-Protocol-Version", "2025-06-18"),
            ("Accept", "application/json, text/event-stream"),
        ],
    )
}

const BOTH: &str = "application/json, text/event-stream";

#[test]
fn input_required_then_complete_with_sealed_state() {
    let caps = json!({ "elicitation": {} });
    let r1 = send(&call("tools/call", "ask", caps.clone(), json!({}), BOTH));
    assert_eq!(r1.status, 200);
    let b1 = json_body(&r1);
    let result = &b1["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["who"]["method"],
        "elicitation/create"
    );
    assert!(
        result.get("ttlMs").is_none(),
        "input_required is never cacheable"
    );
    let state = result["requestState"].as_str().expect("a sealed state");
    assert!(
        state.starts_with("s1."),
        "sealed, not the domain's plain text"
    );
    assert!(!state.contains("asked"));

    let answer = json!({ "who": { "action": "accept", "content": { "name": "Ana" } } });
    let r2 = send(&call(
        "tools/call",
        "ask",
        caps.clone(),
        json!({ "inputResponses": answer, "requestState": state }),
        BOTH,
    ));
    let b2 = json_body(&r2);
    assert_eq!(b2["result"]["resultType"], "complete");
    assert_eq!(b2["result"]["content"][0]["text"], "Hello, Ana!");

    // Tampered, or issued for other arguments: a JSON-RPC error, the domain never sees it.
    for (bad, args) in [
        (format!("{state}x"), json!({})),
        (state.replacen("s1.", "v1.", 1), json!({})),
        (state.to_owned(), json!({ "n": 2 })),
    ] {
        let r = send(&call(
            "tools/call",
            "ask",
            caps.clone(),
            json!({ "inputResponses": answer, "requestState": bad, "arguments": args }),
            BOTH,
        ));
        assert_eq!(json_body(&r)["error"]["code"], -32602, "{}", json_body(&r));
    }
    // Malformed inputResponses: -32602.
    let r = send(&call(
        "tools/call",
        "ask",
        caps,
        json!({ "inputResponses": { "who": 12345 } }),
        BOTH,
    ));
    assert_eq!(json_body(&r)["error"]["code"], -32602);
}

#[test]
fn undeclared_capabilities_are_never_asked_for() {
    // Sampling asked of a client that declared only elicitation: -32021, HTTP 400.
    let r = send(&call(
        "tools/call",
        "sample",
        json!({ "elicitation": {} }),
        json!({}),
        BOTH,
    ));
    assert_eq!(r.status, 400);
    let b = json_body(&r);
    assert_eq!(b["error"]["code"], -32021);
    assert_eq!(
        b["error"]["data"]["requiredCapabilities"],
        json!({ "sampling": {} })
    );
    // Declared: asked.
    let r = send(&call(
        "tools/call",
        "sample",
        json!({ "sampling": {} }),
        json!({}),
        BOTH,
    ));
    assert_eq!(json_body(&r)["result"]["resultType"], "input_required");
    // The domain's own verdict.
    let r = send(&call("tools/call", "roots", json!({}), json!({}), BOTH));
    assert_eq!(r.status, 400);
    assert_eq!(
        json_body(&r)["error"]["data"]["requiredCapabilities"],
        json!({ "roots": {} })
    );
}

#[test]
fn era_2025_gets_no_rounds() {
    let r = send(&legacy_call("ask", json!({})));
    let b = json_body(&r);
    assert_eq!(b["result"]["isError"], true, "{b}");
    assert!(b["result"].get("resultType").is_none());
    assert!(b["result"].get("requestState").is_none());
    let r = send(&legacy_call("roots", json!({})));
    assert_eq!(json_body(&r)["result"]["isError"], true);
}

#[test]
fn own_content_blocks() {
    let r = send(&call("tools/call", "blocks", json!({}), json!({}), BOTH));
    let b = json_body(&r);
    assert_eq!(b["result"]["content"][0]["type"], "image");
    assert_eq!(b["result"]["structuredContent"], json!({ "n": 1 }));
    assert_eq!(b["result"]["isError"], true);
    let plain = json_body(&send(&call(
        "tools/call",
        "plain",
        json!({}),
        json!({}),
        BOTH,
    )));
    assert_eq!(
        plain["result"]["structuredContent"],
        json!({ "plain": true })
    );
}

#[test]
fn progress_is_an_event_stream_only_when_asked_for_and_accepted() {
    let with_token = json!({ "_meta": { "progressToken": "tok-1" } });
    let r = send(&call(
        "tools/call",
        "progress",
        json!({}),
        with_token.clone(),
        BOTH,
    ));
    assert_eq!(
        r.header("content-type").map(|v| v.to_str().unwrap()),
        Some("text/event-stream")
    );
    let text = String::from_utf8(r.body.clone()).unwrap();
    let events: Vec<Value> = text
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("event: message\ndata: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(events.len(), 3, "{text}");
    assert_eq!(events[0]["method"], "notifications/progress");
    assert_eq!(events[0]["params"]["progressToken"], "tok-1");
    assert_eq!(events[0]["params"]["progress"], 1);
    assert_eq!(events[1]["params"]["message"], "done");
    assert_eq!(events[2]["id"], 1);
    assert_eq!(events[2]["result"]["resultType"], "complete");
    assert_eq!(events[2]["result"]["content"][0]["text"], "finished");

    // No token, or a client that only accepts JSON: the plain result.
    for (extra, accept) in [(json!({}), BOTH), (with_token, "application/json")] {
        let r = send(&call("tools/call", "progress", json!({}), extra, accept));
        assert_eq!(
            r.header("content-type").map(|v| v.to_str().unwrap()),
            Some("application/json")
        );
        assert_eq!(json_body(&r)["result"]["content"][0]["text"], "finished");
    }
    // Era 2025 too.
    let r = send(&legacy_call("progress", json!({ "progressToken": 9 })));
    assert_eq!(
        r.header("content-type").map(|v| v.to_str().unwrap()),
        Some("text/event-stream")
    );
}

#[test]
fn prompts_take_rounds_other_methods_never() {
    let caps = json!({ "elicitation": {} });
    let r = send(&call("prompts/get", "p", caps.clone(), json!({}), BOTH));
    assert_eq!(json_body(&r)["result"]["resultType"], "input_required");
    let r = send(&call(
        "prompts/get",
        "p",
        caps.clone(),
        json!({ "inputResponses": { "who": { "action": "accept", "content": {} } } }),
        BOTH,
    ));
    let b = json_body(&r);
    assert_eq!(b["result"]["resultType"], "complete");
    assert_eq!(b["result"]["messages"][0]["content"]["text"], "ok");
    // Not declared: -32021.
    let r = send(&call("prompts/get", "p", json!({}), json!({}), BOTH));
    assert_eq!(json_body(&r)["error"]["code"], -32021);
}
