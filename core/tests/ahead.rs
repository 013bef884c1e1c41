//! Reads ahead (`dunning_core::ahead`): which requests are offered an `Ahead`, and a
//! request run in rounds (a run that misses reads, then one that has them) answers as
//! it would in one run and is counted by the rate limiter once.

mod common;

use std::fmt;
use std::future::ready;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use common::{TestAuth, TestDomain, legacy, modern, tool_call};
use dunning_core::catalog::Catalog;
use dunning_core::config::Config;
use dunning_core::dispatch::Dispatch;
use dunning_core::fuzzing::{NOW, env};
use dunning_core::{
    Ahead, Audience, AuthError, Authenticate, Limited, Output, Place, Principal, RateLimit, Reads,
    Server, ToolCall, ToolError, UnixTime,
};
use serde_json::json;

/// One read a call needs, fetched by the round its first run asks for.
#[derive(Default)]
struct OneRead {
    fetched: Arc<AtomicBool>,
    missed: AtomicBool,
    rounds: AtomicU32,
}

impl fmt::Debug for OneRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OneRead")
    }
}

impl Ahead for OneRead {
    fn missed(&self) -> Option<Reads> {
        if !self.missed.swap(false, Ordering::SeqCst) {
            return None;
        }
        self.rounds.fetch_add(1, Ordering::SeqCst);
        let fetched = Arc::clone(&self.fetched);
        Some(Box::pin(async move {
            ready(()).await;
            fetched.store(true, Ordering::SeqCst);
        }))
    }

    fn rounds(&self) -> u32 {
        self.rounds.load(Ordering::SeqCst)
    }

    fn give_up(&self) {}
}

/// The test domain behind a store that reads ahead: a read-only call's first run misses
/// its read, the run after the round answers.
struct Store {
    runs: AtomicU32,
    /// Whether a read would not wait now (a free SQLite reader, say).
    free: bool,
}

impl Dispatch for Store {
    fn catalog(&self) -> Catalog {
        TestDomain.catalog()
    }

    fn read_may_block(&self) -> bool {
        !self.free
    }

    fn ahead(&self) -> Option<Arc<dyn Ahead>> {
        Some(Arc::new(OneRead::default()))
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        self.runs.fetch_add(1, Ordering::SeqCst);
        if let Some(ahead) = call.ctx.ahead {
            let any: &dyn std::any::Any = ahead;
            let read = any
                .downcast_ref::<OneRead>()
                .expect("this dispatcher's Ahead");
            if !read.fetched.load(Ordering::SeqCst) {
                read.missed.store(true, Ordering::SeqCst);
                return Err(ToolError::new(
                    dunning_core::ToolErrorCode::Internal,
                    "read ahead in the next round",
                ));
            }
        }
        TestDomain.call_tool(call)
    }
}

/// The test tokens, known without asking anyone unless `slow`.
struct Auth {
    slow: bool,
}

impl Authenticate for Auth {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        TestAuth.authenticate(token, audience, now)
    }

    fn may_block_for(&self, _: &str, _: Audience, _: UnixTime) -> bool {
        self.slow
    }
}

/// Counts the requests it lets through.
#[derive(Clone, Default)]
struct Counting(Arc<Mutex<u32>>);

impl RateLimit for Counting {
    fn check(&self, _: &Principal, _: UnixTime) -> Result<(), Limited> {
        *self.0.lock().unwrap() += 1;
        Ok(())
    }
}

fn server(slow: bool, limiter: Counting) -> Server<Store> {
    server_of(store(false), slow).with_limiter(limiter)
}

fn store(free: bool) -> Store {
    Store {
        runs: AtomicU32::new(0),
        free,
    }
}

fn server_of(store: Store, slow: bool) -> Server<Store> {
    Server::new(
        Config::default(),
        dunning_core::fuzzing::keys(),
        store,
        Auth { slow },
    )
    .expect("the test catalog is valid")
}

fn offered(s: &Server<Store>, req: &common::RawRequest) -> bool {
    placed_ahead(s, req).is_some()
}

/// The reads ahead `s` places `req` in, if it does.
fn placed_ahead(s: &Server<Store>, req: &common::RawRequest) -> Option<Arc<dyn Ahead>> {
    match req.with(|r| s.place(r, NOW)) {
        Place::Ahead(ahead) => Some(ahead),
        Place::Here | Place::Blocking => None,
    }
}

#[test]
fn read_only_calls_are_offered_reads_ahead_and_nothing_else() {
    let s = server(false, Counting::default());
    assert!(offered(&s, &tool_call("charges_list")));
    assert!(offered(
        &s,
        &legacy(
            2,
            "tools/call",
            json!({ "name": "charges_get", "arguments": {} })
        )
    ));
    for req in [
        tool_call("charges_cancel"),
        tool_call("no_such_tool"),
        legacy(3, "tools/call", json!({ "name": 7 })),
        modern(4, "tools/list", json!({}), None),
        legacy(5, "resources/read", json!({ "uri": "x" })),
    ] {
        assert!(!offered(&s, &req), "{}", String::from_utf8_lossy(&req.body));
    }
    // A token the authenticator may have to look up: the call leaves the reactor.
    assert!(!offered(
        &server(true, Counting::default()),
        &tool_call("charges_list")
    ));
}

/// One peek decides among the three places: a read whose reads would not wait runs where
/// it is even when the store could read ahead; a write leaves for a blocking thread.
#[test]
fn a_read_is_placed_ahead_only_when_its_reads_would_wait() {
    let place = |s: &Server<Store>, tool: &str| tool_call(tool).with(|r| s.place(r, NOW));
    let waits = server_of(store(false), false);
    assert!(matches!(place(&waits, "charges_list"), Place::Ahead(_)));
    assert!(matches!(place(&waits, "charges_cancel"), Place::Blocking));
    let s = server_of(store(true), false);
    assert!(matches!(place(&s, "charges_list"), Place::Here));
    assert!(matches!(place(&s, "charges_cancel"), Place::Blocking));
}

/// Polls a round to its end (the test's rounds never wait).
fn await_ready(mut reads: Reads) {
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(reads.as_mut().poll(&mut cx), Poll::Ready(())));
}

#[test]
fn a_call_answered_in_rounds_answers_as_one_run_and_is_counted_once() {
    let limiter = Counting::default();
    let s = server(false, limiter.clone());
    let req = tool_call("charges_list");
    let plain = req.with(|r| s.handle(r, &env()));
    assert_eq!(*limiter.0.lock().unwrap(), 1);
    let ahead = placed_ahead(&s, &req).expect("offered");
    let mut with_ahead = env();
    with_ahead.ahead = Some(Arc::clone(&ahead));
    let mut runs = 0;
    let answer = loop {
        let resp = req.with(|r| s.handle(r, &with_ahead));
        runs += 1;
        match ahead.missed() {
            Some(reads) => await_ready(reads),
            None => break resp,
        }
    };
    assert_eq!((runs, ahead.rounds()), (2, 1));
    assert_eq!(answer.status, plain.status);
    assert_eq!(answer.body, plain.body, "the same bytes as in one run");
    assert_eq!(
        *limiter.0.lock().unwrap(),
        2,
        "the two requests counted once each, whatever their runs"
    );
}
