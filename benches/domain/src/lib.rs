//! Shared setup of the domain benchmarks: a server over an in-memory store holding
//! `n` charges of one organization, and era-2026 `tools/call` requests for it.
#![forbid(unsafe_code)]

use dunning_core::{
    Audience, AuthError, Authenticate, Config, Env, Header, Keys, Principal, Request, Server,
    UnixTime,
};
use dunning_domain::Domain;
use dunning_domain::store::{self, Kind};
use dunning_domain::testing::{Bed, T0};
use serde_json::{Value, json};

/// Accepts the token `bench` as Ana (owner of `demo`).
pub struct BenchAuth(pub Principal);

impl Authenticate for BenchAuth {
    fn authenticate(&self, token: &str, _: Audience, _: UnixTime) -> Result<Principal, AuthError> {
        if token == "bench" {
            Ok(self.0.clone())
        } else {
            Err(AuthError::Malformed)
        }
    }
}

/// A server whose `demo` organization holds `n` charges (one debtor, varied statuses,
/// due dates and amounts), built by cloning one issued charge document; and that
/// organization's id.
pub fn server_with_charges(n: usize) -> (Server<Domain>, String) {
    let mut bed = Bed::new();
    let ana = bed.ana();
    let debtor = bed.ok(
        &ana,
        "dunning_debtors_create",
        json!({"cnpj_cpf": "529.982.247-25", "name": "Maria Silva"}),
    );
    let template = bed.ok(
        &ana,
        "dunning_charges_create",
        json!({"debtor_id": debtor["id"], "amount": 100.0, "due_date": "2026-12-20", "payment_method": "pix", "description": "Mensalidade"}),
    );
    let org = ana.organization.clone();
    let statuses = ["pending", "overdue", "paid", "canceled", "partially_paid"];
    store::write(bed.domain.store(), store::WriteScope::All, |tx| {
        for i in 0..n {
            let mut c: Value = template.clone();
            c["id"] = json!(format!("00000000-0000-4000-8000-{i:012}"));
            c["status"] = json!(statuses[i % statuses.len()]);
            c["amount"] = json!(10.0 + (i % 997) as f64);
            let day = 1 + i % 28;
            let month = 1 + (i / 28) % 12;
            c["due_date"] = json!(format!("2026-{month:02}-{day:02}"));
            c["created_at"] = json!(format!("2026-01-01T00:00:{:02}-03:00", i % 60));
            tx.put(Kind::Charge, &org, &c)?;
        }
        Ok(())
    })
    .expect("bulk insert");
    let server = Server::new(
        Config::default(),
        Keys::single(b"bench-key"),
        bed.domain,
        BenchAuth(ana),
    )
    .expect("catalog");
    (server, org)
}

/// The raw bytes of an era-2026 `tools/call` (body, headers) for `tool` with `args`.
pub fn call_request(tool: &str, args: Value) -> (String, Vec<(&'static str, String)>) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": args, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }}
    })
    .to_string();
    let headers = vec![
        ("Authorization", "Bearer bench".to_owned()),
        ("Content-Type", "application/json".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", "tools/call".to_owned()),
        ("Mcp-Name", tool.to_owned()),
    ];
    (body, headers)
}

/// Answers one request through the core; returns the status and the body.
pub fn handle(
    server: &Server<Domain>,
    body: &str,
    headers: &[(&'static str, String)],
) -> (u16, Vec<u8>) {
    handle_at(server, body, headers, 1)
}

/// Like [`handle`], with entropy from `counter` (writes get fresh ids).
pub fn handle_at(
    server: &Server<Domain>,
    body: &str,
    headers: &[(&'static str, String)],
    counter: u64,
) -> (u16, Vec<u8>) {
    let hs: Vec<Header<'_>> = headers
        .iter()
        .map(|(n, v)| Header {
            name: n,
            value: v.as_bytes(),
        })
        .collect();
    let req = Request {
        method: "POST",
        target: "/",
        headers: &hs,
        body: body.as_bytes(),
    };
    let resp = server.handle(&req, &Env::fixed(T0, counter));
    (resp.status.as_u16(), resp.body)
}
