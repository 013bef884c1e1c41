//! JWT access-token verification (RFC 9068, spec §10): pure, with the key set and `now`
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
//!    not a credential forever; `sub`, `org` and `scope` (space-separated) present.
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

/// Clock skew tolerated on `exp`, `nbf` and `iat` (spec §10).
pub const LEEWAY_SECS: u64 = 60;

/// Longest token lifetime accepted by default: `exp` at most 24 h past `iat` (issue 10).
pub const MAX_TOKEN_LIFETIME_SECS: u64 = 86_400;

/// Smallest RSA modulus accepted, in bits.
pub const MIN_RSA_BITS: usize = 2048;

/// Longest `sub` or `org` claim accepted (bytes).
const MAX_CLAIM_LEN: usize = 512;

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
        }
    }

    /// The identifier `aud` must contain for `audience`.
    pub fn audience(&self, audience: Audience) -> &str {
        match audience {
            Audience::Mcp => &self.mcp_audience,
            Audience::Api => &self.api_audience,
        }
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
    let wanted = canonical(v.audience(audience));
    let aud_ok = match c.get("aud") {
        Some(Value::String(a)) => canonical(a) == wanted,
        Some(Value::Array(list)) => list
            .iter()
            .any(|a| a.as_str().is_some_and(|a| canonical(a) == wanted)),
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
    let subject = text("sub")?;
    let organization = text("org")?;
    let scopes = c
        .get("scope")
        .and_then(Value::as_str)
        .ok_or(AuthError::Claims)?
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
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
mod tests {
    use hmac::{Hmac, Mac};
    use serde_json::json;

    use super::*;

    const NOW: u64 = 1_800_000_000;
    const ISS: &str = "https://auth.example.com";
    const MCP: &str = "https://mcp.example.com";
    const API: &str = "https://mcp.example.com/v1";
    const ED_SEED: [u8; 32] = [7; 32];

    /// A 2048-bit RSA test key (hex n, d, p, q; e = 65537), made for these tests only.
    const RSA_N: &str = "8bb919fca38ce1e31e9735c7956eb2df9ca02ea5ec9d376d542980164e959755ac85e6bc7ec68b346e1b536a\
        360ea48656ba47e71ea716f56460beb386cce7ce0bb2116ed1ef0e2fdc325ed31c37ef2d63a59104ad9c26fe\
        5547830be5b5542230ce0007b3f05b88db1ae3b1fd2046ec095e627450503049c324ad0c3f85b6bbbff71f19\
        10a44d1c7b0a7612d9bbc904ee290815e3d07e9b4a4c7eef4c66eb64ee6260dcc99810105fcbd1900a84bba5\
        0f2c70087195e0b0d8fbb2785a3e2db6274e86fdafdd808423c9501ab37a17e12372b39e0bd3653aeb4dd65b\
        003beaaabe5abef2e44a0b171ddf2a8a9a5b762d89eb56025cc823a23df372ebcbbe0685";
    const RSA_D: &str = "ade8c2f3b60e10cac4b4a8f7b6838698d5367b5982dd5cb3f3e183d04017e9b9757764ee914d46cf078d7391\
        eb9ee6215fa994fd93259e69e97a91629b1248242a6285584e6d225767d83a36c214ccdace00b23404732c05\
        bcd7b9c101356576f9102ef16782702c33ab9065660edab7c82176a217a4f7b597f2fa81183fb264bf488391\
        b267b2160e0aeab903cdda908e6aa9ce2f683da556f4893ac2af9a6b1f00f0b6bbd2cb3115b9ed93736f36c2\
        ae5b4380c8b35dd3cbac2fa6425a3a6eaf8f9b03e201ae749c5f8a86b026016c7506501a9739b2617147fba5\
        82c4c0fdce1f970a21242811d04b282d639274e168fdb2ed9aa095ad80515064f87f001";
    const RSA_P: &str = "c35d7355a1adf85cd268c49d46d4ac1129f882fc0a58082ceb8523246c846d62e57fe4ad20700ccdbc444836\
        1d76c2403a02f24a7939fee562ac42b34e138ad5a493394a58a917b237d2f9777a6e613c16ec0f981cf46455\
        9cf86fd31a827b4021cb3da5e1823fb3620be99549089ea90832e0709aaf6e15f04e83935b817001";
    const RSA_Q: &str = "b716ab040d415c59b9ad0d32fee0a404b90b6c94e7eca3ee9688e483522340599a2d3db593f624369278fa13\
        6929354137227b07c877ae009bb4eb799ef042c40efecea661e52f17b597e40193eac7f91f992a776ad25eab\
        f9db97b8ff96f3b53b37ba83743e27f067b701dd10bff10053ad801dc921cf3354e429efedded685";

    fn now() -> UnixTime {
        UnixTime::from_secs(NOW)
    }

    fn validation() -> Validation {
        Validation::new(ISS, MCP, API)
    }

    fn claims() -> Value {
        json!({
            "iss": ISS, "aud": MCP, "sub": "ana@demo.example", "org": "demo",
            "scope": "dunning.read dunning.write", "exp": NOW + 600, "iat": NOW,
            "jti": "j1", "client_id": "cli",
        })
    }

    fn with(mut c: Value, key: &str, v: Value) -> Value {
        c[key] = v;
        c
    }

    fn without(mut c: Value, key: &str) -> Value {
        c.as_object_mut().unwrap().remove(key);
        c
    }

    fn ed(kid: &str) -> Jwk {
        Jwk::ed25519(Some(kid), &ed25519_public(&ED_SEED)).unwrap()
    }

    fn p256_key() -> p256::ecdsa::SigningKey {
        p256::ecdsa::SigningKey::from_slice(&[42; 32]).unwrap()
    }

    fn rsa_key() -> rsa::RsaPrivateKey {
        let n = |h: &str| rsa::BigUint::parse_bytes(h.as_bytes(), 16).unwrap();
        rsa::RsaPrivateKey::from_components(
            n(RSA_N),
            rsa::BigUint::from(65_537u32),
            n(RSA_D),
            vec![n(RSA_P), n(RSA_Q)],
        )
        .unwrap()
    }

    fn jwks() -> Value {
        use rsa::traits::PublicKeyParts as _;
        let p = p256_key().verifying_key().to_encoded_point(false);
        let r = rsa_key().to_public_key();
        json!({ "keys": [
            ed25519_jwk("ed1", &ed25519_public(&ED_SEED)),
            { "kty": "EC", "crv": "P-256", "kid": "ec1", "alg": "ES256", "use": "sig",
              "x": URL_SAFE_NO_PAD.encode(p.x().unwrap()), "y": URL_SAFE_NO_PAD.encode(p.y().unwrap()) },
            { "kty": "RSA", "kid": "rs1", "alg": "RS256",
              "n": URL_SAFE_NO_PAD.encode(r.n().to_bytes_be()), "e": URL_SAFE_NO_PAD.encode(r.e().to_bytes_be()) },
        ]})
    }

    fn keys() -> KeySet {
        KeySet::from_jwks(jwks().to_string().as_bytes()).unwrap()
    }

    fn header(alg: &str, kid: &str) -> Value {
        json!({ "alg": alg, "typ": "at+jwt", "kid": kid })
    }

    fn es256(kid: &str, c: &Value) -> String {
        use p256::ecdsa::signature::Signer as _;
        let k = p256_key();
        sign_with(&header("ES256", kid), c, |m| {
            let s: p256::ecdsa::Signature = k.sign(m);
            s.to_bytes().to_vec()
        })
    }

    fn rs256(kid: &str, c: &Value) -> String {
        use rsa::signature::{SignatureEncoding as _, Signer as _};
        let k = rsa::pkcs1v15::SigningKey::<Sha256>::new(rsa_key());
        sign_with(&header("RS256", kid), c, |m| k.sign(m).to_vec())
    }

    fn check(token: &str) -> Result<Claims, AuthError> {
        verify(token, &keys(), &validation(), Audience::Mcp, now())
    }

    #[test]
    fn accepts_each_algorithm() {
        for token in [
            sign_ed25519("ed1", &claims(), &ED_SEED),
            es256("ec1", &claims()),
            rs256("rs1", &claims()),
        ] {
            let c = check(&token).unwrap();
            assert_eq!(c.subject, "ana@demo.example");
            assert_eq!(c.organization, "demo");
            assert_eq!(c.scopes, ["dunning.read", "dunning.write"]);
            assert_eq!(c.expires_at, UnixTime::from_secs(NOW + 600));
            assert_eq!(c.issued_at, Some(now()));
            assert_eq!(c.jti.as_deref(), Some("j1"));
            assert_eq!(c.client_id.as_deref(), Some("cli"));
        }
    }

    #[test]
    fn expired() {
        let t = sign_ed25519("ed1", &with(claims(), "exp", json!(NOW - 61)), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Expired));
        let t = sign_ed25519("ed1", &with(claims(), "exp", json!(NOW - 60)), &ED_SEED);
        assert_eq!(
            check(&t),
            Err(AuthError::Expired),
            "exp + leeway is already too late"
        );
        let t = sign_ed25519("ed1", &with(claims(), "exp", json!(NOW - 30)), &ED_SEED);
        assert!(check(&t).is_ok(), "within the 60 s leeway");
        let t = sign_ed25519("ed1", &without(claims(), "exp"), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Claims));
        let t = sign_ed25519("ed1", &with(claims(), "exp", json!("soon")), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Claims));
    }

    #[test]
    fn lifetime_beyond_the_maximum() {
        let huge = with(claims(), "exp", json!(i64::MAX));
        assert_eq!(
            check(&sign_ed25519("ed1", &huge, &ED_SEED)),
            Err(AuthError::Lifetime),
            "exp = 2^63-1"
        );
        let day = with(claims(), "exp", json!(NOW + 86_400));
        assert!(check(&sign_ed25519("ed1", &day, &ED_SEED)).is_ok(), "24 h");
        let over = with(claims(), "exp", json!(NOW + 86_400 + 61));
        assert_eq!(
            check(&sign_ed25519("ed1", &over, &ED_SEED)),
            Err(AuthError::Lifetime),
            "24 h + leeway + 1 s"
        );
        let no_iat = with(without(claims(), "iat"), "exp", json!(NOW + 2 * 86_400));
        assert_eq!(
            check(&sign_ed25519("ed1", &no_iat, &ED_SEED)),
            Err(AuthError::Lifetime),
            "without iat, measured from now"
        );
        // An old iat with a near exp is fine: what counts is exp - iat.
        let old = with(
            with(claims(), "iat", json!(NOW - 80_000)),
            "exp",
            json!(NOW + 600),
        );
        assert!(check(&sign_ed25519("ed1", &old, &ED_SEED)).is_ok());
        let v = Validation {
            max_token_lifetime_secs: 3_600,
            ..validation()
        };
        let t = sign_ed25519("ed1", &with(claims(), "exp", json!(NOW + 7_200)), &ED_SEED);
        assert_eq!(
            verify(&t, &keys(), &v, Audience::Mcp, now()),
            Err(AuthError::Lifetime)
        );
    }

    #[test]
    fn not_yet_valid() {
        let t = sign_ed25519("ed1", &with(claims(), "nbf", json!(NOW + 120)), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::NotYetValid));
        let t = sign_ed25519("ed1", &with(claims(), "iat", json!(NOW + 120)), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::NotYetValid));
        let t = sign_ed25519("ed1", &with(claims(), "nbf", json!(NOW + 30)), &ED_SEED);
        assert!(check(&t).is_ok(), "within the 60 s leeway");
        let t = sign_ed25519(
            "ed1",
            &with(claims(), "iat", json!(NOW as f64 + 59.5)),
            &ED_SEED,
        );
        assert!(check(&t).is_ok(), "fractional NumericDate");
    }

    #[test]
    fn wrong_issuer() {
        for iss in [json!("https://evil.example.com"), json!(null), json!([ISS])] {
            let t = sign_ed25519("ed1", &with(claims(), "iss", iss), &ED_SEED);
            assert_eq!(check(&t), Err(AuthError::Issuer));
        }
        let t = sign_ed25519("ed1", &without(claims(), "iss"), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Issuer));
    }

    #[test]
    fn wrong_audience() {
        for aud in [
            json!("https://other.example.com"),
            json!(API),
            json!([]),
            json!(["https://other.example.com"]),
            json!(42),
        ] {
            let t = sign_ed25519("ed1", &with(claims(), "aud", aud), &ED_SEED);
            assert_eq!(check(&t), Err(AuthError::Audience));
        }
        let t = sign_ed25519("ed1", &without(claims(), "aud"), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Audience));
        for aud in [json!([API, MCP]), json!("HTTPS://MCP.example.com/")] {
            let t = sign_ed25519("ed1", &with(claims(), "aud", aud), &ED_SEED);
            assert!(check(&t).is_ok());
        }
    }

    #[test]
    fn audience_separation_both_ways() {
        let ks = keys();
        let v = validation();
        let mcp = sign_ed25519("ed1", &claims(), &ED_SEED);
        let api = sign_ed25519("ed1", &with(claims(), "aud", json!(API)), &ED_SEED);
        assert!(verify(&mcp, &ks, &v, Audience::Mcp, now()).is_ok());
        assert!(verify(&api, &ks, &v, Audience::Api, now()).is_ok());
        assert_eq!(
            verify(&api, &ks, &v, Audience::Mcp, now()),
            Err(AuthError::Audience)
        );
        assert_eq!(
            verify(&mcp, &ks, &v, Audience::Api, now()),
            Err(AuthError::Audience)
        );
    }

    #[test]
    fn unknown_kid() {
        let t = sign_ed25519("nope", &claims(), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::UnknownKey));
    }

    #[test]
    fn wrong_key() {
        let t = sign_ed25519("ed1", &claims(), &[8; 32]);
        assert_eq!(check(&t), Err(AuthError::Signature));
        // The right signature under another key's kid and algorithm.
        let t = sign_ed25519("ec1", &claims(), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Algorithm));
        let t = es256("rs1", &claims());
        assert_eq!(check(&t), Err(AuthError::Algorithm));
    }

    #[test]
    fn tampered_payload() {
        let t = sign_ed25519("ed1", &claims(), &ED_SEED);
        let parts: Vec<&str> = t.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(with(claims(), "org", json!("acme")).to_string());
        let t = format!("{}.{forged}.{}", parts[0], parts[2]);
        assert_eq!(check(&t), Err(AuthError::Signature));
    }

    #[test]
    fn alg_none() {
        let h = URL_SAFE_NO_PAD.encode(json!({ "alg": "none", "typ": "at+jwt" }).to_string());
        let p = URL_SAFE_NO_PAD.encode(claims().to_string());
        assert_eq!(check(&format!("{h}.{p}.")), Err(AuthError::Malformed));
        assert_eq!(check(&format!("{h}.{p}.AAAA")), Err(AuthError::Algorithm));
        let h = URL_SAFE_NO_PAD.encode(json!({ "alg": "None", "kid": "ed1" }).to_string());
        assert_eq!(check(&format!("{h}.{p}.AAAA")), Err(AuthError::Algorithm));
    }

    #[test]
    fn hs256_with_the_public_key_as_secret() {
        let public = ed25519_public(&ED_SEED);
        let secrets: Vec<Vec<u8>> = vec![
            public.to_vec(),
            URL_SAFE_NO_PAD.encode(public).into_bytes(),
            jwks().to_string().into_bytes(),
            ed25519_jwk("ed1", &public).to_string().into_bytes(),
        ];
        for alg in ["HS256", "HS384", "HS512"] {
            for secret in &secrets {
                let t = sign_with(&header(alg, "ed1"), &claims(), |m| {
                    let mut mac = Hmac::<Sha256>::new_from_slice(secret).unwrap();
                    mac.update(m);
                    mac.finalize().into_bytes().to_vec()
                });
                assert_eq!(check(&t), Err(AuthError::Algorithm), "{alg}");
            }
        }
        // An `oct` key in the JWKS is never a verification key.
        let doc = json!({ "keys": [
            { "kty": "oct", "kid": "ed1", "k": URL_SAFE_NO_PAD.encode(public) },
            ed25519_jwk("ed1", &public),
        ]});
        let ks = KeySet::from_jwks(doc.to_string().as_bytes()).unwrap();
        assert_eq!(ks.keys().len(), 1);
        assert_eq!(ks.skipped().len(), 1);
    }

    #[test]
    fn truncated_signature() {
        for token in [
            sign_ed25519("ed1", &claims(), &ED_SEED),
            es256("ec1", &claims()),
            rs256("rs1", &claims()),
        ] {
            let cut = token.rfind('.').unwrap();
            let sig = URL_SAFE_NO_PAD.decode(&token[cut + 1..]).unwrap();
            for keep in [sig.len() - 1, sig.len() / 2, 1] {
                let t = format!("{}.{}", &token[..cut], URL_SAFE_NO_PAD.encode(&sig[..keep]));
                assert_eq!(check(&t), Err(AuthError::Signature));
            }
            for drop in 1..=4 {
                assert!(check(&token[..token.len() - drop]).is_err());
            }
            assert_eq!(check(&token[..cut]), Err(AuthError::Malformed));
            assert_eq!(check(&token[..=cut]), Err(AuthError::Malformed));
        }
    }

    #[test]
    fn oversized_token() {
        let big = "x".repeat(100 * 1024);
        let t = sign_ed25519("ed1", &with(claims(), "pad", json!(big)), &ED_SEED);
        assert!(t.len() > 100 * 1024);
        assert_eq!(check(&t), Err(AuthError::Malformed));
        let t = format!(
            "{}.{}.{}",
            "a".repeat(40_000),
            "b".repeat(40_000),
            "c".repeat(40_000)
        );
        assert_eq!(check(&t), Err(AuthError::Malformed));
    }

    #[test]
    fn garbage() {
        let p = URL_SAFE_NO_PAD.encode(claims().to_string());
        let h = URL_SAFE_NO_PAD.encode(header("EdDSA", "ed1").to_string());
        for t in [
            String::new(),
            "garbage".into(),
            "a.b".into(),
            "a.b.c.d".into(),
            "..".into(),
            "...".into(),
            "!!!.###.$$$".into(),
            format!("{h}.{p}.AAAA.AAAA"),
            format!("{h}=.{p}.AAAA"),
            format!("{}.{p}.AAAA", URL_SAFE_NO_PAD.encode("[1,2]")),
            format!("{}.{p}.AAAA", URL_SAFE_NO_PAD.encode("not json")),
            format!("{h}.{}.AAAA", URL_SAFE_NO_PAD.encode("\u{0}\u{1}")),
            "\u{fffd}.\u{fffd}.\u{fffd}".into(),
        ] {
            assert!(check(&t).is_err(), "{t:?}");
        }
        // A signed payload that is not an object.
        let key = ed25519_dalek::SigningKey::from_bytes(&ED_SEED);
        let t = sign_with(&header("EdDSA", "ed1"), &json!([1]), |m| {
            key.sign(m).to_bytes().to_vec()
        });
        assert_eq!(check(&t), Err(AuthError::Malformed));
    }

    #[test]
    fn header_rules() {
        let key = ed25519_dalek::SigningKey::from_bytes(&ED_SEED);
        let mint = |h: Value| sign_with(&h, &claims(), |m| key.sign(m).to_bytes().to_vec());
        let t = mint(json!({ "alg": "EdDSA", "kid": "ed1" }));
        assert_eq!(check(&t), Err(AuthError::Typ), "typ required");
        let lax = Validation {
            require_at_jwt: false,
            ..validation()
        };
        assert!(verify(&t, &keys(), &lax, Audience::Mcp, now()).is_ok());
        let t = mint(json!({ "alg": "EdDSA", "kid": "ed1", "typ": "JWT" }));
        assert_eq!(check(&t), Err(AuthError::Typ));
        assert!(verify(&t, &keys(), &lax, Audience::Mcp, now()).is_ok());
        let t = mint(json!({ "alg": "EdDSA", "kid": "ed1", "typ": "id+jwt" }));
        assert_eq!(
            verify(&t, &keys(), &lax, Audience::Mcp, now()),
            Err(AuthError::WrongTyp)
        );
        let t = mint(json!({ "alg": "EdDSA", "kid": "ed1", "typ": "application/at+jwt" }));
        assert!(check(&t).is_ok());
        let t = mint(json!({ "alg": "EdDSA", "kid": "ed1", "typ": "at+jwt", "crit": ["exp"] }));
        assert_eq!(check(&t), Err(AuthError::Malformed));
        let t = mint(json!({ "alg": "EdDSA", "kid": 1, "typ": "at+jwt" }));
        assert_eq!(check(&t), Err(AuthError::Malformed));
        // No kid: fine with one key of the algorithm, refused when the choice is ambiguous.
        let t = mint(json!({ "alg": "EdDSA", "typ": "at+jwt" }));
        assert!(check(&t).is_ok());
        let two = keys().merged(&KeySet::new(vec![
            Jwk::ed25519(Some("ed2"), &ed25519_public(&[9; 32])).unwrap(),
        ]));
        assert_eq!(
            verify(&t, &two, &validation(), Audience::Mcp, now()),
            Err(AuthError::UnknownKey)
        );
    }

    #[test]
    fn required_claims() {
        for k in ["sub", "org", "scope"] {
            let t = sign_ed25519("ed1", &without(claims(), k), &ED_SEED);
            assert_eq!(check(&t), Err(AuthError::Claims), "{k}");
            let t = sign_ed25519("ed1", &with(claims(), k, json!(5)), &ED_SEED);
            assert_eq!(check(&t), Err(AuthError::Claims), "{k}");
        }
        let t = sign_ed25519("ed1", &with(claims(), "sub", json!("")), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Claims));
        let t = sign_ed25519("ed1", &with(claims(), "scope", json!("")), &ED_SEED);
        assert_eq!(check(&t).unwrap().scopes, Vec::<String>::new());
    }

    #[test]
    fn jwks_parsing() {
        assert!(matches!(
            KeySet::from_jwks(b"nope"),
            Err(JwksError::Format(_))
        ));
        assert!(matches!(
            KeySet::from_jwks(b"{}"),
            Err(JwksError::Format(_))
        ));
        assert!(matches!(
            KeySet::from_jwks(br#"{"keys":[]}"#),
            Err(JwksError::Empty(_))
        ));
        let public = URL_SAFE_NO_PAD.encode(ed25519_public(&ED_SEED));
        let doc = json!({ "keys": [
            { "kty": "OKP", "crv": "Ed25519", "x": public, "use": "enc" },
            { "kty": "OKP", "crv": "X25519", "x": public },
            { "kty": "OKP", "crv": "Ed25519", "x": public, "alg": "ES256" },
            { "kty": "OKP", "crv": "Ed25519", "x": "short" },
            { "kty": "EC", "crv": "P-384", "x": public, "y": public },
            { "kty": "RSA", "n": URL_SAFE_NO_PAD.encode([0xff; 128]), "e": "AQAB" },
            "not an object",
        ]});
        match KeySet::from_jwks(doc.to_string().as_bytes()) {
            Err(JwksError::Empty(why)) => assert!(why.contains("1024") || why.contains("2048")),
            other => panic!("{other:?}"),
        }
        let ks = keys();
        assert_eq!(ks.keys().len(), 3);
        let algs: Vec<_> = ks.keys().iter().map(Jwk::algorithm).collect();
        assert_eq!(algs, [Algorithm::EdDsa, Algorithm::Es256, Algorithm::Rs256]);
        assert_eq!(ks.keys()[1].kid(), Some("ec1"));
    }

    #[test]
    fn key_set_version() {
        assert_eq!(keys().version(), keys().version());
        let more = keys().merged(&KeySet::new(vec![
            Jwk::ed25519(Some("ed2"), &ed25519_public(&[9; 32])).unwrap(),
        ]));
        assert_ne!(more.version(), keys().version());
        let other_kid = KeySet::new(vec![ed("x")]);
        assert_ne!(other_kid.version(), KeySet::new(vec![ed("y")]).version());
    }

    #[test]
    fn thumbprint_is_rfc7638() {
        // RFC 8037 appendix A.3: the thumbprint of the example Ed25519 key.
        let x = URL_SAFE_NO_PAD
            .decode("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
            .unwrap();
        let x: [u8; 32] = x.try_into().unwrap();
        assert_eq!(
            ed25519_thumbprint(&x),
            "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
        );
    }
}
