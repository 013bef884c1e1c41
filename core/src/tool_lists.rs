//! `tools/list` answers written once per permission set and reused.
//!
//! Why: the list is the same for every caller who may see the same tools, and it is the
//! largest answer a client asks for at every connection (68 tools, about 100 KB). Each
//! tool has a requirement ([`Access`]: a scope and maybe a permission); the catalogue
//! has few distinct ones. So, in order: at startup the distinct requirements are
//! numbered (at most [`MAX_REQUIREMENTS`]; past that every list is written per request);
//! per request the caller's set is the bit mask of the requirements it meets (a check
//! per requirement instead of one per tool); the answer after the JSON-RPC `id`
//! (`,"result":{...}}`) is written the first time its (version, mask) is asked for and
//! kept for the life of the server, up to [`MAX_KEPT`] answers (callers have few
//! permission sets; past that, new sets are written per request). The bytes are exactly
//! those the per-request writer produces (`render`): only where they are written changes.
//! A kept answer is also deflated, once, the first time a client that accepts gzip asks
//! for it ([`crate::gzip`]).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use serde_json::Value;

use crate::era::Version;
use crate::jsonrpc;
use crate::principal::{Access, Principal};
use crate::registry::Registry;
use crate::reply;

/// The most distinct requirements kept as masks (the bits of a `u64`).
const MAX_REQUIREMENTS: usize = 64;

/// The most answers kept (each about 100 KB).
const MAX_KEPT: usize = 64;

/// The answers after the `id`, by (version, mask of the requirements met).
type Kept = HashMap<(Version, u64), Arc<KeptList>>;

/// One kept answer after the `id`.
pub(crate) struct KeptList {
    text: Vec<u8>,
    /// The text deflated, from the first request that accepts gzip on.
    gzipped: OnceLock<crate::gzip::Gzipped>,
}

/// A `tools/list` answer: written for this request, or this request's `id` before a
/// kept answer.
pub(crate) enum Listed {
    Written(Vec<u8>),
    Kept { head: Vec<u8>, kept: Arc<KeptList> },
}

impl Listed {
    /// The answer's JSON text, and whether it is in gzip (only a kept answer is, and only
    /// when `gzip` is accepted and its `id` fits, `crate::gzip`).
    pub(crate) fn into_body(self, gzip: bool) -> (Vec<u8>, bool) {
        match self {
            Self::Written(body) => (body, false),
            Self::Kept { mut head, kept } => {
                if gzip {
                    let z = kept
                        .gzipped
                        .get_or_init(|| crate::gzip::Gzipped::of(&kept.text));
                    if let Some(body) = z.after(&head) {
                        return (body, true);
                    }
                }
                head.extend_from_slice(&kept.text);
                (head, false)
            }
        }
    }
}

/// The kept answers of one server.
pub(crate) struct ToolLists {
    /// The distinct requirements of the tools (`None` past [`MAX_REQUIREMENTS`]).
    requirements: Option<Vec<Access>>,
    /// Per tool (registry order), the index of its requirement.
    requirement_of: Vec<usize>,
    /// By (version, mask of the requirements met).
    kept: RwLock<Kept>,
}

impl ToolLists {
    pub(crate) fn new(registry: &Registry) -> Self {
        let mut requirements: Vec<Access> = Vec::new();
        let mut requirement_of = Vec::with_capacity(registry.tools.len());
        for tool in &registry.tools {
            let at = requirements.iter().position(|a| *a == tool.def.access);
            requirement_of.push(at.unwrap_or_else(|| {
                requirements.push(tool.def.access.clone());
                requirements.len() - 1
            }));
        }
        let kept = requirements.len() <= MAX_REQUIREMENTS;
        Self {
            requirements: kept.then_some(requirements),
            requirement_of,
            kept: RwLock::new(HashMap::new()),
        }
    }

    /// Whether answers are kept (the catalogue's requirements fit a mask).
    pub(crate) fn keeps(&self) -> bool {
        self.requirements.is_some()
    }

    /// The complete `tools/list` answer for `id`, `version` and `principal`.
    pub(crate) fn answer(
        &self,
        registry: &Registry,
        server_info: &Value,
        id: &Value,
        version: Version,
        principal: &Principal,
    ) -> Listed {
        let mut out = jsonrpc::head(id);
        let Some(requirements) = &self.requirements else {
            render(&mut out, registry, server_info, version, |i| {
                principal.may(&registry.tools[i].def.access)
            });
            return Listed::Written(out);
        };
        let mask = requirements
            .iter()
            .enumerate()
            .filter(|(_, a)| principal.may(a))
            .fold(0u64, |m, (i, _)| m | (1 << i));
        let found = self
            .kept
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&(version, mask))
            .cloned();
        if let Some(kept) = found {
            return Listed::Kept { head: out, kept };
        }
        let mut text = Vec::new();
        render(&mut text, registry, server_info, version, |i| {
            mask & (1 << self.requirement_of[i]) != 0
        });
        let mut kept = self.kept.write().unwrap_or_else(PoisonError::into_inner);
        if kept.len() >= MAX_KEPT {
            // Not kept: written for this request, and not worth deflating for it alone.
            out.extend_from_slice(&text);
            return Listed::Written(out);
        }
        let entry = Arc::new(KeptList {
            text,
            gzipped: OnceLock::new(),
        });
        kept.insert((version, mask), Arc::clone(&entry));
        Listed::Kept {
            head: out,
            kept: entry,
        }
    }
}

/// Writes `,"result":{"tools":[...]...}}` with the tools `visible` by index.
fn render(
    out: &mut Vec<u8>,
    registry: &Registry,
    server_info: &Value,
    version: Version,
    visible: impl Fn(usize) -> bool,
) {
    out.extend_from_slice(b",\"result\":{\"tools\":[");
    let mut first = true;
    for (i, tool) in registry.tools.iter().enumerate() {
        if !visible(i) {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(tool.list_json(version).get().as_bytes());
    }
    out.push(b']');
    if version == Version::V2026_07_28 {
        reply::write_decoration(out, "tools/list", server_info);
    }
    out.extend_from_slice(b"}}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::Authenticate;
    use crate::env::UnixTime;
    use crate::fuzzing::{TestAuth, server};
    use crate::principal::Audience;
    use serde_json::json;

    /// For every caller of the test domain, every version and a few ids, the kept
    /// answer is byte for byte the one written per request, and callers who may see
    /// different tools get different lists.
    #[test]
    fn a_kept_list_is_the_list_written_per_request() {
        let server = server();
        let registry = &server.registry;
        let kept = ToolLists::new(registry);
        assert!(
            kept.requirements.is_some(),
            "the test domain has few requirements"
        );
        let per_request = ToolLists {
            requirements: None,
            requirement_of: kept.requirement_of.clone(),
            kept: RwLock::new(HashMap::new()),
        };
        let now = UnixTime::from_secs(1_800_000_000);
        let mut lists = std::collections::BTreeSet::new();
        for token in ["tok-owner", "tok-noperm", "tok-reader"] {
            let who = TestAuth
                .authenticate(token, Audience::Mcp, now)
                .expect("a test token");
            for version in Version::ALL {
                for id in [json!(1), json!("a\"b"), Value::Null] {
                    // Twice: written, then reused.
                    for _ in 0..2 {
                        let a = kept
                            .answer(registry, server.server_info(), &id, version, &who)
                            .into_body(false);
                        let b = per_request
                            .answer(registry, server.server_info(), &id, version, &who)
                            .into_body(false);
                        assert_eq!(a, b, "{token} {version:?} {id}");
                    }
                }
            }
            let v = Version::V2026_07_28;
            let listed = kept.answer(registry, server.server_info(), &json!(1), v, &who);
            lists.insert(listed.into_body(false).0);
        }
        assert_eq!(lists.len(), 3, "three permission sets, three lists");
    }

    /// A kept answer in gzip decodes to the identity answer byte for byte, for every
    /// caller, version and kind of `id`, the first time and from the kept deflate after;
    /// an `id` too long for one stored block gets the identity answer.
    #[test]
    fn a_gzipped_list_decodes_to_the_list() {
        use std::io::Read as _;
        let server = server();
        let registry = &server.registry;
        let kept = ToolLists::new(registry);
        let info = server.server_info();
        let now = UnixTime::from_secs(1_800_000_000);
        let long = json!("x".repeat(70_000));
        let ids = [
            json!(1),
            json!("a\"b\u{e9}"),
            Value::Null,
            json!("y".repeat(65_000)),
        ];
        for token in ["tok-owner", "tok-noperm", "tok-reader"] {
            let who = TestAuth
                .authenticate(token, Audience::Mcp, now)
                .expect("a test token");
            for version in Version::ALL {
                for id in &ids {
                    for _ in 0..2 {
                        let plain = kept
                            .answer(registry, info, id, version, &who)
                            .into_body(false);
                        let (z, gzipped) = kept
                            .answer(registry, info, id, version, &who)
                            .into_body(true);
                        assert!(!plain.1, "identity when gzip is not accepted");
                        assert!(gzipped, "{token} {version:?}: a kept list goes in gzip");
                        let mut text = Vec::new();
                        flate2::read::GzDecoder::new(&z[..])
                            .read_to_end(&mut text)
                            .expect("a gzip member");
                        assert_eq!(text, plain.0, "{token} {version:?} {id}");
                    }
                }
                let (body, gzipped) = kept
                    .answer(registry, info, &long, version, &who)
                    .into_body(true);
                assert!(!gzipped, "an id past one stored block");
                let plain = kept
                    .answer(registry, info, &long, version, &who)
                    .into_body(false);
                assert_eq!(body, plain.0);
            }
        }
    }
}
