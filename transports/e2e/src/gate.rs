//! [`GateDomain`]: a two-tool domain whose `gate_wait` tool blocks until the test opens its
//! [`Gate`], to hold requests in flight (in-flight cap, graceful shutdown).

use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use dunning_core::catalog::object_schema;
use dunning_core::{Access, Annotations, Catalog, Dispatch, Output, ToolCall, ToolDef, ToolError};
use serde_json::json;

/// How long `gate_wait` waits at most for the gate (so a failed test never hangs).
pub const GATE_LIMIT: Duration = Duration::from_secs(10);

/// A latch: closed until [`Gate::open`]; counts the calls waiting on it.
#[derive(Debug, Default)]
pub struct Gate {
    state: Mutex<(bool, usize)>,
    changed: Condvar,
}

impl Gate {
    /// Lets every waiting (and future) call through.
    pub fn open(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.0 = true;
        }
        self.changed.notify_all();
    }

    /// Calls currently waiting.
    pub fn waiting(&self) -> usize {
        self.state.lock().map(|s| s.1).unwrap_or(0)
    }

    /// Waits (at most `limit`) until `n` calls are waiting.
    pub fn wait_for_waiters(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if self.waiting() >= n {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    }

    fn pass(&self) {
        let Ok(mut s) = self.state.lock() else { return };
        s.1 += 1;
        self.changed.notify_all();
        let end = Instant::now() + GATE_LIMIT;
        while !s.0 {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.changed.wait_timeout(s, left) {
                Ok((guard, _)) => s = guard,
                Err(_) => return,
            }
        }
        s.1 -= 1;
    }
}

/// Tools `ping` (answers at once) and `gate_wait` (blocks on the gate), read scope.
#[derive(Debug, Default)]
pub struct GateDomain {
    /// The gate `gate_wait` waits on.
    pub gate: Arc<Gate>,
}

fn tool(name: &str) -> ToolDef {
    ToolDef {
        name: name.into(),
        title: name.into(),
        description: format!("Test tool {name}."),
        input_schema: object_schema(&[], &[], true),
        output_schema: None,
        annotations: Annotations {
            read_only: true,
            idempotent: true,
            ..Annotations::default()
        },
        access: Access::read(),
        route: None,
    }
}

impl Dispatch for GateDomain {
    fn catalog(&self) -> Catalog {
        Catalog {
            tools: vec![tool("ping"), tool("gate_wait")],
            ..Catalog::default()
        }
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        if call.tool.name == "gate_wait" {
            self.gate.pass();
        }
        Ok(Output::ok(json!({ "tool": call.tool.name })))
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        Ok(format!("Run {}?", call.tool.name))
    }
}

/// A server over a fresh [`GateDomain`] (test tokens of `dunning_tests::TestAuth`), and the
/// domain's gate.
pub fn gate_server() -> (Arc<dunning_core::Server<GateDomain>>, Arc<Gate>) {
    let domain = GateDomain::default();
    let gate = Arc::clone(&domain.gate);
    let server = dunning_core::Server::new(
        dunning_core::Config::default(),
        dunning_core::Keys::single(dunning_tests::TEST_KEY),
        domain,
        dunning_tests::TestAuth,
    )
    .expect("the gate catalog is valid");
    (Arc::new(server), gate)
}
