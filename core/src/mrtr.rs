//! Generic multi-round-trip requests (MRTR) for domain tools and prompts.
//!
//! The core's own confirmation of destructive tools ([`crate::call`]) is one MRTR flow.
//! This module lets a domain run its own: [`Dispatch::call_tool_mrtr`] and
//! [`Dispatch::get_prompt_mrtr`] receive a [`Round`] (the retry's `inputResponses`, the
//! domain's own state from the previous round, the request's declared client
//! capabilities) and may answer "input required" ([`ToolReply::InputRequired`],
//! [`PromptReply::InputRequired`]) or "missing capability". Both methods have default
//! implementations that forward to [`Dispatch::call_tool`] / [`Dispatch::get_prompt`], so
//! a domain that never asks for input is unaffected.
//!
//! What the core guarantees around a domain's MRTR, so no domain has to:
//!
//! * **Era 2026 only.** In era 2025 a round is always empty and an input-required or
//!   missing-capability answer becomes a tool error result (prompts: `-32602`): legacy
//!   clients cannot answer input requests.
//! * **Well-formed input.** `inputResponses` must be an object of objects (`-32602`
//!   otherwise); `null` counts as absent. Unknown keys are passed through, for the domain
//!   to ignore.
//! * **Sealed state.** The domain's `request_state` is never sent as is: the core seals it
//!   (`s1.<key id>.<payload>.<mac>`, HMAC-SHA256 under the confirmation keys, a different
//!   prefix so a confirmation state never opens as a domain state nor the reverse), bound
//!   to the caller, the method, the tool or prompt name, a digest of the arguments and an
//!   expiry ([`crate::Config::confirmation_ttl_ms`]). A retry whose `requestState` does not
//!   open, or was issued for another caller or call, is a `-32602` and the domain is not
//!   called. The domain only ever sees state it wrote itself.
//! * **Declared capabilities only.** Every input request is checked against the client
//!   capabilities of the request (`elicitation` and its `form`/`url` modes, `sampling`
//!   (and `sampling.tools` when the request offers tools), `roots`). One that was not
//!   declared is never sent: the answer is `-32021` naming what is missing.
//! * **Only where allowed.** Input-required results are produced for `tools/call` and
//!   `prompts/get` alone; no other method consults these hooks.
//!
//! `inputResponses` themselves are client input, not proof of anything: a domain that
//! treats an answer as consent must bind it to its own sealed state (as the confirmation
//! of destructive tools does).
//!
//! A tool may also return its own content blocks ([`ToolReply::Content`]: images, audio,
//! embedded resources) and progress steps ([`ToolReply::WithProgress`]). Progress is the
//! one case where the core answers `text/event-stream` (the notifications, then the
//! result, in one body): only when the request carried a progress token and accepts it.
//! The product's domain reports no progress, so the product keeps answering
//! `application/json` only; the conformance fixture server
//! (`tests/peers`) uses it for the suite's `tools-call-with-progress`.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::Sha256;

use crate::config::Keys;
use crate::dispatch::Output;
use crate::era::Version;
use crate::principal::Principal;

type HmacSha256 = Hmac<Sha256>;

/// Prefix of a sealed domain state (never opened as a confirmation state, which is `v1`).
const STATE_VERSION: &str = "s1";
/// Longest domain state accepted back before any work is done on it.
pub const MAX_DOMAIN_STATE_LEN: usize = 16 * 1024;

/// What one round of a multi-round request brings (era 2026; empty in era 2025).
#[derive(Clone, Copy, Debug)]
pub struct Round<'a> {
    /// `params.inputResponses` of a retry: answers keyed as the domain asked. Client
    /// input, already checked to be an object of objects. `None` on a first request.
    pub input_responses: Option<&'a Map<String, Value>>,
    /// The state the domain returned in the previous round, after the core verified its
    /// seal and binding. `None` when the request carried none.
    pub request_state: Option<&'a str>,
    /// `_meta["io.modelcontextprotocol/clientCapabilities"]` of this request (era 2026;
    /// empty in era 2025).
    pub client_capabilities: &'a Map<String, Value>,
    /// The protocol version of the request.
    pub version: Version,
    /// `params._meta.progressToken`, when the caller asked for progress (both eras).
    pub progress_token: Option<&'a Value>,
}

impl<'a> Round<'a> {
    /// A round with nothing in it (first request, or era 2025).
    pub fn empty(client_capabilities: &'a Map<String, Value>, version: Version) -> Self {
        Self {
            input_responses: None,
            request_state: None,
            client_capabilities,
            version,
            progress_token: None,
        }
    }

    /// Whether input requests can be answered at all (era 2026).
    pub fn modern(&self) -> bool {
        self.version == Version::V2026_07_28
    }

    /// The response to the input request `key`, if the client sent one.
    pub fn response(&self, key: &str) -> Option<&'a Map<String, Value>> {
        self.input_responses?.get(key)?.as_object()
    }

    /// Whether the client declared capability `name` (`elicitation`, `sampling`, `roots`).
    pub fn declares(&self, name: &str) -> bool {
        self.client_capabilities
            .get(name)
            .is_some_and(Value::is_object)
    }
}

/// Answer "input required" to one round: what to ask, and what to remember.
#[derive(Clone, Debug, PartialEq)]
pub struct InputRequired {
    /// `inputRequests`: key → `{ "method": ..., "params": ... }`, each method one of
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`.
    pub input_requests: Map<String, Value>,
    /// State the next round receives back in [`Round::request_state`] (sealed by the core).
    pub request_state: Option<String>,
}

/// What a tool returns through [`crate::Dispatch::call_tool_mrtr`].
#[derive(Clone, Debug, PartialEq)]
pub enum ToolReply {
    /// An ordinary output (same rendering as [`crate::Dispatch::call_tool`]).
    Output(Output),
    /// A result with the tool's own content blocks (image, audio, embedded resource...).
    Content {
        /// The `content` array, as sent.
        content: Vec<Value>,
        /// `structuredContent`, if any (dropped for 2025-03-26, which predates it).
        structured: Option<Value>,
        /// Whether the result is a tool execution error (`isError: true`).
        is_error: bool,
    },
    /// Ask the client for input and call again (era 2026).
    InputRequired(InputRequired),
    /// The tool needs client capabilities the request did not declare: `-32021` with
    /// this `requiredCapabilities` object (e.g. `{"sampling": {}}`).
    MissingCapability(Value),
    /// Progress steps reported before `reply`. When the request carried a progress token
    /// and `reply` is a final result, the answer is an SSE response (`text/event-stream`,
    /// when the client accepts it) of one `notifications/progress` per step, then the
    /// result; otherwise the steps are dropped and `reply` is answered alone. The core is
    /// sans-IO, so the steps are delivered together with the result, not as they happen.
    WithProgress {
        /// The steps, in order.
        steps: Vec<Progress>,
        /// What follows them.
        reply: Box<Self>,
    },
}

/// One `notifications/progress` step.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress {
    /// Progress so far (increases step by step).
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A human-readable message.
    pub message: Option<String>,
}

impl Progress {
    /// The notification for the caller's `token`.
    pub(crate) fn notification(&self, token: &Value) -> Value {
        let mut params = Map::new();
        params.insert("progressToken".into(), token.clone());
        params.insert("progress".into(), number(self.progress));
        if let Some(t) = self.total {
            params.insert("total".into(), number(t));
        }
        if let Some(m) = &self.message {
            params.insert("message".into(), Value::from(m.as_str()));
        }
        json!({ "jsonrpc": "2.0", "method": "notifications/progress", "params": params })
    }
}

/// A JSON number, integral when the value is a whole number.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// What a prompt returns through [`crate::Dispatch::get_prompt_mrtr`].
#[derive(Clone, Debug, PartialEq)]
pub enum PromptReply {
    /// The prompt: optional description and its messages.
    Messages {
        /// `description`.
        description: Option<String>,
        /// `messages`.
        messages: Vec<Value>,
    },
    /// Ask the client for input and get the prompt again (era 2026).
    InputRequired(InputRequired),
    /// `-32021` with this `requiredCapabilities` object.
    MissingCapability(Value),
}

/// What a sealed domain state binds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Sealed {
    /// Method (`tools/call`, `prompts/get`).
    #[serde(rename = "m")]
    method: String,
    /// Tool or prompt name.
    #[serde(rename = "n")]
    name: String,
    /// Digest of the arguments.
    #[serde(rename = "d")]
    args_digest: String,
    /// Token subject.
    #[serde(rename = "s")]
    subject: String,
    /// Token organization.
    #[serde(rename = "o")]
    organization: String,
    /// Expiry, ms since the epoch.
    #[serde(rename = "e")]
    expires_at: u64,
    /// The domain's state.
    #[serde(rename = "x")]
    state: String,
}

/// The call a state belongs to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binding<'a> {
    pub(crate) method: &'a str,
    pub(crate) name: &'a str,
    pub(crate) args: &'a Map<String, Value>,
    pub(crate) principal: &'a Principal,
}

fn mac_for(secret: &[u8], signed: &str) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(signed.as_bytes());
    mac
}

/// Seals the domain's `state` for `binding`, valid until `expires_at`.
pub(crate) fn seal(
    keys: &Keys,
    binding: &Binding<'_>,
    state: &str,
    expires_at: u64,
) -> Option<String> {
    let key = keys.request_state.first()?;
    let sealed = Sealed {
        method: binding.method.to_owned(),
        name: binding.name.to_owned(),
        args_digest: crate::confirm::args_digest(binding.args),
        subject: binding.principal.subject.clone(),
        organization: binding.principal.organization.clone(),
        expires_at,
        state: state.to_owned(),
    };
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&sealed).ok()?);
    let signed = format!("{STATE_VERSION}.{}.{payload}", key.id);
    let tag = mac_for(&key.secret, &signed).finalize().into_bytes();
    Some(format!("{signed}.{}", URL_SAFE_NO_PAD.encode(tag)))
}

/// Opens a sealed domain state and checks that it binds `binding` and is fresh.
pub(crate) fn open(
    keys: &Keys,
    sealed: &str,
    binding: &Binding<'_>,
    now_ms: u64,
) -> Result<String, &'static str> {
    if sealed.len() > MAX_DOMAIN_STATE_LEN {
        return Err("too long");
    }
    let (signed, tag) = sealed.rsplit_once('.').ok_or("malformed")?;
    let mut parts = signed.splitn(3, '.');
    let (Some(version), Some(kid), Some(payload)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err("malformed");
    };
    if version != STATE_VERSION {
        return Err("not issued for this call");
    }
    let key = keys
        .request_state
        .iter()
        .find(|k| k.id == kid)
        .ok_or("unknown key")?;
    let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| "malformed")?;
    mac_for(&key.secret, signed)
        .verify_slice(&tag)
        .map_err(|_| "integrity check failed")?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).map_err(|_| "malformed")?;
    let s: Sealed = serde_json::from_slice(&bytes).map_err(|_| "malformed")?;
    if now_ms >= s.expires_at {
        return Err("expired");
    }
    if s.subject != binding.principal.subject || s.organization != binding.principal.organization {
        return Err("issued to another caller");
    }
    if s.method != binding.method
        || s.name != binding.name
        || s.args_digest != crate::confirm::args_digest(binding.args)
    {
        return Err("issued for another call");
    }
    Ok(s.state)
}

/// Reads `params.inputResponses`: absent or `null` is `None`; anything but an object of
/// objects is refused with the reason.
pub(crate) fn input_responses(v: Option<&Value>) -> Result<Option<&Map<String, Value>>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => {
            if let Some((k, _)) = m.iter().find(|(_, v)| !v.is_object()) {
                return Err(format!("inputResponses.{k} must be an object"));
            }
            Ok(Some(m))
        }
        Some(_) => Err("inputResponses must be an object".into()),
    }
}

/// Why a domain's input requests cannot be sent.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Undeliverable {
    /// The client did not declare these capabilities (`requiredCapabilities`).
    Missing(Value),
    /// The domain built something that is not an input request (a bug).
    Malformed(String),
}

/// Checks every input request against the declared client capabilities.
pub(crate) fn check_requests(
    requests: &Map<String, Value>,
    caps: &Map<String, Value>,
) -> Result<(), Undeliverable> {
    let mut missing = Map::new();
    let declared = |name: &str| caps.get(name).and_then(Value::as_object);
    for (key, request) in requests {
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .ok_or_else(|| Undeliverable::Malformed(format!("{key}: no method")))?;
        let params = request.get("params");
        if params.is_some_and(|p| !p.is_object()) {
            return Err(Undeliverable::Malformed(format!("{key}: params")));
        }
        match method {
            "elicitation/create" => {
                let mode = params
                    .and_then(|p| p.get("mode"))
                    .and_then(Value::as_str)
                    .unwrap_or("form");
                let modes = declared("elicitation");
                let ok = match (mode, modes) {
                    (_, None) => false,
                    ("form", Some(m)) => {
                        m.is_empty() || m.contains_key("form") || !m.contains_key("url")
                    }
                    ("url", Some(m)) => m.contains_key("url"),
                    _ => {
                        return Err(Undeliverable::Malformed(format!(
                            "{key}: elicitation mode {mode}"
                        )));
                    }
                };
                if !ok {
                    let need = if mode == "url" {
                        json!({ "url": {} })
                    } else {
                        json!({})
                    };
                    merge(&mut missing, "elicitation", need);
                }
            }
            "sampling/createMessage" => {
                let with_tools = params.is_some_and(|p| p.get("tools").is_some());
                match declared("sampling") {
                    None if with_tools => merge(&mut missing, "sampling", json!({ "tools": {} })),
                    None => merge(&mut missing, "sampling", json!({})),
                    Some(s) if with_tools && !s.contains_key("tools") => {
                        merge(&mut missing, "sampling", json!({ "tools": {} }));
                    }
                    Some(_) => {}
                }
            }
            "roots/list" => {
                if declared("roots").is_none() {
                    merge(&mut missing, "roots", json!({}));
                }
            }
            other => {
                return Err(Undeliverable::Malformed(format!(
                    "{key}: method {other} is not an input request"
                )));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Undeliverable::Missing(Value::Object(missing)))
    }
}

fn merge(missing: &mut Map<String, Value>, cap: &str, need: Value) {
    let entry = missing
        .entry(cap.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if let (Value::Object(e), Value::Object(n)) = (entry, need) {
        e.extend(n);
    }
}

/// Prompt arguments as a JSON object (for the state binding).
pub(crate) fn string_args(args: &BTreeMap<String, String>) -> Map<String, Value> {
    args.iter()
        .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::UnixTime;
    use crate::principal::{Audience, Scope};

    fn ana() -> Principal {
        Principal {
            subject: "ana".into(),
            organization: "demo".into(),
            scope: Some(Scope::Read),
            scopes: vec![],
            permissions: Default::default(),
            expires_at: UnixTime::from_secs(10),
            audience: Audience::Mcp,
        }
    }

    fn caps(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn reqs(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn state_round_trip_and_binding() {
        let keys = Keys::single(b"secret");
        let p = ana();
        let args = caps(json!({"a": 1}));
        let b = Binding {
            method: "tools/call",
            name: "t",
            args: &args,
            principal: &p,
        };
        let s = seal(&keys, &b, "round-2", 100).unwrap();
        assert_eq!(open(&keys, &s, &b, 99).as_deref(), Ok("round-2"));
        assert_eq!(open(&keys, &s, &b, 100), Err("expired"));
        assert!(open(&keys, &format!("{s}-TAMPERED"), &b, 1).is_err());
        let mut flipped = s.clone().into_bytes();
        let i = flipped.len() / 2;
        flipped[i] = if flipped[i] == b'A' { b'B' } else { b'A' };
        assert!(open(&keys, &String::from_utf8(flipped).unwrap(), &b, 1).is_err());
        let other_args = caps(json!({"a": 2}));
        let other = Binding {
            args: &other_args,
            ..b
        };
        assert_eq!(open(&keys, &s, &other, 1), Err("issued for another call"));
        let prompt = Binding {
            method: "prompts/get",
            ..b
        };
        assert_eq!(open(&keys, &s, &prompt, 1), Err("issued for another call"));
        let mut bob = ana();
        bob.subject = "bob".into();
        let as_bob = Binding {
            principal: &bob,
            ..b
        };
        assert_eq!(open(&keys, &s, &as_bob, 1), Err("issued to another caller"));
    }

    #[test]
    fn confirmation_and_domain_states_do_not_mix() {
        let keys = Keys::single(b"secret");
        let p = ana();
        let args = Map::new();
        let b = Binding {
            method: "tools/call",
            name: "t",
            args: &args,
            principal: &p,
        };
        let s = seal(&keys, &b, "x", 100).unwrap();
        assert!(crate::confirm::open(&keys, &s).is_err());
        let claims = crate::confirm::Claims {
            tool: "t".into(),
            args_digest: crate::confirm::args_digest(&args),
            subject: "ana".into(),
            organization: "demo".into(),
            issued_at: 0,
            expires_at: 100,
            nonce: "00".into(),
        };
        let c = crate::confirm::seal(&keys, &claims).unwrap();
        assert_eq!(open(&keys, &c, &b, 1), Err("not issued for this call"));
    }

    #[test]
    fn input_responses_shape() {
        assert_eq!(input_responses(None), Ok(None));
        assert_eq!(input_responses(Some(&Value::Null)), Ok(None));
        assert!(input_responses(Some(&json!([]))).is_err());
        assert!(input_responses(Some(&json!({"k": 12345}))).is_err());
        let ok = json!({"k": {"action": "accept"}});
        assert!(input_responses(Some(&ok)).unwrap().is_some());
    }

    #[test]
    fn capability_gating() {
        let elicit =
            reqs(json!({"a": {"method": "elicitation/create", "params": {"message": "m"}}}));
        let url = reqs(json!({"a": {"method": "elicitation/create", "params": {"mode": "url"}}}));
        let sample = reqs(json!({"b": {"method": "sampling/createMessage", "params": {}}}));
        let sample_tools =
            reqs(json!({"b": {"method": "sampling/createMessage", "params": {"tools": []}}}));
        let roots = reqs(json!({"c": {"method": "roots/list"}}));
        let none = Map::new();
        assert_eq!(
            check_requests(&elicit, &none),
            Err(Undeliverable::Missing(json!({"elicitation": {}})))
        );
        assert_eq!(
            check_requests(&elicit, &caps(json!({"elicitation": {}}))),
            Ok(())
        );
        assert_eq!(
            check_requests(&elicit, &caps(json!({"elicitation": {"url": {}}}))),
            Err(Undeliverable::Missing(json!({"elicitation": {}})))
        );
        assert_eq!(
            check_requests(&url, &caps(json!({"elicitation": {}}))),
            Err(Undeliverable::Missing(json!({"elicitation": {"url": {}}})))
        );
        assert_eq!(
            check_requests(&url, &caps(json!({"elicitation": {"url": {}}}))),
            Ok(())
        );
        assert_eq!(
            check_requests(&sample, &caps(json!({"elicitation": {}}))),
            Err(Undeliverable::Missing(json!({"sampling": {}})))
        );
        assert_eq!(
            check_requests(&sample, &caps(json!({"sampling": {}}))),
            Ok(())
        );
        assert_eq!(
            check_requests(&sample_tools, &caps(json!({"sampling": {}}))),
            Err(Undeliverable::Missing(json!({"sampling": {"tools": {}}})))
        );
        assert_eq!(
            check_requests(&roots, &caps(json!({"roots": true}))),
            Err(Undeliverable::Missing(json!({"roots": {}})))
        );
        let mut all = elicit.clone();
        all.extend(sample.clone());
        all.extend(roots.clone());
        assert_eq!(
            check_requests(&all, &none),
            Err(Undeliverable::Missing(
                json!({"elicitation": {}, "sampling": {}, "roots": {}})
            ))
        );
        let bogus = reqs(json!({"x": {"method": "tools/call"}}));
        assert!(matches!(
            check_requests(&bogus, &none),
            Err(Undeliverable::Malformed(_))
        ));
    }
}
