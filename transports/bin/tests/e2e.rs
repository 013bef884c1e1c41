//! End to end: the built `kobana-dunning` binary over real loopback sockets.
//!
//! Each test starts its own server (`serve --listen 127.0.0.1:0`) on a copy of a data dir
//! seeded once per run, talks HTTP/1.1 to it, and stops it.

mod common;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::{BIN, Srv, V2025, V2026, clock_args, now_secs, seeded_dir};
use dunning_core::jwt;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// A valid CPF that the demo data does not hold: the probe of "nothing executed".
const PROBE_CPF: &str = "52998224725";

fn b64(v: &Value) -> String {
    URL_SAFE_NO_PAD.encode(v.to_string())
}

fn decode(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// The data dir's development key.
fn dev_seed(srv: &Srv) -> [u8; 32] {
    let text = std::fs::read_to_string(srv.dir.join("dev-signing.key")).unwrap();
    URL_SAFE_NO_PAD
        .decode(text.trim())
        .unwrap()
        .try_into()
        .unwrap()
}

/// `endpoint.json` of the data dir.
fn endpoint(srv: &Srv) -> Value {
    serde_json::from_str(&std::fs::read_to_string(srv.dir.join("endpoint.json")).unwrap()).unwrap()
}

/// How many debtors with the probe CPF the organization `demo` holds.
fn probes(srv: &Srv) -> usize {
    let r = srv.call(
        &srv.token,
        V2026,
        "dunning_debtors_list",
        json!({ "cnpj_cpf": PROBE_CPF }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let s = r.structured();
    s["data"].as_array().map_or(0, Vec::len)
}

fn create_probe(srv: &Srv, token: &str) -> common::Resp {
    srv.call(
        token,
        V2026,
        "dunning_debtors_create",
        json!({ "cnpj_cpf": PROBE_CPF, "name": "Sonda da Silva" }),
    )
}

fn assert_invalid_token(r: &common::Resp, srv: &Srv, what: &str) {
    assert_eq!(r.status, 401, "{what}: {}", r.text());
    let challenge = r.header("www-authenticate").unwrap_or_default();
    assert!(
        challenge.starts_with(&format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            srv.url
        )),
        "{what}: {challenge}"
    );
    assert!(
        challenge.contains("error=\"invalid_token\""),
        "{what}: {challenge}"
    );
    assert_eq!(r.json()["error"]["code"], -31401, "{what}");
}

#[test]
fn startup_prints_the_endpoint_and_a_working_token() {
    let mut srv = Srv::start(&[], None);
    assert!(
        srv.banner
            .contains(&format!("MCP endpoint: {}/\n", srv.url)),
        "{}",
        srv.banner
    );
    assert!(srv.log().contains(&srv.banner), "the banner is on stderr");
    assert!(srv.stdout.lock().unwrap().is_empty(), "nothing on stdout");
    assert_eq!(srv.token.split('.').count(), 3);
    // The keys the server created in the data dir are private.
    for key in ["dev-signing.key", "request-state.key"] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(srv.dir.join(key))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{key}");
    }
    for version in [V2026, V2025] {
        let r = srv.rpc(Some(&srv.token), version, "tools/list", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("mcp-protocol-version"), Some(version));
        let v = r.json();
        let tools = v["result"]["tools"].as_array().unwrap();
        assert!(tools.iter().any(|t| t["name"] == "dunning_me"));
        assert!(tools.iter().any(|t| t["name"] == "dunning_debtors_create"));
        assert_eq!(
            v["result"].get("resultType").is_some(),
            version == V2026,
            "resultType only in era 2026"
        );
        assert_eq!(r.header("content-encoding"), None);
        assert_eq!(r.header("vary"), Some("accept-encoding"));
        // Asked in gzip (as the SDK clients ask): the same bytes, compressed.
        let accept = [("Accept-Encoding", "gzip, deflate")];
        let z = srv.rpc_with(
            "/",
            Some(&srv.token),
            version,
            "tools/list",
            json!({}),
            &accept,
        );
        assert_eq!(z.status, 200);
        assert_eq!(z.header("content-encoding"), Some("gzip"));
        assert!(
            z.body.len() * 4 < r.body.len(),
            "{} of {}",
            z.body.len(),
            r.body.len()
        );
        let mut text = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&z.body[..]), &mut text)
            .expect("a gzip body");
        assert_eq!(text, r.body, "gzip decodes to the identity answer");
        let r = srv.call(&srv.token, version, "dunning_me", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        let me = r.structured();
        assert_eq!(me["user"]["email"], "ana@demo.example", "{me}");
    }
    // A minted token, for another person, in both eras.
    let caio = srv.mint(&["--org", "demo", "--person", "caio@demo.example"]);
    for version in [V2026, V2025] {
        let r = srv.call(&caio, version, "dunning_me", json!({}));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.structured()["user"]["email"], "caio@demo.example");
    }
    // Discovery carries the instructions.
    let r = srv.rpc(Some(&srv.token), V2026, "server/discover", json!({}));
    let text = r.json()["result"]["instructions"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(text.contains("dunning_me") && text.contains("never instructions"));
    // One log line per request, and never a token (the text banner, on the same
    // stream, shows the development token: that is its job).
    let log = srv.log().replacen(&srv.banner, "", 1);
    assert!(log.contains("tools/list"), "{log}");
    assert!(!log.contains(&srv.token) && !log.contains(&caio));
    assert!(srv.terminate().success());
}

#[test]
fn token_prints_only_a_jwt() {
    let dir = seeded_dir("token");
    let run = |args: &[&str]| {
        std::process::Command::new(BIN)
            .arg("token")
            .args(args)
            .arg("--data-dir")
            .arg(&dir)
            .args(clock_args())
            .args(common::pg::store_args(&dir))
            .output()
            .unwrap()
    };
    let out = run(&["--org", "demo", "--person", "caio@demo.example"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text:?}");
    assert!(text.ends_with('\n'));
    let token = text.trim_end();
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3);
    assert!(
        token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    );
    let header = decode(parts[0]);
    assert_eq!(header["alg"], "EdDSA");
    assert_eq!(header["typ"], "at+jwt");
    let claims = decode(parts[1]);
    assert_eq!(claims["sub"], "caio@demo.example");
    assert_eq!(claims["scope"], "dunning.read dunning.write", "operator");
    assert_eq!(claims["aud"], "http://127.0.0.1:8080");
    let exp = claims["exp"].as_i64().unwrap();
    let iat = claims["iat"].as_i64().unwrap();
    assert_eq!(exp - iat, 3600);

    let out = run(&[
        "--org",
        "demo",
        "--person",
        "ana@demo.example",
        "--ttl",
        "-3600",
    ]);
    let claims = decode(
        String::from_utf8(out.stdout)
            .unwrap()
            .split('.')
            .nth(1)
            .unwrap(),
    );
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        -3600
    );
    assert_eq!(
        claims["scope"], "dunning.read dunning.write dunning.admin",
        "owner"
    );

    let out = run(&[
        "--org",
        "demo",
        "--person",
        "bruno@demo.example",
        "--scope",
        "dunning.write",
        "--audience",
        "api",
    ]);
    let claims = decode(
        String::from_utf8(out.stdout)
            .unwrap()
            .split('.')
            .nth(1)
            .unwrap(),
    );
    assert_eq!(claims["scope"], "dunning.write", "exactly as given");
    assert_eq!(claims["aud"], "http://127.0.0.1:8080/v1");

    // Not a member, no scope: refused, nothing on stdout.
    let out = run(&["--org", "acme", "--person", "ana@demo.example"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let out = run(&["--org", "nope", "--person", "ana@demo.example"]);
    assert!(!out.status.success());
    common::discard(&dir);
}

#[test]
fn hostile_tokens_get_401_and_nothing_runs() {
    let srv = Srv::start(&[], None);
    let seed = dev_seed(&srv);
    let e = endpoint(&srv);
    let kid = jwt::ed25519_thumbprint(&jwt::ed25519_public(&seed));
    let now = now_secs();
    let good = |over: Value| -> Value {
        let mut c = json!({
            "iss": e["issuer"], "aud": e["mcp_audience"], "sub": "ana@demo.example",
            "org": "demo", "scope": "dunning.read dunning.write dunning.admin",
            "iat": now, "exp": now + 600,
        });
        for (k, v) in over.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    };
    // Sanity: the crafted shape is accepted when nothing is wrong with it.
    let ok = jwt::sign_ed25519(&kid, &good(json!({})), &seed);
    assert_eq!(srv.call(&ok, V2026, "dunning_me", json!({})).status, 200);

    let public = jwt::ed25519_public(&seed);
    let hs256 = {
        let h = b64(&json!({ "alg": "HS256", "typ": "at+jwt", "kid": kid }));
        let p = b64(&good(json!({})));
        let mut mac = Hmac::<Sha256>::new_from_slice(&public).unwrap();
        mac.update(format!("{h}.{p}").as_bytes());
        format!(
            "{h}.{p}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    };
    let none = format!(
        "{}.{}.",
        b64(&json!({ "alg": "none", "typ": "at+jwt" })),
        b64(&good(json!({})))
    );
    let truncated = {
        let cut = ok.rfind('.').unwrap();
        let sig = URL_SAFE_NO_PAD.decode(&ok[cut + 1..]).unwrap();
        format!("{}.{}", &ok[..cut], URL_SAFE_NO_PAD.encode(&sig[..40]))
    };
    let big = jwt::sign_ed25519(&kid, &good(json!({ "pad": "x".repeat(45_000) })), &seed);
    assert!(big.len() > 60_000 && big.len() < 64_000);
    let hostile: Vec<(&str, String)> = vec![
        (
            "expired",
            srv.mint(&[
                "--org",
                "demo",
                "--person",
                "ana@demo.example",
                "--ttl",
                "-3600",
            ]),
        ),
        (
            "not yet valid",
            jwt::sign_ed25519(&kid, &good(json!({ "nbf": now + 3600 })), &seed),
        ),
        (
            "wrong issuer",
            jwt::sign_ed25519(&kid, &good(json!({ "iss": "https://evil.example" })), &seed),
        ),
        (
            "wrong audience",
            jwt::sign_ed25519(
                &kid,
                &good(json!({ "aud": "https://other.example" })),
                &seed,
            ),
        ),
        (
            "unknown kid",
            jwt::sign_ed25519("nope", &good(json!({})), &seed),
        ),
        (
            "wrong key",
            jwt::sign_ed25519(&kid, &good(json!({})), &[1; 32]),
        ),
        ("alg none", none),
        ("HS256 with the public key", hs256),
        ("truncated signature", truncated),
        ("60 KB token", big),
        ("garbage", "garbage".into()),
        ("three dots", "a.b.c".into()),
        (
            "not a member",
            srv.mint(&[
                "--org",
                "acme",
                "--person",
                "ana@demo.example",
                "--scope",
                "dunning.write",
            ]),
        ),
    ];
    for (what, token) in &hostile {
        let r = create_probe(&srv, token);
        assert_invalid_token(&r, &srv, what);
        let r = srv.rpc(Some(token), V2025, "tools/list", json!({}));
        assert_invalid_token(&r, &srv, what);
    }
    // A 100 KB token does not even fit in the header section (64 KiB): step 1 of the
    // processing order (`docs/decisions.md`) answers 400 at framing, before
    // authentication (step 5) could say 401.
    let huge = jwt::sign_ed25519(&kid, &good(json!({ "pad": "x".repeat(80_000) })), &seed);
    assert!(huge.len() > 100_000);
    let r = create_probe(&srv, &huge);
    assert_eq!(r.status, 400, "{}", r.text());
    // Just under the header limit, the same kind of token reaches authentication: 401.
    let big = jwt::sign_ed25519(&kid, &good(json!({ "pad": "x".repeat(40_000) })), &seed);
    let tampered = format!("{}A{}", &big[..big.len() - 10], &big[big.len() - 9..]);
    let r = create_probe(&srv, &tampered);
    assert_invalid_token(&r, &srv, "a 53 KB token with a bad signature");
    // No token at all: the challenge without an error.
    let r = srv.rpc(None, V2026, "tools/list", json!({}));
    assert_eq!(r.status, 401);
    let challenge = r.header("www-authenticate").unwrap();
    assert!(!challenge.contains("error="), "{challenge}");
    // Not a bearer credential.
    let basic = srv.request(
        "POST",
        "/",
        &[
            ("Authorization", "Basic YTpi"),
            ("Content-Type", "application/json"),
        ],
        br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
    );
    assert_invalid_token(&basic, &srv, "basic");

    assert_eq!(probes(&srv), 0, "nothing was executed");
    let r = create_probe(&srv, &srv.token);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(probes(&srv), 1, "the probe itself works");
}

#[test]
fn a_token_in_the_query_string_is_never_accepted() {
    let srv = Srv::start(&[], None);
    for target in [
        format!("/?access_token={}", srv.token),
        format!("/?token={}&Authorization=Bearer%20{}", srv.token, srv.token),
    ] {
        let r = srv.request(
            "POST",
            &target,
            &[
                ("Content-Type", "application/json"),
                ("MCP-Protocol-Version", V2025),
            ],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        );
        assert_eq!(r.status, 401, "{}", r.text());
        assert!(!r.header("www-authenticate").unwrap().contains("error="));
    }
    let r = srv.request(
        "GET",
        &format!("/v1/me?access_token={}", srv.token),
        &[],
        b"",
    );
    assert_eq!(r.status, 401, "{}", r.text());
}

#[test]
fn audiences_are_separated_both_ways() {
    let srv = Srv::start(&[], None);
    let api = srv.mint_api("demo", "ana@demo.example");
    let bearer = |t: &str| format!("Bearer {t}");
    // API token on the MCP endpoint.
    let r = srv.call(&api, V2026, "dunning_me", json!({}));
    assert_invalid_token(&r, &srv, "api token on MCP");
    // MCP token on the API.
    let r = srv.request(
        "GET",
        "/v1/me",
        &[("Authorization", &bearer(&srv.token))],
        b"",
    );
    assert_eq!(r.status, 401, "{}", r.text());
    assert!(
        r.header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    // Each on its own surface.
    let r = srv.request("GET", "/v1/me", &[("Authorization", &bearer(&api))], b"");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["user"]["email"], "ana@demo.example");
}

#[test]
fn scope_and_permission_refusals() {
    let srv = Srv::start(&[], None);
    let read_only = srv.mint(&[
        "--org",
        "demo",
        "--person",
        "ana@demo.example",
        "--scope",
        "dunning.read",
    ]);
    let r = create_probe(&srv, &read_only);
    assert_eq!(r.status, 403, "{}", r.text());
    let challenge = r.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"dunning.write\""),
        "{challenge}"
    );
    assert_eq!(r.json()["error"]["code"], -31403);
    // The read-only token lists no write tool.
    let r = srv.rpc(Some(&read_only), V2026, "tools/list", json!({}));
    let names: Vec<String> = r.json()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"dunning_debtors_list".to_owned()));
    assert!(!names.contains(&"dunning_debtors_create".to_owned()));

    // Bruno is a viewer: a write scope does not give him the permission.
    let bruno = srv.mint(&[
        "--org",
        "demo",
        "--person",
        "bruno@demo.example",
        "--scope",
        "dunning.read dunning.write",
    ]);
    for version in [V2026, V2025] {
        let r = srv.call(
            &bruno,
            version,
            "dunning_debtors_create",
            json!({
                "cnpj_cpf": PROBE_CPF, "name": "Sonda",
            }),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        let result = &r.json()["result"];
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(
            result["structuredContent"]["error"]["code"], "FORBIDDEN",
            "{result}"
        );
    }
    assert_eq!(probes(&srv), 0);
}

#[test]
fn rate_limit_answers_429_with_headers() {
    let srv = Srv::start(
        &[],
        Some("[rate_limit]\ntoken_per_minute = 60\ntoken_burst = 2\n"),
    );
    let ok1 = srv.rpc(Some(&srv.token), V2026, "tools/list", json!({}));
    let ok2 = srv.rpc(Some(&srv.token), V2026, "tools/list", json!({}));
    assert_eq!((ok1.status, ok2.status), (200, 200));
    let r = srv.rpc(Some(&srv.token), V2026, "tools/list", json!({}));
    assert_eq!(r.status, 429, "{}", r.text());
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry), "{retry}");
    let policy = r.header("ratelimit-policy").unwrap();
    assert!(policy.contains("\"token\";q=60;w=60"), "{policy}");
    assert!(policy.contains("\"org\";q=6000;w=60"), "{policy}");
    let state = r.header("ratelimit").unwrap();
    assert!(state.starts_with("\"token\";r=0;t="), "{state}");
    let body = r.json();
    assert_eq!(body["id"], 7);
    assert_eq!(body["error"]["code"], -31429);
    let ms = body["error"]["data"]["retry_after_ms"].as_u64().unwrap();
    assert!(ms > 0 && ms <= 1000, "{ms}");
    // Another token has its own bucket.
    let caio = srv.mint(&["--org", "demo", "--person", "caio@demo.example"]);
    assert_eq!(
        srv.rpc(Some(&caio), V2026, "tools/list", json!({})).status,
        200
    );
}

#[test]
fn metadata_probes_metrics_and_json_logs() {
    let mut srv = Srv::start(&["--log-format", "json"], Some("mcp_path = \"/mcp\"\n"));
    let resource = format!("{}/mcp", srv.url);
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = srv.request("GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}");
        let v = r.json();
        assert_eq!(v["resource"], resource.as_str());
        assert_eq!(v["authorization_servers"], json!([srv.url]));
        assert_eq!(
            v["scopes_supported"],
            json!(["dunning.read", "dunning.write", "dunning.admin"])
        );
        assert_eq!(v["bearer_methods_supported"], json!(["header"]));
        assert_eq!(v["resource_name"], "Kobana Dunning");
    }
    // Tokens minted after the start name the path in their audience.
    let t = srv.mint(&["--org", "demo", "--person", "dora@demo.example"]);
    assert_eq!(
        decode(t.split('.').nth(1).unwrap())["aud"],
        resource.as_str()
    );
    let r = srv.rpc_at(
        "/mcp",
        Some(&t),
        V2026,
        "tools/call",
        json!({ "name": "dunning_me", "arguments": {} }),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.structured()["user"]["email"], "dora@demo.example");
    assert_eq!(
        srv.rpc_at("/", Some(&t), V2026, "tools/list", json!({}))
            .status,
        404
    );

    for path in ["/healthz", "/readyz"] {
        let r = srv.request("GET", path, &[], b"");
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.json()["status"], "ok");
    }
    let r = srv.request("GET", "/metrics", &[], b"");
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"));
    let text = r.text();
    assert!(
        text.contains(
            "dunning_requests_total{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_me\",era=\"2026\",status=\"200\",tool_error=\"\"} 1"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "dunning_request_duration_seconds_bucket{endpoint=\"mcp\",method=\"tools/call\",tool=\"dunning_me\",le=\"+Inf\"} 1"
        )
    );
    assert!(
        text.contains("dunning_requests_in_flight 1"),
        "this request is in flight"
    );
    assert!(text.contains("dunning_connections_open "));

    assert!(srv.terminate().success());
    let log = srv.log();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let call = lines
        .iter()
        .find(|l| l["method"] == "tools/call")
        .unwrap_or_else(|| panic!("{log}"));
    assert_eq!(call["tool"], "dunning_me");
    assert_eq!(call["status"], 200);
    assert_eq!(call["era"], "2026");
    assert!(call["request_id"].as_str().is_some_and(|s| s.len() == 16));
    assert!(call["duration_ms"].as_f64().is_some());
    // No token anywhere: not the one used, and the JSON banner carries none.
    assert!(srv.token.is_empty(), "no --print-token");
    assert!(!log.contains(&t) && !log.contains("eyJ"));
}

#[test]
fn sigterm_drains_and_exits_zero_on_every_transport() {
    for transport in ["tokio", "blocking", "mio"] {
        let mut srv = Srv::start(&["--transport", transport], None);
        let r = srv.rpc(Some(&srv.token), V2025, "tools/list", json!({}));
        assert_eq!(r.status, 200, "{transport}: {}", r.text());
        let r = srv.call(&srv.token, V2026, "dunning_me", json!({}));
        assert_eq!(r.status, 200, "{transport}: {}", r.text());
        let status = srv.terminate();
        assert_eq!(status.code(), Some(0), "{transport}: {}", srv.log());
        assert!(srv.log().contains("stopped"), "{transport}");
    }
}

/// An ES256 key of the "authorization server" of the JWKS tests.
fn es_key(byte: u8) -> p256::ecdsa::SigningKey {
    p256::ecdsa::SigningKey::from_slice(&[byte; 32]).unwrap()
}

fn es_jwk(kid: &str, key: &p256::ecdsa::SigningKey) -> Value {
    let p = key.verifying_key().to_encoded_point(false);
    json!({
        "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(p.x().unwrap()),
        "y": URL_SAFE_NO_PAD.encode(p.y().unwrap()),
    })
}

/// An ES256 access token from the external issuer, for ana in `demo`.
fn es_token(srv: &Srv, kid: &str, key: &p256::ecdsa::SigningKey) -> String {
    use p256::ecdsa::signature::Signer as _;
    let now = now_secs();
    let claims = json!({
        "iss": "https://issuer.test", "aud": endpoint(srv)["mcp_audience"],
        "sub": "ana@demo.example", "org": "demo", "scope": "dunning.read",
        "iat": now, "exp": now + 600, "client_id": "some-agent",
    });
    let signing_input = format!(
        "{}.{}",
        b64(&json!({ "alg": "ES256", "typ": "at+jwt", "kid": kid })),
        b64(&claims)
    );
    let sig: p256::ecdsa::Signature = key.sign(signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.to_bytes()))
}

/// A loopback HTTP server answering every request with the current `jwks`.
fn jwks_server(jwks: std::sync::Arc<std::sync::Mutex<String>>) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = Vec::new();
            let mut chunk = [0u8; 1024];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let body = jwks.lock().unwrap().clone();
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: application/jwk-set+json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/jwks.json")
}

#[test]
fn jwks_file_replaces_the_development_key() {
    let dir = seeded_dir("jwks-file");
    let a = es_key(5);
    let jwks = json!({ "keys": [es_jwk("a", &a), { "kty": "oct", "kid": "s", "k": "c2VjcmV0" }] });
    std::fs::write(dir.join("jwks.json"), jwks.to_string()).unwrap();
    let config = format!(
        "[auth]\nissuer = \"https://issuer.test\"\njwks_file = \"{}\"\n",
        dir.join("jwks.json").display()
    );
    let srv = Srv::start_in(dir, &[], Some(&config));
    assert!(
        srv.token.is_empty(),
        "no development token without the development key"
    );
    let r = srv.call(&es_token(&srv, "a", &a), V2026, "dunning_me", json!({}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.structured()["user"]["email"], "ana@demo.example");
    // The PRM names the configured issuer.
    let prm = srv
        .request("GET", "/.well-known/oauth-protected-resource", &[], b"")
        .json();
    assert_eq!(prm["authorization_servers"], json!(["https://issuer.test"]));
    // A development token is no longer trusted, nor a key the JWKS does not list.
    let dev = srv.mint(&["--org", "demo", "--person", "ana@demo.example"]);
    assert_invalid_token(&srv.call(&dev, V2026, "dunning_me", json!({})), &srv, "dev");
    let other = es_token(&srv, "a", &es_key(6));
    assert_invalid_token(
        &srv.call(&other, V2026, "dunning_me", json!({})),
        &srv,
        "other",
    );
}

#[test]
fn jwks_url_is_fetched_and_follows_a_rotation() {
    let (a, b) = (es_key(5), es_key(6));
    let doc = std::sync::Arc::new(std::sync::Mutex::new(
        json!({ "keys": [es_jwk("a", &a)] }).to_string(),
    ));
    let url = jwks_server(doc.clone());
    let config = format!(
        "[auth]\nissuer = \"https://issuer.test\"\njwks_url = \"{url}\"\njwks_refresh_secs = 3600\n"
    );
    let srv = Srv::start(&[], Some(&config));
    let ta = es_token(&srv, "a", &a);
    assert_eq!(srv.call(&ta, V2026, "dunning_me", json!({})).status, 200);
    // The issuer rotates to key b: the first token with the unseen kid is refused and
    // asks for an early refresh; shortly after, b is trusted and a is gone.
    *doc.lock().unwrap() = json!({ "keys": [es_jwk("b", &b)] }).to_string();
    let tb = es_token(&srv, "b", &b);
    assert_invalid_token(
        &srv.call(&tb, V2026, "dunning_me", json!({})),
        &srv,
        "unseen kid",
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let r = srv.call(&tb, V2026, "dunning_me", json!({}));
        if r.status == 200 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "rotation not picked up"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_invalid_token(
        &srv.call(&ta, V2026, "dunning_me", json!({})),
        &srv,
        "rotated out",
    );
}

#[test]
fn a_removed_person_is_refused_at_once() {
    use dunning_domain::demo::stable_id;
    use dunning_domain::store::{self, Kind};
    let srv = Srv::start(&[], None);
    let caio = srv.mint(&["--org", "demo", "--person", "caio@demo.example"]);
    // Twice: the second request is served from the verified-token cache.
    for _ in 0..2 {
        assert_eq!(srv.call(&caio, V2026, "dunning_me", json!({})).status, 200);
    }
    let db = srv.open_store();
    let org = stable_id("org:demo");
    let member = stable_id("member:demo:caio@demo.example");
    let removed = store::write(&*db, store::WriteScope::All, |tx| {
        Ok(tx.delete(Kind::Member, &org, &member)?)
    })
    .unwrap();
    assert!(removed);
    // Another program's commit is looked for at most every 2 ms (`auth::LOOK_EVERY`): a
    // request starting later than that is refused, whatever it finds in the cache.
    std::thread::sleep(std::time::Duration::from_millis(10));
    let r = srv.call(&caio, V2026, "dunning_me", json!({}));
    assert_invalid_token(&r, &srv, "removed member");
    assert_eq!(
        srv.call(&srv.token, V2026, "dunning_me", json!({})).status,
        200
    );
}

#[test]
fn rest_lists_carry_rfc8288_link_headers() {
    let srv = Srv::start(&[], None);
    let api = srv.mint_api("demo", "ana@demo.example");
    let bearer = format!("Bearer {api}");
    let get = |target: &str| srv.request("GET", target, &[("Authorization", &bearer)], b"");
    let r = get("/v1/charges?status=overdue&per_page=5&page=2");
    assert_eq!(r.status, 200, "{}", r.text());
    let meta = &r.json()["meta"];
    let last = meta["total_pages"].as_u64().unwrap();
    assert!(last > 2, "demo has more than 10 overdue charges: {meta}");
    let link = r.header("link").expect("a Link header");
    let base = format!("{}/v1/charges?status=overdue&per_page=5", srv.url);
    for (page, rel) in [(1, "first"), (1, "prev"), (3, "next"), (last, "last")] {
        let want = format!("<{base}&page={page}>; rel=\"{rel}\"");
        assert!(link.contains(&want), "{want} in {link}");
    }
    // Following `next` gives the next page.
    let next = link
        .split(", ")
        .find(|l| l.ends_with("rel=\"next\""))
        .and_then(|l| l.strip_prefix('<')?.split('>').next())
        .unwrap()
        .strip_prefix(&srv.url)
        .unwrap()
        .to_owned();
    assert_eq!(get(&next).json()["meta"]["page"], 3);
    // A single object has no Link.
    let id = r.json()["data"][0]["id"].as_str().unwrap().to_owned();
    assert!(get(&format!("/v1/charges/{id}")).header("link").is_none());
}
