//! The authorization server as a pure function: what depends on the clock (a code's
//! 60 s, the page's 10 minutes, a refresh token's lifetime), driven by a fixed clock and
//! an in-memory backend.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use dunning_core::oauth::{AsConfig, AuthorizationServer, Backend, GrantKind, Person, Route};
use dunning_core::{Env, Header, Keys, Request, Response, UnixTime};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

const ISSUER: &str = "http://127.0.0.1:8080";
const REDIRECT: &str = "http://127.0.0.1:9/cb";
const VERIFIER: &str = "a-verifier-of-the-right-length-0123456789-abcdefgh";
const T0: u64 = 1_800_000_000;
static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

#[derive(Default)]
struct Mem(Mutex<HashMap<(&'static str, String), Value>>);

impl Backend for Mem {
    fn people(&self) -> Result<Vec<Person>, String> {
        Ok(vec![Person {
            organization: "o1".into(),
            organization_name: "Org".into(),
            login: "p@x".into(),
            name: "P".into(),
            role: "operator".into(),
            scopes: vec!["read".into(), "write".into()],
        }])
    }
    fn put(&self, k: GrantKind, id: &str, doc: &Value, _: Option<UnixTime>) -> Result<(), String> {
        self.0
            .lock()
            .unwrap()
            .insert((k.as_str(), id.into()), doc.clone());
        Ok(())
    }
    fn get(&self, k: GrantKind, id: &str) -> Result<Option<Value>, String> {
        Ok(self
            .0
            .lock()
            .unwrap()
            .get(&(k.as_str(), id.into()))
            .cloned())
    }
    fn update(
        &self,
        k: GrantKind,
        id: &str,
        f: &mut dyn FnMut(&Value) -> Option<Value>,
    ) -> Result<Option<Value>, String> {
        let mut m = self.0.lock().unwrap();
        let Some(old) = m.get(&(k.as_str(), id.into())).cloned() else {
            return Ok(None);
        };
        if let Some(new) = f(&old) {
            m.insert((k.as_str(), id.into()), new);
        }
        Ok(Some(old))
    }
    fn client_metadata(&self, url: &str) -> Result<Value, String> {
        Ok(json!({ "client_id": url, "client_name": "Doc client", "redirect_uris": [REDIRECT] }))
    }
}

fn server() -> AuthorizationServer {
    let mut config = AsConfig::new(
        ISSUER,
        ISSUER,
        vec!["read".into(), "write".into(), "admin".into()],
    );
    config.client_metadata_documents = true;
    AuthorizationServer::new(
        config,
        "kid",
        Zeroizing::new([5; 32]),
        Keys::single(b"0123456789abcdef0123456789abcdef"),
        Mem::default(),
    )
}

fn call(
    s: &AuthorizationServer,
    route: Route,
    method: &str,
    target: &str,
    headers: &[Header<'_>],
    body: &str,
    at: u64,
) -> Response {
    let req = Request {
        method,
        target,
        headers,
        body: body.as_bytes(),
    };
    // Fresh entropy for each request (client ids, codes, tokens).
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    s.handle(route, &req, &Env::fixed(UnixTime::from_secs(at), n))
}

const FORM: Header<'static> = Header {
    name: "Content-Type",
    value: b"application/x-www-form-urlencoded",
};

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn json_of(r: &Response) -> Value {
    serde_json::from_slice(&r.body).unwrap()
}

fn location_param(r: &Response, name: &str) -> Option<String> {
    let loc = r.header("location")?.to_str().ok()?.to_owned();
    let q = loc.split_once('?')?.1.to_owned();
    q.split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// Registers, opens the page at `t`, submits it at `submit_at`: the answer.
fn sign_in(s: &AuthorizationServer, t: u64, submit_at: u64) -> Response {
    let ct = Header {
        name: "Content-Type",
        value: b"application/json",
    };
    let body = json!({ "redirect_uris": [REDIRECT] }).to_string();
    let reg = call(s, Route::Register, "POST", "/register", &[ct], &body, t);
    assert_eq!(reg.status, 201);
    let client = json_of(&reg)["client_id"].as_str().unwrap().to_owned();
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let target = format!(
        "/authorize?response_type=code&client_id={client}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&resource={}&state=s",
        enc(REDIRECT),
        enc(ISSUER)
    );
    let page = call(s, Route::Authorize, "GET", &target, &[], "", t);
    assert_eq!(page.status, 200);
    let html = String::from_utf8(page.body.clone()).unwrap();
    let start = html.find("name=\"request\" value=\"").unwrap() + 22;
    let sealed = &html[start..start + html[start..].find('"').unwrap()];
    let cookie = page
        .header("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let c = Header {
        name: "Cookie",
        value: cookie.as_bytes(),
    };
    let body = format!(
        "request={}&person={}&decision=approve",
        enc(sealed),
        enc("o1|p@x")
    );
    let r = call(
        s,
        Route::Authorize,
        "POST",
        "/authorize",
        &[FORM, c],
        &body,
        submit_at,
    );
    // Keep the client id where the caller can find it.
    let mut r = r;
    r.log.method = Some(client);
    r
}

fn redeem(s: &AuthorizationServer, client: &str, code: &str, at: u64) -> Response {
    let body = format!(
        "grant_type=authorization_code&code={code}&client_id={client}&redirect_uri={}&code_verifier={VERIFIER}",
        enc(REDIRECT)
    );
    call(s, Route::Token, "POST", "/token", &[FORM], &body, at)
}

#[test]
fn a_code_lives_60_seconds() {
    let s = server();
    let r = sign_in(&s, T0, T0 + 1);
    let client = r.log.method.clone().unwrap();
    let code = location_param(&r, "code").unwrap();
    let late = redeem(&s, &client, &code, T0 + 62);
    assert_eq!(late.status, 400);
    assert_eq!(json_of(&late)["error"], "invalid_grant");

    let r = sign_in(&s, T0, T0 + 1);
    let client = r.log.method.clone().unwrap();
    let code = location_param(&r, "code").unwrap();
    let ok = redeem(&s, &client, &code, T0 + 60);
    assert_eq!(ok.status, 200, "{}", String::from_utf8_lossy(&ok.body));
    let t = json_of(&ok);
    assert_eq!(t["scope"], "read write", "narrowed to the person's role");
    assert_eq!(t["expires_in"], 3600);
}

#[test]
fn the_page_expires_after_ten_minutes() {
    let s = server();
    let r = sign_in(&s, T0, T0 + 601);
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());
    let r = sign_in(&s, T0, T0 + 599);
    assert_eq!(r.status, 302);
}

#[test]
fn refresh_tokens_expire_and_rotate() {
    let s = server();
    let r = sign_in(&s, T0, T0);
    let client = r.log.method.clone().unwrap();
    let code = location_param(&r, "code").unwrap();
    let t = json_of(&redeem(&s, &client, &code, T0));
    let refresh = t["refresh_token"].as_str().unwrap();
    let body = |rt: &str| format!("grant_type=refresh_token&refresh_token={rt}&client_id={client}");
    let month = 30 * 24 * 3600;
    let late = call(
        &s,
        Route::Token,
        "POST",
        "/token",
        &[FORM],
        &body(refresh),
        T0 + month + 1,
    );
    assert_eq!(json_of(&late)["error"], "invalid_grant");

    let r = sign_in(&s, T0, T0);
    let client = r.log.method.clone().unwrap();
    let code = location_param(&r, "code").unwrap();
    let t = json_of(&redeem(&s, &client, &code, T0));
    let refresh = t["refresh_token"].as_str().unwrap().to_owned();
    let body = |rt: &str| {
        format!("grant_type=refresh_token&refresh_token={rt}&client_id={client}&scope=read")
    };
    let r = call(
        &s,
        Route::Token,
        "POST",
        "/token",
        &[FORM],
        &body(&refresh),
        T0 + month - 1,
    );
    assert_eq!(r.status, 200);
    assert_eq!(json_of(&r)["scope"], "read", "a refresh may narrow");
    let widen = format!(
        "grant_type=refresh_token&refresh_token={}&client_id={client}&scope=admin",
        json_of(&r)["refresh_token"].as_str().unwrap()
    );
    let r = call(&s, Route::Token, "POST", "/token", &[FORM], &widen, T0 + 5);
    assert_eq!(json_of(&r)["error"], "invalid_scope", "never widen");
    // A request refused that way does not spend the token.
    let again = widen.replace("&scope=admin", "");
    let r = call(&s, Route::Token, "POST", "/token", &[FORM], &again, T0 + 6);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

/// A client named by the URL of its metadata document signs in without registering.
#[test]
fn a_client_metadata_document_client_signs_in() {
    let s = server();
    let client = "https://app.example.com/oauth/client.json";
    let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(VERIFIER.as_bytes()));
    let target = format!(
        "/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={challenge}&code_challenge_method=S256&resource={}",
        enc(client),
        enc(REDIRECT),
        enc(ISSUER)
    );
    let page = call(&s, Route::Authorize, "GET", &target, &[], "", T0);
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("Doc client"));
    // The document's client id at /token, with a code for another client: refused.
    let body = format!(
        "grant_type=authorization_code&code=x&client_id={}",
        enc(client)
    );
    let r = call(&s, Route::Token, "POST", "/token", &[FORM], &body, T0);
    assert_eq!(json_of(&r)["error"], "invalid_grant");
    let meta = call(
        &s,
        Route::Metadata,
        "GET",
        "/.well-known/oauth-authorization-server",
        &[],
        "",
        T0,
    );
    assert_eq!(
        json_of(&meta)["client_id_metadata_document_supported"],
        true
    );
}
