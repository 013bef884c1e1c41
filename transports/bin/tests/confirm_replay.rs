//! Confirmation of destructive tools (`docs/decisions.md`, "Confirmation"), end to end over real sockets.
//!
//! Era 2026: the first `tools/call` of a destructive tool answers `input_required` with a
//! sealed `requestState`; the client re-sends the same call with the user's answer in
//! `inputResponses`. The state's nonce is the confirmed call's idempotency key, so the
//! same confirmed request sent many times at once executes exactly once and every copy
//! gets the same result. A state is bound to its tool, arguments, caller and lifetime.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::Srv;
use common::confirm::{
    accept, ask, call, cents, charge, confirm, count, event_codes, pending_charges, refused,
    success,
};
use serde_json::{Value, json};

/// How many copies of the confirmed request race.
const COPIES: usize = 20;

#[test]
fn a_confirmed_request_sent_twenty_times_at_once_executes_once() {
    for transport in ["tokio", "blocking", "mio"] {
        race(transport);
    }
}

/// The race, the replay and the idempotency keys on one transport.
fn race(transport: &str) {
    let srv = Srv::start(&["--transport", transport], None);
    let id = pending_charges(&srv, 1).remove(0);
    let before = charge(&srv, &id);
    let args = json!({ "id": id, "paid_amount": 1.23, "paid_via": "pix", "note": "replay" });
    let tool = "dunning_charges_mark_paid";

    let (state, message) = ask(&srv, &srv.token, tool, &args);
    assert!(
        message.contains("R$ 1,23") && message.contains(&id),
        "{message}"
    );
    assert!(message.contains("partially paid"), "{message}");
    // Asking executed nothing.
    assert_eq!(charge(&srv, &id)["paid_amount"], before["paid_amount"]);
    assert_eq!(count(&event_codes(&srv, &id), "charge.partially_paid"), 0);

    // The same confirmed request over 20 sockets at once.
    let barrier = Arc::new(Barrier::new(COPIES));
    let handles: Vec<_> = (0..COPIES)
        .map(|_| {
            let barrier = barrier.clone();
            let (addr, token, args, state) = (
                srv.addr.clone(),
                srv.token.clone(),
                args.clone(),
                state.clone(),
            );
            thread::spawn(move || {
                let extra = json!({ "inputResponses": accept(), "requestState": state });
                barrier.wait();
                call(&addr, &token, tool, &args, &extra, args["id"].as_str())
            })
        })
        .collect();
    let results: Vec<Value> = handles
        .into_iter()
        .map(|h| success(&h.join().unwrap()))
        .collect();
    let first = &results[0];
    for (i, r) in results.iter().enumerate() {
        assert_eq!(r, first, "copy {i} differs");
    }
    let paid = &first["structuredContent"];
    assert_eq!(paid["id"], id.as_str());
    assert_eq!(paid["status"], "partially_paid", "{paid}");

    // Exactly one execution: one payment, one event.
    let after = charge(&srv, &id);
    assert_eq!(
        cents(&after["paid_amount"]) - cents(&before["paid_amount"]),
        123,
        "{after}"
    );
    let payments = |c: &Value| c["payments"].as_array().map_or(0, Vec::len);
    assert_eq!(payments(&after), payments(&before) + 1, "{after}");
    let codes = event_codes(&srv, &id);
    assert_eq!(count(&codes, "charge.partially_paid"), 1, "{codes:?}");
    assert_eq!(count(&codes, "charge.paid"), 0, "{codes:?}");

    // A replay after completion returns the stored result and changes nothing.
    let again = success(&confirm(&srv, &srv.token, tool, &args, &state));
    assert_eq!(&again, first);
    assert_eq!(charge(&srv, &id)["paid_amount"], after["paid_amount"]);
    assert_eq!(count(&event_codes(&srv, &id), "charge.partially_paid"), 1);

    // A new confirmation of the same arguments is a new payment (a new nonce).
    let (state2, _) = ask(&srv, &srv.token, tool, &args);
    assert_ne!(state2, state);
    success(&confirm(&srv, &srv.token, tool, &args, &state2));
    assert_eq!(
        cents(&charge(&srv, &id)["paid_amount"]) - cents(&before["paid_amount"]),
        246
    );
    assert_eq!(count(&event_codes(&srv, &id), "charge.partially_paid"), 2);

    // The caller's own idempotency key holds across confirmations: a second confirmation
    // of the same keyed call replays the first result.
    let keyed = json!({
        "id": id, "paid_amount": 1.23, "paid_via": "pix", "note": "replay",
        "idempotency_key": format!("confirm-replay-{transport}"),
    });
    let (s1, _) = ask(&srv, &srv.token, tool, &keyed);
    let first_keyed = success(&confirm(&srv, &srv.token, tool, &keyed, &s1));
    let (s2, _) = ask(&srv, &srv.token, tool, &keyed);
    assert_ne!(s1, s2);
    let second_keyed = success(&confirm(&srv, &srv.token, tool, &keyed, &s2));
    assert_eq!(second_keyed, first_keyed, "{transport}");
    assert_eq!(
        cents(&charge(&srv, &id)["paid_amount"]) - cents(&before["paid_amount"]),
        369,
        "{transport}"
    );
    assert_eq!(count(&event_codes(&srv, &id), "charge.partially_paid"), 3);
}

#[test]
fn a_confirmation_is_bound_to_its_charge_arguments_and_caller() {
    let srv = Srv::start(&[], None);
    let ids = pending_charges(&srv, 2);
    let (a, b) = (ids[0].as_str(), ids[1].as_str());
    let b_status = charge(&srv, b)["status"].clone();
    let tool = "dunning_charges_cancel";
    let args_a = json!({ "id": a, "reason": "Emitida em duplicidade" });
    let args_b = json!({ "id": b, "reason": "Emitida em duplicidade" });
    let (state, message) = ask(&srv, &srv.token, tool, &args_a);
    assert!(
        message.starts_with("Cancel charge ") && message.contains(a),
        "{message}"
    );
    let yes = json!({ "inputResponses": accept(), "requestState": state });

    // A's confirmation used for B (arguments and mirrored header both say B).
    let r = call(&srv.addr, &srv.token, tool, &args_b, &yes, Some(b));
    refused(&r, -32602, "another call");
    // The mirrored Target-Id says B while the arguments say A: the header must match.
    let r = call(&srv.addr, &srv.token, tool, &args_a, &yes, Some(b));
    assert_eq!(r.status, 400, "{}", r.text());
    refused(&r, -32020, "");
    // Same charge, other arguments.
    let other = json!({ "id": a, "reason": "Outro motivo" });
    let r = call(&srv.addr, &srv.token, tool, &other, &yes, Some(a));
    refused(&r, -32602, "another call");
    // Another person of the same organization.
    let dora = srv.mint(&["--org", "demo", "--person", "dora@demo.example"]);
    let r = call(&srv.addr, &dora, tool, &args_a, &yes, Some(a));
    refused(&r, -32602, "another caller");
    // A tampered state: one character of the payload, the MAC, or the key id changed.
    let parts: Vec<&str> = state.split('.').collect();
    assert_eq!(parts.len(), 4, "{state}");
    let flip = |s: &str, at: usize| {
        let mut chars: Vec<char> = s.chars().collect();
        chars[at] = if chars[at] == 'A' { 'B' } else { 'A' };
        chars.into_iter().collect::<String>()
    };
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
    claims["d"] = json!("0".repeat(64));
    let forged_payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    for (what, forged) in [
        (
            "payload",
            format!(
                "{}.{}.{}.{}",
                parts[0],
                parts[1],
                flip(parts[2], 5),
                parts[3]
            ),
        ),
        (
            "re-encoded payload",
            format!("{}.{}.{forged_payload}.{}", parts[0], parts[1], parts[3]),
        ),
        (
            "mac",
            format!(
                "{}.{}.{}.{}",
                parts[0],
                parts[1],
                parts[2],
                flip(parts[3], 3)
            ),
        ),
        (
            "key id",
            format!("{}.zz.{}.{}", parts[0], parts[2], parts[3]),
        ),
        ("truncated", state[..state.len() - 4].to_owned()),
    ] {
        let extra = json!({ "inputResponses": accept(), "requestState": forged });
        let r = call(&srv.addr, &srv.token, tool, &args_a, &extra, Some(a));
        assert_eq!(r.json()["error"]["code"], -32602, "{what}: {}", r.text());
    }
    // Consent without a state never counts: a fresh question.
    let r = call(
        &srv.addr,
        &srv.token,
        tool,
        &args_a,
        &json!({ "inputResponses": accept() }),
        Some(a),
    );
    assert_eq!(
        r.json()["result"]["resultType"],
        "input_required",
        "{}",
        r.text()
    );
    // A valid state without an answer: a fresh question too.
    let r = call(
        &srv.addr,
        &srv.token,
        tool,
        &args_a,
        &json!({ "requestState": state }),
        Some(a),
    );
    assert_eq!(
        r.json()["result"]["resultType"],
        "input_required",
        "{}",
        r.text()
    );
    // The user says no.
    let no = json!({
        "inputResponses": { "confirm": { "action": "decline" } },
        "requestState": state,
    });
    let r = call(&srv.addr, &srv.token, tool, &args_a, &no, Some(a));
    let result = r.json()["result"].clone();
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["error"]["code"], "CONFIRMATION_DECLINED",
        "{result}"
    );

    // The decline consumed the state: the same state with a yes is refused too.
    let r = confirm(&srv, &srv.token, tool, &args_a, &state);
    assert_eq!(
        r.json()["result"]["structuredContent"]["error"]["code"],
        "CONFIRMATION_DECLINED",
        "{}",
        r.text()
    );

    // None of that executed anything.
    for id in [a, b] {
        assert_ne!(charge(&srv, id)["status"], "canceled", "{id}");
        assert_eq!(count(&event_codes(&srv, id), "charge.canceled"), 0, "{id}");
    }

    // A genuine confirmation, asked again, still works, once, for A only.
    let (state, _) = ask(&srv, &srv.token, tool, &args_a);
    let done = success(&confirm(&srv, &srv.token, tool, &args_a, &state));
    assert_eq!(done["structuredContent"]["status"], "canceled", "{done}");
    let again = success(&confirm(&srv, &srv.token, tool, &args_a, &state));
    assert_eq!(again, done, "replay after completion");
    assert_eq!(count(&event_codes(&srv, a), "charge.canceled"), 1);
    assert_eq!(charge(&srv, b)["status"], b_status);
    assert_eq!(count(&event_codes(&srv, b), "charge.canceled"), 0);
}

#[test]
fn an_expired_confirmation_is_refused() {
    // The shortest lifetime the configuration allows (whole seconds).
    let srv = Srv::start(&[], Some("[confirmation]\nttl_secs = 1\n"));
    let id = pending_charges(&srv, 1).remove(0);
    let tool = "dunning_charges_cancel";
    let args = json!({ "id": id });
    let (state, _) = ask(&srv, &srv.token, tool, &args);
    // Wait past the expiry the state carries (ms since the epoch), by the wall clock the
    // server shares with us.
    let payload = state.split('.').nth(2).unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    let expires = claims["e"].as_u64().unwrap();
    assert!(expires - claims["i"].as_u64().unwrap() <= 1000, "{claims}");
    loop {
        if common::now_ms() > expires + 50 {
            break;
        }
        thread::sleep(Duration::from_millis(50));
    }
    let r = confirm(&srv, &srv.token, tool, &args, &state);
    refused(&r, -32602, "expired");
    assert_ne!(charge(&srv, &id)["status"], "canceled");
    assert_eq!(count(&event_codes(&srv, &id), "charge.canceled"), 0);
}
