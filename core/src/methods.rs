//! The methods of both eras, except `tools/call` (see [`crate::call`]).

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{Map, Value, json};

use crate::dispatch::{
    Completion, CompletionRef, Contents, Ctx, Dispatch, ResourceError, ResourceRead,
};
use crate::era::{self, Version};
use crate::error::ProtocolError;
use crate::mrtr::{self, PromptReply, Round};
use crate::reply::Reply;
use crate::response::RequestLog;
use crate::server::{Rpc, Server};

/// Most completion values returned.
const MAX_COMPLETIONS: usize = 100;

fn invalid(message: impl Into<String>) -> ProtocolError {
    ProtocolError::InvalidParams {
        message: message.into(),
        data: None,
    }
}

impl<D: Dispatch> Server<D> {
    pub(crate) fn method(&self, rpc: &Rpc<'_>, log: &mut RequestLog) -> Reply {
        let modern = rpc.modern();
        let result = match rpc.msg.method.as_str() {
            "server/discover" if modern => return self.discover(rpc),
            "initialize" if !modern => Ok(self.initialize(rpc)),
            "ping" if !modern => Ok(json!({})),
            "tools/list" => return self.tools_list(rpc),
            "tools/call" => return self.tools_call(rpc, log),
            "resources/list" => self.no_cursor(rpc).map(|()| self.resources_list(rpc)),
            "resources/templates/list" => self.no_cursor(rpc).map(|()| self.templates_list(rpc)),
            "resources/read" => self.resources_read(rpc, log),
            "prompts/list" => self.no_cursor(rpc).map(|()| self.prompts_list(rpc)),
            "prompts/get" => return self.prompts_get(rpc, log),
            "completion/complete" => self.complete(rpc),
            other => Err(ProtocolError::MethodNotFound(other.to_owned())),
        };
        match result {
            Ok(v) => Reply::Result(v),
            Err(e) => Reply::Error(e),
        }
    }

    pub(crate) fn ctx<'a>(&self, rpc: &'a Rpc<'_>) -> Ctx<'a> {
        Ctx {
            principal: rpc.principal,
            now: rpc.env.now,
            request_id: &rpc.env.request_id,
            entropy: &rpc.env.entropy,
            ahead: rpc.env.ahead.as_deref(),
        }
    }

    /// `server/discover`: the same for every caller, so written (decorated) the first
    /// time and kept after the request's `id`, as `tools/list` is
    /// ([`crate::tool_lists`]); 6 % of its CPU was writing it again.
    fn discover(&self, rpc: &Rpc<'_>) -> Reply {
        let kept = self.discovered.get_or_init(|| {
            let mut result = json!({
                "supportedVersions": Version::ALL.map(Version::as_str),
                "capabilities": { "tools": {}, "resources": {}, "prompts": {}, "completions": {} },
                "instructions": self.config.instructions,
            });
            self.decorate("server/discover", &mut result);
            let mut tail = Vec::new();
            crate::jsonrpc::write_result(&mut tail, &result);
            tail.into_boxed_slice()
        });
        let mut out = crate::jsonrpc::head(rpc.msg.id.as_ref().unwrap_or(&Value::Null));
        out.extend_from_slice(kept);
        Reply::Body(out)
    }

    fn initialize(&self, rpc: &Rpc<'_>) -> Value {
        let requested = rpc
            .params()
            .and_then(|p| p.get("protocolVersion"))
            .and_then(Value::as_str);
        let version = era::negotiate(requested);
        let mut info = self.server_info().clone();
        if version == Version::V2025_03_26 {
            if let Some(o) = info.as_object_mut() {
                o.remove("title");
            }
        }
        json!({
            "protocolVersion": version.as_str(),
            "capabilities": {
                "tools": { "listChanged": false },
                "resources": { "subscribe": false, "listChanged": false },
                "prompts": { "listChanged": false },
                "completions": {},
            },
            "serverInfo": info,
            "instructions": self.config.instructions,
        })
    }

    /// Lists are served in one page; a cursor we never issued is invalid.
    fn no_cursor(&self, rpc: &Rpc<'_>) -> Result<(), ProtocolError> {
        match rpc.params().and_then(|p| p.get("cursor")) {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(invalid("Invalid cursor")),
        }
    }

    /// `tools/list`: the answer kept for the caller's permission set
    /// ([`crate::tool_lists`]), after this request's `id`.
    fn tools_list(&self, rpc: &Rpc<'_>) -> Reply {
        if let Err(e) = self.no_cursor(rpc) {
            return Reply::Error(e);
        }
        Reply::List(self.tool_lists.answer(
            &self.registry,
            self.server_info(),
            rpc.msg.id.as_ref().unwrap_or(&Value::Null),
            rpc.version,
            rpc.principal,
        ))
    }

    fn titled(&self, rpc: &Rpc<'_>, mut item: Value, title: &str) -> Value {
        if rpc.version != Version::V2025_03_26 {
            item["title"] = json!(title);
        }
        item
    }

    fn resources_list(&self, rpc: &Rpc<'_>) -> Value {
        let items: Vec<Value> = self
            .registry
            .resources
            .iter()
            .filter(|r| rpc.principal.may(&r.access))
            .map(|r| {
                let item = json!({ "uri": r.uri, "name": r.name });
                let mut item = self.titled(rpc, item, &r.title);
                item["description"] = json!(r.description);
                item["mimeType"] = json!(r.mime_type);
                item
            })
            .collect();
        json!({ "resources": items })
    }

    fn templates_list(&self, rpc: &Rpc<'_>) -> Value {
        let items: Vec<Value> = self
            .registry
            .templates
            .iter()
            .filter(|t| rpc.principal.may(&t.def.access))
            .map(|t| {
                let item = json!({ "uriTemplate": t.def.uri_template, "name": t.def.name });
                let mut item = self.titled(rpc, item, &t.def.title);
                item["description"] = json!(t.def.description);
                item["mimeType"] = json!(t.def.mime_type);
                item
            })
            .collect();
        json!({ "resourceTemplates": items })
    }

    fn resources_read(&self, rpc: &Rpc<'_>, log: &mut RequestLog) -> Result<Value, ProtocolError> {
        let uri = rpc
            .params()
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("params.uri must be a string"))?;
        let not_found = || ProtocolError::ResourceNotFound {
            uri: uri.to_owned(),
            reason: None,
        };
        let (fixed, template, vars) = self.registry.resolve(uri).ok_or_else(not_found)?;
        let access = fixed
            .map(|r| &r.access)
            .or_else(|| template.map(|t| &t.def.access))
            .ok_or_else(not_found)?;
        // Another organization's or a forbidden resource is indistinguishable from none.
        if !rpc.principal.may(access) {
            return Err(not_found());
        }
        log.tool = template.map(|t| t.def.uri_template.clone());
        let contents = self
            .dispatch
            .read_resource(&ResourceRead {
                uri,
                template: template.map(|t| &t.def),
                vars: &vars,
                ctx: self.ctx(rpc),
            })
            .map_err(|e| match e {
                ResourceError::NotFound => not_found(),
                ResourceError::Unavailable(reason) => ProtocolError::ResourceNotFound {
                    uri: uri.to_owned(),
                    reason: Some(reason),
                },
                ResourceError::Internal(detail) => ProtocolError::Internal(detail.into()),
            })?;
        let contents: Vec<Value> = contents
            .into_iter()
            .map(|c| match c {
                Contents::Text { mime_type, text } => {
                    json!({ "uri": uri, "mimeType": mime_type, "text": text })
                }
                Contents::Blob { mime_type, bytes } => json!({
                    "uri": uri,
                    "mimeType": mime_type,
                    "blob": base64::engine::general_purpose::STANDARD.encode(bytes),
                }),
            })
            .collect();
        Ok(json!({ "contents": contents }))
    }

    fn prompts_list(&self, rpc: &Rpc<'_>) -> Value {
        let items: Vec<Value> = self
            .registry
            .prompts
            .iter()
            .filter(|p| rpc.principal.may(&p.access))
            .map(|p| {
                let item = json!({ "name": p.name });
                let mut item = self.titled(rpc, item, &p.title);
                item["description"] = json!(p.description);
                item["arguments"] = p
                    .arguments
                    .iter()
                    .map(|a| json!({ "name": a.name, "description": a.description, "required": a.required }))
                    .collect();
                item
            })
            .collect();
        json!({ "prompts": items })
    }

    /// `prompts/get`, through [`Dispatch::get_prompt_mrtr`]: a prompt may ask for input
    /// in era 2026 (see [`crate::mrtr`]).
    fn prompts_get(&self, rpc: &Rpc<'_>, log: &mut RequestLog) -> Reply {
        match self.prompt_reply(rpc, log) {
            Ok(r) => r,
            Err(e) => Reply::Error(e),
        }
    }

    fn prompt_reply(&self, rpc: &Rpc<'_>, log: &mut RequestLog) -> Result<Reply, ProtocolError> {
        let params = rpc.params();
        let name = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("params.name must be a string"))?;
        let prompt = self
            .registry
            .prompt(name)
            .filter(|p| rpc.principal.may(&p.access))
            .ok_or_else(|| invalid(format!("Unknown prompt: {name}")))?;
        log.tool = Some(name.to_owned());
        let args = string_map(params.and_then(|p| p.get("arguments")), "arguments")?;
        if let Some(missing) = prompt
            .arguments
            .iter()
            .find(|a| a.required && !args.contains_key(&a.name))
        {
            return Err(invalid(format!(
                "Missing required argument: {}",
                missing.name
            )));
        }
        let empty = Map::new();
        let arg_object = mrtr::string_args(&args);
        let binding = mrtr::Binding {
            method: "prompts/get",
            name,
            args: &arg_object,
            principal: rpc.principal,
        };
        let input = self.round_input(rpc, params.unwrap_or(&empty), &binding)?;
        let round = Round {
            input_responses: input.responses,
            request_state: input.state.as_deref(),
            client_capabilities: &rpc.detected.client_capabilities,
            version: rpc.version,
            progress_token: None,
        };
        let reply = self
            .dispatch
            .get_prompt_mrtr(name, &args, self.ctx(rpc), &round)
            .map_err(invalid)?;
        match reply {
            PromptReply::Messages {
                description,
                messages,
            } => {
                let mut out = Map::new();
                if let Some(d) = description {
                    out.insert("description".into(), Value::from(d));
                }
                out.insert("messages".into(), Value::from(messages));
                Ok(Reply::Result(Value::Object(out)))
            }
            PromptReply::InputRequired(ask) if rpc.modern() => {
                Ok(self.input_required(rpc, ask, &binding))
            }
            PromptReply::MissingCapability(required) if rpc.modern() => {
                Err(ProtocolError::MissingClientCapability {
                    required: Box::new(required),
                })
            }
            PromptReply::InputRequired(_) | PromptReply::MissingCapability(_) => {
                Err(invalid(format!(
                    "Prompt {name} needs input from the user or the client, which only a client speaking MCP 2026-07-28 can provide"
                )))
            }
        }
    }

    fn complete(&self, rpc: &Rpc<'_>) -> Result<Value, ProtocolError> {
        let params = rpc.params().ok_or_else(|| invalid("params are required"))?;
        let reference = params
            .get("ref")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("params.ref must be an object"))?;
        let argument = params
            .get("argument")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("params.argument must be an object"))?;
        let arg_name = argument
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("params.argument.name must be a string"))?;
        let arg_value = argument
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("params.argument.value must be a string"))?;
        let context = string_map(
            params.get("context").and_then(|c| c.get("arguments")),
            "context.arguments",
        )?;
        let target = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("params.ref.name must be a string"))?;
                let prompt = self
                    .registry
                    .prompt(name)
                    .filter(|p| rpc.principal.may(&p.access))
                    .ok_or_else(|| invalid(format!("Unknown prompt: {name}")))?;
                if !prompt.arguments.iter().any(|a| a.name == arg_name) {
                    return Err(invalid(format!("Unknown argument: {arg_name}")));
                }
                CompletionRef::Prompt(name)
            }
            Some("ref/resource") => {
                let uri = reference
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("params.ref.uri must be a string"))?;
                let template = self
                    .registry
                    .template(uri)
                    .filter(|t| rpc.principal.may(&t.def.access))
                    .ok_or_else(|| invalid(format!("Unknown resource template: {uri}")))?;
                if !template.variables().any(|v| v == arg_name) {
                    return Err(invalid(format!("Unknown template variable: {arg_name}")));
                }
                CompletionRef::Resource(uri)
            }
            _ => {
                return Err(invalid(
                    "params.ref.type must be ref/prompt or ref/resource",
                ));
            }
        };
        let Completion { mut values, total } =
            self.dispatch
                .complete(target, arg_name, arg_value, &context, self.ctx(rpc));
        let total = total.max(values.len());
        values.truncate(MAX_COMPLETIONS);
        let more = total > values.len();
        Ok(json!({
            "completion": { "values": values, "total": total, "hasMore": more }
        }))
    }
}

/// An optional object of strings (prompt arguments, completion context).
fn string_map(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, String>, ProtocolError> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(invalid(format!("{what}.{k} must be a string"))),
            })
            .collect(),
        Some(_) => Err(invalid(format!("{what} must be an object"))),
    }
}
