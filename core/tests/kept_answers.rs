//! `server/discover`, which the server writes once and keeps (as it keeps `tools/list`,
//! tested in `tool_lists.rs`): each request still gets its own `id`, and the bytes are
//! those of the answer written for it alone (`jsonrpc::success` of the decorated result).

mod common;

use common::{envelope, post, send};
use dunning_core::jsonrpc;
use serde_json::{Value, json};

fn discover(id: Value) -> Vec<u8> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "server/discover",
        "params": { "_meta": envelope(json!({})) },
    });
    let req = post(
        &body,
        &[
            ("MCP-Protocol-Version", "2026-07-28"),
            ("Mcp-Method", "server/discover"),
        ],
    );
    let resp = send(&req);
    assert_eq!(resp.status, 200);
    resp.body.clone()
}

#[test]
fn a_kept_discover_answer_carries_each_requests_id_and_the_per_request_bytes() {
    let first = discover(json!(1));
    let parsed: Value = serde_json::from_slice(&first).unwrap();
    let result = &parsed["result"];
    assert_eq!(
        result["supportedVersions"],
        json!(["2026-07-28", "2025-06-18", "2025-03-26"])
    );
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["ttlMs"], 0);
    assert_eq!(result["cacheScope"], "private");
    assert!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"].is_string());
    for id in [json!(1), json!("a\"b"), json!(-7), json!(0.5)] {
        // Asked twice: written, then reused.
        for _ in 0..2 {
            let bytes = discover(id.clone());
            assert_eq!(bytes, jsonrpc::success(&id, result), "{id}");
        }
    }
}
