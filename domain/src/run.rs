//! One tool call, in order (the steps of the crate's docs): the handler found by name,
//! a transaction of the right kind scoped to the caller's organization, the
//! idempotency keys looked up before anything runs and the result remembered under them,
//! the [`Op`] the handler runs on, the answer ceiling for reads; and the two halves of a
//! destructive call's confirmation: the rehearsal (a dry run in a transaction the store
//! always rolls back, [`store::rehearse`]) and the record of a decline.

use dunning_core::{Body, Ctx, Output, ToolCall, ToolError, UnixTime};
use serde_json::{Map, Value, json};

use crate::op::Op;
use crate::store::{self, Remembered, StoreError, WriteScope};
use crate::tool::ToolSpec;
use crate::{Domain, DomainError, IDEMPOTENCY_TTL_MS, brazil, ceiling, idempotency, org};

impl Domain {
    pub(crate) fn spec(&self, name: &str) -> Result<&ToolSpec, ToolError> {
        self.registry.get(name).ok_or_else(|| {
            ToolError::new(
                dunning_core::ToolErrorCode::NotFound,
                format!("Unknown tool {name}"),
            )
        })
    }

    fn settings(tx: &mut dyn store::Tx, org: &str) -> Result<org::Settings, DomainError> {
        /// Every call reads its organization's settings: the rest of the document is
        /// skipped unparsed.
        #[derive(serde::Deserialize)]
        struct Only {
            #[serde(default)]
            settings: org::Settings,
        }
        Ok(
            store::load::<Only>(tx, store::Kind::Organization, org, org)?
                .map(|o| o.settings)
                .unwrap_or_default(),
        )
    }

    /// A read-only call's settings: kept between calls under the rule of `kept.rs`, with
    /// `epoch` asked before the store is read (a read transaction takes its snapshot at
    /// its first statement, after this).
    pub(crate) fn read_settings(
        &self,
        tx: &mut dyn store::Tx,
        org: &str,
        epoch: Option<u64>,
        now: UnixTime,
    ) -> Result<org::Settings, DomainError> {
        let Some(epoch) = epoch else {
            return Self::settings(tx, org);
        };
        let kept = &self.kept.settings;
        if let Some(settings) = kept.get(org, epoch, now) {
            return Ok(settings);
        }
        let settings = Self::settings(tx, org)?;
        kept.put(org.to_owned(), settings.clone(), epoch, now);
        Ok(settings)
    }

    /// Runs a handler on a fresh [`Op`].
    pub(crate) fn op_run<R>(
        &self,
        tx: &mut dyn store::Tx,
        call: &ToolCall<'_>,
        dry_run: bool,
        f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
    ) -> Result<R, DomainError> {
        let principal = call.ctx.principal;
        if !call.tool.annotations.read_only {
            // Before anything is read or written: what would be stored must be clean text.
            brazil::text::refuse_controls(call.args)?;
        }
        let read_only = call.tool.annotations.read_only;
        // Asked once, before the call's first statement: the epoch of everything it keeps.
        let epoch = read_only.then(|| self.members_epoch()).flatten();
        let settings = if read_only {
            self.read_settings(tx, &principal.organization, epoch, call.ctx.now)?
        } else {
            Self::settings(tx, &principal.organization)?
        };
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
            &self.registry,
        );
        op.dry_run = dry_run;
        op.memo = epoch.map(|epoch| crate::kept::Memo {
            rows: &self.kept,
            epoch,
        });
        f(&mut op)
    }

    pub(crate) fn execute(&self, call: &ToolCall<'_>) -> Result<Output, DomainError> {
        let spec = self
            .spec(&call.tool.name)
            .map_err(|e| StoreError(e.message))?;
        if call.tool.annotations.read_only {
            let run = |tx: &mut dyn store::Tx| self.op_run(tx, call, false, spec.run);
            let out = match call.ctx.ahead {
                Some(ahead) => store::read_ahead(&*self.store, ahead, run)?,
                None => store::read(&*self.store, run)?,
            };
            ceiling::check(&out, self.answer_limit)?;
            return Ok(out);
        }
        let org = call.ctx.principal.organization.clone();
        let ids = idempotency::Keys::of(call);
        let keys = &ids.keys;
        let (out, fresh) = store::write(&*self.store, WriteScope::Org(&org), |tx| {
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
            store::write(&*self.store, WriteScope::Org(&org), |tx| {
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
        store::write(&*self.store, WriteScope::Sweep, |tx| {
            Ok(tx.forget_before(before)?)
        })
    }

    /// Forgets the authorization server's records that expired before `now` (codes,
    /// refresh tokens). How many.
    pub fn sweep_grants(&self, now: UnixTime) -> Result<u64, DomainError> {
        store::write(&*self.store, WriteScope::Grants, |tx| {
            Ok(tx.grant_sweep(now.as_millis())?)
        })
    }

    /// The preflight of a destructive call: what the user will be asked, after every
    /// check that needs no consent passed — an `idempotency_key` reused with other
    /// arguments first, then the handler itself, run dry. Nothing is kept.
    pub(crate) fn rehearse(&self, call: &ToolCall<'_>) -> Result<String, DomainError> {
        let spec = self
            .spec(&call.tool.name)
            .map_err(|e| StoreError(e.message))?;
        let ids = idempotency::Keys::of(call);
        let org = &call.ctx.principal.organization;
        store::rehearse(&*self.store, WriteScope::Org(org), |tx| {
            ids.refuse_conflict(tx, org, &call.tool.name)?;
            let described = match spec.describe {
                Some(d) => self.op_run(tx, call, true, d)?,
                None => format!("{}?", call.tool.title),
            };
            self.op_run(tx, call, true, spec.run)?;
            Ok(described)
        })
    }

    /// A declined confirmation: its nonce is recorded, so the same `requestState` never
    /// executes later.
    pub(crate) fn record_decline(&self, call: &ToolCall<'_>) -> Result<(), DomainError> {
        let ids = idempotency::Keys::of(call);
        let org = &call.ctx.principal.organization;
        let now = call.ctx.now.as_millis();
        store::write(&*self.store, WriteScope::Org(org), |tx| {
            ids.decline(tx, org, &call.tool.name, now)
        })
    }
}

fn output_to_json(out: &Output) -> Value {
    match out {
        Output::Json { status, body } => {
            json!({ "status": status, "body": body.clone().into_value() })
        }
        Output::NoContent => json!({ "status": 204 }),
        Output::File(f) => json!({ "status": 200, "file": f.download_path }),
    }
}

fn output_from_json(v: &Value) -> Output {
    match (v.get("status").and_then(Value::as_u64), v.get("body")) {
        (Some(204), None) => Output::NoContent,
        (status, Some(body)) => Output::Json {
            status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(200),
            body: Body::Tree(body.clone()),
        },
        _ => Output::ok(v.clone()),
    }
}

/// Who a worker acts as when it runs an [`Op`] outside any request.
#[derive(Clone, Copy, Debug)]
pub struct Worker {
    /// The actor its events name (`system:...`).
    pub actor: &'static str,
    /// The scope it holds.
    pub scope: dunning_core::Scope,
    /// What stands for the request id in its ops.
    pub request_id: &'static str,
}

impl Domain {
    /// Runs `f` on an [`Op`] of `worker` in a write transaction of `org`, with ids drawn
    /// from `seed` (the caller's: a fixed one for demo data, else one from
    /// [`Domain::lend_entropy`]'s source).
    pub fn with_worker_op<R>(
        &self,
        worker: &Worker,
        org: &str,
        now: UnixTime,
        seed: [u8; 32],
        f: impl FnOnce(&mut Op<'_>) -> Result<R, DomainError>,
    ) -> Result<R, DomainError> {
        let principal = dunning_core::Principal {
            subject: worker.actor.into(),
            organization: org.to_owned(),
            scope: Some(worker.scope),
            scopes: Vec::new(),
            permissions: Default::default(),
            expires_at: now.plus_millis(3_600_000),
            audience: dunning_core::Audience::Api,
        };
        let args = Map::new();
        store::write(&*self.store, WriteScope::Org(org), |tx| {
            let settings = Self::settings(tx, org)?;
            let mut op = Op::new(
                tx,
                org,
                &principal,
                now,
                &args,
                worker.request_id,
                seed,
                settings,
                &self.outbound,
                &self.registry,
            );
            f(&mut op)
        })
    }
}
