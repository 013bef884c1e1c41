//! The `/v1` REST surface: each route is the REST twin of a tool and ends in the same
//! [`Dispatch::call_tool`]. Path variables, query and body are flattened into
//! one argument object, validated by the tool's schema, exactly as `tools/call` does.

use std::collections::BTreeMap;

use http::header::ALLOW;
use http::{HeaderValue, StatusCode};
use serde_json::{Map, Value};

use crate::dispatch::{Ctx, Dispatch, Output, ToolCall, ToolError, ToolErrorCode};
use crate::env::Env;
use crate::error::ProtocolError;
use crate::principal::Audience;
use crate::registry::Tool;
use crate::request::Request;
use crate::response::{RequestLog, Response};
use crate::server::{Server, set_header};

/// Matches a concrete path against a route template (`/v1/charges/{id}`).
fn match_path(template: &str, path: &str) -> Option<BTreeMap<String, String>> {
    let mut vars = BTreeMap::new();
    let mut t = template.split('/');
    let mut p = path.split('/');
    loop {
        match (t.next(), p.next()) {
            (None, None) => return Some(vars),
            (Some(ts), Some(ps)) => {
                if let Some(name) = ts.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    if ps.is_empty() {
                        return None;
                    }
                    vars.insert(name.to_owned(), crate::pct::decode(ps, false)?);
                } else if ts != ps {
                    return None;
                }
            }
            _ => return None,
        }
    }
}

/// A query-string value typed by the schema of the argument it fills.
fn typed(schema: Option<&Value>, raw: String) -> Value {
    let ty = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    match ty {
        Some("integer") => raw.parse::<i64>().map_or(Value::String(raw), Value::from),
        Some("number") => raw
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::String(raw), Value::Number),
        Some("boolean") => match raw.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(raw),
        },
        Some("array") => Value::Array(
            raw.split(',')
                .map(|s| typed(schema.and_then(|s| s.get("items")), s.to_owned()))
                .collect(),
        ),
        _ => Value::String(raw),
    }
}

impl<D: Dispatch> Server<D> {
    /// Finds the `/v1` route of `req` (step 2 of the processing order for the REST surface): the tool and the
    /// path variables, or the `404`/`405` answer. Depends on the head alone.
    fn rest_route(
        &self,
        req: &Request<'_>,
        env: &Env,
    ) -> Result<(&Tool, BTreeMap<String, String>), Box<Response>> {
        let path = req.path();
        let method = if req.method == "HEAD" {
            "GET"
        } else {
            req.method
        };
        let mut allowed: Vec<&str> = Vec::new();
        let mut found: Option<(&Tool, BTreeMap<String, String>)> = None;
        for tool in &self.registry.tools {
            let Some(route) = &tool.def.route else {
                continue;
            };
            if let Some(vars) = match_path(&route.path, path) {
                if route.method == method {
                    found = Some((tool, vars));
                    break;
                }
                allowed.push(route.method);
            }
        }
        let Some((tool, vars)) = found else {
            if allowed.is_empty() {
                return Err(Box::new(self.rest_error(
                    ToolError::new(ToolErrorCode::NotFound, format!("No route {path}")),
                    env,
                )));
            }
            let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
            set_header(&mut r, ALLOW, &allowed.join(", "));
            return Err(Box::new(r));
        };
        Ok((tool, vars))
    }

    /// What [`Server::check_head`] decides for a `/v1` head: the route, then the processing order's steps
    /// 4–6 (Origin, authentication, load).
    pub(crate) fn rest_head(
        &self,
        req: &Request<'_>,
        env: &Env,
        log: &mut RequestLog,
    ) -> Option<Response> {
        if let Err(r) = self.rest_route(req, env) {
            return Some(*r);
        }
        let e = self.admit(req, env, Audience::Api, false).err()?;
        Some(self.refuse(e, None, None, log))
    }

    pub(crate) fn rest(&self, req: &Request<'_>, env: &Env, log: &mut RequestLog) -> Response {
        let method = if req.method == "HEAD" {
            "GET"
        } else {
            req.method
        };
        let (tool, vars) = match self.rest_route(req, env) {
            Ok(found) => found,
            Err(r) => return crate::server::close_if_body(req, *r),
        };
        log.method = Some(format!(
            "{method} {}",
            tool.def.route.as_ref().map_or("", |r| &r.path)
        ));
        log.tool = Some(tool.def.name.clone());
        let principal = match self.gate(req, env, Audience::Api, false) {
            Ok(p) => p,
            Err(e) if crate::server::decided_by_head(&e) => {
                return crate::server::close_if_body(req, self.refuse(e, None, None, log));
            }
            Err(e) => return self.refuse(e, None, None, log),
        };
        log.organization = Some(principal.organization.clone());
        if let Some(scope) = tool.missing_scope(&principal, &self.registry.scopes) {
            let mut r = self.refuse(ProtocolError::InsufficientScope { scope }, None, None, log);
            let challenge = format!("Bearer error=\"insufficient_scope\", scope=\"{scope}\"");
            set_header(&mut r, http::header::WWW_AUTHENTICATE, &challenge);
            return r;
        }
        let args = match self.rest_args(req, tool, vars) {
            Ok(a) => a,
            Err(e) => return self.rest_error(e, env),
        };
        if let Err(e) = tool.admit(&principal, &Value::Object(args.clone())) {
            log.tool_error = Some(e.code.as_str());
            log.reason = e.reason();
            return self.rest_error(e, env);
        }
        let call = ToolCall {
            tool: &tool.def,
            args: &args,
            ctx: Ctx {
                principal: &principal,
                now: env.now,
                request_id: &env.request_id,
                entropy: &env.entropy,
                ahead: env.ahead.as_deref(),
            },
            confirmation_key: None,
        };
        match self.dispatch.call_tool(&call) {
            Ok(Output::Json { status, body }) => {
                let link = body.member("meta").and_then(|meta| {
                    crate::link::pagination(&self.config.public_url, req.path(), req.query(), &meta)
                });
                let mut r = Response::json(
                    StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                    body.into_text().into_bytes(),
                );
                if let Some(link) = link {
                    set_header(&mut r, http::header::LINK, &link);
                }
                r
            }
            Ok(Output::NoContent) => Response::empty(StatusCode::NO_CONTENT),
            Ok(Output::File(f)) => {
                let mut r = Response::empty(StatusCode::OK);
                if let Ok(v) = HeaderValue::from_str(&f.content_type) {
                    r.headers.push((http::header::CONTENT_TYPE, v));
                }
                r.body = f.bytes;
                r
            }
            Err(e) => {
                log.tool_error = Some(e.code.as_str());
                log.reason = e.reason();
                if e.code == ToolErrorCode::Internal {
                    // The detail is the log's; the client gets the generic message.
                    let generic = ToolError::new(ToolErrorCode::Internal, "internal error");
                    return self.rest_error(generic, env);
                }
                self.rest_error(e, env)
            }
        }
    }

    /// Path variables, then query, then the JSON body, then `X-Idempotency-Key`.
    fn rest_args(
        &self,
        req: &Request<'_>,
        tool: &Tool,
        vars: BTreeMap<String, String>,
    ) -> Result<Map<String, Value>, ToolError> {
        let props = tool.def.input_schema.get("properties");
        let mut args = Map::new();
        if let Some(q) = req.query() {
            for pair in q.split('&').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                let bad = || ToolError::validation("Malformed query string", Vec::new());
                let k = crate::pct::decode(k, true).ok_or_else(bad)?;
                let v = crate::pct::decode(v, true).ok_or_else(bad)?;
                let schema = props.and_then(|p| p.get(&k));
                args.insert(k, typed(schema, v));
            }
        }
        if !req.body.is_empty() {
            match serde_json::from_slice::<Value>(req.body) {
                Ok(Value::Object(body)) => args.extend(body),
                _ => {
                    return Err(ToolError::validation(
                        "The body must be a JSON object",
                        Vec::new(),
                    ));
                }
            }
        }
        for (k, v) in vars {
            args.insert(k, Value::String(v));
        }
        if let Ok(Some(key)) = req.single_header("x-idempotency-key")
            && let Ok(key) = std::str::from_utf8(key)
        {
            args.entry("idempotency_key")
                .or_insert_with(|| Value::String(key.trim().to_owned()));
        }
        Ok(args)
    }

    fn rest_error(&self, e: ToolError, env: &Env) -> Response {
        let status =
            StatusCode::from_u16(e.code.rest_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Response::json(
            status,
            serde_json::to_vec(&e.to_json(&env.request_id)).unwrap_or_default(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_matching() {
        let v = match_path("/v1/charges/{id}/cancel", "/v1/charges/abc/cancel").unwrap();
        assert_eq!(v["id"], "abc");
        assert!(match_path("/v1/charges/{id}", "/v1/charges/abc/cancel").is_none());
        assert!(match_path("/v1/charges/{id}", "/v1/charges/").is_none());
        assert!(match_path("/v1/charges", "/v1/charges").is_some());
    }

    #[test]
    fn query_typing() {
        let s = serde_json::json!({"type":"integer"});
        assert_eq!(typed(Some(&s), "42".into()), Value::from(42));
        assert_eq!(typed(Some(&s), "x".into()), Value::from("x"));
        let b = serde_json::json!({"type":"boolean"});
        assert_eq!(typed(Some(&b), "true".into()), Value::Bool(true));
        let a = serde_json::json!({"type":"array","items":{"type":"string"}});
        assert_eq!(typed(Some(&a), "a,b".into()), serde_json::json!(["a", "b"]));
    }
}
