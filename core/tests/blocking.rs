//! Where an adapter runs a request (`Server::place`): a read-only tool call stays
//! on the reactor exactly when the dispatcher says its reads would not wait now; writes,
//! unknown tools and odd `params` ask the dispatcher's general answer.

mod common;

use common::{TestAuth, TestDomain, legacy, modern, tool_call};
use dunning_core::catalog::Catalog;
use dunning_core::config::Config;
use dunning_core::dispatch::Dispatch;
use dunning_core::fuzzing::NOW;

use dunning_core::{
    Audience, AuthError, Authenticate, Output, Place, Principal, Server, ToolCall, ToolError,
    UnixTime,
};

use serde_json::json;

/// The test domain, blocking (a store behind it) with reads that wait or not.
struct Reads {
    wait: bool,
}

impl Dispatch for Reads {
    fn catalog(&self) -> Catalog {
        TestDomain.catalog()
    }

    fn read_may_block(&self) -> bool {
        self.wait
    }

    fn call_tool(&self, call: &ToolCall<'_>) -> Result<Output, ToolError> {
        TestDomain.call_tool(call)
    }
}

/// The test authenticator, knowing every token without asking anyone, so that only the
/// dispatcher's answers decide.
struct Known;

impl Authenticate for Known {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        TestAuth.authenticate(token, audience, now)
    }

    fn may_block(&self) -> bool {
        false
    }
}

fn server(wait: bool) -> Server<Reads> {
    Server::new(
        Config::default(),
        dunning_core::fuzzing::keys(),
        Reads { wait },
        Known,
    )
    .expect("the test catalog is valid")
}

fn may_block(s: &Server<Reads>, req: &common::RawRequest) -> bool {
    !matches!(req.with(|r| s.place(r, NOW)), Place::Here)
}

#[test]
fn a_read_tool_stays_when_reads_would_not_wait() {
    let free = server(false);
    assert!(!may_block(&free, &tool_call("charges_list")));
    assert!(!may_block(
        &free,
        &legacy(
            2,
            "tools/call",
            json!({ "name": "charges_get", "arguments": {} })
        )
    ));
    let busy = server(true);
    assert!(may_block(&busy, &tool_call("charges_list")));
}

#[test]
fn writes_and_everything_unknown_leave_whatever_the_reads_say() {
    let free = server(false);
    for req in [
        tool_call("charges_cancel"),
        tool_call("mirror_echo"),
        tool_call("no_such_tool"),
        legacy(4, "tools/call", json!({ "name": 7 })),
        legacy(5, "resources/read", json!({ "uri": "x" })),
    ] {
        assert!(
            may_block(&free, &req),
            "{}",
            String::from_utf8_lossy(&req.body)
        );
    }
}

#[test]
fn catalog_methods_stay_whatever_the_reads_say() {
    let busy = server(true);
    assert!(!may_block(
        &busy,
        &modern(6, "server/discover", json!({}), None)
    ));
    assert!(!may_block(&busy, &modern(7, "tools/list", json!({}), None)));
}
