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

#[test]
fn scopes_as_a_list_of_strings() {
    let t = sign_ed25519(
        "ed1",
        &with(claims(), "scope", json!(["dunning.read", "openid"])),
        &ED_SEED,
    );
    assert_eq!(check(&t).unwrap().scopes, ["dunning.read", "openid"]);
    let t = sign_ed25519("ed1", &with(claims(), "scope", json!([])), &ED_SEED);
    assert_eq!(check(&t).unwrap().scopes, Vec::<String>::new());
    // Each item one scope: not a number, not empty, no space.
    for bad in [json!(["dunning.read", 5]), json!([""]), json!(["a b"])] {
        let t = sign_ed25519("ed1", &with(claims(), "scope", bad.clone()), &ED_SEED);
        assert_eq!(check(&t), Err(AuthError::Claims), "{bad}");
    }
    let many: Vec<String> = (0..=MAX_SCOPES).map(|i| format!("s{i}")).collect();
    let t = sign_ed25519("ed1", &with(claims(), "scope", json!(many)), &ED_SEED);
    assert_eq!(check(&t), Err(AuthError::Claims));
}

#[test]
fn the_claim_names_are_configurable() {
    let mut v = validation();
    v.claims = ClaimNames {
        subject: "email".into(),
        organization: "extn.org".into(),
        scope: "scp".into(),
    };
    let c = json!({
        "iss": ISS, "aud": MCP, "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
        "email": "ana@demo.example", "extn.org": "demo", "scp": "dunning.read dunning.write",
        "exp": NOW + 600, "iat": NOW,
    });
    let got = verify(
        &sign_ed25519("ed1", &c, &ED_SEED),
        &keys(),
        &v,
        Audience::Mcp,
        now(),
    )
    .unwrap();
    assert_eq!(got.subject, "ana@demo.example");
    assert_eq!(got.organization, "demo");
    assert_eq!(got.scopes, ["dunning.read", "dunning.write"]);
    // The configured names only: `org` and `scope` are not read any more.
    for k in ["email", "extn.org", "scp"] {
        let t = sign_ed25519("ed1", &without(c.clone(), k), &ED_SEED);
        let t = verify(&t, &keys(), &v, Audience::Mcp, now());
        assert_eq!(t, Err(AuthError::Claims), "{k}");
    }
    // The defaults read `scope`, not `scp`.
    let t = sign_ed25519(
        "ed1",
        &with(without(claims(), "scope"), "scp", json!("dunning.read")),
        &ED_SEED,
    );
    assert_eq!(check(&t), Err(AuthError::Claims));
}

#[test]
fn audience_aliases_name_one_audience_only() {
    const CLIENT_ID: &str = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
    let mut v = validation();
    v.mcp_audience_aliases = vec![CLIENT_ID.into()];
    let c = with(claims(), "aud", json!(CLIENT_ID));
    let t = sign_ed25519("ed1", &c, &ED_SEED);
    assert!(verify(&t, &keys(), &v, Audience::Mcp, now()).is_ok());
    assert_eq!(
        verify(&t, &keys(), &v, Audience::Api, now()),
        Err(AuthError::Audience)
    );
    // Without the alias, the same token names nothing here.
    assert_eq!(check(&t), Err(AuthError::Audience));
    // In a list, beside audiences of other resources.
    let c = with(claims(), "aud", json!(["account", CLIENT_ID]));
    let t = sign_ed25519("ed1", &c, &ED_SEED);
    assert!(verify(&t, &keys(), &v, Audience::Mcp, now()).is_ok());
}
