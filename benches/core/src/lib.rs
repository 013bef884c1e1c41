//! Fixtures of the core benches: a catalog that looks like the real dunning API (60
//! tools, 5–15 typed and described properties each, enums, formats, output schemas
//! on reads), a domain that answers instantly, and prebuilt era-2026 requests.
//!
//! Deterministic: no clock, no randomness; every run benches the same bytes.

use std::collections::BTreeSet;

use dunning_core::catalog::Catalog;
use dunning_core::{
    Access, Annotations, AuthError, Authenticate, Config, Dispatch, Env, Header, Keys, Output,
    Principal, Request, Scope, ScopeNames, Server, ToolCall, ToolDef, ToolError, UnixTime,
};
use serde_json::{Map, Value, json};

/// The token the bench principal presents.
pub const TOKEN: &str = "bench-token";

/// Name of the trivial tool `tools/call` benches.
pub const TRIVIAL_TOOL: &str = "dunning_regions_check";

/// One field of an entity: name and its JSON Schema (with a description).
type Field = (&'static str, Value);

fn s(desc: &str) -> Value {
    json!({ "type": "string", "description": desc })
}

fn fmt(format: &str, desc: &str) -> Value {
    json!({ "type": "string", "format": format, "description": desc })
}

fn en(values: &[&str], desc: &str) -> Value {
    json!({ "type": "string", "enum": values, "description": desc })
}

fn int(min: i64, max: i64, desc: &str) -> Value {
    json!({ "type": "integer", "minimum": min, "maximum": max, "description": desc })
}

fn money(desc: &str) -> Value {
    json!({ "type": "number", "minimum": 0.01, "maximum": 10_000_000, "description": format!("{desc} In BRL, as a float (1234.56).") })
}

fn flag(desc: &str) -> Value {
    json!({ "type": "boolean", "description": desc })
}

fn strings(desc: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string", "maxLength": 64 }, "maxItems": 20, "description": desc })
}

/// The entities of the dunning API, each with its writable fields.
fn entities() -> Vec<(&'static str, &'static str, Vec<Field>)> {
    let status = |v: &[&str]| {
        en(
            v,
            "Lifecycle state; transitions are validated by the server.",
        )
    };
    vec![
        (
            "charges",
            "charge",
            vec![
                ("debtor_id", s("Debtor who owes the charge (DEB-…).")),
                ("amount", money("Face value of the charge.")),
                ("due_date", fmt("date", "Due date, ISO 8601 (2026-12-31).")),
                (
                    "description",
                    json!({ "type": "string", "maxLength": 500, "description": "What the charge is for, shown to the debtor." }),
                ),
                (
                    "status",
                    status(&["open", "overdue", "paid", "canceled", "in_agreement"]),
                ),
                (
                    "fine_percentage",
                    json!({ "type": "number", "minimum": 0, "maximum": 2, "description": "Late fine, percent of the amount (at most 2% by law)." }),
                ),
                (
                    "interest_percentage",
                    json!({ "type": "number", "minimum": 0, "maximum": 1, "description": "Monthly interest, percent." }),
                ),
                (
                    "document_number",
                    s("Invoice or contract number the charge refers to."),
                ),
                ("tags", strings("Free labels for filtering.")),
                ("external_id", s("Identifier in the caller's own system.")),
                (
                    "ruler_id",
                    s("Dunning ruler that drives reminders (RUL-…)."),
                ),
            ],
        ),
        (
            "debtors",
            "debtor",
            vec![
                ("name", s("Full name or company name.")),
                (
                    "document",
                    json!({ "type": "string", "pattern": "^[0-9]{11}([0-9]{3})?$", "description": "CPF (11 digits) or CNPJ (14 digits), digits only." }),
                ),
                ("email", fmt("email", "Primary e-mail for reminders.")),
                (
                    "phone",
                    json!({ "type": "string", "pattern": "^\\+[1-9][0-9]{7,14}$", "description": "E.164 mobile number for SMS and WhatsApp." }),
                ),
                (
                    "kind",
                    en(&["person", "company"], "Natural or legal person."),
                ),
                (
                    "segment",
                    en(
                        &["retail", "b2b", "vip", "public_sector"],
                        "Portfolio segment used by rulers.",
                    ),
                ),
                ("address_city", s("City of the billing address.")),
                (
                    "address_state",
                    json!({ "type": "string", "minLength": 2, "maxLength": 2, "description": "Two-letter state code (SP, RJ, …)." }),
                ),
                ("birth_date", fmt("date", "Date of birth (people only).")),
                ("tags", strings("Free labels for filtering.")),
            ],
        ),
        (
            "contact_points",
            "contact point",
            vec![
                ("debtor_id", s("Debtor the contact belongs to.")),
                (
                    "channel",
                    en(
                        &["email", "sms", "whatsapp", "voice", "letter"],
                        "How the debtor is reached.",
                    ),
                ),
                ("value", s("Address, number or handle, by channel.")),
                ("preferred", flag("Use this contact first for its channel.")),
                (
                    "opted_out",
                    flag("The debtor asked not to be contacted here."),
                ),
                (
                    "verified_at",
                    fmt("date-time", "When the contact was last confirmed."),
                ),
                ("label", s("Free label (work, home, …).")),
            ],
        ),
        (
            "rulers",
            "ruler",
            vec![
                ("name", s("Ruler name, unique in the organization.")),
                (
                    "segment",
                    en(
                        &["retail", "b2b", "vip", "public_sector"],
                        "Segment the ruler applies to.",
                    ),
                ),
                ("active", flag("Whether new charges enter the ruler.")),
                (
                    "timezone",
                    s("IANA time zone for sending windows (America/Sao_Paulo)."),
                ),
                (
                    "send_window_start",
                    json!({ "type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$", "description": "Earliest local time to send (08:00)." }),
                ),
                (
                    "send_window_end",
                    json!({ "type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$", "description": "Latest local time to send (20:00)." }),
                ),
                (
                    "business_days_only",
                    flag("Skip weekends and national holidays."),
                ),
                (
                    "max_messages_per_week",
                    int(1, 21, "Cap on messages per debtor per week."),
                ),
            ],
        ),
        (
            "steps",
            "ruler step",
            vec![
                ("ruler_id", s("Ruler the step belongs to.")),
                (
                    "offset_days",
                    int(
                        -30,
                        365,
                        "Days relative to the due date (negative: before).",
                    ),
                ),
                (
                    "channel",
                    en(
                        &["email", "sms", "whatsapp", "voice", "letter"],
                        "Channel of the step.",
                    ),
                ),
                ("template_id", s("Message template (TPL-…).")),
                (
                    "action",
                    en(
                        &["remind", "negativate", "protest", "offer_agreement"],
                        "What the step does.",
                    ),
                ),
                ("enabled", flag("Whether the step runs.")),
            ],
        ),
        (
            "agreements",
            "agreement",
            vec![
                ("debtor_id", s("Debtor the agreement is made with.")),
                ("charge_ids", strings("Charges the agreement settles.")),
                ("installments", int(1, 48, "Number of installments.")),
                (
                    "first_due_date",
                    fmt("date", "Due date of the first installment."),
                ),
                ("down_payment", money("Down payment.")),
                (
                    "discount_percentage",
                    json!({ "type": "number", "minimum": 0, "maximum": 100, "description": "Discount on fines and interest, percent." }),
                ),
                (
                    "status",
                    status(&["proposed", "active", "broken", "settled", "canceled"]),
                ),
                (
                    "notes",
                    json!({ "type": "string", "maxLength": 1000, "description": "Internal notes." }),
                ),
            ],
        ),
        (
            "notifications",
            "notification",
            vec![
                ("charge_id", s("Charge the notification is about.")),
                (
                    "channel",
                    en(
                        &["email", "sms", "whatsapp", "voice", "letter"],
                        "Channel to send through.",
                    ),
                ),
                ("template_id", s("Message template (TPL-…).")),
                (
                    "scheduled_for",
                    fmt("date-time", "When to send; now when absent."),
                ),
                (
                    "status",
                    status(&["scheduled", "sent", "delivered", "failed", "canceled"]),
                ),
                ("include_payment_link", flag("Append the payment link.")),
            ],
        ),
        (
            "webhooks",
            "webhook",
            vec![
                ("url", fmt("uri", "HTTPS endpoint that receives events.")),
                (
                    "events",
                    json!({ "type": "array", "items": { "type": "string", "enum": ["charge.paid", "charge.overdue", "agreement.broken", "notification.failed", "debtor.updated"] }, "description": "Events delivered to the endpoint." }),
                ),
                ("active", flag("Whether deliveries are made.")),
                ("description", s("What the endpoint is for.")),
                (
                    "max_retries",
                    int(0, 10, "Delivery attempts before giving up."),
                ),
            ],
        ),
        (
            "exports",
            "export",
            vec![
                (
                    "kind",
                    en(
                        &["charges", "debtors", "agreements", "notifications"],
                        "What to export.",
                    ),
                ),
                ("format", en(&["csv", "xlsx"], "File format.")),
                ("from", fmt("date", "First day covered.")),
                ("to", fmt("date", "Last day covered.")),
                ("status", status(&["queued", "running", "ready", "expired"])),
                ("columns", strings("Columns to include; all when absent.")),
            ],
        ),
        (
            "credit_bureau",
            "credit bureau registration",
            vec![
                ("charge_id", s("Charge to register.")),
                (
                    "bureau",
                    en(&["serasa", "spc", "boa_vista"], "Bureau to register with."),
                ),
                (
                    "notify_days_before",
                    int(10, 30, "Days of notice the debtor gets (at least 10)."),
                ),
                (
                    "status",
                    status(&["pending", "registered", "removed", "rejected"]),
                ),
                ("reason", s("Why the charge is being registered.")),
            ],
        ),
        (
            "protests",
            "protest",
            vec![
                ("charge_id", s("Charge to protest.")),
                ("notary_office", s("Notary office code (cartório).")),
                (
                    "status",
                    status(&["requested", "filed", "paid", "withdrawn"]),
                ),
                (
                    "requested_at",
                    fmt("date-time", "When the protest was requested."),
                ),
                ("reason", s("Why the charge is being protested.")),
            ],
        ),
        (
            "events",
            "event",
            vec![
                (
                    "kind",
                    en(
                        &[
                            "charge.created",
                            "charge.paid",
                            "notification.sent",
                            "agreement.created",
                        ],
                        "Event type.",
                    ),
                ),
                ("subject_id", s("Entity the event is about.")),
                (
                    "occurred_after",
                    fmt("date-time", "Only events after this instant."),
                ),
                (
                    "occurred_before",
                    fmt("date-time", "Only events before this instant."),
                ),
                (
                    "actor",
                    s("Who caused it (member e-mail, `system`, `webhook`)."),
                ),
            ],
        ),
    ]
}

/// The permission string guarding `entity` for `action` (`view`, `manage`).
fn permission(entity: &str, action: &str) -> String {
    format!("{entity}.{action}")
}

fn object(props: &[Field], required: &[&str], strict: bool) -> Value {
    let mut p = Map::new();
    for (k, v) in props {
        p.insert((*k).to_owned(), v.clone());
    }
    let mut schema = json!({ "type": "object", "properties": p });
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    if strict {
        schema["additionalProperties"] = json!(false);
    }
    schema
}

fn id_field(noun: &str) -> Field {
    ("id", s(&format!("Identifier of the {noun}.")))
}

fn idempotency() -> Field {
    (
        "idempotency_key",
        json!({ "type": "string", "maxLength": 64, "description": "Repeat the call with the same key to get the first result instead of a second effect." }),
    )
}

fn paging() -> Vec<Field> {
    vec![
        ("page", int(1, 10_000, "Page number, from 1.")),
        ("per_page", int(1, 100, "Items per page (default 25).")),
        (
            "sort",
            en(
                &["created_at", "-created_at", "updated_at", "-updated_at"],
                "Sort order; `-` for descending.",
            ),
        ),
        (
            "q",
            s("Full-text search over names, documents and descriptions."),
        ),
    ]
}

fn output_item(noun: &str, fields: &[Field]) -> Value {
    let mut props: Vec<Field> = vec![
        id_field(noun),
        ("created_at", fmt("date-time", "Creation instant.")),
        ("updated_at", fmt("date-time", "Last change.")),
    ];
    props.extend(fields.iter().cloned());
    object(&props, &["id", "created_at"], false)
}

fn tool(
    name: String,
    description: String,
    input: Value,
    output: Option<Value>,
    annotations: Annotations,
    access: Access,
) -> ToolDef {
    ToolDef {
        title: name
            .trim_start_matches("dunning_")
            .replace('_', " ")
            .to_owned(),
        name,
        description,
        input_schema: input,
        output_schema: output,
        annotations,
        access,
        route: None,
    }
}

/// Five tools per entity (list, get, create, update, and a destructive one), 60 in all.
/// The product's scope names (the bench serves a catalogue of the product's shape).
const SCOPES: ScopeNames = ScopeNames {
    read: "dunning.read",
    write: "dunning.write",
    admin: "dunning.admin",
};

pub fn catalog() -> Catalog {
    let read = Annotations {
        read_only: true,
        idempotent: true,
        ..Annotations::default()
    };
    let write = Annotations::default();
    let destructive = Annotations {
        destructive: true,
        ..Annotations::default()
    };
    let mut tools = Vec::with_capacity(60);
    for (entity, noun, fields) in entities() {
        let view = Access::new(Scope::Read, &permission(entity, "view"));
        let manage = Access::new(Scope::Write, &permission(entity, "manage"));
        let item = output_item(noun, &fields);
        // list: paging + filters (enums, dates, flags) + the first fields, 5..=15.
        let mut list: Vec<Field> = paging();
        list.extend(fields.iter().take(11).cloned());
        list.truncate(15);
        tools.push(tool(
            format!("dunning_{entity}_list"),
            format!("Lists the organization's {noun}s, newest first, filtered by any of the arguments. Paginated with page/per_page; meta.total has the count."),
            object(&list, &[], true),
            Some(object(
                &[
                    ("data", json!({ "type": "array", "items": item })),
                    ("meta", json!({ "type": "object", "properties": {
                        "total": { "type": "integer" }, "page": { "type": "integer" }, "per_page": { "type": "integer" } } })),
                ],
                &["data", "meta"],
                false,
            )),
            read,
            view.clone(),
        ));
        let get: Vec<Field> = vec![
            id_field(noun),
            (
                "expand",
                json!({ "type": "array", "items": { "type": "string", "enum": ["debtor", "events", "notifications", "agreement"] }, "description": "Related records to embed." }),
            ),
            ("include_deleted", flag("Also find archived records.")),
            ("fields", strings("Only these fields in the result.")),
            (
                "locale",
                en(
                    &["pt-BR", "en-US", "es"],
                    "Language of human-readable texts.",
                ),
            ),
        ];
        tools.push(tool(
            format!("dunning_{entity}_get"),
            format!("Reads one {noun} by id. Ids of other organizations are NOT_FOUND."),
            object(&get, &["id"], true),
            Some(item.clone()),
            read,
            view,
        ));
        let mut create: Vec<Field> = fields.clone();
        create.push(idempotency());
        create.truncate(15);
        let required: Vec<&str> = fields.iter().take(2).map(|f| f.0).collect();
        tools.push(tool(
            format!("dunning_{entity}_create"),
            format!("Creates a {noun}. Validation errors name every offending field; pass idempotency_key to make retries safe."),
            object(&create, &required, false),
            Some(item.clone()),
            write,
            manage.clone(),
        ));
        let mut update: Vec<Field> = vec![id_field(noun)];
        update.extend(fields.iter().skip(1).cloned());
        update.push(idempotency());
        update.truncate(15);
        tools.push(tool(
            format!("dunning_{entity}_update"),
            format!("Changes fields of a {noun}; fields not sent are kept."),
            object(&update, &["id"], false),
            None,
            Annotations {
                idempotent: true,
                ..write
            },
            manage.clone(),
        ));
        let mut target = id_field(noun);
        target.1["x-mcp-header"] = json!("Target-Id");
        let cancel: Vec<Field> = vec![
            target,
            (
                "reason",
                json!({ "type": "string", "minLength": 3, "maxLength": 500, "description": "Why; recorded in the audit trail and shown to the debtor when notified." }),
            ),
            ("notify_debtor", flag("Tell the debtor about it.")),
            (
                "effective_date",
                fmt("date", "When it takes effect; today when absent."),
            ),
            idempotency(),
        ];
        tools.push(tool(
            format!("dunning_{entity}_cancel"),
            format!(
                "Cancels (archives) a {noun}. Asks the user to confirm before anything changes."
            ),
            object(&cancel, &["id", "reason"], false),
            None,
            destructive,
            Access::new(Scope::Admin, &permission(entity, "manage")),
        ));
    }
    // Replace one list by the trivial tool so the total stays 60.
    tools.pop();
    tools.push(tool(
        TRIVIAL_TOOL.into(),
        "Says whether a region code is served. Trivial: one required, mirrored argument.".into(),
        object(
            &[
                (
                    "region",
                    json!({ "type": "string", "maxLength": 32, "x-mcp-header": "Region", "description": "Region code (us-west1)." }),
                ),
                ("channel", en(&["email", "sms", "whatsapp"], "Only for this channel.")),
                ("on", fmt("date", "On this day; today when absent.")),
                ("strict", flag("Unknown regions are an error rather than `false`.")),
                ("locale", en(&["pt-BR", "en-US", "es"], "Language of human-readable texts.")),
            ],
            &["region"],
            true,
        ),
        Some(object(&[("served", flag("Whether it is served."))], &["served"], false)),
        read,
        Access::read(),
    ));
    Catalog {
        tools,
        scopes: SCOPES,
        ..Catalog::default()
    }
}

/// A domain that answers every call at once with a small fixed result.
#[derive(Clone, Copy, Debug, Default)]
pub struct BenchDomain;

impl Dispatch for BenchDomain {
    fn catalog(&self) -> Catalog {
        catalog()
    }

    fn call_tool(&self, _call: &ToolCall<'_>) -> Result<Output, ToolError> {
        Ok(Output::ok(json!({ "served": true })))
    }

    fn preflight(&self, call: &ToolCall<'_>) -> Result<String, ToolError> {
        Ok(format!("Cancel {}?", call.tool.name))
    }
}

/// Accepts [`TOKEN`] as an admin holding every permission of the catalog.
#[derive(Clone, Debug)]
pub struct BenchAuth {
    permissions: std::sync::Arc<BTreeSet<String>>,
}

impl Default for BenchAuth {
    fn default() -> Self {
        let permissions = entities()
            .iter()
            .flat_map(|(e, _, _)| [permission(e, "view"), permission(e, "manage")])
            .collect::<BTreeSet<_>>()
            .into();
        Self { permissions }
    }
}

impl Authenticate for BenchAuth {
    fn authenticate(
        &self,
        token: &str,
        audience: dunning_core::Audience,
        now: UnixTime,
    ) -> Result<Principal, AuthError> {
        if token != TOKEN {
            return Err(AuthError::Signature);
        }
        Ok(Principal {
            subject: "ana@example.com".into(),
            organization: "demo".into(),
            scope: Some(Scope::Admin),
            scopes: SCOPES.all().map(str::to_owned).to_vec(),
            permissions: self.permissions.clone(),
            expires_at: now.plus_millis(3_600_000),
            audience,
        })
    }
}

/// The bench server.
pub fn server() -> Server<BenchDomain> {
    match Server::new(
        Config::default(),
        Keys::single(b"bench-key-0123456789abcdef0123456"),
        BenchDomain,
        BenchAuth::default(),
    ) {
        Ok(s) => s,
        Err(e) => panic!("bench catalog invalid: {e}"),
    }
}

/// The environment of every bench request.
pub fn env() -> Env {
    Env::fixed(UnixTime::from_secs(1_800_000_000), 1)
}

/// An owned request; [`Owned::request`] borrows it as the core wants it.
#[derive(Clone, Debug)]
pub struct Owned {
    headers: Vec<(String, Vec<u8>)>,
    /// The JSON body.
    pub body: Vec<u8>,
}

impl Owned {
    /// Header views for [`Owned::request`] (kept apart so no allocation is benched).
    pub fn header_views(&self) -> Vec<Header<'_>> {
        self.headers
            .iter()
            .map(|(n, v)| Header { name: n, value: v })
            .collect()
    }

    /// The request, borrowing `headers` from [`Owned::header_views`].
    pub fn request<'a>(&'a self, headers: &'a [Header<'a>]) -> Request<'a> {
        Request {
            method: "POST",
            target: "/",
            headers,
            body: &self.body,
        }
    }
}

/// An era-2026 request with every mirrored header (`Mcp-Name`, `Mcp-Param-*` given).
pub fn modern(
    method: &str,
    params: Value,
    name: Option<&str>,
    param_headers: &[(&str, &str)],
) -> Owned {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
        "io.modelcontextprotocol/clientInfo": { "name": "bench", "version": "1.0.0" },
    });
    let body = json!({ "jsonrpc": "2.0", "id": 42, "method": method, "params": params });
    let mut headers: Vec<(String, Vec<u8>)> = vec![
        ("host".into(), b"127.0.0.1:8080".to_vec()),
        (
            "authorization".into(),
            format!("Bearer {TOKEN}").into_bytes(),
        ),
        ("content-type".into(), b"application/json".to_vec()),
        (
            "accept".into(),
            b"application/json, text/event-stream".to_vec(),
        ),
        ("mcp-protocol-version".into(), b"2026-07-28".to_vec()),
        ("mcp-method".into(), method.as_bytes().to_vec()),
    ];
    if let Some(n) = name {
        headers.push(("mcp-name".into(), n.as_bytes().to_vec()));
    }
    for (n, v) in param_headers {
        headers.push(((*n).to_owned(), v.as_bytes().to_vec()));
    }
    Owned {
        headers,
        body: serde_json::to_vec(&body).expect("serializes"),
    }
}

/// `server/discover`.
pub fn discover() -> Owned {
    modern("server/discover", json!({}), None, &[])
}

/// `tools/list` (all 60 tools are visible to the bench principal).
pub fn tools_list() -> Owned {
    modern("tools/list", json!({}), None, &[])
}

/// `tools/call` of the trivial tool, every header right.
pub fn tools_call() -> Owned {
    modern(
        "tools/call",
        json!({ "name": TRIVIAL_TOOL, "arguments": { "region": "us-west1" } }),
        Some(TRIVIAL_TOOL),
        &[("mcp-param-region", "us-west1")],
    )
}

/// The same call with `Mcp-Param-Region` disagreeing with the body: a `-32020`.
pub fn header_mismatch() -> Owned {
    modern(
        "tools/call",
        json!({ "name": TRIVIAL_TOOL, "arguments": { "region": "us-west1" } }),
        Some(TRIVIAL_TOOL),
        &[("mcp-param-region", "eu-west1")],
    )
}
