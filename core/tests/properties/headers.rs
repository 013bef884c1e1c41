//! The base64 sentinel, mirrored headers and sealed `requestState`.

use super::*;

// ---------------------------------------------------------------------------------------
// Sentinel
// ---------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sentinel_round_trips(s in tricky_string()) {
        let encoded = mirror::encode(&s);
        prop_assert_eq!(mirror::decode(&encoded).unwrap(), s.as_str());
    }

    #[test]
    fn encoded_values_are_header_text(s in tricky_string()) {
        let encoded = mirror::encode(&s);
        prop_assert!(
            encoded.bytes().all(|b| (0x20..=0x7e).contains(&b)),
            "not visible ASCII/SP: {:?}", encoded
        );
        prop_assert!(!encoded.starts_with(' ') && !encoded.ends_with(' '), "{:?}", encoded);
        if !encoded.starts_with("=?base64?") {
            prop_assert_eq!(encoded.as_ref(), s.as_str(), "a non-sentinel encoding is the value");
        }
        if encoded.as_ref() == s.as_str() {
            prop_assert!(!(s.starts_with("=?base64?") && s.ends_with("?=")), "{:?}", s);
        }
    }

    #[test]
    fn plain_values_pass_through(s in tricky_string()) {
        prop_assume!(!(s.starts_with("=?base64?") && s.ends_with("?=")));
        let decoded = mirror::decode(&s).unwrap();
        prop_assert!(matches!(decoded, std::borrow::Cow::Borrowed(_)));
        prop_assert_eq!(decoded.as_ref(), s.as_str());
    }
}

// ---------------------------------------------------------------------------------------
// Mirrored headers
// ---------------------------------------------------------------------------------------

/// Which mirrored header a request header is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mirror {
    Version,
    Method,
    Name,
    /// `Mcp-Param-{name}` of an argument of the given kind.
    Param(&'static str, ParamKind),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ParamKind {
    Str,
    Int,
    Bool,
}

/// How one header is written: name case, optional whitespace, sentinel or not.
#[derive(Clone, Debug)]
struct Style {
    case_mask: u64,
    lead: &'static str,
    trail: &'static str,
    base64: bool,
}

fn style() -> impl Strategy<Value = Style> {
    const OWS: &[&str] = &["", "", " ", "\t", "  ", " \t "];
    (any::<u64>(), select(OWS), select(OWS), any::<bool>()).prop_map(
        |(case_mask, lead, trail, base64)| Style {
            case_mask,
            lead,
            trail,
            base64,
        },
    )
}

impl Style {
    fn name(&self, name: &str) -> String {
        name.chars()
            .enumerate()
            .map(|(i, c)| {
                if self.case_mask >> (i % 64) & 1 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect()
    }

    /// A value that may be sent as the sentinel (`Mcp-Name`, `Mcp-Param-*`).
    fn encodable(&self, text: &str) -> Vec<u8> {
        let v = if self.base64 {
            use base64::Engine as _;
            format!(
                "=?base64?{}?=",
                base64::engine::general_purpose::STANDARD.encode(text)
            )
        } else {
            mirror::encode(text).into_owned()
        };
        self.plain(&v)
    }

    /// A value sent as is, with optional whitespace around it.
    fn plain(&self, text: &str) -> Vec<u8> {
        format!("{}{text}{}", self.lead, self.trail).into_bytes()
    }
}

/// The arguments of `mirror_echo`, each absent, `null` or a value.
#[derive(Clone, Debug)]
struct EchoArgs {
    region: Option<Option<String>>,
    /// The integer, and whether it is written as a float (`42.0`).
    count: Option<Option<(i64, bool)>>,
    urgent: Option<Option<bool>>,
    zone: Option<Option<Option<String>>>,
    note: Option<String>,
}

const MAX_SAFE: i64 = (1 << 53) - 1;

fn echo_args() -> impl Strategy<Value = EchoArgs> {
    let int = prop_oneof![
        -MAX_SAFE..=MAX_SAFE,
        -1000i64..1000,
        select(&[0, -1, MAX_SAFE, -MAX_SAFE][..]),
    ];
    (
        prop::option::of(prop::option::of(tricky_string())),
        prop::option::of(prop::option::of((int, any::<bool>()))),
        prop::option::of(prop::option::of(any::<bool>())),
        prop::option::of(prop::option::of(prop::option::of(tricky_string()))),
        prop::option::of(tricky_string()),
    )
        .prop_map(|(region, count, urgent, zone, note)| EchoArgs {
            region,
            count,
            urgent,
            zone,
            note,
        })
}

fn set(args: &mut Map<String, Value>, key: &str, v: &Option<Option<Value>>) {
    match v {
        None => {}
        Some(None) => {
            args.insert(key.into(), Value::Null);
        }
        Some(Some(v)) => {
            args.insert(key.into(), v.clone());
        }
    }
}

/// An annotated argument: header suffix, type, and its text when it has a value.
type Bound = (&'static str, ParamKind, Option<String>);

impl EchoArgs {
    /// The argument object, and each binding with its text when the value is present.
    fn build(&self) -> (Value, Vec<Bound>) {
        let mut a = Map::new();
        set(
            &mut a,
            "region",
            &self.region.clone().map(|o| o.map(Value::from)),
        );
        let count = self
            .count
            .map(|o| o.map(|(n, float)| if float { json!(n as f64) } else { json!(n) }));
        set(&mut a, "count", &count);
        set(&mut a, "urgent", &self.urgent.map(|o| o.map(Value::from)));
        let mut zone_text = None;
        match &self.zone {
            None => {}
            Some(None) => {
                a.insert("target".into(), Value::Null);
            }
            Some(Some(z)) => {
                let mut t = Map::new();
                set(&mut t, "zone", &Some(z.clone().map(Value::from)));
                a.insert("target".into(), Value::Object(t));
                zone_text = z.clone();
            }
        }
        if let Some(n) = &self.note {
            a.insert("note".into(), Value::from(n.as_str()));
        }
        let bindings = vec![
            ("Region", ParamKind::Str, self.region.clone().flatten()),
            (
                "Count",
                ParamKind::Int,
                self.count.flatten().map(|(n, _)| n.to_string()),
            ),
            (
                "Urgent",
                ParamKind::Bool,
                self.urgent.flatten().map(|b| b.to_string()),
            ),
            ("Zone", ParamKind::Str, zone_text),
        ];
        (Value::Object(a), bindings)
    }
}

/// What a valid era-2026 request is made of.
#[derive(Clone, Debug)]
struct Ingredients {
    method: &'static str,
    tool: &'static str,
    elicitation: bool,
    echo: EchoArgs,
    target_id: Option<String>,
    other_args: Value,
    other_name: String,
    uri: String,
    styles: Vec<Style>,
    shuffle: u64,
}

fn ingredients() -> impl Strategy<Value = Ingredients> {
    (
        select(
            &[
                "tools/list",
                "tools/call",
                "tools/call",
                "tools/call",
                "prompts/get",
                "resources/read",
                "server/discover",
            ][..],
        ),
        select(
            &[
                "mirror_echo",
                "mirror_echo",
                "mirror_echo",
                "charges_cancel",
                "charges_get",
                "charges_list",
                "secrets_rotate",
                "",
            ][..],
        ),
        any::<bool>(),
        echo_args(),
        prop::option::of(tricky_string()),
        arb_object(),
        prop_oneof![Just("triage".to_owned()), tricky_string()],
        prop_oneof![
            select(
                &[
                    "kobana://test/me",
                    "kobana://test/charges/C-1",
                    "kobana://test/charges/missing",
                    "kobana://test/charges/unpaid/letter",
                    "kobana://test/charges/a%20b",
                ][..]
            )
            .prop_map(str::to_owned),
            tricky_string(),
        ],
        prop::collection::vec(style(), 8),
        any::<u64>(),
    )
        .prop_map(
            |(
                method,
                tool,
                elicitation,
                echo,
                target_id,
                other_args,
                other_name,
                uri,
                styles,
                shuffle,
            )| Ingredients {
                method,
                tool,
                elicitation,
                echo,
                target_id,
                other_args,
                other_name,
                uri,
                styles,
                shuffle,
            },
        )
}

/// A request with each header tagged with the mirror it is (if any).
#[derive(Clone, Debug)]
struct Tagged {
    method: &'static str,
    body: Value,
    headers: Vec<(String, Vec<u8>, Option<Mirror>)>,
    /// Annotated arguments with no value (`Mcp-Param-*` must then be absent).
    unbound: Vec<&'static str>,
}

impl Tagged {
    fn request(&self) -> RawRequest {
        RawRequest {
            method: "POST".into(),
            target: "/".into(),
            headers: self
                .headers
                .iter()
                .map(|(n, v, _)| (n.clone(), v.clone()))
                .collect(),
            body: serde_json::to_vec(&self.body).unwrap(),
        }
    }

    fn mirrored(&self) -> Vec<usize> {
        (0..self.headers.len())
            .filter(|&i| self.headers[i].2.is_some())
            .collect()
    }
}

fn build(ing: &Ingredients) -> Tagged {
    let caps = if ing.elicitation {
        json!({ "elicitation": {} })
    } else {
        json!({})
    };
    let mut params = json!({ "_meta": common::envelope(caps) });
    let mut name = None;
    let mut bindings: Vec<Bound> = Vec::new();
    match ing.method {
        "tools/call" => {
            let tool = if ing.tool.is_empty() {
                ing.other_name.as_str()
            } else {
                ing.tool
            };
            // By the name sent: a generated name may be a mirroring tool's too.
            let args = match tool {
                "mirror_echo" => {
                    let (args, b) = ing.echo.build();
                    bindings = b;
                    args
                }
                "charges_cancel" => {
                    bindings.push(("Target-Id", ParamKind::Str, ing.target_id.clone()));
                    match &ing.target_id {
                        Some(id) => json!({ "id": id }),
                        None => json!({}),
                    }
                }
                _ => ing.other_args.clone(),
            };
            params["name"] = json!(tool);
            params["arguments"] = args;
            name = Some(tool.to_owned());
        }
        "prompts/get" => {
            params["name"] = json!(ing.other_name);
            params["arguments"] = json!({ "min_days": "30" });
            name = Some(ing.other_name.clone());
        }
        "resources/read" => {
            params["uri"] = json!(ing.uri);
            name = Some(ing.uri.clone());
        }
        _ => {}
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": ing.method, "params": params });
    let st = &ing.styles;
    let mut headers = vec![
        (
            "Authorization".to_owned(),
            format!("Bearer {TOKEN}").into_bytes(),
            None,
        ),
        (
            "Content-Type".to_owned(),
            b"application/json".to_vec(),
            None,
        ),
        (
            st[0].name("MCP-Protocol-Version"),
            st[0].plain("2026-07-28"),
            Some(Mirror::Version),
        ),
        (
            st[1].name("Mcp-Method"),
            st[1].plain(ing.method),
            Some(Mirror::Method),
        ),
    ];
    if let Some(n) = &name {
        headers.push((
            st[2].name("Mcp-Name"),
            st[2].encodable(n),
            Some(Mirror::Name),
        ));
    }
    let mut unbound = Vec::new();
    for (i, (param, kind, text)) in bindings.iter().enumerate() {
        match text {
            Some(t) => {
                let s = &st[3 + i];
                headers.push((
                    s.name(&format!("Mcp-Param-{param}")),
                    s.encodable(t),
                    Some(Mirror::Param(param, *kind)),
                ));
            }
            None => unbound.push(*param),
        }
    }
    // A deterministic shuffle: header order carries no meaning.
    let mut seed = ing.shuffle;
    for i in (1..headers.len()).rev() {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        headers.swap(i, (seed >> 33) as usize % (i + 1));
    }
    Tagged {
        method: ing.method,
        body,
        headers,
        unbound,
    }
}

/// One change to one mirrored header.
#[derive(Clone, Debug)]
enum Mutation {
    /// Another value (different after trimming, decoding and numeric comparison).
    Change,
    /// Header removed (every mirrored header present is required).
    Drop,
    /// The header sent twice, the second time with another value.
    Duplicate,
    /// An `Mcp-Param-*` for an annotated argument that has no value.
    Unbound,
}

#[derive(Clone, Debug)]
struct MutationPlan {
    what: Mutation,
    which: Index,
    text: String,
    int: i64,
    style: Style,
}

fn mutation() -> impl Strategy<Value = MutationPlan> {
    (
        select(
            &[
                Mutation::Change,
                Mutation::Drop,
                Mutation::Duplicate,
                Mutation::Unbound,
            ][..],
        ),
        any::<Index>(),
        tricky_string(),
        any::<i64>(),
        style(),
    )
        .prop_map(|(what, which, text, int, style)| MutationPlan {
            what,
            which,
            text,
            int,
            style,
        })
}

/// A value of header `m` that differs from `current` (the text the body implies).
fn other_value(m: Mirror, current: &str, plan: &MutationPlan) -> Vec<u8> {
    let s = &plan.style;
    let different = |t: &str| {
        if t.trim_matches([' ', '\t']) == current || t == current {
            format!("{t}x")
        } else {
            t.to_owned()
        }
    };
    match m {
        // Compared as is after trimming: keep to visible ASCII so only the value differs.
        Mirror::Version | Mirror::Method => {
            let visible: String = plan.text.chars().filter(char::is_ascii_graphic).collect();
            s.plain(&different(&visible))
        }
        Mirror::Name | Mirror::Param(_, ParamKind::Str) => s.encodable(&different(&plan.text)),
        Mirror::Param(_, ParamKind::Int) => {
            if plan.int % 2 == 0 {
                let n = plan.int.clamp(-MAX_SAFE, MAX_SAFE);
                let n = if n.to_string() == current {
                    n.wrapping_add(1)
                } else {
                    n
                };
                s.encodable(&n.to_string())
            } else {
                // Never all digits, so never numerically equal (`042` would be).
                s.encodable(&format!("{}x", plan.text))
            }
        }
        Mirror::Param(_, ParamKind::Bool) => {
            let t = if plan.int % 2 == 0 {
                if current == "true" { "false" } else { "true" }.to_owned()
            } else {
                different(&plan.text)
            };
            s.encodable(&t)
        }
    }
}

/// The text a mirrored header carries in `t` (decoded), for [`other_value`].
fn current_text(t: &Tagged, m: Mirror) -> String {
    let (_, v, _) = t.headers.iter().find(|h| h.2 == Some(m)).unwrap();
    let v = String::from_utf8(v.clone()).unwrap();
    let v = v.trim_matches([' ', '\t']);
    match m {
        Mirror::Version | Mirror::Method => v.to_owned(),
        _ => mirror::decode(v).unwrap().into_owned(),
    }
}

fn mutate(t: &Tagged, plan: &MutationPlan) -> (Tagged, String) {
    let mut out = t.clone();
    let mirrored = t.mirrored();
    let pick = mirrored[plan.which.index(mirrored.len())];
    let (name, _, tag) = t.headers[pick].clone();
    let m = tag.unwrap();
    let what = match plan.what {
        Mutation::Unbound if t.unbound.is_empty() => &Mutation::Change,
        ref w => w,
    };
    let desc = match what {
        Mutation::Change => {
            let current = current_text(t, m);
            out.headers[pick].1 = other_value(m, &current, plan);
            format!("changed {name} from {current:?}")
        }
        Mutation::Drop => {
            out.headers.remove(pick);
            format!("dropped {name}")
        }
        Mutation::Duplicate => {
            let current = current_text(t, m);
            let value = other_value(m, &current, plan);
            let dup_name = plan.style.name(&name);
            out.headers.insert(pick + 1, (dup_name.clone(), value, tag));
            format!("duplicated {name} as {dup_name}")
        }
        Mutation::Unbound => {
            let param = t.unbound[plan.which.index(t.unbound.len())];
            let header = plan.style.name(&format!("Mcp-Param-{param}"));
            out.headers
                .push((header.clone(), plan.style.encodable(&plan.text), None));
            format!("added {header} for an argument with no value")
        }
    };
    (out, desc)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Correct mirrored headers (any name case, any OWS, plain or sentinel) never get -32020.
    #[test]
    fn valid_mirrors_are_accepted(ing in ingredients()) {
        let t = build(&ing);
        let resp = send(&t.request());
        let code = rpc_code(&resp);
        prop_assert_ne!(code, Some(-32020), "{:?}\n{}", t.headers, body(&resp));
        // Schema validation runs first; then a destructive tool needs `elicitation`.
        let destructive_without_elicitation = t.method == "tools/call"
            && ing.tool == "charges_cancel"
            && ing.target_id.is_some()
            && !ing.elicitation;
        if destructive_without_elicitation {
            prop_assert_eq!((resp.status.as_u16(), code), (400, Some(-32021)));
        } else {
            prop_assert_eq!(resp.status.as_u16(), 200, "{}", body(&resp));
        }
    }

    /// Any single mutation of one mirrored header is a 400 with -32020.
    #[test]
    fn any_mirror_mutation_is_refused(ing in ingredients(), plan in mutation()) {
        let t = build(&ing);
        let (bad, what) = mutate(&t, &plan);
        let resp = send(&bad.request());
        prop_assert_eq!(
            (resp.status.as_u16(), rpc_code(&resp)),
            (400, Some(-32020)),
            "{}: {:?}\n{}", what, bad.headers, body(&resp)
        );
        prop_assert_eq!(body(&resp)["id"].clone(), json!(1));
        let message = body(&resp)["error"]["message"].as_str().unwrap_or("").to_owned();
        prop_assert!(message.starts_with("Header mismatch: "), "{}", message);
    }
}

// ---------------------------------------------------------------------------------------
// requestState
// ---------------------------------------------------------------------------------------

fn claims() -> impl Strategy<Value = Claims> {
    (
        tricky_string(),
        "[0-9a-f]{64}",
        tricky_string(),
        tricky_string(),
        any::<u64>(),
        any::<u64>(),
        "[0-9a-f]{32}",
    )
        .prop_map(
            |(tool, args_digest, subject, organization, issued_at, expires_at, nonce)| Claims {
                tool,
                args_digest,
                subject,
                organization,
                issued_at,
                expires_at,
                nonce,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sealed_state_round_trips(c in claims(), secret in prop::collection::vec(any::<u8>(), 1..64)) {
        let keys = Keys::single(&secret);
        let sealed = confirm::seal(&keys, &c).unwrap();
        prop_assert_eq!(confirm::open(&keys, &sealed), Ok(c.clone()));
        prop_assert!(sealed.split('.').count() == 4 && sealed.starts_with("v1.k1."));
        let other = Keys::single(b"another key");
        prop_assert_eq!(confirm::open(&other, &sealed), Err(confirm::StateError::Mac));
    }

    #[test]
    fn any_flipped_byte_is_rejected(c in claims(), at in any::<Index>(), mask in 1u8..=255) {
        let keys = fuzzing::keys();
        let sealed = confirm::seal(&keys, &c).unwrap();
        let mut bytes = sealed.clone().into_bytes();
        let i = at.index(bytes.len());
        bytes[i] ^= mask;
        let tampered = String::from_utf8_lossy(&bytes);
        prop_assert_ne!(tampered.as_ref(), sealed.as_str());
        let opened = confirm::open(&keys, &tampered);
        prop_assert!(opened.is_err(), "byte {} ^ {:#04x} still opens: {:?}", i, mask, opened);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// End to end: a confirmation whose state has any byte flipped is `-32602`, never run.
    #[test]
    fn tampered_confirmation_never_executes(at in any::<Index>(), mask in 1u8..=127) {
        let args = json!({ "id": "C-9" });
        let call = |extra: Value| {
            let mut params = json!({ "name": "charges_cancel", "arguments": args });
            if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
                p.extend(e);
            }
            let mut req = common::modern(1, "tools/call", params, Some("charges_cancel"));
            req.headers.push(("Mcp-Param-Target-Id".into(), b"C-9".to_vec()));
            send(&req)
        };
        let first = body(&call(json!({})));
        prop_assert_eq!(&first["result"]["resultType"], "input_required");
        let state = first["result"]["requestState"].as_str().unwrap().to_owned();
        let mut bytes = state.into_bytes();
        let i = at.index(bytes.len());
        bytes[i] ^= mask;
        let tampered = String::from_utf8_lossy(&bytes).into_owned();
        let accept = json!({ "confirm": { "action": "accept", "content": { "confirm": true } } });
        let resp = call(json!({ "requestState": tampered, "inputResponses": accept }));
        prop_assert_eq!((resp.status.as_u16(), rpc_code(&resp)), (200, Some(-32602)), "{}", body(&resp));
    }
}
