//! # dunning-tests: conformance fixtures, their runner, and the test domain
//!
//! - [`registry`]: [`TestDomain`], a deterministic in-memory [`Dispatch`] covering every
//!   feature the core must handle (strict reads, loose writes, a destructive tool with a
//!   mirrored `Target-Id`, typed and nested `x-mcp-header`s, `204`, tool errors, scope
//!   and permission gates, a resource, templates, a prompt, completions).
//! - [`auth`]: [`TestAuth`], a fixed token table (`tok-owner`, `tok-reader`, ...).
//! - [`limit`]: [`TestLimiter`], over the limit for `tok-limited` only.
//! - [`fixture`] / [`expect`]: the `.http` / `.expect` file format of
//!   `tests/conformance/` (documented in its README) and its checks.
//! - [`runner`]: runs a case through any [`runner::Transport`]; the conformance test
//!   binary plugs in the in-memory harness.
//! - [`client`]: the HTTP/1.1 client of the suites that reach a server over a real
//!   loopback socket (the binary's tests), one request per connection.
//!
//! [`Dispatch`]: dunning_core::dispatch::Dispatch

pub mod auth;
pub mod client;
pub mod expect;
pub mod fixture;
pub mod limit;
pub mod registry;
pub mod runner;

use std::path::PathBuf;

use dunning_core::Server;
use dunning_core::config::{Config, Keys};

pub use auth::TestAuth;
pub use limit::TestLimiter;
pub use registry::TestDomain;

/// The `requestState` sealing key of [`test_server`].
pub const TEST_KEY: &[u8] = b"test-key-0123456789abcdef01234567";

/// A server over a fresh [`TestDomain`]: default config, [`TEST_KEY`], [`TestAuth`],
/// [`TestLimiter`].
pub fn test_server() -> Server<TestDomain> {
    Server::new(
        Config::default(),
        Keys::single(TEST_KEY),
        TestDomain::new(),
        TestAuth,
    )
    .expect("the test catalog is valid")
    .with_limiter(TestLimiter)
}

/// `tests/conformance/`, where the fixture pairs live.
pub fn conformance_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("conformance")
}
