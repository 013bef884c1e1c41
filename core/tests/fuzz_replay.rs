//! Replays the fuzz targets' inputs under `cargo test`: every conformance fixture
//! (`tests/conformance/**/*.http`) and hand-made hostile inputs go through
//! `fuzzing::handle` and `fuzzing::request_state`, and the seeds of `rest_handle` and
//! `jwt_verify` through theirs, so a crash the fuzzer would find in them fails here
//! first. `write_seed_corpus` (ignored; run by `fuzz/seed.sh`) writes
//! the same inputs as the cargo-fuzz seed corpus.
#![allow(
    clippy::disallowed_methods,
    reason = "tests read fixtures and write the corpus; the ban is for the core itself"
)]

mod common;

use std::path::{Path, PathBuf};

use common::{body, rpc_code};
use dunning_core::confirm::{self, Claims};
use dunning_core::fuzzing::{self, RawRequest};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("core/ sits in the workspace root")
        .to_path_buf()
}

/// `(name, text)` of every fixture request file, sorted.
fn fixtures() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "http") {
                let name = path
                    .strip_prefix(root)
                    .unwrap_or(&path)
                    .with_extension("")
                    .to_string_lossy()
                    .replace(['/', '\\'], "__");
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                out.push((name, text));
            }
        }
    }
    let root = repo_root().join("tests").join("conformance");
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    out
}

/// A request head with a valid token and JSON content type, and `body`.
fn authed(extra_head: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "POST / HTTP/1.1\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\n{extra_head}\r\n"
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

fn modern_call(extra_head: &str, params: &str) -> Vec<u8> {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;
    let body =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{meta},{params}}}}}"#);
    let head =
        format!("MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n{extra_head}");
    authed(&head, body.as_bytes())
}

/// Hand-made inputs: valid requests for every primitive of the test domain (seeds that
/// reach deep), and hostile ones (framing junk, deep JSON, odd bytes, edge values).
fn hand_made() -> Vec<(&'static str, Vec<u8>)> {
    let deep_array = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let deep_object = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}{}}}"#,
        r#"{"a":"#.repeat(200),
        "}".repeat(200)
    );
    let mut too_big = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.to_vec();
    too_big.resize(2_097_153, b' ');
    vec![
        ("empty", Vec::new()),
        ("newlines", b"\n\n\n\r\n".to_vec()),
        ("method_only", b"POST".to_vec()),
        ("no_blank_line", b"POST /\r\nAuthorization: Bearer tok".to_vec()),
        ("colonless_header", b"POST /\r\njust a line\r\n\r\n{}".to_vec()),
        ("nul_everywhere", b"PO\0ST /\0\r\nAuth\0orization: Bearer\0tok\r\n\r\n\0".to_vec()),
        (
            "invalid_utf8",
            b"\xff\xfe /\xc3\x28\r\n\xff: \xff\r\nAuthorization: Bearer tok\r\n\r\n\xff".to_vec(),
        ),
        ("long_target", format!("GET /{} HTTP/1.1\r\n\r\n", "a/".repeat(20_000)).into_bytes()),
        ("many_headers", {
            let mut r = b"POST /\r\n".to_vec();
            for i in 0..2_000 {
                r.extend_from_slice(format!("Mcp-Param-X{i}: {i}\r\n").as_bytes());
            }
            r.extend_from_slice(b"\r\n{}");
            r
        }),
        ("deep_array", authed("", deep_array.as_bytes())),
        ("deep_object", authed("", deep_object.as_bytes())),
        ("too_big", authed("", &too_big)),
        ("huge_number", authed("", br#"{"jsonrpc":"2.0","id":1e999999,"method":"ping"}"#)),
        ("lone_surrogate", authed("", br#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#)),
        ("batch", authed("", br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)),
        (
            "notification_2026",
            authed(
                "Mcp-Method: notifications/initialized\r\n",
                br#"{"jsonrpc":"2.0","method":"notifications/initialized","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
            ),
        ),
        (
            "initialize",
            authed(
                "",
                br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
            ),
        ),
        (
            "echo_all_params",
            modern_call(
                "Mcp-Name: mirror_echo\r\nMcp-Param-Region: =?base64?SGVsbG8sIOS4lueVjA==?=\r\nMcp-Param-Count: -9007199254740991\r\nMcp-Param-Urgent: true\r\nMcp-Param-Zone:  z 1 \r\n",
                r#""name":"mirror_echo","arguments":{"region":"Hello, 世界","count":-9007199254740991.0,"urgent":true,"target":{"zone":"z 1"},"note":"n"}"#,
            ),
        ),
        (
            "echo_bad_base64",
            modern_call(
                "Mcp-Name: mirror_echo\r\nMcp-Param-Region: =?base64?SGVsbG8?=\r\n",
                r#""name":"mirror_echo","arguments":{"region":"Hello"}"#,
            ),
        ),
        (
            "cancel_ask",
            modern_call(
                "Mcp-Name: charges_cancel\r\nMcp-Param-Target-Id: C-1\r\n",
                r#""name":"charges_cancel","arguments":{"id":"C-1"}"#,
            ),
        ),
        (
            "cancel_forged_state",
            modern_call(
                "Mcp-Name: charges_cancel\r\nMcp-Param-Target-Id: C-1\r\n",
                r#""name":"charges_cancel","arguments":{"id":"C-1"},"requestState":"v1.k1.e30.AAAA","inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}}"#,
            ),
        ),
        (
            "read_strict_unknown_arg",
            modern_call(
                "Mcp-Name: charges_get\r\n",
                r#""name":"charges_get","arguments":{"id":"C-1","stauts":"open"}"#,
            ),
        ),
        (
            "prompt",
            authed(
                "MCP-Protocol-Version: 2025-06-18\r\n",
                br#"{"jsonrpc":"2.0","id":"p","method":"prompts/get","params":{"name":"triage","arguments":{"min_days":"30"}}}"#,
            ),
        ),
        (
            "complete",
            authed(
                "",
                br#"{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"kobana://test/charges/{id}"},"argument":{"name":"id","value":"CHG-0"}}}"#,
            ),
        ),
        (
            "resource_blob",
            authed(
                "",
                br#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"kobana://test/charges/%E2%82%AC/letter"}}"#,
            ),
        ),
        (
            "rest_cancel",
            b"POST /v1/charges/C%201/cancel?reason=a+b&x=%zz HTTP/1.1\r\nAuthorization: Bearer tok-api\r\nContent-Type: application/json\r\nX-Idempotency-Key: k\r\n\r\n{\"reason\":7}".to_vec(),
        ),
        ("rest_204", b"DELETE /v1/secrets HTTP/1.1\r\nAuthorization: Bearer tok\r\n\r\n".to_vec()),
        ("rest_405", b"PUT /v1/charges HTTP/1.1\r\n\r\n".to_vec()),
        (
            "rate_limited",
            b"POST / HTTP/1.1\r\nAuthorization: Bearer tok-limited\r\nContent-Type: application/json\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".to_vec(),
        ),
        ("well_known", b"GET /.well-known/oauth-protected-resource HTTP/1.1\r\n\r\n".to_vec()),
        ("metrics", b"HEAD /metrics HTTP/1.1\r\n\r\n".to_vec()),
    ]
}

#[test]
fn replays_every_conformance_fixture() {
    let fixtures = fixtures();
    assert!(
        !fixtures.is_empty(),
        "no tests/conformance/**/*.http found under {}",
        repo_root().display()
    );
    let mut requests = 0;
    for (name, text) in &fixtures {
        let reqs = fuzzing::fixture_requests(text);
        assert!(!reqs.is_empty(), "{name}: no request in the fixture");
        for r in &reqs {
            fuzzing::handle(r);
        }
        requests += reqs.len();
    }
    assert!(requests >= fixtures.len());
}

#[test]
fn fixture_conversion_follows_the_format() {
    let text = concat!(
        "# comment\n",
        "#!load=draining\n",
        "POST /?a=1 HTTP/1.1\n",
        "X-Esc: a\\x00\\\\b\\tc\n",
        "X-Hex: {{hex:41 42}}{{fill:3}}{{pad:2}}.\n",
        "Content-Length: auto\n",
        "\n",
        "{\"s\":\"{{prev:/result/requestState|tamper}}\"{{pad-to:30}}}\n",
        ">>> advance=5\n",
        "#raw\n",
        "GET / HTTP/1.1\\r\\n\n",
        "\\r\\n\n",
    );
    let reqs = fuzzing::fixture_requests(text);
    assert_eq!(reqs.len(), 2);
    let first = String::from_utf8(reqs[0].clone()).unwrap();
    assert_eq!(
        first,
        "POST /?a=1 HTTP/1.1\r\nX-Esc: a\0\\b\tc\r\nX-Hex: ABxxx  .\r\nContent-Length: 30\r\n\r\n{\"s\":\"x\"                     }"
    );
    assert_eq!(reqs[1], b"GET / HTTP/1.1\r\n\r\n");
    let split = RawRequest::split(&reqs[0]);
    assert_eq!((split.method.as_str(), split.path()), ("POST", "/"));
    assert_eq!(
        split.headers[1],
        ("X-Hex".to_owned(), b" ABxxx  .".to_vec())
    );
    assert_eq!(split.body.len(), 30);
}

#[test]
fn hostile_inputs_get_documented_answers() {
    for (name, input) in hand_made() {
        let resp = {
            let req = RawRequest::split(&input);
            fuzzing::handle(&input);
            req.with(|r| fuzzing::server().handle(r, &fuzzing::env()))
        };
        let status = resp.status.as_u16();
        assert_ne!(status, 500, "{name}: {}", body(&resp));
        match name {
            "deep_array" | "deep_object" => {
                assert_eq!((status, rpc_code(&resp)), (400, Some(-32700)), "{name}");
            }
            "too_big" => assert_eq!(status, 413, "{name}"),
            "huge_number" | "lone_surrogate" => {
                assert_eq!((status, rpc_code(&resp)), (400, Some(-32700)), "{name}");
            }
            "echo_all_params" => {
                assert_eq!(status, 200, "{name}: {}", body(&resp));
                assert_eq!(
                    body(&resp)["result"]["structuredContent"]["echo"]["count"],
                    -9_007_199_254_740_991.0
                );
            }
            "echo_bad_base64" => assert_eq!(rpc_code(&resp), Some(-32020), "{name}"),
            "cancel_ask" => {
                assert_eq!(
                    body(&resp)["result"]["resultType"],
                    "input_required",
                    "{name}"
                );
            }
            "cancel_forged_state" => {
                assert_eq!((status, rpc_code(&resp)), (200, Some(-32602)), "{name}");
            }
            "rest_204" => assert_eq!(status, 204, "{name}"),
            "rate_limited" => {
                assert_eq!((status, rpc_code(&resp)), (429, Some(-31429)), "{name}");
                assert_eq!(resp.header("retry-after").unwrap().as_bytes(), b"2");
            }
            "rest_405" => assert_eq!(status, 405, "{name}"),
            _ => {}
        }
    }
}

#[test]
fn request_state_target_rejects_junk_and_reopens_real_states() {
    let keys = fuzzing::keys();
    let claims = Claims {
        tool: "charges_cancel".into(),
        args_digest: "00".repeat(32),
        subject: "tok@example.com".into(),
        organization: "demo".into(),
        issued_at: 1,
        expires_at: 2,
        nonce: "ab".repeat(16),
    };
    let sealed = confirm::seal(&keys, &claims).unwrap();
    for junk in [
        &b""[..],
        b".",
        b"...",
        b"v1.k1..",
        b"v1.k1.e30.",
        b"v1.k1.e30.AAAA",
        b"v1..e30.AAAA",
        b"\xff\xfe",
        "v1.k1.".repeat(1000).as_bytes(),
    ] {
        fuzzing::request_state(junk);
        assert!(confirm::open(&keys, &String::from_utf8_lossy(junk)).is_err());
    }
    fuzzing::request_state(sealed.as_bytes());
    assert_eq!(confirm::open(&keys, &sealed), Ok(claims));
}

#[test]
fn rest_target_replays_its_seeds() {
    let seeds = fuzzing::rest::seeds();
    for (name, input) in &seeds {
        fuzzing::rest_handle(input);
        let req = fuzzing::rest::build(input);
        let status = req
            .with(|r| fuzzing::server().handle(r, &fuzzing::env()))
            .status
            .as_u16();
        let want = match *name {
            "get_charge" | "get_charge_expand" | "head_charge" | "list" | "raw_method" => 200,
            "echo" => 201,
            "rotate" => 204,
            "echo_not_object" | "list_bad_page" | "list_unknown" => 422,
            "get_missing" | "no_route" | "root" => 404,
            "no_token" | "wrong_token" | "expired" => 401,
            "rotate_reader" | "cancel_reader" | "cancel_noperm" => 403,
            "put" => 405,
            "echo_text" => 415,
            "limited" => 429,
            _ => continue,
        };
        assert_eq!(status, want, "{name}: {:?}", req.target);
    }
    assert!(seeds.len() > 20);
}

#[test]
fn jwt_target_replays_its_seeds() {
    for (name, input) in fuzzing::jwt::seeds() {
        fuzzing::jwt_verify(&input);
        let token = String::from_utf8_lossy(&input[1..]);
        let accepted = fuzzing::jwt::check(&token);
        match name.as_str() {
            n if n.starts_with("raw_") => assert_eq!(accepted, 1, "{name}"),
            _ => assert_eq!(accepted, 0, "{name}"),
        }
    }
    // Structured seeds sign what the fuzzer mutates: the valid ones verify, once.
    use dunning_core::jwt::Algorithm;
    let claims = fuzzing::jwt::valid_claims(None);
    for alg in [Algorithm::EdDsa, Algorithm::Es256, Algorithm::Rs256] {
        let header = format!(r#"{{"alg":"{}","typ":"at+jwt"}}"#, alg.as_str());
        let token = fuzzing::jwt::signed(alg, header.as_bytes(), claims.as_bytes());
        assert_eq!(fuzzing::jwt::check(&token), 1, "{}", alg.as_str());
        // One character changed anywhere: refused (or, for a base64 slot that decodes
        // to the same bytes, refused by the canonical-encoding rule).
        for at in (0..token.len()).step_by(7) {
            let mut t = token.clone().into_bytes();
            t[at] = if t[at] == b'A' { b'B' } else { b'A' };
            let t = String::from_utf8(t).unwrap();
            assert_eq!(fuzzing::jwt::check(&t), 0, "{} at {at}", alg.as_str());
        }
    }
}

/// Writes the seed corpora of the fuzz targets (see `fuzz/README.md`): the codec
/// targets get the fixtures' raw bytes too (`codec_split` with a leading `0`: no split).
#[test]
#[ignore = "writes fuzz/corpus/; run by fuzz/seed.sh"]
fn write_seed_corpus() {
    let fuzz = repo_root().join("fuzz").join("corpus");
    let handle = fuzz.join("core_handle");
    let state = fuzz.join("request_state_open");
    let rest = fuzz.join("rest_handle");
    let jwt = fuzz.join("jwt_verify");
    let decode = fuzz.join("codec_decode");
    let split = fuzz.join("codec_split");
    for dir in [&handle, &state, &rest, &jwt, &decode, &split] {
        std::fs::create_dir_all(dir).expect("corpus dir");
    }
    let mut n = 0;
    for (name, text) in fixtures() {
        for (i, r) in fuzzing::fixture_requests(&text).iter().enumerate() {
            std::fs::write(handle.join(format!("{name}__{i}")), r).expect("write seed");
            if r.len() <= 16 * 1024 {
                std::fs::write(decode.join(format!("{name}__{i}")), r).expect("write seed");
                let zero_splits = [&[0u8][..], r].concat();
                std::fs::write(split.join(format!("{name}__{i}")), zero_splits)
                    .expect("write seed");
            }
            n += 1;
        }
    }
    for (name, input) in fuzzing::rest::seeds() {
        std::fs::write(rest.join(name), input).expect("write seed");
    }
    for (name, input) in fuzzing::jwt::seeds() {
        std::fs::write(jwt.join(name), input).expect("write seed");
    }
    for (name, input) in hand_made() {
        if input.len() <= 64 * 1024 {
            std::fs::write(handle.join(format!("hand__{name}")), input).expect("write seed");
            n += 1;
        }
    }
    let keys = fuzzing::keys();
    let claims = Claims {
        tool: "charges_cancel".into(),
        args_digest: "0f".repeat(32),
        subject: "tok@example.com".into(),
        organization: "demo".into(),
        issued_at: 1_800_000_000_000,
        expires_at: 1_800_000_300_000,
        nonce: "01".repeat(16),
    };
    let sealed = confirm::seal(&keys, &claims).unwrap();
    let seeds = [
        sealed.clone(),
        sealed.replace("v1.", "v2."),
        sealed.replace(".k1.", ".k9."),
        "v1.k1.e30.AAAA".to_owned(),
        String::new(),
    ];
    for (i, s) in seeds.iter().enumerate() {
        std::fs::write(state.join(format!("seed_{i}")), s).expect("write seed");
    }
    assert!(n > 0);
}

/// Every input of the committed corpora of the core's targets (`fuzz/corpus/<target>/`,
/// minimized after each campaign: see `fuzz/README.md`), through the same bodies the
/// fuzzer runs: what a campaign reached stays reached, on stable, at every `cargo test`.
/// A fuzz target: its corpus folder and its body.
type Target = (&'static str, fn(&[u8]));

#[test]
fn the_committed_corpora_replay_cleanly() {
    let targets: [Target; 4] = [
        ("core_handle", fuzzing::handle),
        ("rest_handle", fuzzing::rest_handle),
        ("jwt_verify", fuzzing::jwt_verify),
        ("request_state_open", fuzzing::request_state),
    ];
    for (target, run) in targets {
        let dir = repo_root().join("fuzz").join("corpus").join(target);
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).expect("the corpus is committed") {
            let path = entry.expect("entry").path();
            let data = std::fs::read(&path).expect("input");
            run(&data);
            n += 1;
        }
        assert!(n > 0, "{}: an empty corpus", dir.display());
    }
}
