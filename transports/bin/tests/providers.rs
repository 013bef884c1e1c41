//! Access tokens from the authorization servers the README documents (Keycloak, Entra ID
//! v2, Okta), each shaped as that provider writes them (header `typ` and `kid`, `iss`
//! form, `aud` form, the scopes' claim and form, the claims around them), signed RS256
//! by a test key in a JWKS file shaped like the provider's, with the `[auth]` settings
//! the README gives for it; each reaches `dunning_me` over a real socket as the demo
//! owner. With the default settings the same tokens are refused with the reason an
//! operator would read in the log.

mod common;

use std::path::Path;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use common::{Srv, V2025, V2026, now_secs, scratch};
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};

/// A 2048-bit RSA key made for these tests only (hex n, d, p, q; e = 65537).
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

fn rsa_key() -> rsa::RsaPrivateKey {
    let n = |h: &str| {
        let digits: String = h.split_whitespace().collect();
        rsa::BigUint::parse_bytes(digits.as_bytes(), 16).unwrap()
    };
    rsa::RsaPrivateKey::from_components(
        n(RSA_N),
        rsa::BigUint::from(65_537u32),
        n(RSA_D),
        vec![n(RSA_P), n(RSA_Q)],
    )
    .unwrap()
}

/// The test key's public half as a JWK, with the provider's own members around it.
fn rsa_jwk(extra: Value) -> Value {
    let public = rsa_key().to_public_key();
    let mut jwk = json!({
        "kty": "RSA",
        "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be()),
    });
    for (k, v) in extra.as_object().unwrap() {
        jwk[k] = v.clone();
    }
    jwk
}

/// `header.claims` signed RS256 with the test key.
fn sign(header: &Value, claims: &Value) -> String {
    use rsa::signature::{SignatureEncoding as _, Signer as _};
    let key = rsa::pkcs1v15::SigningKey::<sha2::Sha256>::new(rsa_key());
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = key.sign(input.as_bytes()).to_vec();
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig))
}

/// What a provider's case needs: its JWKS document, its `[auth]` settings (beside the
/// issuer and the JWKS file), and its token for the server at `resource`.
struct Provider {
    name: &'static str,
    issuer: &'static str,
    jwks: Value,
    settings: &'static str,
    token: fn(resource: &str, now: u64) -> String,
}

/// A base64 string of the length and alphabet of an X.509 certificate's thumbprint or
/// body: the JWKS parser must pass over such members, whatever they hold.
fn opaque(len: usize) -> String {
    STANDARD.encode(vec![0x5a; len])
}

fn keycloak() -> Provider {
    const KID: &str = "W6wP4Bx0qUdPvGhT2nNPlzvn6pS2DtQJb4bvB-2Zb5s";
    Provider {
        name: "Keycloak",
        issuer: "https://sso.example.test/realms/kobana",
        // Keycloak's certs endpoint: the signing key with its certificate, and the realm's
        // encryption key (skipped).
        jwks: json!({ "keys": [
            rsa_jwk(json!({ "kid": "enc-Vb1l2vTq", "use": "enc", "alg": "RSA-OAEP",
                "x5c": [opaque(700)], "x5t": opaque(20), "x5t#S256": opaque(32) })),
            rsa_jwk(json!({ "kid": KID, "use": "sig", "alg": "RS256",
                "x5c": [opaque(700)], "x5t": opaque(20), "x5t#S256": opaque(32) })),
        ]}),
        settings: "require_at_jwt = false\nsubject_claim = \"email\"\n",
        token: |resource, now| {
            sign(
                &json!({ "alg": "RS256", "typ": "JWT", "kid": KID }),
                &json!({
                    "exp": now + 300, "iat": now, "auth_time": now - 5,
                    "jti": "onrtac:7d3f3b52-35a3-4a4e-9f0b-2c1d1e0f4a11",
                    "iss": "https://sso.example.test/realms/kobana",
                    // An audience mapper adds the MCP endpoint beside `account`.
                    "aud": [resource, "account"],
                    "sub": "f3b7c1de-8a0e-4b8e-9a3c-5d2e1f0a9b7c",
                    "typ": "Bearer", "azp": "mcp-inspector",
                    "sid": "0b6f2c1e-4d7a-4e0b-8f3c-1a2b3c4d5e6f", "acr": "1",
                    "allowed-origins": ["http://localhost:6274"],
                    "realm_access": { "roles": ["default-roles-kobana", "offline_access"] },
                    "resource_access": { "account": { "roles": ["manage-account"] } },
                    "scope": "openid email profile dunning.read dunning.write dunning.admin",
                    "email_verified": true, "name": "Ana Demo",
                    "preferred_username": "ana", "given_name": "Ana", "family_name": "Demo",
                    "email": "ana@demo.example",
                    // A "User Attribute" protocol mapper (token claim name `org`).
                    "org": "demo",
                }),
            )
        },
    }
}

fn entra() -> Provider {
    const KID: &str = "KQ2tAcrE7lBaViGmN8AgWmjXzTI";
    const TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
    const API_APP: &str = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
    Provider {
        name: "Entra ID v2",
        issuer: "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0",
        // The tenant's discovery keys: no `alg`, an `issuer` member, the certificate.
        jwks: json!({ "keys": [rsa_jwk(json!({
            "use": "sig", "kid": KID, "x5t": KID, "x5c": [opaque(700)],
            "issuer": format!("https://login.microsoftonline.com/{TENANT}/v2.0"),
        }))]}),
        settings: "require_at_jwt = false\nsubject_claim = \"preferred_username\"\n\
                   org_claim = \"extn.dunningOrg\"\nscope_claim = \"scp\"\n\
                   mcp_audience_aliases = [\"6e74172b-be56-4843-9ff4-e66a39bb12e3\"]\n",
        token: |_resource, now| {
            sign(
                &json!({ "typ": "JWT", "alg": "RS256", "x5t": KID, "kid": KID }),
                &json!({
                    // v2.0 access tokens name the API by its application (client) id.
                    "aud": API_APP,
                    "iss": format!("https://login.microsoftonline.com/{TENANT}/v2.0"),
                    "iat": now, "nbf": now, "exp": now + 3600,
                    "aio": "AWQAm/8YAAAAb0Zk2qVv1j3Qm0v8mJ3b5w==",
                    "azp": "0e8a3e4c-2f1b-4a5d-9c6e-7b8a9d0c1e2f", "azpacr": "0",
                    "name": "Ana Demo", "oid": "9d7c3b2a-1e0f-4a5b-8c6d-7e8f9a0b1c2d",
                    "preferred_username": "ana@demo.example",
                    "rh": "0.AR8AaGv7Iu1vQUyRqy1s0BHbRysXdG5WvkNIn_TmajmwEuMfAMs.",
                    "scp": "dunning.read dunning.write dunning.admin",
                    "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
                    "tid": TENANT, "uti": "q0Lh3rJ7Pk2XyZ8W9v1AAA", "ver": "2.0",
                    // An optional claim from a directory extension attribute.
                    "extn.dunningOrg": "demo",
                }),
            )
        },
    }
}

fn okta() -> Provider {
    const KID: &str = "pX3Y5c9Pj0Yq2Wm9oA2v0bUe4Hn1Lk7fTqZs6d8RgMw";
    Provider {
        name: "Okta",
        issuer: "https://kobana.okta.com/oauth2/aus1a2b3c4d5E6f7g8h9",
        jwks: json!({ "keys": [rsa_jwk(json!({ "kid": KID, "alg": "RS256", "use": "sig" }))] }),
        settings: "require_at_jwt = false\nscope_claim = \"scp\"\n",
        token: |resource, now| {
            sign(
                // A custom authorization server writes no `typ`.
                &json!({ "kid": KID, "alg": "RS256" }),
                &json!({
                    "ver": 1, "jti": "AT.4oBZ0nY3qk1c2Hc7x9y8z7W6v5u4t3s2r1q0p",
                    "iss": "https://kobana.okta.com/oauth2/aus1a2b3c4d5E6f7g8h9",
                    // The authorization server's audience: the MCP endpoint.
                    "aud": resource,
                    "iat": now, "exp": now + 3600,
                    "cid": "0oa1b2c3d4e5F6g7h8i9", "uid": "00u1a2b3c4d5E6f7g8h9",
                    "scp": ["openid", "dunning.read", "dunning.write", "dunning.admin"],
                    "auth_time": now - 30,
                    "sub": "ana@demo.example",
                    // A custom claim of the authorization server (include in: access token).
                    "org": "demo",
                }),
            )
        },
    }
}

/// A server trusting `p` (its JWKS in a file), with `settings` under `[auth]`.
fn server(p: &Provider, jwks_dir: &Path, settings: &str) -> Srv {
    let file = jwks_dir.join(format!("{}.json", p.name.replace(' ', "-")));
    std::fs::write(&file, p.jwks.to_string()).unwrap();
    let config = format!(
        "[auth]\nissuer = \"{}\"\njwks_file = \"{}\"\n{settings}",
        p.issuer,
        file.display()
    );
    Srv::start(&[], Some(&config))
}

#[test]
fn keycloak_entra_id_and_okta_tokens_reach_dunning_me_with_the_readme_settings() {
    let jwks_dir = scratch("providers");
    for p in [keycloak(), entra(), okta()] {
        let srv = server(&p, &jwks_dir, p.settings);
        let token = (p.token)(&format!("{}/", srv.url), now_secs());
        for version in [V2026, V2025] {
            let r = srv.call(&token, version, "dunning_me", json!({}));
            assert_eq!(r.status, 200, "{}: {}", p.name, r.text());
            let me = r.structured();
            assert_eq!(me["user"]["email"], "ana@demo.example", "{}: {me}", p.name);
            let scopes = me.to_string();
            assert!(scopes.contains("dunning.admin"), "{}: {me}", p.name);
        }
    }
    let _ = std::fs::remove_dir_all(&jwks_dir);
}

#[test]
fn without_the_settings_each_provider_is_refused_with_a_reason() {
    let jwks_dir = scratch("providers-default");
    // Only the issuer and the keys: `typ` first (Keycloak and Entra ID write `JWT`, Okta
    // nothing), then, with `require_at_jwt = false` alone, the claims and the audience.
    let cases = [
        (keycloak(), "", "typ is not"),
        (entra(), "", "typ is not"),
        (okta(), "", "typ is not"),
        (keycloak(), "require_at_jwt = false\n", "not a member"),
        (entra(), "require_at_jwt = false\n", "wrong audience"),
        (okta(), "require_at_jwt = false\n", "bad claims"),
    ];
    for (p, settings, reason) in cases {
        let srv = server(&p, &jwks_dir, settings);
        let token = (p.token)(&format!("{}/", srv.url), now_secs());
        let r = srv.call(&token, V2026, "dunning_me", json!({}));
        assert_eq!(r.status, 401, "{}: {}", p.name, r.text());
        let challenge = r.header("www-authenticate").unwrap_or_default();
        assert!(
            challenge.contains(reason),
            "{} {settings:?}: {challenge}",
            p.name
        );
    }
    let _ = std::fs::remove_dir_all(&jwks_dir);
}
