//! Configuration and keys handed to `Server::new`; the core reads nothing by itself.

use zeroize::Zeroizing;

/// Static configuration of one server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Path of the MCP endpoint (default `/`).
    pub mcp_path: String,
    /// Public base URL, without trailing slash (e.g. `http://127.0.0.1:8080`).
    pub public_url: String,
    /// Extra allowed `Origin` values (exact `scheme://host[:port]`).
    pub allowed_origins: Vec<String>,
    /// Whether the server listens on a loopback address (allows loopback origins).
    pub loopback: bool,
    /// Request body limit in bytes (2 MB).
    pub max_body: usize,
    /// Issuers listed in the protected-resource metadata.
    pub authorization_servers: Vec<String>,
    /// `serverInfo.name`.
    pub server_name: String,
    /// `serverInfo.title`.
    pub server_title: String,
    /// `serverInfo.version`.
    pub server_version: String,
    /// What the client hands the model before any tool.
    pub instructions: String,
    /// Lifetime of a confirmation `requestState`, in milliseconds (default 5 minutes).
    pub confirmation_ttl_ms: u64,
    /// Use the request's own `X-Request-Id` (when valid: visible ASCII, at most
    /// [`crate::server::MAX_REQUEST_ID`] bytes) instead of the adapter's id. Only behind a
    /// proxy that sets it (default off: a client could otherwise pick ids to confuse logs).
    pub trust_request_id: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            mcp_path: "/".into(),
            public_url: "http://127.0.0.1:8080".into(),
            allowed_origins: Vec::new(),
            loopback: true,
            max_body: 2_097_152,
            authorization_servers: vec!["http://127.0.0.1:8080".into()],
            server_name: "kobana-dunning".into(),
            server_title: "Kobana Dunning".into(),
            server_version: env!("CARGO_PKG_VERSION").into(),
            instructions: String::new(),
            confirmation_ttl_ms: 5 * 60 * 1000,
            trust_request_id: false,
        }
    }
}

impl Config {
    /// The MCP resource identifier: the public URL with the endpoint path (RFC 8707).
    pub fn resource(&self) -> String {
        let base = self.public_url.trim_end_matches('/');
        if self.mcp_path == "/" {
            base.to_owned()
        } else {
            format!("{base}{}", self.mcp_path)
        }
    }

    /// URL of the protected-resource metadata document named in `401` challenges.
    pub fn resource_metadata_url(&self) -> String {
        format!(
            "{}/.well-known/oauth-protected-resource",
            self.public_url.trim_end_matches('/')
        )
    }
}

/// One `requestState` sealing key. Several are accepted (rotation); the first seals.
#[derive(Clone)]
pub struct StateKey {
    /// Short identifier carried in the sealed state (no dots).
    pub id: String,
    /// The secret (at least 32 bytes recommended).
    pub secret: Zeroizing<Vec<u8>>,
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Secrets the core uses. Shared by all replicas.
#[derive(Clone, Debug)]
pub struct Keys {
    /// Confirmation sealing keys; the first one seals, all of them open.
    pub request_state: Vec<StateKey>,
}

impl Keys {
    /// One sealing key with id `k1`.
    pub fn single(secret: &[u8]) -> Self {
        Self {
            request_state: vec![StateKey {
                id: "k1".into(),
                secret: Zeroizing::new(secret.to_vec()),
            }],
        }
    }
}
