//! # dunning-conformance-server: the official conformance suite's fixtures on our core
//!
//! The suite `@modelcontextprotocol/conformance` calls tools, resources and prompts of
//! its own (`test_simple_text`, `test://static-text`, `test_input_required_result_*`...)
//! that only a dedicated server can offer. [`Fixtures`] is that server's domain: a
//! [`Dispatch`] implementing every fixture the suite's server scenarios call, exactly as
//! each scenario's description asks (`conformance list --server`). It is served by the
//! same core, codec and adapter (`dunning-blocking`) as the product, so what the suite
//! finds wrong here is wrong in the core; the domain around it is the suite's, not ours.
//!
//! It is a test binary, not the product: it has no OAuth. Requests must still carry a
//! bearer token ([`FixedToken`], one token given on the command line), because the core
//! has no unauthenticated mode; the suite sends none, so `scripts/peers/run` puts the
//! loopback proxy (`dunning-peer-proxy`) in front, exactly as it does for the product.
//!
//! The multi-round fixtures use the core's generic MRTR ([`Dispatch::call_tool_mrtr`],
//! [`Dispatch::get_prompt_mrtr`]): the core checks `inputResponses`, seals and verifies the
//! `requestState` we hand it, and refuses to send an input request the client did not
//! declare; the fixtures only decide what to ask and when they have enough.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use dunning_core::auth::{AuthError, Authenticate};
use dunning_core::catalog::{
    Annotations, Catalog, PromptArgument, PromptDef, ResourceDef, TemplateDef, ToolDef,
};
use dunning_core::dispatch::{
    Completion, CompletionRef, Contents, Ctx, Dispatch, Output, ResourceError, ResourceRead,
    ToolCall, ToolError, ToolErrorCode,
};
use dunning_core::principal::{Access, Audience, Principal, Scope, ScopeNames};

/// The scope names served (the product's, so the server reads like it).
const SCOPES: ScopeNames = ScopeNames {
    read: "dunning.read",
    write: "dunning.write",
    admin: "dunning.admin",
};
use dunning_core::{InputRequired, Progress, PromptReply, Round, ToolReply, UnixTime};
use serde_json::{Map, Value, json};

/// A 1×1 red PNG.
pub const RED_PIXEL_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A short mono 8 kHz 16-bit WAV (a tenth of a second of a 440 Hz square wave).
pub fn wav() -> Vec<u8> {
    let rate: u32 = 8000;
    let samples: Vec<i16> = (0..rate / 10)
        .map(|i| {
            if (i * 440 * 2 / rate) % 2 == 0 {
                3000
            } else {
                -3000
            }
        })
        .collect();
    let data_len = u32::try_from(samples.len() * 2).unwrap_or(0);
    let mut out = Vec::with_capacity(44 + samples.len() * 2);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&1u16.to_le_bytes()); // mono
    out.extend_from_slice(&rate.to_le_bytes());
    out.extend_from_slice(&(rate * 2).to_le_bytes());
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&data_len.to_le_bytes());
    for s in samples {
        out.extend_from_slice(&s.to_le_bytes());
    }
    out
}

/// The one token this server accepts, for a principal with every scope.
#[derive(Clone, Debug)]
pub struct FixedToken(pub String);

impl Authenticate for FixedToken {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        _now: UnixTime,
    ) -> Result<Principal, AuthError> {
        if token != self.0 {
            return Err(AuthError::Signature);
        }
        Ok(Principal {
            subject: "conformance-suite".into(),
            organization: "conformance".into(),
            scope: Some(Scope::Admin),
            scopes: SCOPES.all().map(str::to_owned).to_vec(),
            permissions: Default::default(),
            // 2100-01-01.
            expires_at: UnixTime::from_secs(4_102_444_800),
            audience,
        })
    }
}

/// The fixture domain (stateless: everything it remembers between rounds travels in the
/// sealed `requestState`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Fixtures;

fn tool(name: &str, description: &str, input_schema: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: name.replace('_', " "),
        description: description.into(),
        input_schema,
        output_schema: None,
        annotations: Annotations {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        access: Access::read(),
        route: None,
    }
}

fn no_args() -> Value {
    json!({ "type": "object", "properties": {}, "additionalProperties": false })
}

/// The schema `json-schema-2020-12` checks is preserved keyword for keyword.
fn schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": {
            "properties": { "contactMethod": { "const": "phone" } },
            "required": ["contactMethod"]
        },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

fn text(t: impl Into<String>) -> Value {
    json!({ "type": "text", "text": t.into() })
}

fn image() -> Value {
    json!({ "type": "image", "data": RED_PIXEL_PNG, "mimeType": "image/png" })
}

fn content(blocks: Vec<Value>) -> ToolReply {
    ToolReply::Content {
        content: blocks,
        structured: None,
        is_error: false,
    }
}

fn elicit(message: &str, field: &str, kind: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {
                "type": "object",
                "properties": { field: { "type": kind } },
                "required": [field]
            }
        }
    })
}

fn sample(question: &str, max_tokens: u32) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": question } }],
            "maxTokens": max_tokens
        }
    })
}

fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

fn ask(requests: Vec<(&str, Value)>, state: Option<&str>) -> ToolReply {
    ToolReply::InputRequired(asking(requests, state))
}

fn asking(requests: Vec<(&str, Value)>, state: Option<&str>) -> InputRequired {
    InputRequired {
        input_requests: requests
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect::<Map<String, Value>>(),
        request_state: state.map(str::to_owned),
    }
}

/// The accepted form content of elicitation `key`, when the user accepted.
fn accepted<'a>(round: &Round<'a>, key: &str) -> Option<&'a Map<String, Value>> {
    let r = round.response(key)?;
    if r.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    r.get("content").and_then(Value::as_object)
}

/// Whether elicitation `key` was answered at all (accept, decline or cancel).
fn answered(round: &Round<'_>, key: &str) -> Option<String> {
    let r = round.response(key)?;
    let action = r.get("action").and_then(Value::as_str)?;
    matches!(action, "accept" | "decline" | "cancel").then(|| action.to_owned())
}

/// The text of a sampling answer (`CreateMessageResult`).
fn sampled(round: &Round<'_>, key: &str) -> Option<String> {
    let r = round.response(key)?;
    match r.get("content")? {
        Value::Object(c) => c.get("text").and_then(Value::as_str).map(str::to_owned),
        Value::Array(blocks) => Some(
            blocks
                .iter()
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The root URIs of a `roots/list` answer.
fn roots(round: &Round<'_>, key: &str) -> Option<Vec<String>> {
    let list = round.response(key)?.get("roots")?.as_array()?;
    Some(
        list.iter()
            .filter_map(|r| r.get("uri").and_then(Value::as_str).map(str::to_owned))
            .collect(),
    )
}

fn field<'a>(form: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    form.get(name).and_then(Value::as_str)
}

impl Fixtures {
    fn run(&self, name: &str, args: &Map<String, Value>, round: &Round<'_>) -> ToolReply {
        match name {
            "test_simple_text" => {
                content(vec![text("This is a simple text response for testing.")])
            }
            "test_image_content" => content(vec![image()]),
            "test_audio_content" => content(vec![json!({
                "type": "audio",
                "data": STANDARD.encode(wav()),
                "mimeType": "audio/wav"
            })]),
            "test_embedded_resource" => content(vec![json!({
                "type": "resource",
                "resource": {
                    "uri": "test://embedded-resource",
                    "mimeType": "text/plain",
                    "text": "This is an embedded resource content."
                }
            })]),
            "test_multiple_content_types" => content(vec![
                text("Multiple content types test:"),
                image(),
                json!({
                    "type": "resource",
                    "resource": {
                        "uri": "test://mixed-content-resource",
                        "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"
                    }
                }),
            ]),
            "test_error_handling" => ToolReply::Content {
                content: vec![text("This tool intentionally returns an error for testing")],
                structured: None,
                is_error: true,
            },
            "test_tool_with_progress" => ToolReply::WithProgress {
                steps: [0.0, 50.0, 100.0]
                    .map(|p| Progress {
                        progress: p,
                        total: Some(100.0),
                        message: Some(format!("{p}/100")),
                    })
                    .to_vec(),
                reply: Box::new(content(vec![text("Progress tool completed: 100/100")])),
            },
            "test_logging_tool" => {
                // No logging capability: a request without `_meta` logLevel gets no log.
                content(vec![text(
                    "Logging tool completed (no log level requested, so no log messages)",
                )])
            }
            "json_schema_2020_12_tool" => content(vec![text(format!(
                "Received arguments: {}",
                Value::Object(args.clone())
            ))]),
            "test_header_param" => content(vec![text(format!(
                "Region: {}",
                args.get("region")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            ))]),
            "test_missing_capability" => {
                // Needs sampling: refused with -32021 when the client did not declare it.
                if !round.declares("sampling") {
                    return ToolReply::MissingCapability(json!({ "sampling": {} }));
                }
                match sampled(round, "summary") {
                    Some(t) => content(vec![text(format!("Sampled: {t}"))]),
                    None => ask(
                        vec![("summary", sample("Summarize the conformance run.", 50))],
                        None,
                    ),
                }
            }
            "test_streaming_elicitation" => {
                if !round.declares("elicitation") {
                    return ToolReply::MissingCapability(json!({ "elicitation": {} }));
                }
                match answered(round, "feedback") {
                    Some(action) => content(vec![text(format!("Elicitation {action}ed"))]),
                    None => ask(
                        vec![("feedback", elicit("Any feedback?", "feedback", "string"))],
                        None,
                    ),
                }
            }
            "test_input_required_result_elicitation" => {
                match accepted(round, "user_name").and_then(|f| field(f, "name")) {
                    Some(name) => content(vec![text(format!("Hello, {name}!"))]),
                    None => match answered(round, "user_name") {
                        Some(action) if action != "accept" => {
                            content(vec![text(format!("No name given (user chose {action})."))])
                        }
                        _ => ask(
                            vec![("user_name", elicit("What is your name?", "name", "string"))],
                            None,
                        ),
                    },
                }
            }
            "test_input_required_result_sampling" => match sampled(round, "capital_question") {
                Some(t) => content(vec![text(format!("Sampling response: {t}"))]),
                None => ask(
                    vec![(
                        "capital_question",
                        sample("What is the capital of France?", 100),
                    )],
                    None,
                ),
            },
            "test_input_required_result_list_roots" => match roots(round, "client_roots") {
                Some(r) => content(vec![text(format!("Client roots: {}", r.join(", ")))]),
                None => ask(vec![("client_roots", list_roots())], None),
            },
            "test_input_required_result_request_state"
            | "test_input_required_result_tampered_state" => {
                let state = "awaiting-confirmation";
                match (round.request_state, answered(round, "confirm")) {
                    (Some(s), Some(action)) if s == state => content(vec![text(format!(
                        "state-ok: requestState verified, user chose {action}"
                    ))]),
                    _ => ask(
                        vec![("confirm", elicit("Please confirm", "ok", "boolean"))],
                        Some(state),
                    ),
                }
            }
            "test_input_required_result_multiple_inputs" => {
                let state = "multiple-inputs";
                let name = accepted(round, "user_name").and_then(|f| field(f, "name"));
                let greeting = sampled(round, "greeting");
                let dirs = roots(round, "client_roots");
                match (round.request_state, name, greeting, dirs) {
                    (Some(s), Some(n), Some(g), Some(r)) if s == state => content(vec![text(
                        format!("Name: {n}; greeting: {g}; roots: {}", r.join(", ")),
                    )]),
                    _ => ask(
                        vec![
                            ("user_name", elicit("What is your name?", "name", "string")),
                            ("greeting", sample("Generate a greeting", 50)),
                            ("client_roots", list_roots()),
                        ],
                        Some(state),
                    ),
                }
            }
            "test_input_required_result_multi_round" => {
                let step1 = || {
                    ask(
                        vec![(
                            "step1",
                            elicit("Step 1: What is your name?", "name", "string"),
                        )],
                        Some("round-1"),
                    )
                };
                match round.request_state {
                    Some("round-1") => {
                        match accepted(round, "step1").and_then(|f| field(f, "name")) {
                            Some(name) => ask(
                                vec![(
                                    "step2",
                                    elicit(
                                        "Step 2: What is your favorite color?",
                                        "color",
                                        "string",
                                    ),
                                )],
                                Some(&format!("round-2:{name}")),
                            ),
                            None => step1(),
                        }
                    }
                    Some(s) if s.starts_with("round-2:") => {
                        let name = &s["round-2:".len()..];
                        match accepted(round, "step2").and_then(|f| field(f, "color")) {
                            Some(color) => {
                                content(vec![text(format!("{name}'s favorite color is {color}."))])
                            }
                            None => ask(
                                vec![(
                                    "step2",
                                    elicit(
                                        "Step 2: What is your favorite color?",
                                        "color",
                                        "string",
                                    ),
                                )],
                                Some(s),
                            ),
                        }
                    }
                    _ => step1(),
                }
            }
            "test_input_required_result_capabilities" => {
                // Ask only for what the client declared.
                let mut wanted: Vec<(&str, Value)> = Vec::new();
                if round.declares("elicitation") {
                    wanted.push(("user_name", elicit("What is your name?", "name", "string")));
                }
                if round.declares("sampling") {
                    wanted.push(("greeting", sample("Generate a greeting", 50)));
                }
                if round.declares("roots") {
                    wanted.push(("client_roots", list_roots()));
                }
                if wanted.is_empty() {
                    return ToolReply::MissingCapability(json!({ "sampling": {} }));
                }
                if wanted.iter().all(|(k, _)| round.response(k).is_some()) {
                    let keys: Vec<&str> = wanted.iter().map(|(k, _)| *k).collect();
                    return content(vec![text(format!("Received: {}", keys.join(", ")))]);
                }
                ask(wanted, None)
            }
            _ => content(vec![text(format!("{name} has no fixture"))]),
        }
    }
}

impl Dispatch for Fixtures {
    fn catalog(&self) -> Catalog {
        let mut tools = vec![
            tool(
                "test_simple_text",
                "Returns simple text content.",
                no_args(),
            ),
            tool(
                "test_image_content",
                "Returns an image (a 1x1 red PNG).",
                no_args(),
            ),
            tool(
                "test_audio_content",
                "Returns audio (a short WAV).",
                no_args(),
            ),
            tool(
                "test_embedded_resource",
                "Returns an embedded text resource.",
                no_args(),
            ),
            tool(
                "test_multiple_content_types",
                "Returns text, an image and an embedded resource.",
                no_args(),
            ),
            tool(
                "test_error_handling",
                "Always returns a tool execution error.",
                no_args(),
            ),
            tool(
                "test_tool_with_progress",
                "Reports progress when given a progress token.",
                no_args(),
            ),
            tool(
                "test_logging_tool",
                "Logs only when the request asks for a log level.",
                no_args(),
            ),
            tool(
                "test_missing_capability",
                "Needs the sampling client capability.",
                no_args(),
            ),
            tool(
                "test_streaming_elicitation",
                "Asks the user a question (elicitation).",
                no_args(),
            ),
            tool(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                schema_2020_12(),
            ),
            tool(
                "test_header_param",
                "Echoes a region that clients mirror in the Mcp-Param-Region header.",
                json!({
                    "type": "object",
                    "properties": {
                        "region": { "type": "string", "description": "A region.", "x-mcp-header": "Region" }
                    },
                    "required": ["region"],
                    "additionalProperties": false
                }),
            ),
        ];
        for (name, what) in [
            (
                "elicitation",
                "Asks for the user's name (elicitation), then greets.",
            ),
            ("sampling", "Asks the client's model a question (sampling)."),
            ("list_roots", "Asks for the client's roots."),
            (
                "request_state",
                "Round-trips an integrity-protected requestState.",
            ),
            (
                "multiple_inputs",
                "Asks for elicitation, sampling and roots at once.",
            ),
            ("multi_round", "Asks two questions in two rounds."),
            ("tampered_state", "Refuses a tampered requestState."),
            ("capabilities", "Asks only for what the client declared."),
        ] {
            tools.push(tool(
                &format!("test_input_required_result_{name}"),
                what,
                no_args(),
            ));
        }
        let prompt = |name: &str, description: &str, args: &[(&str, &str)]| PromptDef {
            name: name.into(),
            title: name.replace('_', " "),
            description: description.into(),
            arguments: args
                .iter()
                .map(|(n, d)| PromptArgument {
                    name: (*n).into(),
                    description: (*d).into(),
                    required: true,
                })
                .collect(),
            access: Access::read(),
        };
        Catalog {
            scopes: SCOPES,
            tools,
            resources: vec![
                ResourceDef {
                    uri: "test://static-text".into(),
                    name: "static-text".into(),
                    title: "Static text".into(),
                    description: "A static text resource.".into(),
                    mime_type: "text/plain".into(),
                    access: Access::read(),
                },
                ResourceDef {
                    uri: "test://static-binary".into(),
                    name: "static-binary".into(),
                    title: "Static binary".into(),
                    description: "A static binary resource (a PNG).".into(),
                    mime_type: "image/png".into(),
                    access: Access::read(),
                },
            ],
            templates: vec![TemplateDef {
                uri_template: "test://template/{id}/data".into(),
                name: "template-data".into(),
                title: "Template data".into(),
                description: "Data for an id.".into(),
                mime_type: "application/json".into(),
                access: Access::read(),
            }],
            prompts: vec![
                prompt(
                    "test_simple_prompt",
                    "A simple prompt without arguments.",
                    &[],
                ),
                prompt(
                    "test_prompt_with_arguments",
                    "A prompt with two arguments.",
                    &[
                        ("arg1", "First test argument"),
                        ("arg2", "Second test argument"),
                    ],
                ),
                prompt(
                    "test_prompt_with_embedded_resource",
                    "A prompt embedding a resource.",
                    &[("resourceUri", "URI of the resource to embed")],
                ),
                prompt("test_prompt_with_image", "A prompt with an image.", &[]),
                prompt(
                    "test_input_required_result_prompt",
                    "A prompt that first asks the user for context (elicitation).",
                    &[],
                ),
            ],
        }
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        // Only reached through surfaces without rounds (no fixture has a REST route).
        let caps = Map::new();
        let round = Round::empty(&caps, dunning_core::Version::V2025_06_18);
        match self.run(&call.tool.name, call.args, &round) {
            ToolReply::Output(o) => Ok(o),
            ToolReply::Content { content, .. } => Ok(Output::ok(json!({ "content": content }))),
            _ => Err(ToolError::new(
                ToolErrorCode::Validation,
                "this fixture needs a 2026-07-28 client",
            )),
        }
    }

    fn call_tool_mrtr(
        &self,
        call: &ToolCall<'_>,
        round: &Round<'_>,
    ) -> Result<ToolReply, ToolError> {
        Ok(self.run(&call.tool.name, call.args, round))
    }

    fn preflight(&self, _call: &ToolCall<'_>) -> Result<String, ToolError> {
        Ok(String::new())
    }

    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        match (read.uri, read.template) {
            ("test://static-text", None) => Ok(vec![Contents::Text {
                mime_type: "text/plain".into(),
                text: "This is the content of the static text resource.".into(),
            }]),
            ("test://static-binary", None) => Ok(vec![Contents::Blob {
                mime_type: "image/png".into(),
                bytes: STANDARD
                    .decode(RED_PIXEL_PNG)
                    .map_err(|e| ResourceError::Internal(e.to_string()))?,
            }]),
            (_, Some(_)) => {
                let id = read.vars.get("id").ok_or(ResourceError::NotFound)?;
                Ok(vec![Contents::Text {
                    mime_type: "application/json".into(),
                    text: json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") })
                        .to_string(),
                }])
            }
            _ => Err(ResourceError::NotFound),
        }
    }

    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        let user = |content: Value| json!({ "role": "user", "content": content });
        let arg = |k: &str| args.get(k).cloned().unwrap_or_default();
        let messages = match name {
            "test_simple_prompt" => vec![user(text("This is a simple prompt for testing."))],
            "test_prompt_with_arguments" => vec![user(text(format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                arg("arg1"),
                arg("arg2")
            )))],
            "test_prompt_with_embedded_resource" => vec![
                user(json!({
                    "type": "resource",
                    "resource": {
                        "uri": arg("resourceUri"),
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing."
                    }
                })),
                user(text("Please process the embedded resource above.")),
            ],
            "test_prompt_with_image" => {
                vec![user(image()), user(text("Please analyze the image above."))]
            }
            "test_input_required_result_prompt" => {
                return Err("this prompt needs a 2026-07-28 client".into());
            }
            other => return Err(format!("Unknown prompt: {other}")),
        };
        Ok((None, messages))
    }

    fn get_prompt_mrtr(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
        round: &Round<'_>,
    ) -> Result<PromptReply, String> {
        if name != "test_input_required_result_prompt" {
            return self
                .get_prompt(name, args, ctx)
                .map(|(description, messages)| PromptReply::Messages {
                    description,
                    messages,
                });
        }
        match accepted(round, "user_context").and_then(|f| field(f, "context")) {
            Some(context) => Ok(PromptReply::Messages {
                description: Some("A prompt built from the user's context.".into()),
                messages: vec![json!({
                    "role": "user",
                    "content": text(format!("Use this context: {context}"))
                })],
            }),
            None => Ok(PromptReply::InputRequired(asking(
                vec![(
                    "user_context",
                    elicit("What context should the prompt use?", "context", "string"),
                )],
                None,
            ))),
        }
    }

    fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        _context: &BTreeMap<String, String>,
        _ctx: Ctx<'_>,
    ) -> Completion {
        let pool: &[&str] = match (reference, argument) {
            (CompletionRef::Prompt(_), _) => &["paris", "park", "party", "hello", "world"],
            (CompletionRef::Resource(_), "id") => &["1", "12", "123", "42"],
            _ => &[],
        };
        pool.iter()
            .filter(|v| v.starts_with(value))
            .map(|v| (*v).to_owned())
            .collect::<Vec<_>>()
            .into()
    }
}
