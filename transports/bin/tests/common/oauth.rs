//! Helpers of the OAuth tests: a client of the embedded authorization
//! server, driven over real sockets (register, the page, the form, `/token`).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::{Resp, Srv, V2026, pct};

pub const REDIRECT: &str = "http://127.0.0.1:45111/callback";
pub const VERIFIER: &str = "a-verifier-of-the-right-length-0123456789-abcdefgh";

pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// The query parameters of a `Location`.
pub fn location_params(r: &Resp) -> Vec<(String, String)> {
    let loc = r
        .header("location")
        .unwrap_or_else(|| panic!("no Location: {r:?}"));
    let query = loc.split_once('?').map(|(_, q)| q).unwrap_or_default();
    query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.to_owned(), decode(v)))
        .collect()
}

pub fn param(r: &Resp, name: &str) -> Option<String> {
    location_params(r)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

pub fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(if b[i] == b'+' { b' ' } else { b[i] });
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", pct(k), pct(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A client of the embedded server.
pub struct Client<'a> {
    pub srv: &'a Srv,
    pub id: String,
    /// The server's public URL: the resource and the issuer.
    pub base: String,
}

impl<'a> Client<'a> {
    pub fn register(srv: &'a Srv, redirects: &[&str]) -> Self {
        let r = register(
            srv,
            &json!({ "redirect_uris": redirects, "client_name": "e2e <client>" }),
        );
        assert_eq!(r.status, 201, "{}", r.text());
        let id = r.json()["client_id"].as_str().unwrap().to_owned();
        let base = srv.url.clone();
        Self { srv, id, base }
    }

    /// `GET /authorize` with the usual parameters, `extra` replacing or removing
    /// (empty value) some.
    pub fn authorize(&self, extra: &[(&str, &str)]) -> Resp {
        let c = challenge(VERIFIER);
        let mut params: Vec<(&str, String)> = vec![
            ("response_type", "code".into()),
            ("client_id", self.id.clone()),
            ("redirect_uri", REDIRECT.into()),
            ("code_challenge", c),
            ("code_challenge_method", "S256".into()),
            ("state", "st&te=1".into()),
            ("scope", "dunning.read dunning.write dunning.admin".into()),
            ("resource", self.base.clone()),
        ];
        for (k, v) in extra {
            params.retain(|(n, _)| n != k);
            if !v.is_empty() {
                params.push((k, (*v).to_owned()));
            }
        }
        let q: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.srv
            .request("GET", &format!("/authorize?{}", form(&q)), &[], b"")
    }

    /// Approves (or denies) the page `page` as `login`, with the page's cookie.
    pub fn submit(&self, page: &Resp, login: &str, decision: &str) -> Resp {
        let html = page.text();
        let sealed = hidden(&html, "request");
        let person = person_value(&html, login);
        let cookie = page
            .header("set-cookie")
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
        self.post_form(&sealed, &person, decision, Some(&cookie))
    }

    pub fn post_form(
        &self,
        sealed: &str,
        person: &str,
        decision: &str,
        cookie: Option<&str>,
    ) -> Resp {
        let body = form(&[
            ("request", sealed),
            ("person", person),
            ("decision", decision),
        ]);
        let mut headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
        if let Some(c) = cookie {
            headers.push(("Cookie", c));
        }
        self.srv
            .request("POST", "/authorize", &headers, body.as_bytes())
    }

    /// A code for `login` (page, approve, redirect).
    pub fn code(&self, login: &str) -> String {
        let page = self.authorize(&[]);
        assert_eq!(page.status, 200, "{}", page.text());
        let r = self.submit(&page, login, "approve");
        assert_eq!(r.status, 302, "{}", r.text());
        assert_eq!(param(&r, "state").as_deref(), Some("st&te=1"));
        assert_eq!(param(&r, "iss").as_deref(), Some(self.base.as_str()));
        param(&r, "code").unwrap()
    }

    pub fn token(&self, pairs: &[(&str, &str)]) -> Resp {
        token(self.srv, pairs)
    }

    pub fn redeem(&self, code: &str) -> Resp {
        self.token(&[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", &self.id),
            ("redirect_uri", REDIRECT),
            ("code_verifier", VERIFIER),
            ("resource", &self.base),
        ])
    }

    pub fn refresh(&self, refresh: &str) -> Resp {
        self.token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh),
            ("client_id", &self.id),
        ])
    }
}

pub fn register(srv: &Srv, doc: &Value) -> Resp {
    srv.request(
        "POST",
        "/register",
        &[("Content-Type", "application/json")],
        doc.to_string().as_bytes(),
    )
}

pub fn token(srv: &Srv, pairs: &[(&str, &str)]) -> Resp {
    srv.request(
        "POST",
        "/token",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        form(pairs).as_bytes(),
    )
}

pub fn hidden(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("no {name} in {html}"))
        + marker.len();
    let end = start + html[start..].find('"').unwrap();
    html[start..end]
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

pub fn person_value(html: &str, login: &str) -> String {
    let suffix = format!("|{login}\"");
    let end = html
        .find(&suffix)
        .unwrap_or_else(|| panic!("no {login} on the page"));
    let start = html[..end].rfind("value=\"").unwrap() + "value=\"".len();
    format!("{}|{login}", &html[start..end])
}

pub fn assert_oauth_error(r: &Resp, status: u16, code: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    assert_eq!(r.json()["error"], code, "{}", r.text());
}

pub fn tool_names(srv: &Srv, token: &str) -> Vec<String> {
    let r = srv.rpc(Some(token), V2026, "tools/list", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

pub fn claims(jwt: &str) -> Value {
    let payload = jwt.split('.').nth(1).unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap()
}
