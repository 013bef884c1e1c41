//! `tools/call`, including the confirmation of destructive tools.
//!
//! Order for one call: name → scope (`403` step-up) → arguments object → permission
//! (`FORBIDDEN`) → schema (`VALIDATION_ERROR`) → for destructive tools, confirmation →
//! the domain. Confirmation never trusts `inputResponses` without a `requestState` that
//! opens under our key and binds this caller, this tool and these exact arguments.
//!
//! A non-destructive tool runs through [`Dispatch::call_tool_mrtr`] (by default the same as
//! [`Dispatch::call_tool`]): it may return its own content blocks, progress steps, or, in
//! era 2026, ask for input over several rounds; [`crate::mrtr`] says what the core checks.

use serde_json::{Map, Value, json};

use crate::body::Body;
use crate::confirm::{self, Claims};
use crate::dispatch::{Dispatch, ToolCall, ToolError, ToolErrorCode};
use crate::era::Version;
use crate::error::ProtocolError;
use crate::mrtr::{self, InputRequired, Round, ToolReply};
use crate::registry::Tool;
use crate::reply::Reply;
use crate::response::RequestLog;
use crate::server::{Rpc, Server};
use crate::tool_result::ToolResult;

/// Key of the one input request a confirmation asks.
pub const CONFIRM_KEY: &str = "confirm";

fn invalid(message: impl Into<String>) -> Reply {
    Reply::Error(ProtocolError::InvalidParams {
        message: message.into(),
        data: None,
    })
}

/// The checked MRTR fields of one request.
pub(crate) struct RoundInput<'p> {
    /// `inputResponses`, an object of objects.
    pub(crate) responses: Option<&'p Map<String, Value>>,
    /// The domain's state, opened and bound.
    pub(crate) state: Option<String>,
}

/// The user's answer found in `inputResponses`.
enum Answer {
    Accept,
    Decline,
}

impl<D: Dispatch> Server<D> {
    pub(crate) fn tools_call(&self, rpc: &Rpc<'_>, log: &mut RequestLog) -> Reply {
        let empty = Map::new();
        let params = rpc.params().unwrap_or(&empty);
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return invalid("params.name must be a string");
        };
        log.tool = Some(name.to_owned());
        let Some(tool) = self.registry.tool(name) else {
            return invalid(format!("Unknown tool: {name}"));
        };
        if let Some(scope) = tool.missing_scope(rpc.principal, &self.registry.scopes) {
            return Reply::Error(ProtocolError::InsufficientScope { scope });
        }
        // The arguments as a map (for the dispatcher) and as the value it sits in (for
        // schema validation), without copying them.
        let no_args = Value::Object(Map::new());
        let (args_value, args) = match params.get("arguments") {
            None | Some(Value::Null) => (&no_args, &empty),
            Some(v @ Value::Object(a)) => (v, a),
            Some(_) => return invalid("params.arguments must be an object"),
        };
        if let Err(e) = tool.admit(rpc.principal, args_value) {
            return self.tool_error(rpc, e, log);
        }
        let call = ToolCall {
            tool: &tool.def,
            args,
            ctx: self.ctx(rpc),
            confirmation_key: None,
        };
        if tool.def.annotations.destructive {
            return self.confirmed(rpc, tool, call, params, log);
        }
        self.execute_mrtr(rpc, &call, params, log)
    }

    /// A non-destructive call through [`Dispatch::call_tool_mrtr`]: the round is checked
    /// (era 2026), the reply rendered, input requests gated and state sealed (see
    /// [`crate::mrtr`]).
    fn execute_mrtr(
        &self,
        rpc: &Rpc<'_>,
        call: &ToolCall<'_>,
        params: &Map<String, Value>,
        log: &mut RequestLog,
    ) -> Reply {
        let binding = mrtr::Binding {
            method: "tools/call",
            name: &call.tool.name,
            args: call.args,
            principal: rpc.principal,
        };
        let state = match self.round_input(rpc, params, &binding) {
            Ok(s) => s,
            Err(e) => return Reply::Error(e),
        };
        let token = progress_token(params);
        let round = Round {
            input_responses: state.responses,
            request_state: state.state.as_deref(),
            client_capabilities: &rpc.detected.client_capabilities,
            version: rpc.version,
            progress_token: token,
        };
        match self.dispatch.call_tool_mrtr(call, &round) {
            Ok(reply) => self.render_reply(rpc, call, reply, &binding, token),
            Err(e) => self.tool_error(rpc, e, log),
        }
    }

    /// Renders what [`Dispatch::call_tool_mrtr`] returned.
    fn render_reply(
        &self,
        rpc: &Rpc<'_>,
        call: &ToolCall<'_>,
        reply: ToolReply,
        binding: &mrtr::Binding<'_>,
        token: Option<&Value>,
    ) -> Reply {
        match reply {
            ToolReply::Output(out) => self.tool_result(rpc, out.into_tool_body(), false),
            ToolReply::Content {
                content,
                structured,
                is_error,
            } => {
                let mut result = json!({ "content": content });
                if let Some(v) = structured
                    && rpc.version != Version::V2025_03_26
                {
                    result["structuredContent"] = v;
                }
                if is_error {
                    result["isError"] = Value::Bool(true);
                }
                Reply::Result(result)
            }
            ToolReply::WithProgress { steps, reply } => {
                let inner = self.render_reply(rpc, call, *reply, binding, token);
                // Progress goes only to a caller that asked for it, before a final result.
                let Some(token) = token.filter(|_| !steps.is_empty()) else {
                    return inner;
                };
                match inner.into_result() {
                    Ok(result) => Reply::Stream {
                        notifications: steps.iter().map(|s| s.notification(token)).collect(),
                        result,
                    },
                    Err(other) => other,
                }
            }
            ToolReply::InputRequired(ask) if rpc.modern() => self.input_required(rpc, ask, binding),
            ToolReply::MissingCapability(required) if rpc.modern() => {
                Reply::Error(ProtocolError::MissingClientCapability {
                    required: Box::new(required),
                })
            }
            ToolReply::InputRequired(_) | ToolReply::MissingCapability(_) => {
                // Era 2025: no way to ask the client; say so as a tool error.
                let text = format!(
                    "{} needs input from the user or the client (elicitation, sampling or roots), \
                     which only a client speaking MCP 2026-07-28 can provide; nothing was done.",
                    call.tool.name
                );
                Reply::Result(json!({
                    "content": [{ "type": "text", "text": text }],
                    "isError": true,
                }))
            }
        }
    }

    /// Reads and checks the MRTR fields of a request (era 2026; nothing in era 2025):
    /// `inputResponses` well-formed, `requestState` opened and bound to this call.
    pub(crate) fn round_input<'p>(
        &self,
        rpc: &Rpc<'_>,
        params: &'p Map<String, Value>,
        binding: &mrtr::Binding<'_>,
    ) -> Result<RoundInput<'p>, ProtocolError> {
        if !rpc.modern() {
            return Ok(RoundInput {
                responses: None,
                state: None,
            });
        }
        let responses = mrtr::input_responses(params.get("inputResponses")).map_err(|why| {
            ProtocolError::InvalidParams {
                message: format!("Invalid inputResponses: {why}"),
                data: None,
            }
        })?;
        let state = match params.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(
                mrtr::open(&self.keys, s, binding, rpc.env.now.as_millis()).map_err(|why| {
                    ProtocolError::InvalidParams {
                        message: format!("Invalid requestState: {why}"),
                        data: None,
                    }
                })?,
            ),
            Some(_) => {
                return Err(ProtocolError::InvalidParams {
                    message: "requestState must be a string".into(),
                    data: None,
                });
            }
        };
        Ok(RoundInput { responses, state })
    }

    /// An `input_required` result: requests gated by the declared capabilities, the
    /// domain's state sealed to this call.
    pub(crate) fn input_required(
        &self,
        rpc: &Rpc<'_>,
        ask: InputRequired,
        binding: &mrtr::Binding<'_>,
    ) -> Reply {
        match mrtr::check_requests(&ask.input_requests, &rpc.detected.client_capabilities) {
            Ok(()) => {}
            Err(mrtr::Undeliverable::Missing(required)) => {
                return Reply::Error(ProtocolError::MissingClientCapability {
                    required: Box::new(required),
                });
            }
            Err(mrtr::Undeliverable::Malformed(why)) => {
                return Reply::Error(ProtocolError::Internal(
                    format!("the dispatcher asked for a malformed input request: {why}").into(),
                ));
            }
        }
        if ask.input_requests.is_empty() && ask.request_state.is_none() {
            return Reply::Error(ProtocolError::Internal(
                "the dispatcher asked for input with neither inputRequests nor requestState".into(),
            ));
        }
        let mut result = Map::new();
        result.insert("resultType".into(), Value::from("input_required"));
        if !ask.input_requests.is_empty() {
            result.insert("inputRequests".into(), Value::Object(ask.input_requests));
        }
        if let Some(state) = ask.request_state {
            let expires_at = rpc
                .env
                .now
                .as_millis()
                .saturating_add(self.config.confirmation_ttl_ms);
            let Some(sealed) = mrtr::seal(&self.keys, binding, &state, expires_at) else {
                return Reply::Error(ProtocolError::Internal(
                    "could not seal requestState (no confirmation key?)".into(),
                ));
            };
            result.insert("requestState".into(), Value::from(sealed));
        }
        Reply::Result(Value::Object(result))
    }

    fn execute(&self, rpc: &Rpc<'_>, call: &ToolCall<'_>, log: &mut RequestLog) -> Reply {
        match self.dispatch.call_tool(call) {
            Ok(out) => self.tool_result(rpc, out.into_tool_body(), false),
            Err(e) => self.tool_error(rpc, e, log),
        }
    }

    /// Confirmation mechanics (docs/decisions.md, Confirmation) for one destructive call.
    fn confirmed(
        &self,
        rpc: &Rpc<'_>,
        tool: &Tool,
        call: ToolCall<'_>,
        params: &Map<String, Value>,
        log: &mut RequestLog,
    ) -> Reply {
        let name = tool.def.name.as_str();
        if !rpc.modern() {
            // Era 2025 has no per-request capabilities and no way to ask: refuse, after
            // the checks that do not depend on consent.
            if let Err(e) = self.dispatch.preflight(&call) {
                return self.tool_error(rpc, e, log);
            }
            let e = ToolError::new(
                ToolErrorCode::ConfirmationRequired,
                format!(
                    "{name} changes data and needs the user's confirmation; nothing was executed. \
                     The user must confirm through a client that speaks MCP 2026-07-28 with elicitation."
                ),
            );
            return self.tool_error(rpc, e, log);
        }
        if !can_elicit_form(rpc.detected.client_capabilities.get("elicitation")) {
            return Reply::Error(ProtocolError::MissingCapability {
                tool: name.to_owned(),
                required: Box::new(json!({ "elicitation": {} })),
            });
        }
        // A malformed `inputResponses` is a protocol error whatever the state says; a
        // well-formed one without a valid state still never counts as consent.
        let answer = match answer(params.get("inputResponses")) {
            Ok(a) => a,
            Err(why) => return invalid(format!("Invalid inputResponses: {why}")),
        };
        let claims = match params.get("requestState") {
            None | Some(Value::Null) => return self.ask(rpc, &call, log),
            Some(Value::String(s)) => match confirm::open(&self.keys, s) {
                Ok(c) => c,
                Err(e) => return invalid(format!("Invalid requestState: {e}")),
            },
            Some(_) => return invalid("requestState must be a string"),
        };
        if let Err(why) = self.binds(&claims, rpc, name, call.args) {
            return invalid(format!("Invalid requestState: {why}"));
        }
        match answer {
            None => self.ask(rpc, &call, log),
            Some(Answer::Decline) => {
                // The state is consumed by the refusal: the dispatcher records the nonce
                // first, so the same state re-sent with `accept` is refused too.
                let declined = ToolCall {
                    confirmation_key: Some(&claims.nonce),
                    ..call
                };
                if let Err(e) = self.dispatch.decline(&declined) {
                    return self.tool_error(rpc, e, log);
                }
                let e = ToolError::new(
                    ToolErrorCode::ConfirmationDeclined,
                    format!("The user did not confirm {name}; nothing was executed."),
                );
                self.tool_error(rpc, e, log)
            }
            Some(Answer::Accept) => {
                let call = ToolCall {
                    confirmation_key: Some(&claims.nonce),
                    ..call
                };
                self.execute(rpc, &call, log)
            }
        }
    }

    /// Whether an opened state binds this caller, tool and arguments, and is fresh.
    fn binds(
        &self,
        c: &Claims,
        rpc: &Rpc<'_>,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<(), &'static str> {
        if rpc.env.now.as_millis() >= c.expires_at {
            return Err("expired");
        }
        if c.subject != rpc.principal.subject || c.organization != rpc.principal.organization {
            return Err("issued to another caller");
        }
        if c.tool != tool || c.args_digest != confirm::args_digest(args) {
            return Err("issued for another call");
        }
        Ok(())
    }

    /// Asks the user: preflight, then an `input_required` result with a fresh sealed state.
    fn ask(&self, rpc: &Rpc<'_>, call: &ToolCall<'_>, log: &mut RequestLog) -> Reply {
        let message = match self.dispatch.preflight(call) {
            Ok(m) => m,
            Err(e) => return self.tool_error(rpc, e, log),
        };
        let now = rpc.env.now.as_millis();
        let claims = Claims {
            tool: call.tool.name.clone(),
            args_digest: confirm::args_digest(call.args),
            subject: rpc.principal.subject.clone(),
            organization: rpc.principal.organization.clone(),
            issued_at: now,
            expires_at: now.saturating_add(self.config.confirmation_ttl_ms),
            nonce: confirm::nonce(&rpc.env.entropy),
        };
        let Some(state) = confirm::seal(&self.keys, &claims) else {
            return Reply::Error(ProtocolError::Internal(
                "could not seal the confirmation state (no confirmation key?)".into(),
            ));
        };
        Reply::Result(json!({
            "resultType": "input_required",
            "inputRequests": {
                CONFIRM_KEY: {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": message,
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                CONFIRM_KEY: {
                                    "type": "boolean",
                                    "title": "Confirm",
                                    "description": "Set to true to carry out exactly what the message says.",
                                    "default": false,
                                }
                            },
                            "required": [CONFIRM_KEY],
                        },
                    },
                },
            },
            "requestState": state,
        }))
    }

    /// A tool result: pretty JSON text plus `structuredContent`, written straight to the
    /// answer ([`crate::tool_result`]).
    pub(crate) fn tool_result(&self, rpc: &Rpc<'_>, body: Body, is_error: bool) -> Reply {
        Reply::Tool(ToolResult {
            text: body.into_text(),
            is_error,
            version: rpc.version,
        })
    }

    /// A tool error as an `isError` result (a bug becomes `-32603`).
    pub(crate) fn tool_error(&self, rpc: &Rpc<'_>, e: ToolError, log: &mut RequestLog) -> Reply {
        if e.code == ToolErrorCode::Internal {
            return Reply::Error(ProtocolError::Internal(e.message.into()));
        }
        log.tool_error = Some(e.code.as_str());
        log.reason = e.reason();
        self.tool_result(rpc, Body::Tree(e.to_json(&rpc.env.request_id)), true)
    }
}

/// `params._meta.progressToken`, when it is a string or an integer (both eras).
fn progress_token(params: &Map<String, Value>) -> Option<&Value> {
    let token = params.get("_meta")?.get("progressToken")?;
    (token.is_string() || token.is_i64() || token.is_u64()).then_some(token)
}

/// Whether declared capabilities allow a form elicitation (`{}` means form).
fn can_elicit_form(elicitation: Option<&Value>) -> bool {
    match elicitation {
        Some(Value::Object(modes)) => {
            modes.is_empty() || modes.contains_key("form") || !modes.contains_key("url")
        }
        _ => false,
    }
}

/// Reads the confirmation answer; unknown keys are ignored.
fn answer(responses: Option<&Value>) -> Result<Option<Answer>, &'static str> {
    let responses = match responses {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(r)) => r,
        Some(_) => return Err("must be an object"),
    };
    let Some(response) = responses.get(CONFIRM_KEY) else {
        return Ok(None);
    };
    let action = response
        .get("action")
        .and_then(Value::as_str)
        .ok_or("confirm.action must be a string")?;
    match action {
        "accept" => {
            let yes = response
                .get("content")
                .and_then(|c| c.get(CONFIRM_KEY))
                .and_then(Value::as_bool)
                == Some(true);
            Ok(Some(if yes { Answer::Accept } else { Answer::Decline }))
        }
        "decline" | "cancel" => Ok(Some(Answer::Decline)),
        _ => Err("confirm.action must be accept, decline or cancel"),
    }
}
