//! A test bed for domain tests: a private store with the two demo organizations and
//! their members, a controllable clock, and direct tool calls (no HTTP, no schema
//! validation: the end-to-end tests over sockets cover those).
//!
//! The store comes from the environment ([`store`]): `DUNNING_TEST_PG` set to a
//! PostgreSQL URL (`postgres://postgres@127.0.0.1:5432/dunning_test`) runs every test
//! on a fresh schema of that database, dropped at the end; unset, on an in-memory
//! SQLite database, as before.

use dunning_core::{Audience, Ctx, Dispatch, Output, Principal, ToolCall, ToolError, UnixTime};
use serde_json::{Map, Value};
use std::sync::Arc;

use crate::Domain;
use crate::demo;
use crate::store::Store;
use crate::store::postgres::PostgresStore;
use crate::store::sqlite::SqliteStore;

/// The variable naming the PostgreSQL database the tests run on.
pub const PG_VAR: &str = "DUNNING_TEST_PG";

/// The PostgreSQL URL the tests run on, when [`PG_VAR`] names one.
pub fn pg_url() -> Option<String> {
    std::env::var(PG_VAR).ok().filter(|u| !u.trim().is_empty())
}

/// Whether `done` answered yes, asked up to `tries` times `step` apart: a wait in
/// counted sleeps, bounded, for what another thread or process makes true (the domain's
/// sources read no clock, tests included: `tests/no_sockets.rs`).
pub fn polled(tries: u32, step: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    (0..tries).any(|_| {
        done() || {
            std::thread::sleep(step);
            false
        }
    })
}

/// The members epoch `epoch` answers once it is watched (PostgreSQL's listener up;
/// SQLite's at once), within 10 s ([`polled`]): before that nothing is kept from
/// membership, by rule.
pub fn watched_epoch(epoch: impl Fn() -> Option<u64>) -> u64 {
    let mut seen = None;
    let up = polled(500, std::time::Duration::from_millis(20), || {
        seen = epoch();
        seen.is_some()
    });
    assert!(up, "the membership listener never came up");
    seen.unwrap_or_default()
}

/// A private, empty (migrated) store for one test: a fresh schema of the PostgreSQL
/// database [`PG_VAR`] names (dropped with the store), else an in-memory SQLite
/// database.
pub fn store() -> Arc<dyn Store> {
    match pg_url() {
        Some(url) => Arc::new(
            PostgresStore::scratch(&url)
                .unwrap_or_else(|e| panic!("{PG_VAR}={url}: a scratch schema: {e}")),
        ),
        None => Arc::new(SqliteStore::in_memory().expect("in-memory SQLite")),
    }
}

/// 2026-12-01T12:00:00Z (09:00 in São Paulo), a Tuesday.
pub const T0: UnixTime = UnixTime::from_secs(1_796_126_400);

/// A domain on a private store ([`store`]).
pub struct Bed {
    /// The domain under test.
    pub domain: Domain,
    /// Current time.
    pub now: UnixTime,
    counter: u64,
}

impl std::fmt::Debug for Bed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bed")
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Bed {
    /// Organizations `demo` and `acme` with their members, no other data.
    pub fn new() -> Self {
        Self::on(store())
    }

    /// Like [`Bed::new`], on `store` (which another [`Domain`], e.g. a worker's, may
    /// share).
    pub fn on(store: Arc<dyn Store>) -> Self {
        let domain = Domain::new(store);
        demo::seed_org(&domain, "demo", "Demo Cobranças Ltda", "11222333000181", T0)
            .expect("seed demo");
        demo::seed_org(&domain, "acme", "Acme Serviços S.A.", "12345678000195", T0)
            .expect("seed acme");
        Self {
            domain,
            now: T0,
            counter: 0,
        }
    }

    /// The full demo data set.
    pub fn demo() -> Self {
        let bed = Self::new();
        demo::seed(&bed.domain, T0).expect("demo seed");
        bed
    }

    /// Moves the clock forward.
    pub fn advance_days(&mut self, days: u64) {
        self.now = self.now.plus_millis(days * 86_400_000);
    }

    /// A member's principal with every scope their role allows, for the MCP audience.
    pub fn as_member(&self, email: &str) -> Principal {
        let (org, _, _, role) = demo::MEMBERS
            .iter()
            .find(|m| m.1 == email)
            .copied()
            .expect("a demo member");
        let scopes = crate::org::role_scopes(role);
        self.domain
            .principal(
                org,
                email,
                &scopes,
                Audience::Mcp,
                self.now.plus_millis(3_600_000),
            )
            .expect("member principal")
    }

    /// Ana, owner of `demo`.
    pub fn ana(&self) -> Principal {
        self.as_member("ana@demo.example")
    }

    /// Carla, owner of `acme` (another organization).
    pub fn carla(&self) -> Principal {
        self.as_member("carla@acme.example")
    }

    /// Calls a tool as `who`.
    pub fn call(&mut self, who: &Principal, tool: &str, args: Value) -> Result<Output, ToolError> {
        self.call_with(who, tool, args, None)
    }

    /// Calls a tool as `who`, as a confirmed destructive call with `confirmation_key`.
    pub fn call_with(
        &mut self,
        who: &Principal,
        tool: &str,
        args: Value,
        confirmation_key: Option<&str>,
    ) -> Result<Output, ToolError> {
        self.counter += 1;
        let def = self
            .domain
            .catalog()
            .tools
            .into_iter()
            .find(|t| t.name == tool)
            .unwrap_or_else(|| panic!("no tool {tool}"));
        let args: Map<String, Value> = match args {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        let mut entropy = [0u8; 32];
        entropy[..8].copy_from_slice(&self.counter.to_be_bytes());
        let request_id = format!("req-{:08}", self.counter);
        let call = ToolCall {
            tool: &def,
            args: &args,
            ctx: Ctx {
                principal: who,
                now: self.now,
                request_id: &request_id,
                entropy: &entropy,
                ahead: None,
            },
            confirmation_key,
        };
        self.domain.call_tool(&call)
    }

    /// Calls a tool and returns its JSON body, panicking on errors.
    pub fn ok(&mut self, who: &Principal, tool: &str, args: Value) -> Value {
        match self.call(who, tool, args) {
            Ok(out) => out.tool_value(),
            Err(e) => panic!("{tool} failed: {e:?}"),
        }
    }

    /// Calls a tool expecting an error; returns its code string.
    pub fn err(&mut self, who: &Principal, tool: &str, args: Value) -> ToolError {
        match self.call(who, tool, args) {
            Ok(out) => panic!("{tool} unexpectedly succeeded: {:?}", out.tool_value()),
            Err(e) => e,
        }
    }
}

impl Default for Bed {
    fn default() -> Self {
        Self::new()
    }
}

/// The `id` of an answer (a created or read entity), panicking when it has none.
pub fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_owned()
}

/// The confirmation message of a destructive call of `tool` as `who`: the dry run the
/// protocol runs before asking the user (rolled back: nothing changes, and the bed's
/// request counter is not used). `Err` is the error the call would answer instead.
pub fn preflight(bed: &Bed, who: &Principal, tool: &str, args: Value) -> Result<String, ToolError> {
    let def = bed
        .domain
        .tool_def(tool)
        .unwrap_or_else(|| panic!("no tool {tool}"))
        .clone();
    let args: Map<String, Value> = match args {
        Value::Object(m) => m,
        other => panic!("{tool}: arguments must be an object, not {other}"),
    };
    let call = ToolCall {
        tool: &def,
        args: &args,
        ctx: Ctx {
            principal: who,
            now: bed.now,
            request_id: "preflight",
            entropy: &[9u8; 32],
            ahead: None,
        },
        confirmation_key: None,
    };
    bed.domain.preflight(&call)
}
