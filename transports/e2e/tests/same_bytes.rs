//! Same bytes everywhere: every conformance case of `tests/conformance/` is replayed
//! through the in-memory harness and, over real loopback sockets, through the tokio,
//! blocking and mio adapters, each delivery whole, one byte per write, and in seeded
//! random pieces. Every answer must be byte-identical to the harness's (`Date` aside).
//!
//! Each adapter runs with [`FixedEnv`] (the harness's clock and request counter) and, for
//! every run of a case, a fresh test domain and clock, as the harness does with its fresh
//! server. The adapters are started once per test thread, not per case. Cases that simulate load
//! (`load=overloaded|draining`) cannot be reproduced over a socket and are ignored here;
//! the real overload and drain paths are tested in `adversarial.rs`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use dunning_core::dispatch::{CompletionRef, ResourceRead};
use dunning_core::{
    Catalog, Config, Contents, Ctx, Dispatch, Keys, Load, Output, ResourceError, Server, ToolCall,
    ToolError,
};
use dunning_e2e::{Adapter, Running, Split, exchange, start, strip_date};
use dunning_harness::{Harness, START};
use dunning_runtime::{FixedEnv, NoopObserver, Options};
use dunning_tests::fixture::{Case, load_dir};
use dunning_tests::runner::{HarnessTransport, Transport, replay};
use dunning_tests::{TEST_KEY, TestAuth, TestDomain, TestLimiter, conformance_dir, test_server};
use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

/// The test domain behind a switch: [`Fresh::reset`] puts a new one in place, so one
/// running adapter serves every case with a fresh domain, as the harness's fresh server.
#[derive(Default)]
struct Fresh(Mutex<Arc<TestDomain>>);

impl Fresh {
    fn reset(&self) {
        *self.0.lock().unwrap() = Arc::new(TestDomain::new());
    }
    fn get(&self) -> Arc<TestDomain> {
        Arc::clone(&self.0.lock().unwrap())
    }
}

impl Dispatch for Fresh {
    fn catalog(&self) -> Catalog {
        self.get().catalog()
    }
    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        self.get().call_tool(call)
    }
    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        self.get().preflight(call)
    }
    fn decline(&self, call: &ToolCall<'_>) -> Result<(), ToolError> {
        self.get().decline(call)
    }
    fn read_resource(&self, read: &ResourceRead<'_>) -> Result<Vec<Contents>, ResourceError> {
        self.get().read_resource(read)
    }
    fn get_prompt(
        &self,
        name: &str,
        args: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> Result<(Option<String>, Vec<Value>), String> {
        self.get().get_prompt(name, args, ctx)
    }
    fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        context: &BTreeMap<String, String>,
        ctx: Ctx<'_>,
    ) -> dunning_core::Completion {
        self.get()
            .complete(reference, argument, value, context, ctx)
    }
    fn ready(&self) -> bool {
        self.get().ready()
    }
}

/// One running adapter with its switchable domain and clock.
struct Served {
    adapter: Adapter,
    running: Running,
    server: Arc<Server<Fresh>>,
    env: Arc<FixedEnv>,
}

impl Served {
    fn start(adapter: Adapter) -> Self {
        let env = Arc::new(FixedEnv::new(START));
        let server = Arc::new(
            Server::new(
                Config::default(),
                Keys::single(TEST_KEY),
                Fresh::default(),
                TestAuth,
            )
            .expect("the test catalog is valid")
            .with_limiter(TestLimiter),
        );
        let opts = Options {
            env: env.clone(),
            workers: 2,
            ..Options::default()
        };
        let running = start(adapter, Arc::clone(&server), opts, Arc::new(NoopObserver))
            .expect("the adapter starts");
        Self {
            adapter,
            running,
            server,
            env,
        }
    }

    /// The case's answers, from a fresh domain and clock.
    fn replay(&self, case: &Case, split: Split) -> Result<Vec<Vec<u8>>, String> {
        self.server.dispatch().reset();
        self.env.reset(START);
        replay(
            case,
            &mut Socket {
                addr: self.running.addr(),
                env: Arc::clone(&self.env),
                split,
            },
        )
    }
}

/// Sets of the three running adapters, one per test thread at a time.
static POOL: Mutex<Vec<Vec<Served>>> = Mutex::new(Vec::new());

/// Carries a case's requests to a running adapter, one connection per request.
struct Socket {
    addr: std::net::SocketAddr,
    env: Arc<FixedEnv>,
    split: Split,
}

impl Transport for Socket {
    fn send(&mut self, raw: &[u8]) -> Vec<u8> {
        exchange(self.addr, raw, self.split)
            .unwrap_or_else(|e| format!("<client error: {e}>").into_bytes())
    }

    fn advance(&mut self, ms: u64) -> Result<(), String> {
        self.env.advance(ms);
        Ok(())
    }
}

fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn check(case: &Case) -> Result<(), Failed> {
    let reference = replay(
        case,
        &mut HarnessTransport {
            harness: Harness::new(test_server()),
            split: Split::Whole,
        },
    )?;
    let reference: Vec<Vec<u8>> = reference.iter().map(|r| strip_date(r)).collect();
    let splits = [
        Split::Whole,
        Split::EveryByte,
        Split::Random(seed(&case.name)),
    ];
    let set = POOL
        .lock()
        .unwrap()
        .pop()
        .unwrap_or_else(|| Adapter::ALL.map(Served::start).into());
    let result = compare(&set, case, &reference, &splits);
    POOL.lock().unwrap().push(set);
    result
}

fn compare(
    set: &[Served],
    case: &Case,
    reference: &[Vec<u8>],
    splits: &[Split],
) -> Result<(), Failed> {
    for served in set {
        let adapter = served.adapter;
        for &split in splits {
            let answers = served.replay(case, split)?;
            for (i, (got, want)) in answers.iter().zip(reference).enumerate() {
                let got = strip_date(got);
                if got != *want {
                    return Err(format!(
                        "{} ({split:?}), step {}: answer differs from the harness\n--- harness ---\n{}\n--- {} ---\n{}",
                        adapter.name(),
                        i + 1,
                        String::from_utf8_lossy(want),
                        adapter.name(),
                        String::from_utf8_lossy(&got),
                    )
                    .into());
                }
            }
        }
    }
    Ok(())
}

fn main() {
    let args = Arguments::from_args();
    let cases = match load_dir(&conformance_dir()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("cannot load the conformance cases: {e}");
            std::process::exit(2);
        }
    };
    let count = cases.len();
    let mut trials = vec![Trial::test("count/some_cases", move || {
        if count > 0 {
            Ok(())
        } else {
            Err("no conformance case found".into())
        }
    })];
    for case in cases {
        let simulated_load = case.steps.iter().any(|s| s.load != Load::Normal);
        trials.push(
            Trial::test(case.name.clone(), move || check(&case)).with_ignored_flag(simulated_load),
        );
    }
    libtest_mimic::run(&args, trials).exit();
}
