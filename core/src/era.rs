//! Protocol versions and eras, and how a request's era is decided (step 9 of the processing order).
//!
//! The body decides; headers cross-check. In order:
//! 1. `params._meta` carries `io.modelcontextprotocol/protocolVersion` → era 2026 path:
//!    header must be present and equal (mismatch beats support, `-32020`), then the
//!    envelope version must be `2026-07-28` (`-32022` otherwise, legacy values included),
//!    then `clientCapabilities` must be an object (`-32602`).
//! 2. No envelope and header `2026-07-28` → `-32602`, for a notification as for a request:
//!    the caller asked for stateless semantics, and falling back to era 2025 in silence
//!    would give it the other.
//! 3. A notification (no envelope, any other header) → legacy: a header naming a version we
//!    do not speak is not checked, since a notification gets `202` and nothing else.
//! 4. `initialize` → legacy; it negotiates from its params alone.
//! 5. Header names a 2025 version we speak → legacy at that version; absent → `2025-03-26`.
//! 6. Any other header value → `-32022`.
//!
//! A refusal at this step carries the version [`refusal_version`] names: the body decides
//! the era, so a version the request's header named but the body contradicts is never
//! echoed. The whole order, notifications included, is in `docs/decisions.md`
//! ("Processing order").

use serde_json::{Map, Value};

use crate::error::ProtocolError;

/// `_meta` key of the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the request's client capabilities.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the request's client identity (optional).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the server identity on every era-2026 result.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// A protocol revision this server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Version {
    /// `2025-03-26`: first Streamable HTTP revision, `initialize` handshake.
    V2025_03_26,
    /// `2025-06-18`: `initialize` handshake; the default `initialize` settles on.
    V2025_06_18,
    /// `2026-07-28`: stateless, per-request `_meta` envelope.
    V2026_07_28,
}

impl Version {
    /// Every version the endpoint speaks, newest first (the order of `data.supported`).
    pub const ALL: [Self; 3] = [Self::V2026_07_28, Self::V2025_06_18, Self::V2025_03_26];

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Parses a wire string naming a version we speak.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// The era this version belongs to.
    pub const fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }
}

/// Modern (per-request envelope) or legacy (`initialize` handshake).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Era {
    /// `2026-07-28`.
    Modern,
    /// `2025-06-18`, `2025-03-26`.
    Legacy,
}

/// What era detection settled on for one message.
#[derive(Clone, Debug, PartialEq)]
pub struct Detected {
    /// The version in use.
    pub version: Version,
    /// Client capabilities of this request (era 2026 only; empty otherwise).
    pub client_capabilities: Map<String, Value>,
}

/// The inputs of era detection, already extracted from the request.
#[derive(Clone, Copy, Debug)]
pub struct Signals<'a> {
    /// `MCP-Protocol-Version` header, trimmed (`None` when absent).
    pub header: Option<&'a str>,
    /// `params._meta`, when `params` is an object holding an object `_meta`.
    pub meta: Option<&'a Map<String, Value>>,
    /// The JSON-RPC method.
    pub method: &'a str,
    /// Whether the message is a notification (no `id`).
    pub notification: bool,
}

/// Decides the era of one message, or the protocol error that refuses it.
pub fn detect(s: Signals<'_>) -> Result<Detected, ProtocolError> {
    let envelope_version = s.meta.and_then(|m| m.get(META_PROTOCOL_VERSION));
    if let Some(raw) = envelope_version {
        let Some(requested) = raw.as_str() else {
            return Err(ProtocolError::Envelope(format!(
                "_meta[\"{META_PROTOCOL_VERSION}\"] must be a string"
            )));
        };
        match s.header {
            Some(h) if h != requested => {
                return Err(ProtocolError::HeaderMismatch(format!(
                    "MCP-Protocol-Version header \"{h}\" differs from _meta protocolVersion \"{requested}\""
                )));
            }
            None if !s.notification => {
                return Err(ProtocolError::HeaderMismatch(
                    "MCP-Protocol-Version header is required".into(),
                ));
            }
            _ => {}
        }
        if Version::parse(requested) != Some(Version::V2026_07_28) {
            return Err(ProtocolError::UnsupportedVersion {
                requested: requested.to_owned(),
            });
        }
        let caps = s.meta.and_then(|m| m.get(META_CLIENT_CAPABILITIES));
        return match caps {
            Some(Value::Object(c)) => Ok(Detected {
                version: Version::V2026_07_28,
                client_capabilities: c.clone(),
            }),
            Some(_) => Err(ProtocolError::Envelope(format!(
                "_meta[\"{META_CLIENT_CAPABILITIES}\"] must be an object"
            ))),
            None => Err(ProtocolError::Envelope(format!(
                "_meta[\"{META_CLIENT_CAPABILITIES}\"] is required"
            ))),
        };
    }

    if s.header == Some(Version::V2026_07_28.as_str()) {
        return Err(ProtocolError::Envelope(format!(
            "MCP-Protocol-Version 2026-07-28 requires params._meta[\"{META_PROTOCOL_VERSION}\"]"
        )));
    }
    if s.notification {
        let version = s
            .header
            .and_then(Version::parse)
            .unwrap_or(Version::V2025_03_26);
        return Ok(legacy(version));
    }
    if s.method == "initialize" {
        // Negotiated from params; the version in use is filled in by the method itself.
        return Ok(legacy(Version::V2025_06_18));
    }
    match s.header {
        None => Ok(legacy(Version::V2025_03_26)),
        Some(h) => match Version::parse(h) {
            Some(v) => Ok(legacy(v)),
            None => Err(ProtocolError::UnsupportedVersion {
                requested: h.to_owned(),
            }),
        },
    }
}

/// The version a refusal at era detection answers with in `MCP-Protocol-Version`.
///
/// The body decides the era and the header is only checked against it, so with an
/// envelope the answer names `2026-07-28` when the envelope does, and nothing when the
/// envelope's version is missing, malformed, legacy or unknown (each of those is the
/// version being refused). Without an envelope the header is all there is: its version
/// when we speak it.
pub fn refusal_version(s: Signals<'_>) -> Option<Version> {
    match s.meta.and_then(|m| m.get(META_PROTOCOL_VERSION)) {
        Some(raw) => raw
            .as_str()
            .and_then(Version::parse)
            .filter(|v| *v == Version::V2026_07_28),
        None => s.header.and_then(Version::parse),
    }
}

fn legacy(version: Version) -> Detected {
    Detected {
        version,
        client_capabilities: Map::new(),
    }
}

/// What `initialize` answers when asked for `requested`: the same 2025 version when we
/// speak it, else `2025-06-18` (never `2026-07-28`: the modern era is found by discovery).
pub fn negotiate(requested: Option<&str>) -> Version {
    match requested.and_then(Version::parse) {
        Some(Version::V2025_03_26) => Version::V2025_03_26,
        _ => Version::V2025_06_18,
    }
}
