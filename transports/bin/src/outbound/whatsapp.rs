//! WhatsApp through the WhatsApp Business Cloud API (`[channels.whatsapp] driver =
//! "cloud_api"`).
//!
//! **Send**: `POST {base_url}/{phone_number_id}/messages`, `Authorization: Bearer
//! {access_token}`, a JSON template message:
//!
//! ```json
//! {"messaging_product": "whatsapp", "recipient_type": "individual", "to": "5511987654321",
//!  "type": "template", "template": {"name": "cobranca_lembrete", "language": {"code": "pt_BR"},
//!  "components": [{"type": "body", "parameters": [{"type": "text", "text": "Maria"}, ...]}]}}
//! ```
//!
//! Only approved templates go out (the domain already sends WhatsApp only to `opted_in`
//! contact points and never a free text): the delivery's template id (a built-in name
//! or a step id) maps to an approved name through `templates`; a built-in name with no
//! entry goes by its own name, a step with none fails (`whatsapp_template_not_approved`)
//! without a request. The body parameters are the template's variables in order of
//! first appearance, the creditor's name and CNPJ last (`engine::Rendered::variables`),
//! so the approved text must have as many. The answer's `messages[0].id` (the `wamid`)
//! is the delivery's `provider_message_id`.
//!
//! What an answer means: `200` sent; `429`, a `5xx`, the API's throttling codes, no
//! answer at all: tried again; error `131026` (not a WhatsApp number, undeliverable):
//! bounced for good; any other `4xx`: failed with the API's code.
//!
//! **Callbacks** (`/channels/whatsapp`, configured as the app's webhook for the
//! `messages` field): `GET` answers the verification handshake (`hub.mode=subscribe`,
//! `hub.verify_token` equal to `verify_token`: the `hub.challenge` back; else `403`);
//! `POST` carries `statuses` (`sent`, `delivered`, `read`, `failed` with `errors`),
//! each body signed `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app_secret, body)>`.

use std::io::Read;
use std::time::Duration;

use dunning_domain::engine::{DriverError, DriverReceipt, Failure, Rendered};
use dunning_domain::ops::deliveries::{BUILTIN_TEMPLATES, Bounce, ProviderState};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use subtle::ConstantTimeEq;

use crate::channels::settings::{WhatsApp, secret};

/// Most bytes of an answer read.
const ANSWER_MAX: u64 = 64 * 1024;

/// The Cloud API driver.
pub(crate) struct CloudApi {
    url: String,
    token: String,
    language: String,
    templates: std::collections::BTreeMap<String, String>,
    agent: ureq::Agent,
}

impl CloudApi {
    /// The driver `[channels.whatsapp]` describes.
    pub(crate) fn new(c: &WhatsApp) -> Result<Self, String> {
        let token = secret(
            c.access_token.as_ref(),
            c.access_token_file.as_ref(),
            "[channels.whatsapp] access_token",
        )?
        .ok_or("[channels.whatsapp] access_token: required")?;
        let number = c.phone_number_id.clone().unwrap_or_default();
        Ok(Self {
            url: format!("{}/{number}/messages", c.base_url.trim_end_matches('/')),
            token,
            language: c.language.clone(),
            templates: c.templates.clone(),
            agent: agent(c.timeout_secs),
        })
    }

    /// The approved template's name for `r`, or why there is none.
    fn template(&self, r: &Rendered) -> Result<String, DriverError> {
        let refused =
            |why: String| DriverError::new(Failure::Failed, "whatsapp_template_not_approved", why);
        let Some(id) = r.template_id.as_deref() else {
            return Err(refused(
                "WhatsApp carries only approved templates, and this message is a free text".into(),
            ));
        };
        if let Some(name) = self.templates.get(id) {
            return Ok(name.clone());
        }
        if BUILTIN_TEMPLATES.iter().any(|t| t.0 == id) {
            return Ok(id.to_owned());
        }
        Err(refused(format!(
            "template {id} has no approved name in [channels.whatsapp] templates"
        )))
    }

    /// The request body of `r`.
    pub(crate) fn body(&self, r: &Rendered) -> Result<Value, DriverError> {
        let name = self.template(r)?;
        let to: String =
            r.to.as_deref()
                .unwrap_or_default()
                .chars()
                .filter(char::is_ascii_digit)
                .collect();
        if to.is_empty() {
            return Err(DriverError::new(
                Failure::Failed,
                "invalid_address",
                "the contact point has no phone number",
            ));
        }
        // A template parameter may not hold a line break or a tab.
        let parameters: Vec<Value> = r
            .variables
            .iter()
            .map(|(_, v)| {
                let text: String = v
                    .chars()
                    .map(|c| if c.is_whitespace() { ' ' } else { c })
                    .collect();
                json!({ "type": "text", "text": text })
            })
            .collect();
        Ok(json!({
            "messaging_product": "whatsapp",
            "recipient_type": "individual",
            "to": to,
            "type": "template",
            "template": {
                "name": name,
                "language": { "code": self.language },
                "components": [{ "type": "body", "parameters": parameters }],
            },
        }))
    }

    /// Sends one template message.
    pub(crate) fn send(&self, r: &Rendered) -> Result<DriverReceipt, DriverError> {
        let body = self.body(r)?;
        let answer = self
            .agent
            .post(&self.url)
            .header("Authorization", &format!("Bearer {}", self.token))
            .header("Content-Type", "application/json")
            .send(body.to_string().as_bytes());
        let mut answer = answer.map_err(|e| no_answer(&e))?;
        let status = answer.status().as_u16();
        let text = read_answer(&mut answer);
        let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return match doc["messages"][0]["id"].as_str() {
                Some(id) if !id.is_empty() => Ok(DriverReceipt {
                    provider_message_id: id.to_owned(),
                }),
                // Accepted, yet no id to follow it by: not sent again (it may arrive).
                _ => Err(DriverError::new(
                    Failure::Failed,
                    "whatsapp_no_message_id",
                    "the API accepted the message without a message id",
                )),
            };
        }
        let code = doc["error"]["code"].as_i64().unwrap_or(0);
        let title = doc["error"]["message"]
            .as_str()
            .unwrap_or("no error message")
            .chars()
            .take(200)
            .collect::<String>();
        let kind = match (status, code) {
            (429, _) | (500..=599, _) | (_, 4 | 80007 | 130429 | 131048 | 131056) => Failure::Retry,
            (_, 131026) => Failure::Bounced { hard: true },
            _ => Failure::Failed,
        };
        Err(DriverError::new(
            kind,
            format!(
                "whatsapp_{}",
                if code == 0 { i64::from(status) } else { code }
            ),
            format!("WhatsApp API {status}: {title}"),
        ))
    }
}

/// A `ureq` agent for a provider's API: `timeout_secs` for the whole exchange, no
/// redirects, status codes as answers.
pub(crate) fn agent(timeout_secs: u64) -> ureq::Agent {
    let t = Duration::from_secs(timeout_secs.max(1));
    ureq::Agent::config_builder()
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_global(Some(t))
        .timeout_connect(Some(t))
        .build()
        .into()
}

/// At most [`ANSWER_MAX`] bytes of an answer, as text.
pub(crate) fn read_answer(answer: &mut http::Response<ureq::Body>) -> String {
    let mut buf = Vec::new();
    let _ = answer
        .body_mut()
        .as_reader()
        .take(ANSWER_MAX)
        .read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// No answer from a provider (refused, reset, timed out): tried again.
pub(crate) fn no_answer(e: &ureq::Error) -> DriverError {
    let code = match e {
        ureq::Error::Timeout(_) => "provider_timeout",
        _ => "provider_unavailable",
    };
    DriverError::new(
        Failure::Retry,
        code,
        format!("no answer from the provider: {e}"),
    )
}

/// Whether `header` (`sha256=<hex>`) is the HMAC-SHA256 of `body` under `secret`.
pub(crate) fn signed(secret: &str, body: &[u8], header: Option<&[u8]>) -> bool {
    let Some(hex) = header.and_then(|h| h.strip_prefix(b"sha256=")) else {
        return false;
    };
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(body);
    let want = to_hex(&mac.finalize().into_bytes());
    bool::from(want.as_bytes().ct_eq(&hex.to_ascii_lowercase()))
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The statuses of a callback body: `(message id, state)`, in order.
pub(crate) fn statuses(doc: &Value) -> Vec<(String, ProviderState)> {
    let mut out = Vec::new();
    let entries = doc["entry"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for change in entries.iter().flat_map(|e| {
        e["changes"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
    }) {
        let list = change["value"]["statuses"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for s in list {
            let Some(id) = s["id"].as_str() else { continue };
            let state = match s["status"].as_str() {
                Some("sent") => ProviderState::Sent,
                Some("delivered") => ProviderState::Delivered,
                Some("read") => ProviderState::Read,
                Some("failed") => {
                    let e = &s["errors"][0];
                    let code = e["code"].as_i64().unwrap_or(0);
                    ProviderState::Failed {
                        code: format!("whatsapp_{code}"),
                        message: e["title"]
                            .as_str()
                            .unwrap_or("failed")
                            .chars()
                            .take(200)
                            .collect(),
                        bounce: if code == 131026 {
                            Bounce::Hard
                        } else {
                            Bounce::No
                        },
                    }
                }
                _ => continue,
            };
            out.push((id.to_owned(), state));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_checked_over_the_raw_body() {
        let body = br#"{"entry":[]}"#;
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(b"s3cret").unwrap();
        mac.update(body);
        let good = format!("sha256={}", to_hex(&mac.finalize().into_bytes()));
        assert!(signed("s3cret", body, Some(good.as_bytes())));
        assert!(signed(
            "s3cret",
            body,
            Some(good.to_uppercase().replace("SHA256", "sha256").as_bytes())
        ));
        assert!(!signed("other", body, Some(good.as_bytes())));
        assert!(!signed("s3cret", b"{\"entry\":[1]}", Some(good.as_bytes())));
        assert!(!signed("s3cret", body, None));
        assert!(!signed("s3cret", body, Some(b"sha1=00")));
    }
}
