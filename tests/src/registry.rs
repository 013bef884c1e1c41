//! The test domain: a small, deterministic, in-memory [`Dispatch`] that exercises every
//! feature of the core the conformance fixtures pin.
//!
//! | tool | kind | what it exercises |
//! |---|---|---|
//! | `test_charges_list` | read, strict | listing filters, unknown-argument refusal, schema violations |
//! | `test_charges_get` | read, strict, `outputSchema` | `NOT_FOUND` tool error, org isolation |
//! | `test_notes_create` | write, loose | extra fields reach the domain, which names them |
//! | `test_charges_cancel` | destructive, `id` → `Mcp-Param-Target-Id` | confirmation, preflight |
//! | `test_jobs_schedule` | write, integer `Priority` and boolean `Urgent` headers | typed mirrored headers |
//! | `test_zones_route` | read, nested `target.zone` → `Mcp-Param-Zone` | annotation through a `properties` chain |
//! | `test_echo` | read, top-level string `label` → `Mcp-Param-Label` | value encoding |
//! | `test_charges_receipt` | read, a file | `NOT_SETTLED`; a file descriptor |
//! | `test_reminders_send` | write, outbound | `RATE_LIMITED` from the second call on |
//! | `test_cache_purge` | write, answers `204` | `{"status":204}` |
//! | `test_webhooks_list` | read, needs `dunning.admin` | `insufficient_scope` step-up |
//! | `test_exports_create` | write, needs permission `exports.create` | `FORBIDDEN` tool error |
//!
//! Confirmed calls and calls with an `idempotency_key` run at most once per key.
//!
//! Resources: `test://static/info` (JSON), `test://static/broken` (fails: `-32603`); templates `test://charges/{id}` (JSON) and
//! `test://charges/{id}/receipt` (PDF, only when paid). Prompt `test_triage` (required
//! `charge_id`, optional `tone`), with completions for `charge_id` and the template `id`.
//!
//! Charges (organization `demo`): `CHG-1` Maria Silva R$ 1.234,56 pending, `CHG-2` João
//! Souza R$ 89,90 overdue, `CHG-3` Ana Lima R$ 500,00 canceled, `CHG-4` Pedro Alves
//! R$ 15.000,00 paid, `CHG-5` Carla Dias R$ 0,99 pending; organization `acme`: `CHG-9`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use dunning_core::catalog::{
    Annotations, Catalog, PromptArgument, PromptDef, ResourceDef, Route, TemplateDef, ToolDef,
    object_schema,
};
use dunning_core::dispatch::{
    Completion, CompletionRef, Contents, Ctx, Dispatch, FieldIssue, File, Output, ResourceError,
    ResourceRead, ToolCall, ToolError, ToolErrorCode,
};
use dunning_core::principal::{Access, Scope, ScopeNames};
use serde_json::{Value, json};

/// One charge of the test store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Charge {
    /// Identifier, e.g. `CHG-1`.
    pub id: &'static str,
    /// Owning organization.
    pub org: &'static str,
    /// Debtor's name.
    pub debtor: &'static str,
    /// Amount in centavos.
    pub cents: u64,
    /// Status (`pending`, `overdue`, `paid`, `canceled`).
    pub status: &'static str,
    /// Due date.
    pub due: &'static str,
}

impl Charge {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "status": self.status,
            "amount": self.cents as f64 / 100.0,
            "debtor_name": self.debtor,
            "due_date": self.due,
        })
    }
}

/// The charges every fresh [`TestDomain`] starts with.
pub const CHARGES: [Charge; 6] = [
    charge(
        "CHG-1",
        "demo",
        "Maria Silva",
        123_456,
        "pending",
        "2026-12-10",
    ),
    charge(
        "CHG-2",
        "demo",
        "João Souza",
        8_990,
        "overdue",
        "2026-11-20",
    ),
    charge(
        "CHG-3",
        "demo",
        "Ana Lima",
        50_000,
        "canceled",
        "2026-11-05",
    ),
    charge(
        "CHG-4",
        "demo",
        "Pedro Alves",
        1_500_000,
        "paid",
        "2026-10-30",
    ),
    charge("CHG-5", "demo", "Carla Dias", 99, "pending", "2026-12-15"),
    charge(
        "CHG-9",
        "acme",
        "Acme Ltda",
        10_000,
        "pending",
        "2026-12-20",
    ),
];

const fn charge(
    id: &'static str,
    org: &'static str,
    debtor: &'static str,
    cents: u64,
    status: &'static str,
    due: &'static str,
) -> Charge {
    Charge {
        id,
        org,
        debtor,
        cents,
        status,
        due,
    }
}

/// Formats centavos as Brazilian reais: `R$ 1.234,56`.
pub fn brl(cents: u64) -> String {
    let reais = (cents / 100).to_string();
    let mut grouped = String::new();
    for (i, c) in reais.chars().enumerate() {
        if i > 0 && (reais.len() - i) % 3 == 0 {
            grouped.push('.');
        }
        grouped.push(c);
    }
    format!("R$ {grouped},{:02}", cents % 100)
}

/// A stored result and the arguments it was produced for.
type Reply = (Value, Result<Output, ToolError>);

/// The deterministic in-memory domain behind `test_server()`.
#[derive(Debug)]
pub struct TestDomain {
    charges: Mutex<Vec<Charge>>,
    notes: Mutex<u64>,
    reminders: Mutex<u64>,
    /// Results by idempotency key: confirmation nonces and callers' `idempotency_key`s,
    /// each with the arguments it was first used with.
    replies: Mutex<BTreeMap<String, Reply>>,
}

impl Default for TestDomain {
    fn default() -> Self {
        Self {
            charges: Mutex::new(CHARGES.to_vec()),
            notes: Mutex::new(0),
            reminders: Mutex::new(0),
            replies: Mutex::new(BTreeMap::new()),
        }
    }
}

impl TestDomain {
    /// A fresh store with [`CHARGES`].
    pub fn new() -> Self {
        Self::default()
    }

    /// The charge `id` as the caller's organization sees it.
    fn find(&self, org: &str, id: &str) -> Option<Charge> {
        let charges = self.charges.lock().expect("store lock");
        charges.iter().find(|c| c.id == id && c.org == org).cloned()
    }

    fn charge_arg(&self, call: &ToolCall<'_>, key: &str) -> Result<Charge, ToolError> {
        let id = call
            .args
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default();
        self.find(&call.ctx.principal.organization, id)
            .ok_or_else(|| ToolError::not_found("Charge", id))
    }

    fn cancelable(&self, call: &ToolCall<'_>) -> Result<Charge, ToolError> {
        let c = self.charge_arg(call, "id")?;
        match c.status {
            "canceled" => Err(ToolError::new(
                ToolErrorCode::Conflict,
                format!("Charge {} is already canceled", c.id),
            )),
            "paid" => Err(ToolError::new(
                ToolErrorCode::Conflict,
                format!("Charge {} is paid and cannot be canceled", c.id),
            )),
            _ => Ok(c),
        }
    }

    fn list(&self, call: &ToolCall<'_>) -> Output {
        let org = &call.ctx.principal.organization;
        let status = call.args.get("status").and_then(Value::as_str);
        let page = call.args.get("page").and_then(Value::as_u64).unwrap_or(1);
        let per_page = call
            .args
            .get("per_page")
            .and_then(Value::as_u64)
            .unwrap_or(25);
        let charges = self.charges.lock().expect("store lock");
        let all: Vec<Value> = charges
            .iter()
            .filter(|c| c.org == org && status.is_none_or(|s| s == c.status))
            .map(Charge::to_json)
            .collect();
        let total = all.len();
        let start = usize::try_from((page - 1) * per_page).unwrap_or(usize::MAX);
        let data: Vec<Value> = all
            .into_iter()
            .skip(start)
            .take(usize::try_from(per_page).unwrap_or(usize::MAX))
            .collect();
        Output::ok(json!({
            "data": data,
            "meta": { "total": total, "page": page, "per_page": per_page },
        }))
    }

    fn create_note(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        const KNOWN: [&str; 3] = ["charge_id", "text", "idempotency_key"];
        let unknown: Vec<FieldIssue> = call
            .args
            .keys()
            .filter(|k| !KNOWN.contains(&k.as_str()))
            .map(|k| FieldIssue {
                field: k.clone(),
                issue: "unknown field".into(),
            })
            .collect();
        if !unknown.is_empty() {
            return Err(ToolError::validation("Unknown fields", unknown));
        }
        let c = self.charge_arg(call, "charge_id")?;
        let mut n = self.notes.lock().expect("store lock");
        *n += 1;
        Ok(Output::Json {
            status: 201,
            body: json!({
                "id": format!("NOTE-{n}"),
                "charge_id": c.id,
                "text": call.args.get("text").cloned().unwrap_or(Value::Null),
            })
            .into(),
        })
    }

    /// Runs `op` at most once per idempotency key: a confirmation nonce, else the caller's
    /// `idempotency_key`. The same key with other arguments is `IDEMPOTENCY_CONFLICT`.
    fn once(
        &self,
        call: &ToolCall<'_>,
        op: impl FnOnce() -> Result<Output, ToolError>,
    ) -> Result<Output, ToolError> {
        let caller_key = call.args.get("idempotency_key").and_then(Value::as_str);
        let Some(key) = call.confirmation_key.or(caller_key) else {
            return op();
        };
        let key = format!(
            "{}:{}:{key}",
            call.ctx.principal.organization, call.tool.name
        );
        let args = Value::Object(call.args.clone());
        if let Some((first, reply)) = self.replies.lock().expect("store lock").get(&key) {
            return if *first == args {
                reply.clone()
            } else {
                Err(ToolError::new(
                    ToolErrorCode::IdempotencyConflict,
                    "idempotency_key was already used with other arguments",
                ))
            };
        }
        let reply = op();
        self.replies
            .lock()
            .expect("store lock")
            .insert(key, (args, reply.clone()));
        reply
    }

    fn receipt(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        let c = self.charge_arg(call, "id")?;
        if c.status != "paid" {
            return Err(ToolError::new(
                ToolErrorCode::Unavailable("NOT_SETTLED"),
                format!("Charge {} is not paid", c.id),
            ));
        }
        Ok(Output::File(File {
            content_type: "application/pdf".into(),
            bytes: receipt_pdf(c.id),
            download_path: format!("/v1/charges/{}/receipt", c.id),
        }))
    }

    fn send_reminder(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        let c = self.charge_arg(call, "charge_id")?;
        let mut sent = self.reminders.lock().expect("store lock");
        if *sent >= 1 {
            return Err(ToolError {
                retry_after_ms: Some(60_000),
                ..ToolError::new(
                    ToolErrorCode::RateLimited,
                    "Outbound limit reached: 1 reminder per minute",
                )
            });
        }
        *sent += 1;
        Ok(Output::Json {
            status: 202,
            body: json!({ "charge_id": c.id, "status": "queued" }).into(),
        })
    }

    fn cancel(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        let c = self.cancelable(call)?;
        let mut charges = self.charges.lock().expect("store lock");
        let stored = charges
            .iter_mut()
            .find(|x| x.id == c.id && x.org == c.org)
            .ok_or_else(|| ToolError::not_found("Charge", c.id))?;
        stored.status = "canceled";
        Ok(Output::ok(stored.to_json()))
    }
}

/// The bytes of a charge's receipt (a stand-in PDF; the test domain has no PDF library).
pub fn receipt_pdf(id: &str) -> Vec<u8> {
    format!("%PDF-1.4\n% receipt {id}\n%%EOF\n").into_bytes()
}

fn string() -> Value {
    json!({ "type": "string" })
}

fn header(ty: &str, name: &str) -> Value {
    json!({ "type": ty, "x-mcp-header": name })
}

fn read_ann() -> Annotations {
    Annotations {
        read_only: true,
        idempotent: true,
        ..Annotations::default()
    }
}

fn write_ann(idempotent: bool) -> Annotations {
    Annotations {
        idempotent,
        ..Annotations::default()
    }
}

#[allow(clippy::too_many_arguments)]
fn tool(
    name: &str,
    title: &str,
    input_schema: Value,
    annotations: Annotations,
    access: Access,
    method: &'static str,
    path: &str,
) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: title.into(),
        description: format!("{title} (test domain)."),
        input_schema,
        output_schema: None,
        annotations,
        access,
        route: Some(Route {
            method,
            path: path.into(),
        }),
    }
}

/// The tool definitions, in `tools/list` order.
pub fn tools() -> Vec<ToolDef> {
    let view = || Access::new(Scope::Read, "charges.view");
    let edit = || Access::new(Scope::Write, "charges.edit");
    let id_only = object_schema(&[("id", string())], &["id"], true);
    let mut get = tool(
        "test_charges_get",
        "Get charge",
        id_only,
        read_ann(),
        view(),
        "GET",
        "/v1/charges/{id}",
    );
    get.output_schema = Some(json!({
        "type": "object",
        "properties": {
            "id": { "type": "string" },
            "status": { "type": "string" },
            "amount": { "type": "number" },
            "debtor_name": { "type": "string" },
            "due_date": { "type": "string" },
        },
        "required": ["id", "status", "amount", "debtor_name", "due_date"],
    }));
    vec![
        tool(
            "test_charges_list",
            "List charges",
            object_schema(
                &[
                    (
                        "status",
                        json!({ "type": "string", "enum": ["pending", "overdue", "paid", "canceled"] }),
                    ),
                    ("page", json!({ "type": "integer", "minimum": 1 })),
                    (
                        "per_page",
                        json!({ "type": "integer", "minimum": 1, "maximum": 100 }),
                    ),
                ],
                &[],
                true,
            ),
            read_ann(),
            view(),
            "GET",
            "/v1/charges",
        ),
        get,
        tool(
            "test_notes_create",
            "Add a note to a charge",
            object_schema(
                &[
                    ("charge_id", string()),
                    ("text", json!({ "type": "string", "minLength": 1 })),
                    ("idempotency_key", string()),
                ],
                &["charge_id", "text"],
                false,
            ),
            write_ann(false),
            edit(),
            "POST",
            "/v1/charges/{charge_id}/notes",
        ),
        tool(
            "test_charges_cancel",
            "Cancel charge",
            object_schema(
                &[("id", header("string", "Target-Id")), ("reason", string())],
                &["id"],
                false,
            ),
            Annotations {
                destructive: true,
                idempotent: true,
                ..Annotations::default()
            },
            Access::new(Scope::Write, "charges.cancel"),
            "POST",
            "/v1/charges/{id}/cancel",
        ),
        tool(
            "test_jobs_schedule",
            "Schedule a job",
            object_schema(
                &[
                    ("name", string()),
                    ("priority", header("integer", "Priority")),
                    ("urgent", header("boolean", "Urgent")),
                ],
                &["name"],
                false,
            ),
            write_ann(false),
            edit(),
            "POST",
            "/v1/jobs",
        ),
        tool(
            "test_zones_route",
            "Route to a zone",
            object_schema(
                &[(
                    "target",
                    object_schema(
                        &[("zone", header("string", "Zone")), ("label", string())],
                        &[],
                        true,
                    ),
                )],
                &[],
                true,
            ),
            read_ann(),
            view(),
            "GET",
            "/v1/zones/route",
        ),
        tool(
            "test_echo",
            "Echo",
            object_schema(
                &[("label", header("string", "Label")), ("note", string())],
                &[],
                true,
            ),
            read_ann(),
            Access::read(),
            "GET",
            "/v1/echo",
        ),
        tool(
            "test_charges_receipt",
            "Charge receipt",
            object_schema(&[("id", string())], &["id"], true),
            read_ann(),
            view(),
            "GET",
            "/v1/charges/{id}/receipt",
        ),
        tool(
            "test_reminders_send",
            "Send a payment reminder",
            object_schema(&[("charge_id", string())], &["charge_id"], false),
            write_ann(false),
            edit(),
            "POST",
            "/v1/charges/{charge_id}/reminders",
        ),
        tool(
            "test_cache_purge",
            "Purge the cache",
            json!({ "type": "object" }),
            write_ann(true),
            edit(),
            "DELETE",
            "/v1/cache",
        ),
        tool(
            "test_webhooks_list",
            "List webhooks",
            object_schema(&[], &[], true),
            read_ann(),
            Access::new(Scope::Admin, "webhooks.view"),
            "GET",
            "/v1/webhooks",
        ),
        tool(
            "test_exports_create",
            "Create an export",
            object_schema(
                &[("format", json!({ "type": "string", "enum": ["csv"] }))],
                &[],
                false,
            ),
            write_ann(false),
            Access::new(Scope::Write, "exports.create"),
            "POST",
            "/v1/exports",
        ),
    ]
}

/// The scope names of [`TestDomain`] (the product's, so the fixtures read alike).
pub const SCOPES: ScopeNames = ScopeNames {
    read: "dunning.read",
    write: "dunning.write",
    admin: "dunning.admin",
};

/// The whole catalog served by [`TestDomain`].
pub fn catalog() -> Catalog {
    Catalog {
        scopes: SCOPES,
        tools: tools(),
        resources: vec![
            ResourceDef {
                uri: "test://static/info".into(),
                name: "info".into(),
                title: "Test info".into(),
                description: "Who is asking, as JSON.".into(),
                mime_type: "application/json".into(),
                access: Access::read(),
            },
            ResourceDef {
                uri: "test://static/broken".into(),
                name: "broken".into(),
                title: "Broken".into(),
                description: "Always fails inside the domain (internal error).".into(),
                mime_type: "application/json".into(),
                access: Access::read(),
            },
        ],
        templates: vec![
            TemplateDef {
                uri_template: "test://charges/{id}".into(),
                name: "charge".into(),
                title: "Charge".into(),
                description: "One charge, as JSON.".into(),
                mime_type: "application/json".into(),
                access: Access::new(Scope::Read, "charges.view"),
            },
            TemplateDef {
                uri_template: "test://charges/{id}/receipt".into(),
                name: "receipt".into(),
                title: "Receipt".into(),
                description: "Payment receipt (PDF), once the charge is paid.".into(),
                mime_type: "application/pdf".into(),
                access: Access::new(Scope::Read, "charges.view"),
            },
        ],
        prompts: vec![PromptDef {
            name: "test_triage".into(),
            title: "Triage a charge".into(),
            description: "Walks through one charge.".into(),
            arguments: vec![
                PromptArgument {
                    name: "charge_id".into(),
                    description: "The charge to triage.".into(),
                    required: true,
                },
                PromptArgument {
                    name: "tone".into(),
                    description: "Tone of the proposed message.".into(),
                    required: false,
                },
            ],
            access: Access::new(Scope::Read, "charges.view"),
        }],
    }
}

impl Dispatch for TestDomain {
    fn catalog(&self) -> Catalog {
        catalog()
    }

    /// In-memory state behind short locks: pure computation.
    fn may_block(&self) -> bool {
        false
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        match call.tool.name.as_str() {
            "test_charges_list" => Ok(self.list(call)),
            "test_charges_get" => Ok(Output::ok(self.charge_arg(call, "id")?.to_json())),
            "test_notes_create" => self.once(call, || self.create_note(call)),
            "test_charges_cancel" => self.once(call, || self.cancel(call)),
            "test_charges_receipt" => self.receipt(call),
            "test_reminders_send" => self.send_reminder(call),
            "test_jobs_schedule" | "test_zones_route" | "test_echo" => Ok(Output::ok(
                json!({ "echo": Value::Object(call.args.clone()) }),
            )),
            "test_cache_purge" => Ok(Output::NoContent),
            "test_webhooks_list" => Ok(Output::ok(json!({ "data": [], "meta": { "total": 0 } }))),
            "test_exports_create" => Ok(Output::Json {
                status: 202,
                body: json!({ "id": "EXP-1", "status": "queued" }).into(),
            }),
            other => Err(ToolError::new(
                ToolErrorCode::Internal,
                format!("no handler for {other}"),
            )),
        }
    }

    /// Records the refusal under the nonce, like any reply: the same state re-sent with
    /// `accept` replays the refusal instead of executing.
    fn decline(&self, call: &ToolCall<'_>) -> Result<(), ToolError> {
        let refused = ToolError::new(
            ToolErrorCode::ConfirmationDeclined,
            format!(
                "The user did not confirm {}; nothing was executed.",
                call.tool.name
            ),
        );
        match self.once(call, || Err(refused)) {
            Err(e) if e.code == ToolErrorCode::ConfirmationDeclined => Ok(()),
            Ok(_) => Err(ToolError::new(
                ToolErrorCode::Conflict,
                "this confirmation was already accepted and executed",
            )),
            Err(e) => Err(e),
        }
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        let c = self.cancelable(call)?;
        Ok(format!(
            "Cancel charge {} of {} for {}?",
            c.id,
            brl(c.cents),
            c.debtor
        ))
    }

    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        let org = &read.ctx.principal.organization;
        let Some(t) = read.template else {
            if read.uri == "test://static/broken" {
                return Err(ResourceError::Internal("the broken test resource".into()));
            }
            let info = json!({ "server": "test", "organization": org });
            return Ok(vec![Contents::Text {
                mime_type: "application/json".into(),
                text: info.to_string(),
            }]);
        };
        let id = read.vars.get("id").map(String::as_str).unwrap_or_default();
        let c = self.find(org, id).ok_or(ResourceError::NotFound)?;
        if t.name == "receipt" {
            if c.status != "paid" {
                return Err(ResourceError::Unavailable("NOT_SETTLED"));
            }
            return Ok(vec![Contents::Blob {
                mime_type: "application/pdf".into(),
                bytes: receipt_pdf(c.id),
            }]);
        }
        Ok(vec![Contents::Text {
            mime_type: "application/json".into(),
            text: c.to_json().to_string(),
        }])
    }

    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        if name != "test_triage" {
            return Err(format!("Unknown prompt: {name}"));
        }
        let id = args
            .get("charge_id")
            .map(String::as_str)
            .unwrap_or_default();
        let c = self
            .find(&ctx.principal.organization, id)
            .ok_or_else(|| format!("Unknown charge: {id}"))?;
        let tone = args.get("tone").map_or("neutral", String::as_str);
        let text = format!(
            "Triage charge {} ({}, {}, {}). Propose next steps in a {tone} tone; \
             present any cancellation as a proposal.",
            c.id,
            c.debtor,
            brl(c.cents),
            c.status
        );
        Ok((
            Some(format!("Triage of {}", c.id)),
            vec![json!({ "role": "user", "content": { "type": "text", "text": text } })],
        ))
    }

    fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        _context: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Completion {
        let wanted = match reference {
            CompletionRef::Prompt(p) => p == "test_triage" && argument == "charge_id",
            CompletionRef::Resource(_) => argument == "id",
        };
        if !wanted {
            return Completion::default();
        }
        let charges = self.charges.lock().expect("store lock");
        charges
            .iter()
            .filter(|c| c.org == ctx.principal.organization && c.id.starts_with(value))
            .map(|c| c.id.to_owned())
            .collect::<Vec<_>>()
            .into()
    }
}

#[cfg(test)]
mod tests {
    use super::brl;

    #[test]
    fn brl_formats_like_the_spec() {
        assert_eq!(brl(123_456), "R$ 1.234,56");
        assert_eq!(brl(99), "R$ 0,99");
        assert_eq!(brl(1_500_000), "R$ 15.000,00");
        assert_eq!(brl(123_456_789), "R$ 1.234.567,89");
    }
}
