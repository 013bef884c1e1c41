//! Property tests of the core: the base64 sentinel, mirrored headers and sealed
//! `requestState` (`headers.rs`), totality of `Server::handle` (`totality.rs`), and bodies
//! written as text (`text.rs`), on the generators below.

#[path = "../common/mod.rs"]
mod common;
mod headers;
mod text;
mod totality;

use common::{RawRequest, TOKEN, body, rpc_code, send};
use dunning_core::confirm::{self, Claims};
use dunning_core::fuzzing::{self, documented};
use dunning_core::{Keys, mirror};
use proptest::prelude::*;
use proptest::sample::{Index, select};
use serde_json::{Map, Value, json};

// ---------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------

/// Strings a header or JSON value is likely to trip on.
const TRICKY: &[&str] = &[
    "",
    " ",
    "\t",
    " lead",
    "trail ",
    "us west 1",
    "Hello, 世界",
    "line1\nline2",
    "nul\0byte",
    "=?base64?literal?=",
    "=?base64?SGVsbG8=?=",
    "=?base64??=",
    "=?BASE64?SGVsbG8=?=",
    "=?base64?",
    "?=",
    "caf\u{e9}",
    "\u{7f}",
    "\u{feff}bom",
    "2026-07-28",
    "tools/call",
    "mirror_echo",
];

fn tricky_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => any::<String>(),
        2 => "[ -~]{0,24}",
        2 => select(TRICKY).prop_map(str::to_owned),
        1 => (select(TRICKY), any::<String>(), select(TRICKY))
            .prop_map(|(a, b, c)| format!("{a}{b}{c}")),
    ]
}

/// Object keys: mostly ones the core reads, sometimes anything.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        select(
            &[
                "_meta",
                "name",
                "uri",
                "arguments",
                "requestState",
                "inputResponses",
                "cursor",
                "ref",
                "argument",
                "context",
                "protocolVersion",
                "io.modelcontextprotocol/protocolVersion",
                "io.modelcontextprotocol/clientCapabilities",
                "elicitation",
                "confirm",
                "action",
                "content",
                "id",
                "region",
                "count",
                "urgent",
                "target",
                "zone",
            ][..]
        )
        .prop_map(str::to_owned),
        "[a-z_]{0,8}",
        any::<String>(),
    ]
}

/// Any JSON value, nesting at most 8 levels deep.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        tricky_string().prop_map(Value::String),
    ];
    leaf.prop_recursive(8, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn arb_object() -> impl Strategy<Value = Value> {
    prop::collection::vec((key(), arb_json()), 0..6)
        .prop_map(|kv| Value::Object(kv.into_iter().collect()))
}

const METHODS: &[&str] = &[
    "server/discover",
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "notifications/initialized",
    "subscriptions/listen",
];

/// A JSON body that is JSON-RPC often enough to reach the methods.
fn rpc_ish() -> impl Strategy<Value = Value> {
    let meta = prop_oneof![
        2 => prop::option::of(arb_json()).prop_map(|caps| {
            let mut m = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
            if let Some(c) = caps {
                m["io.modelcontextprotocol/clientCapabilities"] = c;
            }
            m
        }),
        1 => arb_json(),
    ];
    let params = (
        prop::option::of(meta),
        prop::option::of(prop_oneof![
            select(
                &[
                    "mirror_echo",
                    "charges_get",
                    "charges_cancel",
                    "triage",
                    "nope"
                ][..]
            )
            .prop_map(Value::from),
            arb_json(),
        ]),
        prop::option::of(arb_object()),
        prop::option::of(prop_oneof![
            select(&["kobana://test/me", "kobana://test/charges/x/letter"][..])
                .prop_map(Value::from),
            arb_json(),
        ]),
        prop::option::of(arb_json()),
        prop::option::of(arb_json()),
        arb_object(),
    )
        .prop_map(|(meta, name, args, uri, state, responses, extra)| {
            let mut p = match extra {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            let fields = [
                ("_meta", meta),
                ("name", name),
                ("arguments", args),
                ("uri", uri),
                ("requestState", state),
                ("inputResponses", responses),
            ];
            for (k, v) in fields {
                if let Some(v) = v {
                    p.insert(k.into(), v);
                }
            }
            Value::Object(p)
        });
    (
        prop_oneof![20 => Just(json!("2.0")), 1 => arb_json()],
        prop_oneof![
            2 => Just(None),
            8 => any::<i64>().prop_map(|i| Some(Value::from(i))),
            8 => "[a-z0-9]{0,6}".prop_map(|s| Some(Value::from(s))),
            1 => arb_json().prop_map(Some),
        ],
        prop_oneof![
            20 => select(METHODS).prop_map(Value::from),
            1 => arb_json(),
        ],
        prop_oneof![
            1 => Just(None),
            16 => params.prop_map(Some),
            1 => arb_json().prop_map(Some),
        ],
    )
        .prop_map(|(jsonrpc, id, method, params)| {
            let mut m = Map::new();
            m.insert("jsonrpc".into(), jsonrpc);
            if let Some(id) = id {
                m.insert("id".into(), id);
            }
            m.insert("method".into(), method);
            if let Some(p) = params {
                m.insert("params".into(), p);
            }
            Value::Object(m)
        })
}
