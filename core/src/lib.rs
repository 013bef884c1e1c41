//! # dunning-core: the sans-IO MCP engine of kobana-dunning
//!
//! A pure function of (parsed HTTP request, injected clock, entropy, keys, config) to a
//! response value. No sockets, threads, clock reads or randomness live here: adapters
//! own all of that and call [`Server::handle`] once per request.
//!
//! ## Driving it
//!
//! ```no_run
//! # use dunning_core::*;
//! # fn demo<D: dispatch::Dispatch>(server: &Server<D>, req: &Request<'_>) {
//! // The adapter: read and frame bytes (transports/http1), then for each request:
//! let env = Env::fixed(UnixTime::from_secs(1_800_000_000), 1); // real clock + OS entropy in production
//! let response = server.handle(req, &env);
//! // ...encode `response`, write it, log `response.log`.
//! # let _ = response; }
//! ```
//!
//! ## Purity contract
//!
//! `core/clippy.toml` bans clock, RNG, environment, file and socket calls; a test fails
//! if the normal dependency tree grows tokio, mio, hyper, reqwest, rusqlite or socket2.
//! With a fixed clock and counting entropy, responses are byte-stable.
//!
//! ## Layers
//!
//! [`server`] runs the processing order (docs/decisions.md) as one straight line; [`era`] decides the protocol version;
//! [`mirror`] checks the mirrored `Mcp-*` headers; [`methods`] and [`call`] answer the
//! methods; [`confirm`] seals confirmation state; [`rest`] maps `/v1` routes onto the
//! same tool handlers; [`error`] holds the one mapping from errors to the wire.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ahead;
pub mod auth;
mod blocking;
mod body;
pub mod call;
pub mod callbacks;
pub mod catalog;
mod compact;
pub mod config;
pub mod confirm;
pub mod cors;
pub mod dispatch;
pub mod env;
pub mod era;
pub mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod gzip;
pub mod jsonrpc;
pub mod jwt;
mod link;
pub mod methods;
pub mod mirror;
pub mod mrtr;
pub mod oauth;
pub mod origin;
mod pct;
pub mod principal;
pub mod registry;
mod reply;
pub mod request;
pub mod response;
pub mod rest;
pub mod server;
mod tool_lists;
mod tool_result;
pub mod xheader;

pub use ahead::{Ahead, Reads};
pub use auth::{AuthError, Authenticate};
pub use blocking::Place;
pub use body::{Body, JsonText};
pub use callbacks::Callbacks;
pub use catalog::{
    Annotations, Catalog, PromptArgument, PromptDef, ResourceDef, Route, TemplateDef, ToolDef,
};
pub use config::{Config, Keys, StateKey};
pub use dispatch::{
    Completion, CompletionRef, Contents, Ctx, Dispatch, FieldIssue, File, Output, ResourceError,
    ResourceRead, ToolCall, ToolError, ToolErrorCode,
};
pub use env::{Env, Load, UnixTime};
pub use era::{Era, Version};
pub use error::{ErrorCode, ProtocolError};
pub use jwt::{Claims, KeySet, Validation};
pub use limit::{Gcra, Limited, RateLimit, Unlimited};
pub use mrtr::{InputRequired, Progress, PromptReply, Round, ToolReply};
pub use principal::{Access, Audience, Principal, Scope, ScopeNames};
pub use registry::ConfigError;
pub use request::{Header, Request};
pub use response::{Endpoint, RequestLog, Response};
pub use server::{Metrics, Server};

pub mod limit;
