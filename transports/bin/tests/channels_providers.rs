//! WhatsApp (Cloud API shape) and SMS (Twilio Messages API shape) against local HTTP
//! servers answering as those APIs document, and their status callbacks over the
//! server's real socket: requests checked field by field; callbacks signed right and
//! wrong, replayed, out of order, for unknown messages.

mod common;
#[path = "support/fake_api.rs"]
mod fake_api;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::confirm::{ask, confirm, success};
use common::{Srv, V2026, cpf, date_in, tool_ok};
use fake_api::FakeApi;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};

fn ok(srv: &Srv, tool: &str, args: Value) -> Value {
    tool_ok(&srv.call(&srv.token, V2026, tool, args)).unwrap_or_else(|e| panic!("{tool}: {e}"))
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

/// An active ruler whose window is open all day (its one step is a month away), so
/// manual messages go out at once at any hour of the suite's clock.
fn all_day_ruler(srv: &Srv) -> String {
    let r = ok(
        srv,
        "dunning_rulers_create",
        json!({
            "name": "Janela o dia todo",
            "send_window": {"start": "00:00", "end": "23:59", "saturday_end": "23:59", "skip_holidays": false},
            "steps": [{"offset_days": 30, "channel": "email",
                       "template": {"subject": "x", "body": "Olá {{debtor.name}}."}}]
        }),
    );
    let rid = id(&r);
    ok(srv, "dunning_rulers_activate", json!({"id": rid}));
    rid
}

/// A debtor with a contact point on `channel`, a charge on `ruler`, and a confirmed
/// notify on that channel with `template`: returns (charge, contact point, debtor).
fn notified(
    srv: &Srv,
    ruler: &str,
    n: u32,
    channel: &str,
    number: &str,
    template: &str,
) -> (String, String, String) {
    let d = id(&ok(
        srv,
        "dunning_debtors_create",
        json!({"cnpj_cpf": cpf(n), "name": format!("Pessoa {n}")}),
    ));
    let cp = id(&ok(
        srv,
        "dunning_contact_points_create",
        json!({"id": d, "channel": channel, "value": number, "consent": "opted_in"}),
    ));
    let c = id(&ok(
        srv,
        "dunning_charges_create",
        json!({"debtor_id": d, "amount": 88.5, "due_date": date_in(5),
               "payment_method": "pix", "ruler_id": ruler}),
    ));
    let args = json!({"id": c, "channel": channel, "template_id": template});
    let (state, _) = ask(srv, &srv.token, "dunning_charges_notify", &args);
    success(&confirm(
        srv,
        &srv.token,
        "dunning_charges_notify",
        &args,
        &state,
    ));
    (c, cp, d)
}

fn delivery(srv: &Srv, charge: &str) -> Value {
    ok(srv, "dunning_deliveries_list", json!({"charge_id": charge}))["data"][0].clone()
}

fn wait_delivery(srv: &Srv, charge: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let d = delivery(srv, charge);
        if pred(&d) {
            return d;
        }
        assert!(Instant::now() < deadline, "no delivery {what}: {d}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn contact_point(srv: &Srv, debtor: &str, cp: &str) -> Value {
    let cps = ok(srv, "dunning_contact_points_list", json!({"id": debtor}));
    cps["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == cp)
        .unwrap()
        .clone()
}

fn events(srv: &Srv, delivery: &str, code: &str) -> usize {
    let e = ok(
        srv,
        "dunning_events_list",
        json!({"resource_id": delivery, "code": code}),
    );
    e["data"].as_array().unwrap().len()
}

fn hub_signature(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

fn wa_status(wamid: &str, status: &str, error: Option<i64>) -> Vec<u8> {
    let mut s = json!({"id": wamid, "status": status, "timestamp": "1796000000", "recipient_id": "5511987650001"});
    if let Some(code) = error {
        s["errors"] = json!([{"code": code, "title": "Message undeliverable"}]);
    }
    json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA-1", "changes": [
        {"field": "messages", "value": {"messaging_product": "whatsapp",
         "metadata": {"display_phone_number": "5511999990000", "phone_number_id": "1098765"},
         "statuses": [s]}}]}]})
    .to_string()
    .into_bytes()
}

fn post_wa(srv: &Srv, body: &[u8], signature: &str) -> u16 {
    srv.request(
        "POST",
        "/channels/whatsapp",
        &[
            ("Content-Type", "application/json"),
            ("X-Hub-Signature-256", signature),
        ],
        body,
    )
    .status
}

#[test]
fn whatsapp_templates_go_through_the_cloud_api_and_its_callbacks_move_deliveries() {
    let limited = AtomicU32::new(0);
    let api = FakeApi::start(move |req| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        match body["to"].as_str().unwrap_or_default() {
            "5511987650002" => (
                400,
                json!({"error": {"message": "(#131026) Message undeliverable", "type": "OAuthException", "code": 131026, "fbtrace_id": "A1"}}).to_string(),
            ),
            "5511987650003" if limited.fetch_add(1, Ordering::SeqCst) == 0 => (
                429,
                json!({"error": {"message": "(#130429) Rate limit hit", "code": 130429}}).to_string(),
            ),
            to => (
                200,
                json!({"messaging_product": "whatsapp", "contacts": [{"input": to, "wa_id": to}],
                       "messages": [{"id": format!("wamid.HBgL{to}")}]})
                .to_string(),
            ),
        }
    });
    let config = format!(
        "[jobs]\nengine_interval_secs = 1\n[channels]\nretry_base_secs = 1\nretry_max_secs = 2\n\
         [channels.whatsapp]\ndriver = \"cloud_api\"\nbase_url = \"http://127.0.0.1:{}/v21.0\"\n\
         phone_number_id = \"1098765\"\naccess_token = \"wa-token\"\napp_secret = \"app-secret\"\n\
         verify_token = \"verify-me\"\ntemplates = {{ reminder = \"cobranca_lembrete\" }}\n",
        api.port
    );
    let mut srv = Srv::start(&[], Some(&config));
    let ruler = all_day_ruler(&srv);
    let (c1, cp1, d1) = notified(
        &srv,
        &ruler,
        425_000_001,
        "whatsapp",
        "+5511987650001",
        "reminder",
    );
    let (c2, cp2, d2) = notified(
        &srv,
        &ruler,
        425_000_002,
        "whatsapp",
        "+5511987650002",
        "reminder",
    );
    let (c3, cp3, d3) = notified(
        &srv,
        &ruler,
        425_000_003,
        "whatsapp",
        "+5511987650003",
        "payment_link",
    );

    // The request, field by field.
    let sent = wait_delivery(&srv, &c1, "sent", |d| d["status"] == "sent");
    assert_eq!(sent["provider_message_id"], "wamid.HBgL5511987650001");
    let reqs = api.requests();
    let r = reqs
        .iter()
        .find(|r| r.body.windows(13).any(|w| w == b"5511987650001"))
        .expect("the request");
    assert_eq!(r.method, "POST");
    assert_eq!(r.target, "/v21.0/1098765/messages");
    assert_eq!(r.header("authorization"), Some("Bearer wa-token"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(body["messaging_product"], "whatsapp");
    assert_eq!(body["recipient_type"], "individual");
    assert_eq!(body["to"], "5511987650001");
    assert_eq!(body["type"], "template");
    assert_eq!(
        body["template"]["name"], "cobranca_lembrete",
        "the approved name"
    );
    assert_eq!(body["template"]["language"]["code"], "pt_BR");
    let comp = &body["template"]["components"][0];
    assert_eq!(comp["type"], "body");
    let params = comp["parameters"].as_array().unwrap();
    assert_eq!(
        params[0],
        json!({"type": "text", "text": "Pessoa 425000001"})
    );
    assert_eq!(params[1]["text"], "R$ 88,50");
    let creditor = params.last().unwrap()["text"].as_str().unwrap();
    assert!(creditor.contains("CNPJ 11.222.333/0001-81"), "{creditor}");
    assert!(
        params
            .iter()
            .all(|p| !p["text"].as_str().unwrap().contains('\n'))
    );
    assert_eq!(body.as_object().unwrap().len(), 5, "no other field: {body}");

    // 131026 at send: bounced for good, the number marked invalid.
    let bounced = wait_delivery(&srv, &c2, "bounced", |d| d["status"] == "bounced");
    assert_eq!(bounced["error_code"], "whatsapp_131026");
    let cp = contact_point(&srv, &d2, &cp2);
    assert_eq!(
        (cp["bounce_count"].clone(), cp["status"].clone()),
        (json!(1), json!("invalid"))
    );
    // 429: tried again after the back-off, a built-in template by its own name.
    let retried = wait_delivery(&srv, &c3, "sent", |d| d["status"] == "sent");
    assert_eq!(retried["attempt"], 2);
    let names: Vec<String> = api
        .requests()
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter(|b| b["to"] == "5511987650003")
        .map(|b| b["template"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["payment_link", "payment_link"]);

    // The verification handshake.
    let v = srv.request(
        "GET",
        "/channels/whatsapp?hub.mode=subscribe&hub.verify_token=verify-me&hub.challenge=1158201444",
        &[],
        b"",
    );
    assert_eq!((v.status, v.text()), (200, "1158201444".to_owned()));
    let v = srv.request(
        "GET",
        "/channels/whatsapp?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1",
        &[],
        b"",
    );
    assert_eq!(v.status, 403);

    // A bad signature: 401, nothing changes.
    let wamid = "wamid.HBgL5511987650001";
    let read = wa_status(wamid, "read", None);
    assert_eq!(
        post_wa(&srv, &read, &hub_signature("not-the-secret", &read)),
        401
    );
    assert_eq!(post_wa(&srv, &read, "sha256=00"), 401);
    assert_eq!(delivery(&srv, &c1)["status"], "sent");
    // `read` before `delivered` (out of order): both stamped, in that order.
    assert_eq!(
        post_wa(&srv, &read, &hub_signature("app-secret", &read)),
        200
    );
    let d = delivery(&srv, &c1);
    assert_eq!(d["status"], "read", "{d}");
    assert!(
        d["delivered_at"].is_string() && d["read_at"].is_string(),
        "{d}"
    );
    assert_eq!(
        contact_point(&srv, &d1, &cp1)["last_delivery_status"],
        "read"
    );
    // The late `delivered`, and a replay of `read`: nothing moves back, no new event.
    let delivered = wa_status(wamid, "delivered", None);
    assert_eq!(
        post_wa(&srv, &delivered, &hub_signature("app-secret", &delivered)),
        200
    );
    assert_eq!(
        post_wa(&srv, &read, &hub_signature("app-secret", &read)),
        200
    );
    let after = delivery(&srv, &c1);
    assert_eq!(after["status"], "read");
    assert_eq!(after["read_at"], d["read_at"]);
    let did = d["id"].as_str().unwrap();
    assert_eq!(events(&srv, did, "delivery.read"), 1);
    assert_eq!(events(&srv, did, "delivery.delivered"), 1);
    // An id no delivery has: 200 (providers retry anything else), logged.
    let unknown = wa_status("wamid.NOPE", "delivered", None);
    assert_eq!(
        post_wa(&srv, &unknown, &hub_signature("app-secret", &unknown)),
        200
    );
    // `failed` (131026) on a sent message: bounced, the number invalid.
    let failed = wa_status("wamid.HBgL5511987650003", "failed", Some(131026));
    assert_eq!(
        post_wa(&srv, &failed, &hub_signature("app-secret", &failed)),
        200
    );
    let d3d = delivery(&srv, &c3);
    assert_eq!(
        (d3d["status"].clone(), d3d["error_code"].clone()),
        (json!("bounced"), json!("whatsapp_131026"))
    );
    let cp = contact_point(&srv, &d3, &cp3);
    assert_eq!(
        (cp["bounce_count"].clone(), cp["status"].clone()),
        (json!(1), json!("invalid"))
    );
    assert_eq!(
        post_wa(&srv, &failed, &hub_signature("app-secret", &failed)),
        200
    );
    assert_eq!(
        contact_point(&srv, &d3, &cp3)["bounce_count"],
        1,
        "a replay counts no second bounce"
    );

    assert!(srv.terminate().success());
    let log = srv.log();
    assert!(log.contains("no delivery has"), "{log}");
    assert!(!log.contains("5511987650001"), "a number in the log");
}

fn twilio_signature(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut mac = <Hmac<sha1::Sha1> as Mac>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

fn form(params: &[(&str, &str)]) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{}={}", common::pct(k), common::pct(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[test]
fn sms_goes_through_the_messages_api_and_signed_status_callbacks_move_deliveries() {
    let api = FakeApi::start(|req| {
        let body = String::from_utf8_lossy(&req.body).into_owned();
        if body.contains("To=%2B5511987650012") {
            (
                400,
                json!({"code": 21211, "message": "The 'To' number is not a valid phone number.", "status": 400}).to_string(),
            )
        } else {
            (
                201,
                json!({"sid": "SM0123456789abcdef0123456789abcdef", "status": "queued"})
                    .to_string(),
            )
        }
    });
    let config = format!(
        "[jobs]\nengine_interval_secs = 1\n\
         [channels.sms]\ndriver = \"twilio\"\nbase_url = \"http://127.0.0.1:{}\"\n\
         account_sid = \"AC123\"\nauth_token = \"twilio-token\"\nfrom = \"+5511999990000\"\n",
        api.port
    );
    let mut srv = Srv::start(&[], Some(&config));
    let ruler = all_day_ruler(&srv);
    let (c1, cp1, d1) = notified(
        &srv,
        &ruler,
        426_000_001,
        "sms",
        "+5511987650011",
        "payment_link",
    );
    let (c2, cp2, d2) = notified(
        &srv,
        &ruler,
        426_000_002,
        "sms",
        "+5511987650012",
        "payment_link",
    );

    let sent = wait_delivery(&srv, &c1, "sent", |d| d["status"] == "sent");
    assert_eq!(
        sent["provider_message_id"],
        "SM0123456789abcdef0123456789abcdef"
    );
    let reqs = api.requests();
    let r = reqs
        .iter()
        .find(|r| String::from_utf8_lossy(&r.body).contains("To=%2B5511987650011"))
        .expect("the request");
    assert_eq!(r.method, "POST");
    assert_eq!(r.target, "/2010-04-01/Accounts/AC123/Messages.json");
    let basic = base64::engine::general_purpose::STANDARD.encode("AC123:twilio-token");
    assert_eq!(
        r.header("authorization"),
        Some(format!("Basic {basic}").as_str())
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    let fields: Vec<(String, String)> = String::from_utf8(r.body.clone())
        .unwrap()
        .split('&')
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            let v = v.replace('+', " ");
            let bytes = v.as_bytes();
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                if bytes[i] == b'%' {
                    out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).unwrap());
                    i += 3;
                } else {
                    out.push(bytes[i]);
                    i += 1;
                }
            }
            (k.to_owned(), String::from_utf8(out).unwrap())
        })
        .collect();
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["To", "From", "Body", "StatusCallback"]);
    assert_eq!(fields[0].1, "+5511987650011");
    assert_eq!(fields[1].1, "+5511999990000");
    assert!(
        fields[2].1.starts_with("Olá, Pessoa 426000001."),
        "{}",
        fields[2].1
    );
    assert!(
        fields[2]
            .1
            .contains("Credor: Demo Cobranças Ltda — CNPJ 11.222.333/0001-81"),
        "{}",
        fields[2].1
    );
    let callback = format!("{}/channels/sms", srv.url);
    assert_eq!(fields[3].1, callback);

    // 21211: bounced for good.
    let bounced = wait_delivery(&srv, &c2, "bounced", |d| d["status"] == "bounced");
    assert_eq!(bounced["error_code"], "sms_21211");
    assert_eq!(contact_point(&srv, &d2, &cp2)["status"], "invalid");

    let sid = "SM0123456789abcdef0123456789abcdef";
    let post = |params: &[(&str, &str)], signature: &str| {
        srv.request(
            "POST",
            "/channels/sms",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("X-Twilio-Signature", signature),
            ],
            form(params).as_bytes(),
        )
        .status
    };
    let delivered = [
        ("AccountSid", "AC123"),
        ("MessageSid", sid),
        ("MessageStatus", "delivered"),
        ("To", "+5511987650011"),
        ("ApiVersion", "2010-04-01"),
    ];
    // Wrong token, tampered parameters, no header: 401, nothing changes.
    assert_eq!(
        post(
            &delivered,
            &twilio_signature("guess", &callback, &delivered)
        ),
        401
    );
    let good = twilio_signature("twilio-token", &callback, &delivered);
    let mut tampered = delivered;
    tampered[2] = ("MessageStatus", "read");
    assert_eq!(post(&tampered, &good), 401);
    assert_eq!(post(&delivered, ""), 401);
    assert_eq!(delivery(&srv, &c1)["status"], "sent");
    // Signed right: delivered; replayed: unchanged; a late `sent`: unchanged.
    assert_eq!(post(&delivered, &good), 200);
    let d = delivery(&srv, &c1);
    assert_eq!(d["status"], "delivered");
    assert_eq!(post(&delivered, &good), 200);
    let late = [("MessageSid", sid), ("MessageStatus", "sent")];
    assert_eq!(
        post(&late, &twilio_signature("twilio-token", &callback, &late)),
        200
    );
    let after = delivery(&srv, &c1);
    assert_eq!(
        (after["status"].clone(), after["delivered_at"].clone()),
        (json!("delivered"), d["delivered_at"].clone())
    );
    assert_eq!(
        events(&srv, d["id"].as_str().unwrap(), "delivery.delivered"),
        1
    );
    assert_eq!(
        contact_point(&srv, &d1, &cp1)["last_delivery_status"],
        "delivered"
    );
    // An unknown sid: 200.
    let unknown = [("MessageSid", "SMffff"), ("MessageStatus", "delivered")];
    assert_eq!(
        post(
            &unknown,
            &twilio_signature("twilio-token", &callback, &unknown)
        ),
        200
    );
    // Other methods: 405.
    assert_eq!(srv.request("GET", "/channels/sms", &[], b"").status, 405);
    assert!(srv.terminate().success());
    assert!(!srv.log().contains("5511987650011"), "a number in the log");
}

/// The callbacks are open (no token), so they are bounded like the authorization
/// server's open endpoints: a declared body of at most 64 KiB, and the per-address
/// bucket of `[rate_limit] oauth_*` (past it `429` with `Retry-After`).
#[test]
fn callbacks_are_limited_per_client_address() {
    let config = "[rate_limit]\noauth_per_minute = 60\noauth_burst = 3\n\
                  [channels.whatsapp]\napp_secret = \"s\"\nverify_token = \"v\"\n";
    let mut srv = Srv::start(&[], Some(config));
    let body = wa_status("wamid.X", "delivered", None);
    let sig = hub_signature("s", &body);
    let statuses: Vec<u16> = (0..6).map(|_| post_wa(&srv, &body, &sig)).collect();
    assert_eq!(&statuses[..3], &[200, 200, 200], "{statuses:?}");
    assert!(statuses[3..].iter().all(|s| *s == 429), "{statuses:?}");
    let r = srv.request("GET", "/channels/unsubscribe?t=v1.x.y.z", &[], b"");
    assert_eq!(r.status, 429);
    assert!(r.header("retry-after").is_some());
    // A body over 64 KiB is refused from its head, before the limit is counted.
    let big = vec![b' '; 64 * 1024 + 1];
    assert_eq!(post_wa(&srv, &big, &sig), 413);
    assert!(srv.terminate().success());
}
