//! # dunning-domain: the dunning business
//!
//! Debtors, charges, rulers, agreements, credit bureau, protest, exports and webhooks on
//! a transactional [`store::Store`] (SQLite by default). [`Domain`] implements the core's
//! [`Dispatch`]: every tool runs the same handler ([`tool::ToolSpec::run`]) whether it
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

pub mod args;
pub mod backlog;
pub mod brazil;
pub mod catalog;
pub mod ceiling;
pub mod completions;
pub mod demo;
pub mod documents;
pub mod engine;
pub mod error;
mod idempotency;
mod kept;
pub mod list;
pub mod mcp;
pub mod oauth;
pub mod op;
pub mod ops;
pub mod org;
pub mod outbound;
mod run;
pub mod scheduler;
pub mod schema;
pub mod status;
pub mod store;
#[doc(hidden)]
pub mod testing;
pub mod tool;

use std::collections::BTreeMap;
use std::sync::Arc;

use dunning_core::{
    Audience, AuthError, Catalog, CompletionRef, Contents, Ctx, Dispatch, Output, Principal,
    ResourceError, ResourceRead, ToolCall, ToolError, UnixTime,
};
use serde_json::{Map, Value};

pub use error::DomainError;
pub use run::Worker;
use store::Store;

/// How long idempotency keys are kept (at least 24 h, spec).
pub const IDEMPOTENCY_TTL_MS: u64 = 24 * 3600 * 1000;

/// The dunning domain.
pub struct Domain {
    store: Arc<dyn Store>,
    registry: catalog::Registry,
    outbound: outbound::Outbound,
    answer_limit: usize,
    webhook_driver: Arc<dyn ops::webhooks::WebhookDriver>,
    worker_entropy: op::WorkerEntropy,
    /// What read-only calls keep of membership's rows (`kept.rs`).
    kept: kept::KeptRows,
}

impl std::fmt::Debug for Domain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Domain")
            .field("tools", &self.registry.tools().len())
            .finish_non_exhaustive()
    }
}

impl Domain {
    /// A domain on `store`, with its tool table built here, once.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self {
            store,
            registry: catalog::Registry::new(),
            outbound: outbound::Outbound::new(org::Settings::default().outbound_per_minute),
            answer_limit: ceiling::MAX_ANSWER_BYTES,
            webhook_driver: Arc::new(ops::webhooks::RecordingDriver::new()),
            worker_entropy: op::WorkerEntropy::default(),
            kept: kept::KeptRows::default(),
        }
    }

    /// Chooses the driver `dunning_webhooks_test` posts through (default: a
    /// [`ops::webhooks::RecordingDriver`] of this domain's own, nothing leaves the machine).
    /// The binary gives the same driver to the outbox's [`ops::webhooks::tick`].
    pub fn set_webhook_driver(&mut self, driver: Arc<dyn ops::webhooks::WebhookDriver>) {
        self.webhook_driver = driver;
    }

    /// The driver `dunning_webhooks_test` posts through.
    pub fn webhook_driver(&self) -> &dyn ops::webhooks::WebhookDriver {
        &*self.webhook_driver
    }

    /// Lends the entropy the workers' operations are seeded from (see
    /// [`op::WorkerEntropy`]); the binary lends fresh OS bytes once, at startup.
    pub fn lend_entropy(&mut self, seed: [u8; 32]) {
        self.worker_entropy = op::WorkerEntropy::new(seed);
        // The kept rows' hash seed: the first draw of the lent entropy.
        let drawn = self
            .worker_entropy
            .draw("", UnixTime::from_secs(0), "charge rows");
        let mut rows = [0u8; 8];
        rows.copy_from_slice(&drawn[..8]);
        self.kept.charge_rows = ops::charges::Rows::seeded(u64::from_le_bytes(rows));
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

    /// The tool table.
    pub fn registry(&self) -> &catalog::Registry {
        &self.registry
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
        Ok(self
            .membership(org_claim, subject)?
            .principal(scopes, audience, expires_at))
    }

    /// What the store says of `subject` in `org_claim` (the part of a principal that
    /// does not come from the token): one read transaction.
    pub fn membership(&self, org_claim: &str, subject: &str) -> Result<Membership, AuthError> {
        let found = store::read(&*self.store, |tx| {
            let Some(org) = org::find_org(tx, org_claim)? else {
                return Ok(None);
            };
            let member = org::find_member(tx, &org.id, subject)?;
            Ok(member.map(|m| (org, m)))
        })
        .map_err(|_| AuthError::Lookup)?;
        let (org, member) = found.ok_or(AuthError::NotMember)?;
        Ok(Membership {
            permissions: Arc::new(member.effective_permissions()),
            subject: member.email,
            organization: org.id,
        })
    }

    /// The store's [`store::Store::members_epoch`]: a [`Membership`] read while it had
    /// one value is current while it keeps it.
    pub fn members_epoch(&self) -> Option<u64> {
        self.store.members_epoch()
    }

    /// The store's [`store::Store::look_for_member_changes`]: moves the epoch when
    /// another program changed membership in the store's file.
    pub fn look_for_member_changes(&self) {
        self.store.look_for_member_changes();
    }
}

/// A person's standing in an organization, as the store has it: what the binary's
/// authenticator caches between requests (keyed by the token's organization and
/// subject, checked against [`Domain::members_epoch`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    /// The organization's id.
    pub organization: String,
    /// The person's e-mail.
    pub subject: String,
    /// The dashboard permissions of the person's role, and their own.
    pub permissions: Arc<std::collections::BTreeSet<String>>,
}

impl Membership {
    /// The principal of a token of this person carrying `scopes`.
    pub fn principal(
        &self,
        scopes: &[String],
        audience: Audience,
        expires_at: UnixTime,
    ) -> Principal {
        let scope = scopes.iter().filter_map(|s| catalog::SCOPES.parse(s)).max();
        Principal {
            subject: self.subject.clone(),
            organization: self.organization.clone(),
            scope,
            scopes: scopes.to_vec(),
            permissions: self.permissions.clone(),
            expires_at,
            audience,
        }
    }
}

impl Dispatch for Domain {
    fn catalog(&self) -> Catalog {
        Catalog {
            tools: self
                .registry
                .tools()
                .iter()
                .map(|t| t.def.clone())
                .collect(),
            resources: mcp::resources(self),
            templates: mcp::templates(self),
            prompts: mcp::prompts(self),
            scopes: catalog::SCOPES,
        }
    }

    fn ahead(&self) -> Option<Arc<dyn dunning_core::Ahead>> {
        self.store.ahead()
    }

    fn read_may_block(&self) -> bool {
        self.store.read_may_wait()
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        self.execute(call).map_err(ToolError::from)
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        self.rehearse(call).map_err(ToolError::from)
    }

    fn decline(&self, call: &ToolCall<'_>) -> Result<(), ToolError> {
        self.record_decline(call).map_err(ToolError::from)
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
