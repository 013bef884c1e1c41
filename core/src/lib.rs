//! # dunning-core: the sans-IO MCP engine of kobana-dunning
//!
//! A pure function of (parsed HTTP request, injected clock, entropy, keys, config) to a
//! response value. No sockets, threads, clock reads or randomness live here: the
//! adapters in `transports/` own all of that and call [`Server::handle`] once per request.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod env;
pub mod era;
pub mod error;
pub mod request;
pub mod response;

pub use env::{Env, Load, UnixTime};
pub use era::{Era, Version};
pub use error::{ErrorCode, ProtocolError};
pub use request::{Header, Request};
pub use response::{RequestLog, Response};
