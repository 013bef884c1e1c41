//! Which requests may wait on something other than the CPU, decided per request.
//!
//! [`Server::may_block`] is the server's word for every request; an async adapter that
//! trusts it alone sends every request through its blocking pool (two thread switches,
//! more than the core's own work on a `tools/list`). [`Server::place`] and
//! [`Server::head_may_block`] ask the same hooks about one request, so only the requests
//! that reach the store leave the reactor: a path answered by the core alone (health,
//! the well-known documents, metrics), an MCP method the core answers from its catalog
//! (`server/discover`, `tools/list`, the `*/list` of resources, templates and prompts),
//! provided the authenticator knows the token without asking anyone
//! ([`Authenticate::may_block_for`]) and the rate limiter is in-process. A `tools/call`
//! of a read-only tool stays too when the dispatcher says a read would not wait now
//! ([`Dispatch::read_may_block`]: SQLite with a free reader connection), so a read tool
//! crosses no thread at all; when they would and the dispatcher reads ahead
//! ([`Dispatch::ahead`]: PostgreSQL), the call stays too, run in rounds
//! ([`crate::ahead`]); every other call, and every write, leaves the reactor. One peek
//! at the body decides all three.
//!
//! The answers are hints: they never change what [`Server::handle`] answers, only where
//! an adapter runs it. A wrong `false` (say, a cached principal expiring between the
//! question and the call) costs one blocking call on the reactor, not a wrong answer.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::ahead::Ahead;
use crate::auth;
use crate::dispatch::Dispatch;
use crate::env::UnixTime;
use crate::principal::Audience;
use crate::request::Request;
use crate::response::Endpoint;
use crate::server::Server;

/// The fields of a JSON-RPC body the decision needs: the method, and for `tools/call`
/// the tool's name (read from the raw `params` only then; a `params` that names no tool
/// asks the dispatcher as an unknown call would, and one the core refuses reaches no
/// dispatcher wherever it runs).
#[derive(Deserialize)]
struct Peek<'a> {
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallPeek<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
}

/// MCP methods the core answers from its catalog, never calling the dispatcher.
fn core_only(method: &str) -> bool {
    matches!(
        method,
        "server/discover"
            | "initialize"
            | "ping"
            | "tools/list"
            | "resources/list"
            | "resources/templates/list"
            | "prompts/list"
    ) || method.starts_with("notifications/")
}

/// Where an adapter runs a complete request ([`Server::place`]).
#[derive(Debug)]
pub enum Place {
    /// Where it is: nothing on its path waits on anything but the CPU.
    Here,
    /// Off the reactor (a blocking thread): something on its path may wait.
    Blocking,
    /// On an async adapter's reactor in rounds, with these reads ahead
    /// ([`crate::ahead`]); an adapter that cannot await a round runs it as
    /// [`Place::Blocking`].
    Ahead(Arc<dyn Ahead>),
}

impl<D: Dispatch> Server<D> {
    /// Where to answer the complete request `req` at `now`, decided from its head and one
    /// peek at its body: see the module docs. [`Place::Here`] whenever
    /// [`Server::may_block`] is `false`.
    pub fn place(&self, req: &Request<'_>, now: UnixTime) -> Place {
        if !self.may_block() {
            return Place::Here;
        }
        let waits = |may: bool| if may { Place::Blocking } else { Place::Here };
        match self.route(req.path()) {
            None | Some(Endpoint::Health | Endpoint::WellKnown | Endpoint::Metrics) => Place::Here,
            Some(Endpoint::Ready) => waits(self.dispatch.may_block()),
            Some(Endpoint::Rest | Endpoint::OAuth(_) | Endpoint::Callback) => Place::Blocking,
            Some(Endpoint::Mcp) => {
                if self.token_may_block(req, Audience::Mcp, now) || self.limiter.may_block() {
                    return Place::Blocking;
                }
                // Bodies the core refuses before reading a method (bad JSON, a batch)
                // reach nobody either; a method it does not answer alone may.
                match serde_json::from_slice::<Peek<'_>>(req.body) {
                    Ok(Peek {
                        method: Some(m),
                        params,
                    }) => match &*m {
                        m if core_only(m) => Place::Here,
                        "tools/call" => self.place_call(params),
                        _ => waits(self.dispatch.may_block()),
                    },
                    Ok(Peek { method: None, .. }) | Err(_) => Place::Here,
                }
            }
        }
    }

    /// Whether [`Server::check_head`] on the head `req` at `now` may wait: only its
    /// authentication can.
    pub fn head_may_block(&self, req: &Request<'_>, now: UnixTime) -> bool {
        if !self.may_block() {
            return false;
        }
        match self.route(req.path()) {
            Some(Endpoint::Mcp) => self.token_may_block(req, Audience::Mcp, now),
            Some(Endpoint::Rest) => self.token_may_block(req, Audience::Api, now),
            _ => false,
        }
    }

    /// Where a `tools/call` with `params` runs (its gate decides without waiting): a
    /// read-only tool here when the dispatcher's reads would not wait
    /// ([`Dispatch::read_may_block`]), else read ahead when the dispatcher can
    /// ([`Dispatch::ahead`]); anything else as the dispatcher's general answer says.
    fn place_call(&self, params: Option<&RawValue>) -> Place {
        match self.called_tool(params) {
            Some(tool) if tool.def.annotations.read_only => {
                if !self.dispatch.read_may_block() {
                    Place::Here
                } else {
                    self.dispatch.ahead().map_or(Place::Blocking, Place::Ahead)
                }
            }
            _ if self.dispatch.may_block() => Place::Blocking,
            _ => Place::Here,
        }
    }

    /// The tool a `tools/call`'s raw `params` names, when it names one of ours.
    fn called_tool(&self, params: Option<&RawValue>) -> Option<&crate::registry::Tool> {
        let name = params.and_then(|p| serde_json::from_str::<CallPeek<'_>>(p.get()).ok())?;
        self.registry.tool(&name.name?)
    }

    /// Whether authenticating the request's bearer token may wait; no usable token is
    /// refused without asking the authenticator.
    fn token_may_block(&self, req: &Request<'_>, audience: Audience, now: UnixTime) -> bool {
        let values: Vec<&[u8]> = req.header_values("authorization").collect();
        match auth::bearer(&values) {
            Ok(Some(token)) => self.auth.may_block_for(token, audience, now),
            Ok(None) | Err(()) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::core_only;

    #[test]
    fn catalog_methods_are_core_only() {
        for m in [
            "server/discover",
            "tools/list",
            "prompts/list",
            "notifications/initialized",
        ] {
            assert!(core_only(m), "{m}");
        }
        for m in [
            "tools/call",
            "resources/read",
            "prompts/get",
            "completion/complete",
        ] {
            assert!(!core_only(m), "{m}");
        }
    }
}
