//! Diagnostics: every refusal and internal error says why, in `RequestLog::reason`; a `401`
//! says it in its challenge's `error_description` too (RFC 6750 §3).
//!
//! The 401 rows run the real verifier ([`jwt::verify`]) behind a minimal authenticator,
//! one test per kind of failure, each checking the header and the log.

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{RawRequest, TestDomain, legacy, send};
use dunning_core::fuzzing::{LIMITED_TOKEN, NOW};
use dunning_core::jwt::{self, Jwk, KeySet, Validation};
use dunning_core::{
    Audience, AuthError, Authenticate, Config, Env, Principal, Response, Scope, Server, UnixTime,
};
use ed25519_dalek::Signer as _;
use serde_json::{Value, json};

const ISS: &str = "https://auth.example.com";
const SEED: [u8; 32] = [7; 32];

/// Verifies with [`jwt::verify`]; organization `gone` has no members.
struct JwtAuth {
    keys: KeySet,
    validation: Validation,
}

impl Authenticate for JwtAuth {
    fn authenticate(
        &self,
        token: &str,
        audience: Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        let c = jwt::verify(token, &self.keys, &self.validation, audience, now)?;
        if c.organization == "gone" {
            return Err(AuthError::NotMember);
        }
        Ok(Principal {
            subject: c.subject,
            organization: c.organization,
            scope: Some(Scope::Admin),
            scopes: c.scopes,
            permissions: Default::default(),
            expires_at: c.expires_at,
            audience,
        })
    }

    fn may_block(&self) -> bool {
        false
    }
}

fn jwt_server(require_at_jwt: bool) -> Server<TestDomain> {
    let config = Config::default();
    let mut validation = Validation::new(
        ISS,
        &config.resource(),
        &format!("{}/v1", config.public_url),
    );
    validation.require_at_jwt = require_at_jwt;
    let keys = KeySet::new(vec![
        Jwk::ed25519(Some("k1"), &jwt::ed25519_public(&SEED)).expect("a valid key"),
    ]);
    Server::new(
        config,
        dunning_core::fuzzing::keys(),
        TestDomain,
        JwtAuth { keys, validation },
    )
    .expect("the test catalog is valid")
}

fn claims() -> Value {
    let now = NOW.as_secs();
    json!({
        "iss": ISS,
        "aud": Config::default().resource(),
        "sub": "ana@demo.example",
        "org": "demo",
        "scope": "dunning.admin",
        "iat": now,
        "exp": now + 600,
    })
}

fn with(mut c: Value, k: &str, v: Value) -> Value {
    c[k] = v;
    c
}

fn sign(header: &Value, claims: &Value, seed: &[u8; 32]) -> String {
    let mut out = URL_SAFE_NO_PAD.encode(header.to_string());
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(claims.to_string()));
    let key = ed25519_dalek::SigningKey::from_bytes(seed);
    let sig = key.sign(out.as_bytes()).to_bytes();
    out.push('.');
    out.push_str(&URL_SAFE_NO_PAD.encode(sig));
    out
}

fn token(claims: &Value) -> String {
    sign(
        &json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "k1" }),
        claims,
        &SEED,
    )
}

/// A `ping` with the given `Authorization` header (or none).
fn ping(authorization: Option<&str>) -> RawRequest {
    let mut headers = vec![("Content-Type".to_owned(), b"application/json".to_vec())];
    if let Some(a) = authorization {
        headers.push(("Authorization".to_owned(), a.as_bytes().to_vec()));
    }
    RawRequest {
        method: "POST".into(),
        target: "/".into(),
        headers,
        body: br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec(),
    }
}

fn handle(server: &Server<TestDomain>, req: &RawRequest) -> Response {
    req.with(|r| server.handle(r, &Env::fixed(NOW, 1)))
}

fn challenge(r: &Response) -> String {
    r.header("www-authenticate")
        .expect("a 401 has a challenge")
        .to_str()
        .expect("ASCII")
        .to_owned()
}

/// A token refused with `why`: `401`, `error="invalid_token"`, the reason as
/// `error_description` and in the log. `check_head` says the same.
fn assert_refused(server: &Server<TestDomain>, authorization: &str, why: AuthError) -> String {
    let req = ping(Some(authorization));
    let r = handle(server, &req);
    assert_eq!(r.status, 401);
    let text = why.to_string();
    assert_eq!(r.log.reason.as_deref(), Some(text.as_str()));
    let c = challenge(&r);
    assert!(c.contains(r#"error="invalid_token""#), "{c}");
    let quoted = text.replace('"', "'");
    assert!(
        c.contains(&format!("error_description=\"{quoted}\"")),
        "{c}"
    );
    let head = req
        .with(|r| server.check_head(r, &Env::fixed(NOW, 1)))
        .expect("refused from the head");
    assert_eq!(head.log.reason.as_deref(), Some(text.as_str()));
    c
}

fn bearer(t: &str) -> String {
    format!("Bearer {t}")
}

#[test]
fn a_valid_token_has_no_reason() {
    let r = handle(&jwt_server(true), &ping(Some(&bearer(&token(&claims())))));
    assert_eq!(r.status, 200);
    assert_eq!(r.log.reason, None);
}

#[test]
fn no_token() {
    let r = handle(&jwt_server(true), &ping(None));
    assert_eq!(r.status, 401);
    assert_eq!(
        r.log.reason.as_deref(),
        Some(AuthError::NoToken.to_string().as_str())
    );
    let c = challenge(&r);
    assert!(c.starts_with("Bearer resource_metadata="), "{c}");
    assert!(
        !c.contains("error"),
        "RFC 6750 §3.1: no error information: {c}"
    );
}

#[test]
fn not_a_bearer_header() {
    assert_refused(
        &jwt_server(true),
        "Basic YWxhZGRpbjpvcGVuc2VzYW1l",
        AuthError::NotBearer,
    );
}

#[test]
fn malformed_token() {
    assert_refused(&jwt_server(true), "Bearer not.a.jwt", AuthError::Malformed);
}

#[test]
fn algorithm_not_accepted() {
    let t = sign(
        &json!({ "alg": "HS256", "typ": "at+jwt", "kid": "k1" }),
        &claims(),
        &SEED,
    );
    assert_refused(&jwt_server(true), &bearer(&t), AuthError::Algorithm);
}

#[test]
fn unknown_kid() {
    let t = sign(
        &json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "rotated-away" }),
        &claims(),
        &SEED,
    );
    let c = assert_refused(&jwt_server(true), &bearer(&t), AuthError::UnknownKey);
    assert!(c.contains("unknown kid"), "{c}");
}

#[test]
fn bad_signature() {
    let t = sign(
        &json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "k1" }),
        &claims(),
        &[8; 32],
    );
    assert_refused(&jwt_server(true), &bearer(&t), AuthError::Signature);
}

#[test]
fn typ_jwt_names_the_setting_that_accepts_it() {
    let t = sign(
        &json!({ "alg": "EdDSA", "typ": "JWT", "kid": "k1" }),
        &claims(),
        &SEED,
    );
    let c = assert_refused(&jwt_server(true), &bearer(&t), AuthError::Typ);
    assert!(c.contains("require_at_jwt = false"), "{c}");
    assert!(c.contains("Keycloak, Entra ID, Okta"), "{c}");
    // And the setting does accept it.
    let r = handle(&jwt_server(false), &ping(Some(&bearer(&t))));
    assert_eq!(r.status, 200);
}

#[test]
fn typ_neither_at_jwt_nor_jwt() {
    let t = sign(
        &json!({ "alg": "EdDSA", "typ": "id+jwt", "kid": "k1" }),
        &claims(),
        &SEED,
    );
    assert_refused(&jwt_server(false), &bearer(&t), AuthError::WrongTyp);
}

#[test]
fn expired() {
    let c = with(claims(), "exp", json!(NOW.as_secs() - 120));
    let c = with(c, "iat", json!(NOW.as_secs() - 720));
    let h = assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::Expired);
    assert!(h.contains("token expired"), "{h}");
}

#[test]
fn not_yet_valid() {
    let c = with(claims(), "nbf", json!(NOW.as_secs() + 300));
    assert_refused(
        &jwt_server(true),
        &bearer(&token(&c)),
        AuthError::NotYetValid,
    );
}

#[test]
fn lifetime_over_the_maximum() {
    let c = with(claims(), "exp", json!(NOW.as_secs() + 30 * 86_400));
    assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::Lifetime);
}

#[test]
fn wrong_issuer() {
    let c = with(claims(), "iss", json!("https://evil.example.com"));
    assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::Issuer);
}

#[test]
fn wrong_audience() {
    let c = with(claims(), "aud", json!("https://other.example.com"));
    assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::Audience);
}

#[test]
fn missing_claims() {
    let mut c = claims();
    c.as_object_mut().expect("an object").remove("org");
    assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::Claims);
}

#[test]
fn not_a_member() {
    let c = with(claims(), "org", json!("gone"));
    assert_refused(&jwt_server(true), &bearer(&token(&c)), AuthError::NotMember);
}

#[test]
fn every_description_is_quote_safe() {
    // RFC 6750 §3: error_description is %x20-21 / %x23-5B / %x5D-7E.
    for why in [
        AuthError::NotBearer,
        AuthError::Malformed,
        AuthError::Algorithm,
        AuthError::UnknownKey,
        AuthError::Signature,
        AuthError::Typ,
        AuthError::WrongTyp,
        AuthError::Expired,
        AuthError::NotYetValid,
        AuthError::Lifetime,
        AuthError::Issuer,
        AuthError::Audience,
        AuthError::Claims,
        AuthError::NotMember,
        AuthError::Lookup,
    ] {
        let text = why.to_string();
        assert!(
            text.chars()
                .all(|c| (' '..='~').contains(&c) && c != '"' && c != '\\'),
            "{text}"
        );
    }
}

// Other refusals, on the shared test server.

fn reason(r: &Response) -> &str {
    r.log.reason.as_deref().unwrap_or_default()
}

#[test]
fn origin_refusal_says_why() {
    let mut req = legacy(1, "ping", json!({}));
    req.headers
        .push(("Origin".into(), b"https://evil.example.com".to_vec()));
    let r = send(&req);
    assert_eq!(r.status, 403);
    assert!(
        reason(&r).starts_with("Origin not allowed"),
        "{}",
        reason(&r)
    );
    assert!(!reason(&r).contains("evil"), "nothing the client wrote");
}

#[test]
fn scope_refusal_says_which_scope() {
    let mut req = legacy(
        1,
        "tools/call",
        json!({ "name": "secrets_rotate", "arguments": {} }),
    );
    req.headers[0].1 = format!("Bearer {}", common::READ_TOKEN).into_bytes();
    let r = send(&req);
    assert_eq!(r.status, 403);
    assert!(reason(&r).contains("insufficient scope"), "{}", reason(&r));
    assert!(reason(&r).contains("admin"), "{}", reason(&r));
}

#[test]
fn permission_refusal_says_why() {
    let mut req = legacy(
        1,
        "tools/call",
        json!({ "name": "charges_cancel", "arguments": { "id": "c1" } }),
    );
    req.headers[0].1 = b"Bearer tok-noperm".to_vec();
    let r = send(&req);
    assert_eq!(r.log.tool_error, Some("FORBIDDEN"));
    assert!(reason(&r).starts_with("permission: "), "{}", reason(&r));
    assert!(reason(&r).contains("charges.cancel"), "{}", reason(&r));
}

#[test]
fn rate_limit_says_which_policy() {
    let mut req = legacy(1, "ping", json!({}));
    req.headers[0].1 = format!("Bearer {LIMITED_TOKEN}").into_bytes();
    let r = send(&req);
    assert_eq!(r.status, 429);
    assert!(
        reason(&r).starts_with("rate limit exceeded"),
        "{}",
        reason(&r)
    );
}

#[test]
fn body_too_large_says_the_limit() {
    let mut req = legacy(1, "ping", json!({}));
    req.body = vec![b' '; Config::default().max_body + 1];
    let r = send(&req);
    assert_eq!(r.status, 413);
    assert!(reason(&r).contains("2097152 bytes"), "{}", reason(&r));
}

#[test]
fn internal_error_records_the_dispatchers_text() {
    let req = legacy(
        1,
        "tools/call",
        json!({ "name": "charges_get", "arguments": { "id": "broken" } }),
    );
    let r = send(&req);
    assert_eq!(r.status, 500);
    assert_eq!(reason(&r), "internal error: store: disk I/O error");
    let body = String::from_utf8_lossy(&r.body);
    assert!(!body.contains("disk"), "the detail is the log's: {body}");
}

#[test]
fn rest_internal_error_records_the_text_and_sends_a_generic_message() {
    let req = RawRequest {
        method: "GET".into(),
        target: "/v1/charges/broken".into(),
        headers: vec![("Authorization".into(), b"Bearer tok-api".to_vec())],
        body: Vec::new(),
    };
    let r = send(&req);
    assert_eq!(r.status, 500);
    assert_eq!(reason(&r), "internal error: store: disk I/O error");
    let body = String::from_utf8_lossy(&r.body);
    assert!(!body.contains("disk"), "{body}");
}

#[test]
fn overload_and_drain_say_which() {
    let req = legacy(1, "ping", json!({}));
    for (load, word) in [
        (dunning_core::Load::Overloaded, "overloaded"),
        (dunning_core::Load::Draining, "draining"),
    ] {
        let mut env = Env::fixed(NOW, 1);
        env.load = load;
        let r = req.with(|q| common::server().handle(q, &env));
        assert_eq!(r.status, 503);
        assert!(reason(&r).starts_with(word), "{}", reason(&r));
    }
}
