//! Fuzz target `jwt_verify`: bytes as a compact JWT through [`jwt::verify`] with a fixed
//! key set (one EdDSA, one ES256 and one RS256 key, parsed from a JWKS document), a
//! fixed [`Validation`] and [`NOW`], for both audiences.
//!
//! The first byte picks a mode (`byte % 4`):
//!
//! - `0`, `1`: the rest, as (lossy) UTF-8, is the token;
//! - `2`: structured: the next byte picks the signing key (`% 3`: EdDSA, ES256, RS256);
//!   the rest, split on `0xFF`, is the header JSON, the claims JSON and an optional tweak
//!   (two bytes of position, one XOR mask) applied to the signed token, so the fuzzer
//!   mutates JSON the harness then base64url-encodes and really signs;
//! - `3`: the rest is a JWKS document for [`KeySet::from_jwks`].
//!
//! The oracle, for every token that verifies: the harness re-signs the token's signing
//! input (`header.payload`) with the private key of the algorithm the header names, and
//! the signature must be that one (ES256: equal `r` and equal low-`s`, since ECDSA
//! signatures are malleable in `s`); and the returned [`Claims`] must be the payload's.
//! So nothing verifies unless this harness' own key signed exactly those bytes.

use std::sync::OnceLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::Sha256;

use super::NOW;
use crate::jwt::{self, Algorithm, Claims, KeySet, Validation};
use crate::principal::Audience;

/// `iss` the fuzzing validation accepts.
pub const ISSUER: &str = "https://auth.example.com";
/// The MCP audience.
pub const MCP_AUDIENCE: &str = "https://mcp.example.com";
/// The REST API audience.
pub const API_AUDIENCE: &str = "https://mcp.example.com/v1";

const ED_SEED: [u8; 32] = [7; 32];
const EC_SECRET: [u8; 32] = [42; 32];

/// A 2048-bit RSA key (hex n, d, p, q; e = 65537) made for tests only: the one of the
/// `jwt` unit tests.
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

/// The private keys of the harness.
struct Signers {
    ed: ed25519_dalek::SigningKey,
    ec: p256::ecdsa::SigningKey,
    rsa: rsa::pkcs1v15::SigningKey<Sha256>,
    rsa_public: rsa::RsaPublicKey,
}

fn signers() -> &'static Signers {
    static S: OnceLock<Signers> = OnceLock::new();
    S.get_or_init(|| {
        let n = |h: &str| match rsa::BigUint::parse_bytes(h.as_bytes(), 16) {
            Some(n) => n,
            None => panic!("bad RSA test constant"),
        };
        let rsa = match rsa::RsaPrivateKey::from_components(
            n(RSA_N),
            rsa::BigUint::from(65_537u32),
            n(RSA_D),
            vec![n(RSA_P), n(RSA_Q)],
        ) {
            Ok(k) => k,
            Err(e) => panic!("RSA test key: {e}"),
        };
        let ec = match p256::ecdsa::SigningKey::from_slice(&EC_SECRET) {
            Ok(k) => k,
            Err(e) => panic!("P-256 test key: {e}"),
        };
        Signers {
            ed: ed25519_dalek::SigningKey::from_bytes(&ED_SEED),
            ec,
            rsa_public: rsa.to_public_key(),
            rsa: rsa::pkcs1v15::SigningKey::new(rsa),
        }
    })
}

/// The JWKS document of the harness' three public keys (`ed1`, `ec1`, `rs1`).
pub fn jwks() -> Value {
    use rsa::traits::PublicKeyParts as _;
    let s = signers();
    let p = s.ec.verifying_key().to_encoded_point(false);
    let (x, y) = (p.x().map(|x| x.to_vec()), p.y().map(|y| y.to_vec()));
    json!({ "keys": [
        jwt::ed25519_jwk("ed1", &s.ed.verifying_key().to_bytes()),
        { "kty": "EC", "crv": "P-256", "kid": "ec1", "alg": "ES256", "use": "sig",
          "x": URL_SAFE_NO_PAD.encode(x.unwrap_or_default()),
          "y": URL_SAFE_NO_PAD.encode(y.unwrap_or_default()) },
        { "kty": "RSA", "kid": "rs1", "alg": "RS256",
          "n": URL_SAFE_NO_PAD.encode(s.rsa_public.n().to_bytes_be()),
          "e": URL_SAFE_NO_PAD.encode(s.rsa_public.e().to_bytes_be()) },
    ]})
}

/// The key set every token is verified with.
pub fn key_set() -> &'static KeySet {
    static K: OnceLock<KeySet> = OnceLock::new();
    K.get_or_init(|| match KeySet::from_jwks(jwks().to_string().as_bytes()) {
        Ok(k) if k.keys().len() == 3 => k,
        other => panic!("the fuzzing JWKS lost a key: {other:?}"),
    })
}

/// The fixed validation: [`ISSUER`], both audiences, 60 s leeway, `typ: at+jwt`.
pub fn validation() -> Validation {
    Validation::new(ISSUER, MCP_AUDIENCE, API_AUDIENCE)
}

/// The signature the harness makes over `msg` with its key for `alg`.
fn sign(alg: Algorithm, msg: &[u8]) -> Vec<u8> {
    use rsa::signature::{SignatureEncoding as _, Signer as _};
    let s = signers();
    match alg {
        Algorithm::EdDsa => s.ed.sign(msg).to_bytes().to_vec(),
        Algorithm::Es256 => {
            let sig: p256::ecdsa::Signature = s.ec.sign(msg);
            sig.to_bytes().to_vec()
        }
        Algorithm::Rs256 => s.rsa.sign(msg).to_vec(),
    }
}

/// `base64url(header).base64url(claims)`, signed by the harness with its `alg` key.
pub fn signed(alg: Algorithm, header: &[u8], claims: &[u8]) -> String {
    let mut out = URL_SAFE_NO_PAD.encode(header);
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(claims));
    let sig = sign(alg, out.as_bytes());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(sig));
    out
}

/// A token with valid claims for `audience` (the MCP one when `None`), signed with `alg`.
pub fn valid_token(alg: Algorithm, audience: Option<&str>) -> String {
    let kid = match alg {
        Algorithm::EdDsa => "ed1",
        Algorithm::Es256 => "ec1",
        Algorithm::Rs256 => "rs1",
    };
    let header = json!({ "alg": alg.as_str(), "typ": "at+jwt", "kid": kid });
    signed(
        alg,
        header.to_string().as_bytes(),
        valid_claims(audience).as_bytes(),
    )
}

/// Claims that pass every check at [`NOW`].
pub fn valid_claims(audience: Option<&str>) -> String {
    let now = NOW.as_millis() / 1000;
    json!({
        "iss": ISSUER, "aud": audience.unwrap_or(MCP_AUDIENCE), "sub": "ana@demo.example",
        "org": "demo", "scope": "dunning.read dunning.write", "exp": now + 600, "iat": now,
        "jti": "j1", "client_id": "cli",
    })
    .to_string()
}

/// Panics unless `claims`, verified from `token`, were signed by the harness and are
/// the token's own.
fn check_accepted(token: &str, claims: &Claims) {
    let mut parts = token.split('.');
    let (Some(h64), Some(p64), Some(s64)) = (parts.next(), parts.next(), parts.next()) else {
        panic!("a token that is not three parts verified: {token:?}");
    };
    let decode = |s: &str| match URL_SAFE_NO_PAD.decode(s) {
        Ok(b) => b,
        Err(e) => panic!("a token with bad base64url verified ({e}): {token:?}"),
    };
    let header: Value = serde_json::from_slice(&decode(h64)).unwrap_or(Value::Null);
    let alg = header["alg"].as_str().and_then(Algorithm::parse);
    let Some(alg) = alg else {
        panic!("a token without an accepted alg verified: {token:?}");
    };
    let msg = &token.as_bytes()[..h64.len() + 1 + p64.len()];
    let (got, want) = (decode(s64), sign(alg, msg));
    let same = if alg == Algorithm::Es256 {
        let low = |b: &[u8]| {
            p256::ecdsa::Signature::from_slice(b)
                .ok()
                .map(|s| s.normalize_s().unwrap_or(s))
        };
        low(&got).is_some() && low(&got) == low(&want)
    } else {
        got == want
    };
    assert!(
        same,
        "a signature the harness did not make verified: {token:?}"
    );
    let payload: Value = serde_json::from_slice(&decode(p64)).unwrap_or(Value::Null);
    assert_eq!(payload["iss"].as_str(), Some(ISSUER), "{token:?}");
    assert_eq!(payload["sub"].as_str(), Some(claims.subject.as_str()));
    assert_eq!(payload["org"].as_str(), Some(claims.organization.as_str()));
    assert!(
        claims.expires_at.as_millis() + 60_000 > NOW.as_millis(),
        "an expired token verified: {token:?}"
    );
}

/// Verifies `token` for both audiences; applies the oracle to each success. Returns how
/// many audiences accepted it.
pub fn check(token: &str) -> usize {
    let mut accepted = 0;
    for audience in [Audience::Mcp, Audience::Api] {
        if let Ok(claims) = jwt::verify(token, key_set(), &validation(), audience, NOW) {
            check_accepted(token, &claims);
            accepted += 1;
        }
    }
    accepted
}

/// Fuzz target `jwt_verify` (see the module docs).
pub fn jwt_verify(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        check("");
        return;
    };
    match mode % 4 {
        2 => {
            let Some((&key, rest)) = rest.split_first() else {
                return;
            };
            let alg = [Algorithm::EdDsa, Algorithm::Es256, Algorithm::Rs256][usize::from(key % 3)];
            let mut parts = rest.splitn(3, |&b| b == 0xFF);
            let header = parts.next().unwrap_or_default();
            let claims = parts.next().unwrap_or_default();
            let tweak = parts.next().unwrap_or_default();
            let token = signed(alg, header, claims);
            let mut bytes = token.into_bytes();
            if let [hi, lo, mask, ..] = *tweak {
                let at = usize::from(u16::from_be_bytes([hi, lo])) % bytes.len();
                bytes[at] ^= mask;
            }
            check(&String::from_utf8_lossy(&bytes));
        }
        3 => {
            if let Ok(set) = KeySet::from_jwks(rest) {
                let _ = (set.version(), set.skipped().len());
                for k in set.keys() {
                    let _ = (k.kid(), k.algorithm());
                }
            }
        }
        _ => {
            check(&String::from_utf8_lossy(rest));
        }
    }
}

/// Seeds for `jwt_verify`: a valid token of each algorithm (raw and structured), near
/// misses, and the JWKS document.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let raw = |t: &str| [&[0u8][..], t.as_bytes()].concat();
    let structured = |key: u8, header: &Value, claims: &str| {
        let mut v = vec![2, key];
        v.extend_from_slice(header.to_string().as_bytes());
        v.push(0xFF);
        v.extend_from_slice(claims.as_bytes());
        v
    };
    let mut out = Vec::new();
    for (i, alg) in [Algorithm::EdDsa, Algorithm::Es256, Algorithm::Rs256]
        .into_iter()
        .enumerate()
    {
        let name = alg.as_str();
        let kid = ["ed1", "ec1", "rs1"][i];
        let key = u8::try_from(i).unwrap_or(0);
        out.push((format!("raw_{name}"), raw(&valid_token(alg, None))));
        out.push((
            format!("raw_{name}_api"),
            raw(&valid_token(alg, Some(API_AUDIENCE))),
        ));
        let header = json!({ "alg": name, "typ": "at+jwt", "kid": kid });
        out.push((
            format!("structured_{name}"),
            structured(key, &header, &valid_claims(None)),
        ));
        let nokid = json!({ "alg": name, "typ": "at+jwt" });
        out.push((
            format!("structured_{name}_nokid"),
            structured(key, &nokid, &valid_claims(Some(API_AUDIENCE))),
        ));
    }
    let claims = valid_claims(None);
    let odd_headers = [
        ("alg_none", json!({ "alg": "none", "typ": "at+jwt" })),
        (
            "hs256",
            json!({ "alg": "HS256", "typ": "at+jwt", "kid": "ed1" }),
        ),
        (
            "wrong_kid",
            json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "ec1" }),
        ),
        (
            "crit",
            json!({ "alg": "EdDSA", "typ": "at+jwt", "crit": ["exp"] }),
        ),
        ("typ_jwt", json!({ "alg": "EdDSA", "typ": "JWT" })),
        (
            "kid_number",
            json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": 1 }),
        ),
    ];
    for (name, header) in odd_headers {
        out.push((format!("header_{name}"), structured(0, &header, &claims)));
    }
    let header = json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "ed1" });
    let now = NOW.as_millis() / 1000;
    let odd_claims = [
        (
            "expired",
            json!({ "iss": ISSUER, "aud": MCP_AUDIENCE, "sub": "s", "org": "o", "scope": "", "exp": now - 61 }),
        ),
        (
            "aud_list",
            json!({ "iss": ISSUER, "aud": ["x", "HTTPS://MCP.example.com/"], "sub": "s", "org": "o", "scope": "a", "exp": now + 1, "nbf": now }),
        ),
        (
            "float_dates",
            json!({ "iss": ISSUER, "aud": MCP_AUDIENCE, "sub": "s", "org": "o", "scope": "a", "exp": 1e300, "iat": -1e14 }),
        ),
        (
            "no_sub",
            json!({ "iss": ISSUER, "aud": MCP_AUDIENCE, "org": "o", "scope": "a", "exp": now + 9 }),
        ),
    ];
    for (name, c) in odd_claims {
        out.push((
            format!("claims_{name}"),
            structured(0, &header, &c.to_string()),
        ));
    }
    let mut tweaked = structured(0, &header, &claims);
    tweaked.extend_from_slice(&[0xFF, 0, 200, 1]);
    out.push(("tweaked_signature".into(), tweaked));
    for (name, junk) in [
        ("empty", ""),
        ("dots", ".."),
        ("three_parts", "e30.e30.AAAA"),
        ("four_parts", "a.b.c.d"),
        ("padded", "e30=.e30=.AA=="),
    ] {
        out.push((format!("junk_{name}"), raw(junk)));
    }
    out.push((
        "jwks".into(),
        [&[3u8][..], jwks().to_string().as_bytes()].concat(),
    ));
    out
}
