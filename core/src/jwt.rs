//! JWT access-token verification (RFC 9068): pure, with the key set and `now`
//! as inputs.
//!
//! [`verify`] checks, in this order, and stops at the first failure:
//!
//! 1. shape: at most [`MAX_TOKEN_LEN`] bytes, three non-empty base64url parts (no padding,
//!    canonical), a JSON object header without `crit`;
//! 2. algorithm: `EdDSA` (Ed25519), `ES256` or `RS256` only — `none` and every `HS*` are
//!    refused before any key is looked at, so an HMAC token "signed" with a public key
//!    never verifies;
//! 3. `typ`: `at+jwt` (RFC 9068 §4), unless [`Validation::require_at_jwt`] is off;
//! 4. key: `kid` selects the key from the [`KeySet`]; the key's algorithm must be the
//!    header's; a token without `kid` is accepted only when exactly one key fits;
//! 5. signature over `header.payload`;
//! 6. claims: `iss` equals the configured issuer; `aud` (string or array) contains the
//!    identifier of the requested [`Audience`] — the MCP resource identifier or the API
//!    identifier, so a token for one is refused by the other; `exp` in the future, `nbf`
//!    and `iat` not in the future, all with [`Validation::leeway_secs`] (60 s); a
//!    lifetime (`exp` past `iat`, or past `now` without `iat`) of at most
//!    [`Validation::max_token_lifetime_secs`] (24 h), so a token with `exp` = 2^63-1 is
//!    not a credential forever; the person, organization and scope claims present
//!    (`sub`, `org`, `scope` unless [`Validation::claims`] names others, for providers
//!    that cannot write those: Entra ID and Okta put scopes in `scp`). The scopes are a
//!    space-separated string or a list of strings (Okta's `scp` is a list). An
//!    audience alias ([`Validation::mcp_audience_aliases`]) is accepted as `aud` beside
//!    the resource identifier, for providers whose `aud` cannot be a URL (Entra ID v2
//!    writes the API's client id).
//!
//! What the failure was is an [`AuthError`]: the request's logged reason, and the
//! `error_description` of its `401` challenge.
//!
//! JWKS documents are parsed by [`KeySet::from_jwks`], also pure: fetching them (file or
//! URL) and caching verified tokens is the binary's business. Keys that cannot sign a
//! token this verifier accepts (symmetric `oct` keys, encryption keys, RSA under 2048
//! bits, unknown curves) are skipped, and listed by [`KeySet::skipped`].
//!
//! [`sign_ed25519`] mints a token with a development key (the binary's `token` command);
//! Ed25519 signatures are deterministic, so minting is pure too.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::Signer as _;
use rsa::signature::Verifier as _;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::auth::AuthError;
use crate::env::UnixTime;
use crate::principal::Audience;

/// Longest token considered at all (bytes). Real access tokens are well under 2 KB.
pub const MAX_TOKEN_LEN: usize = 8 * 1024;

/// Clock skew tolerated on `exp`, `nbf` and `iat`.
pub const LEEWAY_SECS: u64 = 60;

/// Longest token lifetime accepted by default: `exp` at most 24 h past `iat`, so that a
/// leaked token does not stay good for long.
pub const MAX_TOKEN_LIFETIME_SECS: u64 = 86_400;

/// Smallest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: usize = 2048;

/// Longest person or organization claim, or scope, accepted (bytes).
const MAX_CLAIM_LEN: usize = 512;

/// Most scopes a list-valued scope claim may carry.
const MAX_SCOPES: usize = 256;

/// A signature algorithm this verifier accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// `EdDSA` with Ed25519 (RFC 8037).
    EdDsa,
    /// `ES256`: ECDSA on P-256 with SHA-256, signature `r || s` (64 bytes).
    Es256,
    /// `RS256`: RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
}

impl Algorithm {
    /// The JOSE name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::EdDsa => "EdDSA",
            Self::Es256 => "ES256",
            Self::Rs256 => "RS256",
        }
    }

    /// Parses a JOSE `alg`; anything but the three accepted names is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "EdDSA" => Some(Self::EdDsa),
            "ES256" => Some(Self::Es256),
            "RS256" => Some(Self::Rs256),
            _ => None,
        }
    }
}

/// The public half of one signing key.
#[derive(Clone)]
enum Material {
    Ed25519(ed25519_dalek::VerifyingKey),
    P256(p256::ecdsa::VerifyingKey),
    Rsa(Box<rsa::pkcs1v15::VerifyingKey<Sha256>>),
}

impl Material {
    fn algorithm(&self) -> Algorithm {
        match self {
            Self::Ed25519(_) => Algorithm::EdDsa,
            Self::P256(_) => Algorithm::Es256,
            Self::Rsa(_) => Algorithm::Rs256,
        }
    }

    /// Verifies `sig` over `msg`; `false` on any malformed signature.
    fn verify(&self, msg: &[u8], sig: &[u8]) -> bool {
        match self {
            Self::Ed25519(k) => ed25519_dalek::Signature::from_slice(sig)
                .is_ok_and(|s| k.verify_strict(msg, &s).is_ok()),
            Self::P256(k) => {
                sig.len() == 64
                    && p256::ecdsa::Signature::from_slice(sig)
                        .is_ok_and(|s| k.verify(msg, &s).is_ok())
            }
            Self::Rsa(k) => {
                use rsa::traits::PublicKeyParts as _;
                let size = k.as_ref().as_ref().size();
                sig.len() == size
                    && rsa::pkcs1v15::Signature::try_from(sig)
                        .is_ok_and(|s| k.verify(msg, &s).is_ok())
            }
        }
    }

    /// Bytes identifying the key (for the key set's version).
    fn fingerprint(&self) -> Vec<u8> {
        match self {
            Self::Ed25519(k) => k.as_bytes().to_vec(),
            Self::P256(k) => k.to_encoded_point(false).as_bytes().to_vec(),
            Self::Rsa(k) => {
                use rsa::traits::PublicKeyParts as _;
                let pk: &rsa::RsaPublicKey = k.as_ref().as_ref();
                let mut v = pk.n().to_bytes_be();
                v.extend_from_slice(&pk.e().to_bytes_be());
                v
            }
        }
    }
}

/// One verification key: its `kid` (if the JWKS named it) and its public material.
#[derive(Clone)]
pub struct Jwk {
    kid: Option<String>,
    material: Material,
}

impl Jwk {
    /// The key id.
    pub fn kid(&self) -> Option<&str> {
        self.kid.as_deref()
    }

    /// The one algorithm this key verifies.
    pub fn algorithm(&self) -> Algorithm {
        self.material.algorithm()
    }

    /// An Ed25519 key from its 32-byte public key.
    pub fn ed25519(kid: Option<&str>, public: &[u8; 32]) -> Result<Self, JwksError> {
        let k = ed25519_dalek::VerifyingKey::from_bytes(public)
            .map_err(|_| JwksError::Key("invalid Ed25519 public key".into()))?;
        Ok(Self {
            kid: kid.map(str::to_owned),
            material: Material::Ed25519(k),
        })
    }

    /// Parses one JWK object; `Err` says why the key is not usable here.
    fn parse(v: &Value) -> Result<Self, String> {
        let o = v.as_object().ok_or("not an object")?;
        let s = |k: &str| o.get(k).and_then(Value::as_str);
        let kid = match o.get("kid") {
            None => None,
            Some(Value::String(k)) => Some(k.clone()),
            Some(_) => return Err("kid is not a string".into()),
        };
        let named = || kid.as_deref().unwrap_or("(no kid)").to_owned();
        if let Some(u) = s("use") {
            if u != "sig" {
                return Err(format!("{}: use {u:?}", named()));
            }
        }
        if let Some(ops) = o.get("key_ops").and_then(Value::as_array) {
            if !ops.iter().any(|x| x.as_str() == Some("verify")) {
                return Err(format!("{}: key_ops without verify", named()));
            }
        }
        let b64 = |k: &str| -> Result<Vec<u8>, String> {
            let t = s(k).ok_or_else(|| format!("{}: missing {k}", named()))?;
            URL_SAFE_NO_PAD
                .decode(t)
                .map_err(|_| format!("{}: {k} is not base64url", named()))
        };
        let kty = s("kty").ok_or_else(|| format!("{}: missing kty", named()))?;
        let material = match (kty, s("crv")) {
            ("OKP", Some("Ed25519")) => {
                let x: [u8; 32] = b64("x")?
                    .try_into()
                    .map_err(|_| format!("{}: Ed25519 x is not 32 bytes", named()))?;
                Material::Ed25519(
                    ed25519_dalek::VerifyingKey::from_bytes(&x)
                        .map_err(|_| format!("{}: invalid Ed25519 key", named()))?,
                )
            }
            ("EC", Some("P-256")) => {
                let (x, y) = (b64("x")?, b64("y")?);
                if x.len() != 32 || y.len() != 32 {
                    return Err(format!("{}: P-256 coordinates are not 32 bytes", named()));
                }
                let mut sec1 = Vec::with_capacity(65);
                sec1.push(4);
                sec1.extend_from_slice(&x);
                sec1.extend_from_slice(&y);
                Material::P256(
                    p256::ecdsa::VerifyingKey::from_sec1_bytes(&sec1)
                        .map_err(|_| format!("{}: invalid P-256 point", named()))?,
                )
            }
            ("RSA", _) => {
                let n = rsa::BigUint::from_bytes_be(&b64("n")?);
                let e = rsa::BigUint::from_bytes_be(&b64("e")?);
                if n.bits() < MIN_RSA_BITS {
                    return Err(format!("{}: RSA key under {MIN_RSA_BITS} bits", named()));
                }
                let pk = rsa::RsaPublicKey::new(n, e)
                    .map_err(|_| format!("{}: invalid RSA key", named()))?;
                Material::Rsa(Box::new(rsa::pkcs1v15::VerifyingKey::new(pk)))
            }
            (kty, crv) => {
                return Err(format!(
                    "{}: unsupported key type {kty}{}",
                    named(),
                    crv.map(|c| format!("/{c}")).unwrap_or_default()
                ));
            }
        };
        if let Some(alg) = s("alg") {
            if Algorithm::parse(alg) != Some(material.algorithm()) {
                return Err(format!("{}: alg {alg:?} does not fit the key", named()));
            }
        }
        Ok(Self { kid, material })
    }
}

impl fmt::Debug for Jwk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwk")
            .field("kid", &self.kid)
            .field("alg", &self.algorithm())
            .finish()
    }
}

/// A JWKS document that could not be used at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum JwksError {
    /// Not JSON, or not `{"keys": [...]}`.
    #[error("not a JWKS document: {0}")]
    Format(String),
    /// No key in the document can verify a token.
    #[error("no usable signing key ({0})")]
    Empty(String),
    /// A key given directly is invalid.
    #[error("invalid key: {0}")]
    Key(String),
}

/// The keys tokens are verified with, and a version that changes when they do.
#[derive(Clone, Debug, Default)]
pub struct KeySet {
    keys: Vec<Jwk>,
    skipped: Vec<String>,
    version: u64,
}

impl KeySet {
    /// A key set of the given keys.
    pub fn new(keys: Vec<Jwk>) -> Self {
        let mut set = Self {
            keys,
            skipped: Vec::new(),
            version: 0,
        };
        set.version = set.compute_version();
        set
    }

    /// Parses a JWKS document (`{"keys": [...]}`, RFC 7517 §5). Keys this verifier cannot
    /// use are skipped ([`KeySet::skipped`]); a document with no usable key is an error.
    pub fn from_jwks(json: &[u8]) -> Result<Self, JwksError> {
        let doc: Value =
            serde_json::from_slice(json).map_err(|e| JwksError::Format(e.to_string()))?;
        let keys = doc
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| JwksError::Format("no \"keys\" array".into()))?;
        let mut out = Vec::new();
        let mut skipped = Vec::new();
        for k in keys {
            match Jwk::parse(k) {
                Ok(j) => out.push(j),
                Err(why) => skipped.push(why),
            }
        }
        if out.is_empty() {
            return Err(JwksError::Empty(if skipped.is_empty() {
                "the set is empty".into()
            } else {
                skipped.join("; ")
            }));
        }
        let mut set = Self::new(out);
        set.skipped = skipped;
        Ok(set)
    }

    /// This set plus the keys of `other` (e.g. the development key next to a JWKS).
    #[must_use]
    pub fn merged(mut self, other: &Self) -> Self {
        self.keys.extend(other.keys.iter().cloned());
        self.skipped.extend(other.skipped.iter().cloned());
        self.version = self.compute_version();
        self
    }

    /// The usable keys.
    pub fn keys(&self) -> &[Jwk] {
        &self.keys
    }

    /// Why keys of the document were left out (for the startup log).
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Whether there is no key at all.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// A digest of the keys: equal sets have equal versions, so refreshing an unchanged
    /// JWKS keeps a cache of verified tokens, and any change invalidates it.
    pub fn version(&self) -> u64 {
        self.version
    }

    fn compute_version(&self) -> u64 {
        let mut h = Sha256::new();
        for k in &self.keys {
            h.update(k.kid.as_deref().unwrap_or("").as_bytes());
            h.update([0, k.algorithm() as u8]);
            let fp = k.material.fingerprint();
            h.update((fp.len() as u64).to_be_bytes());
            h.update(&fp);
        }
        let d = h.finalize();
        let mut v = [0u8; 8];
        v.copy_from_slice(&d[..8]);
        u64::from_be_bytes(v)
    }

    /// The key a token header names: by `kid`, and of the header's algorithm.
    /// No key of that `kid` (or, without `kid`, not exactly one key of the algorithm) is
    /// [`AuthError::UnknownKey`]; a key of another algorithm is [`AuthError::Algorithm`].
    fn select(&self, kid: Option<&str>, alg: Algorithm) -> Result<&Jwk, AuthError> {
        match kid {
            Some(kid) => {
                let k = self
                    .keys
                    .iter()
                    .find(|k| k.kid.as_deref() == Some(kid))
                    .ok_or(AuthError::UnknownKey)?;
                if k.algorithm() == alg {
                    Ok(k)
                } else {
                    Err(AuthError::Algorithm)
                }
            }
            None => {
                let mut fit = self.keys.iter().filter(|k| k.algorithm() == alg);
                let one = fit.next().ok_or(AuthError::UnknownKey)?;
                match fit.next() {
                    None => Ok(one),
                    Some(_) => Err(AuthError::UnknownKey),
                }
            }
        }
    }
}

/// What a token must say to be accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// The one accepted `iss`.
    pub issuer: String,
    /// The MCP resource identifier: the public URL with the endpoint path (RFC 8707).
    pub mcp_audience: String,
    /// The REST API identifier: `<public url>/v1`.
    pub api_audience: String,
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds.
    pub leeway_secs: u64,
    /// Require the header `typ` to be `at+jwt` (RFC 9068 §4). When off, a missing `typ`
    /// or `JWT` is accepted too; any other `typ` is refused either way.
    pub require_at_jwt: bool,
    /// Longest lifetime accepted, in seconds: `exp` may be at most this far past `iat`
    /// (past `now` when the token has no `iat`), plus the leeway. A stolen token must not
    /// stay valid for centuries because its issuer wrote a huge `exp`.
    pub max_token_lifetime_secs: u64,
    /// The names of the claims read as the person, the organization and the scopes.
    pub claims: ClaimNames,
    /// More values `aud` may carry for an MCP token, compared as the resource
    /// identifier is. Never shared with [`Validation::api_audience_aliases`]: a token
    /// for one audience must stay refused by the other.
    pub mcp_audience_aliases: Vec<String>,
    /// More values `aud` may carry for a REST API token.
    pub api_audience_aliases: Vec<String>,
}

/// Which top-level claims hold the person, the organization and the scopes (a claim
/// name is matched whole: `extn.org` is one claim, not a path).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimNames {
    /// The person, looked up as a member id or e-mail (default `sub`).
    pub subject: String,
    /// The organization, an id or slug (default `org`).
    pub organization: String,
    /// The scopes (default `scope`).
    pub scope: String,
}

impl Default for ClaimNames {
    fn default() -> Self {
        Self {
            subject: "sub".into(),
            organization: "org".into(),
            scope: "scope".into(),
        }
    }
}

impl Validation {
    /// Issuer and the two audiences, 60 s leeway, `typ: at+jwt` required, lifetimes up
    /// to [`MAX_TOKEN_LIFETIME_SECS`].
    pub fn new(issuer: &str, mcp_audience: &str, api_audience: &str) -> Self {
        Self {
            issuer: issuer.to_owned(),
            mcp_audience: mcp_audience.to_owned(),
            api_audience: api_audience.to_owned(),
            leeway_secs: LEEWAY_SECS,
            require_at_jwt: true,
            max_token_lifetime_secs: MAX_TOKEN_LIFETIME_SECS,
            claims: ClaimNames::default(),
            mcp_audience_aliases: Vec::new(),
            api_audience_aliases: Vec::new(),
        }
    }

    /// The identifier `aud` must contain for `audience`.
    pub fn audience(&self, audience: Audience) -> &str {
        match audience {
            Audience::Mcp => &self.mcp_audience,
            Audience::Api => &self.api_audience,
        }
    }

    /// Whether one `aud` value names `audience`: its identifier or one of its aliases.
    fn names(&self, audience: Audience, aud: &str) -> bool {
        let aliases = match audience {
            Audience::Mcp => &self.mcp_audience_aliases,
            Audience::Api => &self.api_audience_aliases,
        };
        let aud = canonical(aud);
        aud == canonical(self.audience(audience)) || aliases.iter().any(|a| canonical(a) == aud)
    }
}

/// The claims of a verified token that the server uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claims {
    /// `sub`: the person.
    pub subject: String,
    /// `org`: the organization (id or slug).
    pub organization: String,
    /// `scope`, split on spaces, as granted (unknown scopes included).
    pub scopes: Vec<String>,
    /// `exp`.
    pub expires_at: UnixTime,
    /// `iat`, when present.
    pub issued_at: Option<UnixTime>,
    /// `jti`, when present.
    pub jti: Option<String>,
    /// `client_id`, when present.
    pub client_id: Option<String>,
}

/// Verifies `token` for `audience` at `now` with the keys of `keys` (see the module docs
/// for the order of checks).
pub fn verify(
    token: &str,
    keys: &KeySet,
    v: &Validation,
    audience: Audience,
    now: UnixTime,
) -> Result<Claims, AuthError> {
    if token.len() > MAX_TOKEN_LEN {
        return Err(AuthError::Malformed);
    }
    let mut parts = token.split('.');
    let (Some(h64), Some(p64), Some(s64), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed);
    };
    if h64.is_empty() || p64.is_empty() || s64.is_empty() {
        return Err(AuthError::Malformed);
    }
    let decode = |s: &str| URL_SAFE_NO_PAD.decode(s).map_err(|_| AuthError::Malformed);
    let header = object(&decode(h64)?)?;
    let sig = decode(s64)?;
    let payload = decode(p64)?;

    if header.contains_key("crit") {
        return Err(AuthError::Malformed);
    }
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Algorithm::parse)
        .ok_or(AuthError::Algorithm)?;
    match header.get("typ") {
        Some(Value::String(t))
            if t.eq_ignore_ascii_case("at+jwt") || t.eq_ignore_ascii_case("application/at+jwt") => {
        }
        Some(Value::String(t)) if t.eq_ignore_ascii_case("jwt") => {
            if v.require_at_jwt {
                return Err(AuthError::Typ);
            }
        }
        None if v.require_at_jwt => return Err(AuthError::Typ),
        None => {}
        _ => return Err(AuthError::WrongTyp),
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(k)) => Some(k.as_str()),
        Some(_) => return Err(AuthError::Malformed),
    };
    let key = keys.select(kid, alg)?;
    let signed_len = h64.len() + 1 + p64.len();
    if !key.material.verify(&token.as_bytes()[..signed_len], &sig) {
        return Err(AuthError::Signature);
    }

    let claims = object(&payload)?;
    check_claims(&claims, v, audience, now)
}

/// The claim checks of step 6, on a payload whose signature verified.
fn check_claims(
    c: &Map<String, Value>,
    v: &Validation,
    audience: Audience,
    now: UnixTime,
) -> Result<Claims, AuthError> {
    if c.get("iss").and_then(Value::as_str) != Some(v.issuer.as_str()) {
        return Err(AuthError::Issuer);
    }
    let aud_ok = match c.get("aud") {
        Some(Value::String(a)) => v.names(audience, a),
        Some(Value::Array(list)) => list
            .iter()
            .any(|a| a.as_str().is_some_and(|a| v.names(audience, a))),
        _ => false,
    };
    if !aud_ok {
        return Err(AuthError::Audience);
    }

    let now_ms = i128::from(now.as_millis());
    let leeway_ms = i128::from(v.leeway_secs) * 1000;
    let exp = numeric_date(c.get("exp"))?.ok_or(AuthError::Claims)?;
    if now_ms >= exp + leeway_ms {
        return Err(AuthError::Expired);
    }
    if let Some(nbf) = numeric_date(c.get("nbf"))? {
        if nbf > now_ms + leeway_ms {
            return Err(AuthError::NotYetValid);
        }
    }
    let iat = numeric_date(c.get("iat"))?;
    if iat.is_some_and(|iat| iat > now_ms + leeway_ms) {
        return Err(AuthError::NotYetValid);
    }
    // After the clock checks: the lifetime is measured from `iat` (the issuer's own
    // statement), or from now when it is absent, which bounds what is left of it.
    let max_lifetime_ms = i128::from(v.max_token_lifetime_secs) * 1000;
    if exp > iat.unwrap_or(now_ms) + max_lifetime_ms + leeway_ms {
        return Err(AuthError::Lifetime);
    }

    let text = |k: &str| -> Result<String, AuthError> {
        match c.get(k).and_then(Value::as_str) {
            Some(s) if !s.is_empty() && s.len() <= MAX_CLAIM_LEN => Ok(s.to_owned()),
            _ => Err(AuthError::Claims),
        }
    };
    let subject = text(&v.claims.subject)?;
    let organization = text(&v.claims.organization)?;
    let scopes = scopes(c.get(&v.claims.scope))?;
    let opt = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Claims {
        subject,
        organization,
        scopes,
        expires_at: UnixTime::from_millis(u64::try_from(exp.max(0)).unwrap_or(u64::MAX)),
        issued_at: iat.map(|t| UnixTime::from_millis(u64::try_from(t.max(0)).unwrap_or(0))),
        jti: opt("jti"),
        client_id: opt("client_id"),
    })
}

/// The scopes of a scope claim: a space-separated string (RFC 9068 `scope`, Entra ID's
/// `scp`), or a list of strings (Okta's `scp`) each one scope, neither empty nor with a
/// space, at most [`MAX_SCOPES`] of them.
fn scopes(claim: Option<&Value>) -> Result<Vec<String>, AuthError> {
    match claim {
        Some(Value::String(s)) => Ok(s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()),
        Some(Value::Array(list)) if list.len() <= MAX_SCOPES => list
            .iter()
            .map(|s| match s.as_str() {
                Some(s) if !s.is_empty() && s.len() <= MAX_CLAIM_LEN && !s.contains(' ') => {
                    Ok(s.to_owned())
                }
                _ => Err(AuthError::Claims),
            })
            .collect(),
        _ => Err(AuthError::Claims),
    }
}

/// A JSON object, or `Malformed`.
fn object(bytes: &[u8]) -> Result<Map<String, Value>, AuthError> {
    match serde_json::from_slice(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(AuthError::Malformed),
    }
}

/// A NumericDate claim (RFC 7519 §2) in milliseconds: absent is `None`; present but not a
/// finite number is `Claims`.
fn numeric_date(v: Option<&Value>) -> Result<Option<i128>, AuthError> {
    let Some(v) = v else { return Ok(None) };
    if let Some(i) = v.as_i64() {
        return Ok(Some(i128::from(i) * 1000));
    }
    match v.as_f64() {
        Some(f) if f.is_finite() && f.abs() < 1e15 => Ok(Some((f * 1000.0).floor() as i128)),
        _ => Err(AuthError::Claims),
    }
}

/// A resource identifier compared loosely where RFC 3986 says equal: scheme and host
/// lowercase, no trailing slash.
fn canonical(uri: &str) -> String {
    let uri = uri.trim_end_matches('/');
    match uri.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
            format!(
                "{}://{}{path}",
                scheme.to_ascii_lowercase(),
                authority.to_ascii_lowercase()
            )
        }
        None => uri.to_owned(),
    }
}

/// The Ed25519 public key of a 32-byte secret seed.
pub fn ed25519_public(seed: &[u8; 32]) -> [u8; 32] {
    ed25519_dalek::SigningKey::from_bytes(seed)
        .verifying_key()
        .to_bytes()
}

/// The RFC 7638 thumbprint of an Ed25519 public key (base64url SHA-256 of the canonical
/// JWK): a stable `kid`.
pub fn ed25519_thumbprint(public: &[u8; 32]) -> String {
    let x = URL_SAFE_NO_PAD.encode(public);
    let canonical = format!(r#"{{"crv":"Ed25519","kty":"OKP","x":"{x}"}}"#);
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// The public JWK of an Ed25519 key (what a JWKS document lists for it).
pub fn ed25519_jwk(kid: &str, public: &[u8; 32]) -> Value {
    serde_json::json!({
        "kty": "OKP",
        "crv": "Ed25519",
        "x": URL_SAFE_NO_PAD.encode(public),
        "kid": kid,
        "alg": "EdDSA",
        "use": "sig",
    })
}

/// Signs `claims` as an RFC 9068 access token (`typ: at+jwt`, `alg: EdDSA`) with the
/// Ed25519 secret `seed`, naming `kid`. Deterministic.
pub fn sign_ed25519(kid: &str, claims: &Value, seed: &[u8; 32]) -> String {
    let header = serde_json::json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": kid });
    let key = ed25519_dalek::SigningKey::from_bytes(seed);
    sign_with(&header, claims, |m| key.sign(m).to_bytes().to_vec())
}

/// `base64url(header).base64url(claims).base64url(sign(...))`.
fn sign_with(header: &Value, claims: &Value, sign: impl FnOnce(&[u8]) -> Vec<u8>) -> String {
    let mut out = URL_SAFE_NO_PAD.encode(header.to_string());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
    let sig = sign(out.as_bytes());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(sig));
    out
}

#[cfg(test)]
mod tests;
