//! # dunning-domain: the dunning business
//!
//! Debtors, charges, rulers, agreements, credit bureau, protest, exports and webhooks on
//! a transactional [`store::Store`] (SQLite by default). [`Domain`] implements the core's
//! [`Dispatch`]: every tool runs the same handler ([`spec::ToolSpec::run`]) whether it
//! comes through MCP `tools/call` or its `/v1` REST route.
//!
//! ## One call, in order
//! 1. The core validated scope, permission and `inputSchema`.
//! 2. [`Domain::call_tool`] opens a transaction — read for read-only tools, write
//!    otherwise — scoped to the caller's organization.
//! 3. Writes: an `idempotency_key` (and the confirmation nonce of a confirmed
//!    destructive call) is looked up first; a replay returns the stored result, the same
//!    key with other arguments is `IDEMPOTENCY_CONFLICT`.
//! 4. The handler runs on an [`op::Op`]; every change writes an event in the same
//!    transaction; the result is remembered under the keys; commit.
//!
//! A destructive tool's preflight is a dry run of the same handler in a transaction
//! that is always rolled back: every check that does not depend on consent runs, by
//! construction the same checks as the real call. It first refuses an
//! `idempotency_key` already used with other arguments, and a declined confirmation
//! records its nonce, so the same `requestState` never executes later
//! ([`idempotency`] has the order).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod catalog;
pub mod ceiling;
pub mod completions;
pub mod demo;
pub mod documents;
pub mod engine;
pub mod error;
mod idempotency;
pub mod list;
pub mod mcp;
pub mod op;
pub mod ops;
pub mod org;
pub mod outbound;
pub mod rules;
pub mod schema;
pub mod spec;
pub mod store;
#[doc(hidden)]
pub mod testing;
pub mod webhooks;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use dunning_core::{
    Audience, AuthError, Catalog, CompletionRef, Contents, Ctx, Dispatch, Output, Principal,
    ResourceError, ResourceRead, ToolCall, ToolError, UnixTime,
};
use serde_json::{Map, Value, json};

pub use error::DomainError;
use op::Op;
use spec::ToolSpec;
use store::{Remembered, Store, StoreError};

/// How long idempotency keys are kept (at least 24 h, spec).
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 3600 * 1000;

/// The dunning domain.
pub struct Domain {
    store: Arc<dyn Store>,
    tools: Vec<ToolSpec>,
    index: HashMap<String, usize>,
    outbound: outbound::Outbound,
    answer_limit: usize,
    webhook_driver: Arc<dyn webhooks::WebhookDriver>,
    worker_entropy: op::WorkerEntropy,
}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

/// Every tool, in catalogue order: [`catalog::tools`].
pub use catalog::tools as all_tools;

impl Domain {
    /// A domain on `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        let tools = all_tools();
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.def.name.clone(), i))
            .collect();
        Self {
            store,
            tools,
            index,
            outbound: outbound::Outbound::new(org::Settings::default().outbound_per_minute),
            answer_limit: ceiling::MAX_ANSWER_BYTES,
            webhook_driver: Arc::new(webhooks::RecordingDriver::new()),
            worker_entropy: op::WorkerEntropy::default(),
        }
    }

    /// Chooses the driver `dunning_webhooks_test` posts through (default: a
    /// [`webhooks::RecordingDriver`] of this domain's own, nothing leaves the machine).
    /// The binary gives the same driver to the outbox's [`webhooks::tick`].
    pub fn set_webhook_driver(&mut self, driver: Arc<dyn webhooks::WebhookDriver>) {
        self.webhook_driver = driver;
    }

    /// The driver `dunning_webhooks_test` posts through.
    pub fn webhook_driver(&self) -> &dyn webhooks::WebhookDriver {
        &*self.webhook_driver
    }

    /// Lends the entropy the workers' operations are seeded from (see
    /// [`op::WorkerEntropy`]); the binary lends fresh OS bytes once, at startup.
    pub fn lend_entropy(&mut self, seed: [u8; 32]) {
        self.worker_entropy = op::WorkerEntropy::new(seed);
    }

    /// The seed of one worker operation of `org` at `now` in `phase`.
    pub(crate) fn worker_seed(&self, org: &str, now: UnixTime, phase: &str) -> [u8; 32] {
        self.worker_entropy.draw(org, now, phase)
    }

    /// The largest JSON answer a read tool may give, in bytes (default
    /// [`ceiling::MAX_ANSWER_BYTES`]); larger answers are refused, naming the limit.
    pub fn set_answer_limit(&mut self, bytes: usize) {
        self.answer_limit = bytes;
    }

    /// The outbound limiter.
    pub fn outbound(&self) -> &outbound::Outbound {
        &self.outbound
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// The principal of a verified token: organization by id or slug, person by e-mail
    /// or id. A person no longer in the organization is refused, whatever the token says.
    pub fn principal(
        &self,
        org_claim: &str,
        subject: &str,
        scopes: &[String],
        audience: Audience,
        expires_at: UnixTime,
    ) -> Result<Principal, AuthError> {
        let found = store::read(&*self.store, |tx| {
            let Some(org) = org::find_org(tx, org_claim)? else {
                return Ok(None);
            };
            let member = org::find_member(tx, &org.id, subject)?;
            Ok(member.map(|m| (org, m)))
        })
        .map_err(|_| AuthError::NotMember)?;
        let (org, member) = found.ok_or(AuthError::NotMember)?;
        let scope = scopes.iter().filter_map(|s| catalog::SCOPES.parse(s)).max();
        Ok(Principal {
            subject: member.email.clone(),
            organization: org.id,
            scope,
            scopes: scopes.to_vec(),
            permissions: member.effective_permissions(),
            expires_at,
            audience,
        })
    }

    fn spec(&self, name: &str) -> Result<&ToolSpec, ToolError> {
        self.index
            .get(name)
            .map(|&i| &self.tools[i])
            .ok_or_else(|| {
                ToolError::new(
                    dunning_core::ToolErrorCode::NotFound,
                    format!("Unknown tool {name}"),
                )
            })
    }

    fn settings(tx: &mut dyn store::Tx, org: &str) -> Result<org::Settings, DomainError> {
        Ok(
            store::load::<org::Organization>(tx, store::Kind::Organization, org, org)?
                .map(|o| o.settings)
                .unwrap_or_default(),
        )
    }

    /// Runs a handler on a fresh [`Op`].
    fn op_run<R>(
        &self,
        tx: &mut dyn store::Tx,
        call: &ToolCall<'_>,
        dry_run: bool,
        f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
    ) -> Result<R, DomainError> {
        let principal = call.ctx.principal;
        if !call.tool.annotations.read_only {
            // Before anything is read or written: what would be stored must be clean text.
            rules::text::refuse_controls(call.args)?;
        }
        let settings = Self::settings(tx, &principal.organization)?;
        let mut op = Op::new(
            tx,
            &principal.organization,
            principal,
            call.ctx.now,
            call.args,
            call.ctx.request_id,
            *call.ctx.entropy,
            settings,
            &self.outbound,
        );
        op.dry_run = dry_run;
        f(&mut op)
    }

    fn execute(&self, call: &ToolCall<'_>) -> Result<Output, DomainError> {
        let spec = self
            .spec(&call.tool.name)
            .map_err(|e| StoreError(e.message))?;
        if call.tool.annotations.read_only {
            let out = store::read(&*self.store, |tx| self.op_run(tx, call, false, spec.run))?;
            ceiling::check(&out, self.answer_limit)?;
            return Ok(out);
        }
        let org = call.ctx.principal.organization.clone();
        let ids = idempotency::Keys::of(call);
        let keys = &ids.keys;
        let (out, fresh) = store::write(&*self.store, |tx| {
            if let Some(r) = ids.recall(tx, &org, &call.tool.name)? {
                return Ok((output_from_json(&r), false));
            }
            let out = self.op_run(tx, call, false, spec.run)?;
            let stored = Remembered {
                tool: call.tool.name.clone(),
                digest: ids.digest.clone(),
                result: output_to_json(&out),
                at_ms: call.ctx.now.as_millis(),
            };
            for key in keys {
                tx.remember(&org, key, &stored)?;
            }
            Ok((out, true))
        })?;
        let Some(after) = spec.after.filter(|_| fresh) else {
            return Ok(out);
        };
        // The handler committed (and was remembered): now the work that must not hold the
        // writer, whose answer then replaces the remembered one.
        let out = after(self, call, out)?;
        if !keys.is_empty() {
            let result = output_to_json(&out);
            store::write(&*self.store, |tx| {
                for key in keys {
                    tx.rewrite_remembered(&org, key, &result)?;
                }
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// Runs a read-only tool for the caller in `ctx` (resources and prompts are views of
    /// the same handlers). `None` when no such read tool is built.
    pub fn read_tool(
        &self,
        tool: &str,
        args: Map<String, Value>,
        ctx: Ctx<'_>,
    ) -> Option<Result<Output, DomainError>> {
        let spec = self.spec(tool).ok()?;
        if !spec.def.annotations.read_only {
            return None;
        }
        if !ctx.principal.may(&spec.def.access) {
            return Some(Err(DomainError::Forbidden(format!(
                "{tool} is not allowed"
            ))));
        }
        let call = ToolCall {
            tool: &spec.def,
            args: &args,
            ctx,
            confirmation_key: None,
        };
        Some(
            store::read(&*self.store, |tx| self.op_run(tx, &call, false, spec.run)).and_then(
                |out| {
                    ceiling::check(&out, self.answer_limit)?;
                    Ok(out)
                },
            ),
        )
    }

    /// The definition of a built tool.
    pub fn tool_def(&self, tool: &str) -> Option<&dunning_core::ToolDef> {
        self.spec(tool).ok().map(|s| &s.def)
    }

    /// Forgets idempotency records older than the retention (run by the worker).
    pub fn sweep_idempotency(&self, now: UnixTime) -> Result<u64, DomainError> {
        let before = now.as_millis().saturating_sub(IDEMPOTENCY_TTL_MS);
        store::write(&*self.store, |tx| Ok(tx.forget_before(before)?))
    }
}

fn output_to_json(out: &Output) -> Value {
    match out {
        Output::Json { status, body } => json!({ "status": status, "body": body }),
        Output::NoContent => json!({ "status": 204 }),
        Output::File(f) => json!({ "status": 200, "file": f.download_path }),
    }
}

fn output_from_json(v: &Value) -> Output {
    match (v.get("status").and_then(Value::as_u64), v.get("body")) {
        (Some(204), None) => Output::NoContent,
        (status, Some(body)) => Output::Json {
            status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
            body: body.clone(),
        },
        _ => Output::ok(v.clone()),
    }
}

impl Dispatch for Domain {
    fn catalog(&self) -> Catalog {
        Catalog {
            tools: self.tools.iter().map(|t| t.def.clone()).collect(),
            resources: mcp::resources(self),
            templates: mcp::templates(self),
            prompts: mcp::prompts(self),
            scopes: catalog::SCOPES,
        }
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        self.execute(call).map_err(ToolError::from)
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        let spec = self.spec(&call.tool.name)?;
        let mut message = None;
        let ids = idempotency::Keys::of(call);
        let org = &call.ctx.principal.organization;
        let dry: Result<(), DomainError> = store::write(&*self.store, |tx| {
            // Needs no consent, so it comes before the user is asked (§13).
            ids.refuse_conflict(tx, org, &call.tool.name)?;
            let described = match spec.describe {
                Some(d) => self.op_run(tx, call, true, d)?,
                None => format!("{}?", call.tool.title),
            };
            self.op_run(tx, call, true, spec.run)?;
            message = Some(described);
            // Always roll back: this was only a rehearsal.
            Err(DomainError::Conflict(String::new()))
        });
        match (dry, message) {
            (Err(DomainError::Conflict(m)), Some(msg)) if m.is_empty() => Ok(msg),
            (Err(e), _) => Err(e.into()),
            (Ok(()), _) => Err(ToolError::new(
                dunning_core::ToolErrorCode::Internal,
                "preflight",
            )),
        }
    }

    fn decline(&self, call: &ToolCall<'_>) -> Result<(), ToolError> {
        let ids = idempotency::Keys::of(call);
        let org = &call.ctx.principal.organization;
        let now = call.ctx.now.as_millis();
        store::write(&*self.store, |tx| {
            ids.decline(tx, org, &call.tool.name, now)
        })
        .map_err(ToolError::from)
    }

    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        mcp::read(self, read)
    }

    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        mcp::prompt(self, name, args, ctx)
    }

    fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> dunning_core::Completion {
        completions::complete(self, reference, argument, value, context, ctx)
    }

    fn ready(&self) -> bool {
        self.store.ping()
    }
}

/// An empty argument map (for internal calls).
pub fn no_args() -> Map<String, Value> {
    Map::new()
}
