//! The embedded development authorization server, over real sockets against
//! the real binary: metadata, registration, the consent page, codes, tokens, refresh
//! rotation, CORS, and every refusal a client or an attacker can provoke.

mod common;

use common::oauth::*;
use common::{Srv, V2025, V2026, pct, seeded_dir};
use serde_json::json;

#[test]
fn the_metadata_names_this_server_as_its_authorization_server() {
    let srv = Srv::start(&[], None);
    let prm = srv
        .request("GET", "/.well-known/oauth-protected-resource", &[], b"")
        .json();
    assert_eq!(prm["authorization_servers"], json!([srv.url]));
    for path in [
        "/.well-known/oauth-authorization-server",
        "/.well-known/openid-configuration",
    ] {
        let r = srv.request("GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}");
        let m = r.json();
        assert_eq!(m["issuer"], srv.url);
        assert_eq!(
            m["authorization_endpoint"],
            format!("{}/authorize", srv.url)
        );
        assert_eq!(m["token_endpoint"], format!("{}/token", srv.url));
        assert_eq!(m["registration_endpoint"], format!("{}/register", srv.url));
        assert_eq!(m["code_challenge_methods_supported"], json!(["S256"]));
        assert_eq!(m["response_types_supported"], json!(["code"]));
        assert_eq!(m["token_endpoint_auth_methods_supported"], json!(["none"]));
        assert_eq!(m["client_id_metadata_document_supported"], true);
        assert_eq!(
            m["grant_types_supported"],
            json!(["authorization_code", "refresh_token"])
        );
        assert_eq!(
            m["scopes_supported"],
            json!(["dunning.read", "dunning.write", "dunning.admin"])
        );
    }
    let jwks = srv
        .request("GET", "/.well-known/jwks.json", &[], b"")
        .json();
    assert_eq!(jwks["keys"][0]["crv"], "Ed25519");
    // The 401 challenge leads there too.
    let r = srv.rpc(None, V2026, "tools/list", json!({}));
    assert_eq!(r.status, 401);
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("/.well-known/oauth-protected-resource")
    );
}

#[test]
fn a_configured_authorization_server_turns_the_embedded_one_off() {
    let dir = seeded_dir("oauth-jwks");
    let key = dunning_core::jwt::ed25519_jwk("k", &dunning_core::jwt::ed25519_public(&[9; 32]));
    std::fs::write(dir.join("jwks.json"), json!({ "keys": [key] }).to_string()).unwrap();
    let config = format!(
        "[auth]\nissuer = \"https://issuer.test\"\njwks_file = \"{}\"\n",
        dir.join("jwks.json").display()
    );
    let srv = Srv::start_in(dir, &[], Some(&config));
    for (method, path) in [
        ("GET", "/.well-known/oauth-authorization-server"),
        ("GET", "/.well-known/openid-configuration"),
        ("GET", "/.well-known/jwks.json"),
        ("GET", "/authorize?client_id=x"),
        ("POST", "/token"),
        ("POST", "/register"),
    ] {
        let r = srv.request(method, path, &[("Content-Type", "application/json")], b"{}");
        assert_eq!(r.status, 404, "{method} {path}");
    }
    let prm = srv
        .request("GET", "/.well-known/oauth-protected-resource", &[], b"")
        .json();
    assert_eq!(prm["authorization_servers"], json!(["https://issuer.test"]));
}

/// Register, page, approve as an operator, code, token, tools with the operator's
/// rights, refresh, reuse of the old refresh token revokes the family.
#[test]
fn the_whole_flow_as_a_demo_member() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &["http://127.0.0.1:3000/callback"]);

    let page = client.authorize(&[]);
    assert_eq!(page.status, 200, "{}", page.text());
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert!(
        page.header("content-security-policy")
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    assert_eq!(page.header("cache-control"), Some("no-store"));
    assert!(
        page.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let html = page.text();
    assert!(html.contains("e2e &lt;client&gt;"), "the name is escaped");
    assert!(!html.contains("<client>"));
    assert!(html.contains(REDIRECT));
    assert!(!html.contains("<script"), "no script");
    for login in [
        "ana@demo.example",
        "caio@demo.example",
        "bruno@demo.example",
    ] {
        assert!(html.contains(login), "{login} may sign in");
    }

    let r = client.submit(&page, "caio@demo.example", "approve");
    assert_eq!(r.status, 302, "{}", r.text());
    assert!(
        r.header("location")
            .unwrap()
            .starts_with(&format!("{REDIRECT}?"))
    );
    let code = param(&r, "code").unwrap();
    assert_eq!(param(&r, "state").as_deref(), Some("st&te=1"));

    let t = client.redeem(&code);
    assert_eq!(t.status, 200, "{}", t.text());
    assert_eq!(t.header("cache-control"), Some("no-store"));
    let t = t.json();
    assert_eq!(t["token_type"], "Bearer");
    assert_eq!(
        t["scope"], "dunning.read dunning.write",
        "narrowed to the operator's role"
    );
    let access = t["access_token"].as_str().unwrap().to_owned();
    let c = claims(&access);
    assert_eq!(c["sub"], "caio@demo.example");
    assert_eq!(c["aud"], srv.url);
    assert_eq!(c["iss"], srv.url);
    assert_eq!(c["client_id"], client.id);
    let ttl = c["exp"].as_u64().unwrap() - c["iat"].as_u64().unwrap();
    assert!((600..=3600).contains(&ttl), "short-lived: {ttl}");

    let tools = tool_names(&srv, &access);
    assert!(
        tools.iter().any(|t| t == "dunning_debtors_create"),
        "write tools"
    );
    assert!(
        !tools.iter().any(|t| t.starts_with("dunning_webhooks_")),
        "no admin tool: {tools:?}"
    );
    let me = srv.call(&access, V2026, "dunning_me", json!({}));
    assert_eq!(me.status, 200, "{}", me.text());
    assert_eq!(me.structured()["user"]["email"], "caio@demo.example");
    // The legacy era takes the same token.
    let r = srv.call(&access, V2025, "dunning_me", json!({}));
    assert_eq!(r.status, 200);

    // Refresh: rotation.
    let first = t["refresh_token"].as_str().unwrap().to_owned();
    let r = client.refresh(&first);
    assert_eq!(r.status, 200, "{}", r.text());
    let second = r.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(first, second);
    let access2 = r.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(
        srv.call(&access2, V2026, "dunning_me", json!({})).status,
        200
    );
    // Reusing the first one revokes the family: the second is dead too.
    assert_oauth_error(&client.refresh(&first), 400, "invalid_grant");
    assert_oauth_error(&client.refresh(&second), 400, "invalid_grant");
}

#[test]
fn codes_are_bound_to_their_client_redirect_uri_verifier_and_resource() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &[REDIRECT]);
    let other = Client::register(&srv, &[REDIRECT]);

    // Wrong verifier (and the code is spent by the attempt).
    let code = client.code("ana@demo.example");
    let wrong = "another-verifier-of-the-right-length-0123456789-xyz";
    let r = client.token(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", &client.id),
        ("redirect_uri", REDIRECT),
        ("code_verifier", wrong),
    ]);
    assert_oauth_error(&r, 400, "invalid_grant");
    assert_oauth_error(&client.redeem(&code), 400, "invalid_grant");

    // Reused code: the second redemption fails and revokes what the first gave.
    let code = client.code("ana@demo.example");
    let t = client.redeem(&code);
    assert_eq!(t.status, 200, "{}", t.text());
    let refresh = t.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_oauth_error(&client.redeem(&code), 400, "invalid_grant");
    assert_oauth_error(&client.refresh(&refresh), 400, "invalid_grant");

    // A code for another client.
    let code = client.code("ana@demo.example");
    let r = other.redeem(&code);
    assert_oauth_error(&r, 400, "invalid_grant");

    // Another redirect URI (a loopback port may vary at /authorize, but /token must
    // name the one the code was issued for).
    let code = client.code("ana@demo.example");
    let r = client.token(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", &client.id),
        ("redirect_uri", "http://127.0.0.1:45111/elsewhere"),
        ("code_verifier", VERIFIER),
    ]);
    assert_oauth_error(&r, 400, "invalid_grant");

    // Another resource at /token.
    let code = client.code("ana@demo.example");
    let r = client.token(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", &client.id),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
        ("resource", "https://elsewhere.example/mcp"),
    ]);
    assert_oauth_error(&r, 400, "invalid_target");

    // Unknown client, unknown code, unsupported grant.
    assert_oauth_error(
        &token(
            &srv,
            &[
                ("grant_type", "authorization_code"),
                ("code", "x"),
                ("client_id", "nope"),
            ],
        ),
        401,
        "invalid_client",
    );
    assert_oauth_error(
        &client.token(&[
            ("grant_type", "authorization_code"),
            ("code", "x"),
            ("client_id", &client.id),
        ]),
        400,
        "invalid_grant",
    );
    assert_oauth_error(
        &client.token(&[("grant_type", "password"), ("client_id", &client.id)]),
        400,
        "unsupported_grant_type",
    );
}

#[test]
fn a_token_for_another_resource_is_refused_by_the_mcp_endpoint() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &[REDIRECT]);
    // A token asked for the REST API (`<url>/v1`) is not an MCP token.
    let page = client.authorize(&[("resource", &format!("{}/v1", srv.url))]);
    let r = client.submit(&page, "ana@demo.example", "approve");
    let code = param(&r, "code").unwrap();
    let t = client.token(&[
        ("grant_type", "authorization_code"),
        ("code", &code),
        ("client_id", &client.id),
        ("redirect_uri", REDIRECT),
        ("code_verifier", VERIFIER),
    ]);
    assert_eq!(t.status, 200, "{}", t.text());
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    assert_eq!(claims(&access)["aud"], format!("{}/v1", srv.url));
    let r = srv.call(&access, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 401, "{}", r.text());
    // A resource that is not this server is refused at /authorize.
    let r = client.authorize(&[("resource", "https://elsewhere.example/mcp")]);
    assert_eq!(r.status, 302);
    assert_eq!(param(&r, "error").as_deref(), Some("invalid_target"));
}

#[test]
fn authorization_requests_are_checked() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &[REDIRECT]);

    // Unregistered redirect URI: an error page, never a redirect.
    for uri in [
        "http://127.0.0.1:45111/other",
        "https://evil.example/callback",
    ] {
        let r = client.authorize(&[("redirect_uri", uri)]);
        assert_eq!(r.status, 400, "{uri}");
        assert!(r.header("location").is_none());
    }
    // Unknown client: a page too.
    let r = srv.request(
        "GET",
        &format!(
            "/authorize?response_type=code&client_id=nope&redirect_uri={}",
            pct(REDIRECT)
        ),
        &[],
        b"",
    );
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());

    // The loopback port may vary (RFC 8252 §7.3).
    let r = client.authorize(&[("redirect_uri", "http://127.0.0.1:50999/callback")]);
    assert_eq!(r.status, 200, "{}", r.text());

    // Errors the client may learn go back to it, with its state.
    let cases: [(&[(&str, &str)], &str); 6] = [
        (
            &[("code_challenge_method", "plain"), ("code_challenge", "x")],
            "invalid_request",
        ),
        (&[("code_challenge_method", "")], "invalid_request"),
        (&[("code_challenge", "")], "invalid_request"),
        (&[("resource", "")], "invalid_target"),
        (&[("response_type", "token")], "unsupported_response_type"),
        (&[("scope", "dunning.read root")], "invalid_scope"),
    ];
    for (extra, error) in cases {
        let r = client.authorize(extra);
        assert_eq!(r.status, 302, "{extra:?}: {}", r.text());
        assert_eq!(param(&r, "error").as_deref(), Some(error), "{extra:?}");
        assert_eq!(param(&r, "state").as_deref(), Some("st&te=1"));
    }

    // Deny.
    let page = client.authorize(&[]);
    let r = client.submit(&page, "ana@demo.example", "deny");
    assert_eq!(r.status, 302);
    assert_eq!(param(&r, "error").as_deref(), Some("access_denied"));
    assert!(param(&r, "code").is_none());

    // A viewer asked only for admin: nothing to grant.
    let page = client.authorize(&[("scope", "dunning.admin")]);
    let r = client.submit(&page, "bruno@demo.example", "approve");
    assert!(r.status == 400 || param(&r, "error").as_deref() == Some("invalid_scope"));
}

#[test]
fn the_form_is_csrf_protected() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &[REDIRECT]);
    let page = client.authorize(&[]);
    let html = page.text();
    let sealed = hidden(&html, "request");
    let person = person_value(&html, "ana@demo.example");
    let cookie = page
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    assert!(page.header("set-cookie").unwrap().contains("HttpOnly"));
    assert!(
        page.header("set-cookie")
            .unwrap()
            .contains("SameSite=Strict")
    );

    // No cookie.
    let r = client.post_form(&sealed, &person, "approve", None);
    assert_eq!(r.status, 400);
    assert!(r.header("location").is_none());
    // The cookie of another page.
    let other = client.authorize(&[]);
    let other_cookie = other
        .header("set-cookie")
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let r = client.post_form(&sealed, &person, "approve", Some(&other_cookie));
    assert_eq!(r.status, 400);
    // A forged request: one byte of the seal changed, or none at all.
    let mut forged = sealed.clone().into_bytes();
    let mid = forged.len() / 2;
    forged[mid] = if forged[mid] == b'A' { b'B' } else { b'A' };
    let r = client.post_form(
        std::str::from_utf8(&forged).unwrap(),
        &person,
        "approve",
        Some(&cookie),
    );
    assert_eq!(r.status, 400);
    let r = client.post_form("", &person, "approve", Some(&cookie));
    assert_eq!(r.status, 400);
    // A submission from another site's page (its browser names that origin).
    let body = form(&[
        ("request", &sealed),
        ("person", &person),
        ("decision", "approve"),
    ]);
    let r = srv.request(
        "POST",
        "/authorize",
        &[
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Cookie", &cookie),
            ("Origin", "https://evil.example"),
        ],
        body.as_bytes(),
    );
    assert_eq!(r.status, 403);
    // The genuine one still works.
    let r = client.post_form(&sealed, &person, "approve", Some(&cookie));
    assert_eq!(r.status, 302, "{}", r.text());
}

#[test]
fn registration_validates_redirect_uris() {
    let srv = Srv::start(&[], None);
    for uris in [
        json!(["http://app.example.com/cb"]),
        json!(["https://app.example.com/cb#x"]),
        json!([]),
        json!("https://app.example.com/cb"),
    ] {
        let r = register(&srv, &json!({ "redirect_uris": uris }));
        assert_oauth_error(&r, 400, "invalid_redirect_uri");
    }
    let r = register(
        &srv,
        &json!({ "redirect_uris": [REDIRECT], "grant_types": ["client_credentials"] }),
    );
    assert_oauth_error(&r, 400, "invalid_client_metadata");
    // A client registered without refresh_token may not refresh.
    let r = register(
        &srv,
        &json!({ "redirect_uris": [REDIRECT], "grant_types": ["authorization_code"] }),
    );
    let id = r.json()["client_id"].as_str().unwrap().to_owned();
    let r = token(
        &srv,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", "x"),
            ("client_id", &id),
        ],
    );
    assert_oauth_error(&r, 400, "unauthorized_client");
    // A confidential method asked for is replaced: public clients only.
    let r = register(
        &srv,
        &json!({ "redirect_uris": ["https://app.example.com/cb"], "token_endpoint_auth_method": "client_secret_basic" }),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["token_endpoint_auth_method"], "none");
    assert!(r.json().get("client_secret").is_none());
}

#[test]
fn clients_and_refresh_tokens_survive_a_restart() {
    // One public URL for both runs (the port changes): the resource stays the same.
    let public = ["--public-url", "http://127.0.0.1:1"];
    let mut srv = Srv::start(&public, None);
    let mut client = Client::register(&srv, &[REDIRECT]);
    client.base = public[1].to_owned();
    let id = client.id.clone();
    let code = client.code("dora@demo.example");
    let refresh = client.redeem(&code).json()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    srv.terminate();
    let dir = srv.dir.clone();
    let srv = Srv::start_in(dir, &public, None);
    let r = token(
        &srv,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &id),
        ],
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let access = r.json()["access_token"].as_str().unwrap().to_owned();
    let me = srv.call(&access, V2026, "dunning_me", json!({}));
    assert_eq!(me.structured()["user"]["email"], "dora@demo.example");
    let again = Client {
        srv: &srv,
        id,
        base: public[1].to_owned(),
    };
    assert_eq!(
        again.authorize(&[]).status,
        200,
        "the client is still registered"
    );
}

#[test]
fn browser_clients_get_cors_for_allowed_origins_only() {
    let srv = Srv::start(&[], None);
    for path in [
        "/",
        "/.well-known/oauth-protected-resource",
        "/token",
        "/register",
    ] {
        let r = srv.request(
            "OPTIONS",
            path,
            &[
                ("Origin", "http://localhost:6274"),
                ("Access-Control-Request-Method", "POST"),
                (
                    "Access-Control-Request-Headers",
                    "authorization, content-type, mcp-protocol-version, mcp-method, x-other",
                ),
            ],
            b"",
        );
        assert_eq!(r.status, 204, "{path}");
        assert_eq!(
            r.header("access-control-allow-origin"),
            Some("http://localhost:6274")
        );
        let allowed = r.header("access-control-allow-headers").unwrap();
        assert!(allowed.contains("authorization") && allowed.contains("mcp-method"));
        assert!(!allowed.contains("x-other"));
    }
    // A 401 to an allowed origin lets the page read the challenge.
    let r = srv.request(
        "POST",
        "/",
        &[
            ("Origin", "http://localhost:6274"),
            ("Content-Type", "application/json"),
        ],
        b"{}",
    );
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("access-control-allow-origin"),
        Some("http://localhost:6274")
    );
    assert!(
        r.header("access-control-expose-headers")
            .unwrap()
            .contains("WWW-Authenticate")
    );
    // A foreign origin gets no CORS header, and the MCP endpoint still refuses it.
    let preflight = srv.request(
        "OPTIONS",
        "/",
        &[
            ("Origin", "https://evil.example"),
            ("Access-Control-Request-Method", "POST"),
        ],
        b"",
    );
    assert!(preflight.header("access-control-allow-origin").is_none());
    assert_ne!(preflight.status, 204);
    let r = srv.call(&srv.token, V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200);
    let r = srv.request(
        "POST",
        "/",
        &[
            ("Origin", "https://evil.example"),
            ("Content-Type", "application/json"),
            ("Authorization", &format!("Bearer {}", srv.token)),
        ],
        b"{}",
    );
    assert_eq!(r.status, 403);
    assert!(r.header("access-control-allow-origin").is_none());
}

/// A client id URL (Client ID Metadata Document) is fetched under the webhook address
/// rules: one on a loopback or private address is never fetched.
#[test]
fn a_client_metadata_url_on_a_private_address_is_refused() {
    let srv = Srv::start(&[], None);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    for host in [
        format!("127.0.0.1:{port}"),
        "10.0.0.1".into(),
        "localhost".into(),
    ] {
        let client_id = format!("https://{host}/client.json");
        let target = format!(
            "/authorize?response_type=code&client_id={}&redirect_uri={}&code_challenge={}&code_challenge_method=S256&resource={}",
            pct(&client_id),
            pct(REDIRECT),
            challenge(VERIFIER),
            pct(&srv.url)
        );
        let r = srv.request("GET", &target, &[], b"");
        assert_eq!(r.status, 400, "{host}: {}", r.text());
        assert!(r.header("location").is_none());
        assert!(r.text().contains("could not be fetched"), "{}", r.text());
        let t = token(
            &srv,
            &[
                ("grant_type", "authorization_code"),
                ("code", "x"),
                ("client_id", &client_id),
            ],
        );
        assert_oauth_error(&t, 401, "invalid_client");
    }
    assert!(
        listener.accept().is_err(),
        "nothing connected to the loopback listener"
    );
    // Not a URL a client may be named by: refused before any fetch.
    let r = token(
        &srv,
        &[
            ("grant_type", "authorization_code"),
            ("code", "x"),
            ("client_id", "https://app.example.com/"),
        ],
    );
    assert_oauth_error(&r, 401, "invalid_client");
}

/// Anyone may call these endpoints, so their bodies are bounded from the head: a body
/// over 16 KiB, or of undeclared length, is refused before it is read.
#[test]
fn token_less_bodies_are_bounded() {
    let srv = Srv::start(&[], None);
    let big = vec![b'a'; 16 * 1024 + 1];
    for path in ["/token", "/register", "/authorize"] {
        let r = srv.request(
            "POST",
            path,
            &[("Content-Type", "application/x-www-form-urlencoded")],
            &big,
        );
        assert_eq!(r.status, 413, "{path}");
        let raw = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n",
            srv.addr
        );
        let mut conn = std::net::TcpStream::connect(&srv.addr).unwrap();
        std::io::Write::write_all(&mut conn, raw.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = std::io::Read::read_to_string(&mut conn, &mut answer);
        assert!(answer.starts_with("HTTP/1.1 411"), "{path}: {answer}");
    }
    // A state too long for the form is refused on the page.
    let client = Client::register(&srv, &[REDIRECT]);
    let r = client.authorize(&[("state", &"s".repeat(2000))]);
    assert_eq!(r.status, 400);
}

/// A viewer who approves a request for every scope grants only what the role allows:
/// the token reads, and a write is refused for its scope.
#[test]
fn a_viewer_grants_read_only() {
    let srv = Srv::start(&[], None);
    let client = Client::register(&srv, &[REDIRECT]);
    let t = client.redeem(&client.code("bruno@demo.example"));
    assert_eq!(t.status, 200, "{}", t.text());
    assert_eq!(t.json()["scope"], "dunning.read");
    let access = t.json()["access_token"].as_str().unwrap().to_owned();
    let tools = tool_names(&srv, &access);
    assert!(
        !tools.iter().any(|t| t == "dunning_debtors_create"),
        "{tools:?}"
    );
    let r = srv.call(
        &access,
        V2026,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Nope"}),
    );
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("insufficient_scope")
    );
    let me = srv.call(&access, V2026, "dunning_me", json!({}));
    assert_eq!(me.structured()["user"]["email"], "bruno@demo.example");
}
