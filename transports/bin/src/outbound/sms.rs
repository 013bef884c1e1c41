//! SMS through Twilio's Messages API (`[channels.sms] driver = "twilio"`).
//!
//! **Send**: `POST {base_url}/2010-04-01/Accounts/{account_sid}/Messages.json`, basic
//! auth `account_sid:auth_token`, a form body: `To` (the contact point, E.164), `From`
//! (or `MessagingServiceSid`), `Body` (the rendered text, ending with the creditor's
//! name and CNPJ) and `StatusCallback` (`{public_url}/channels/sms`). The answer's `sid`
//! is the delivery's `provider_message_id`.
//!
//! What an answer means: `201` sent; `429`, a `5xx`, no answer: tried again; error
//! `21211` (not a valid number) or `21614` (not a mobile number): bounced for good; any
//! other `4xx`: failed with the API's code.
//!
//! **Status callback** (`POST /channels/sms`, form-encoded `MessageSid`,
//! `MessageStatus`, `ErrorCode`): signed as Twilio signs, `X-Twilio-Signature` = base64
//! of HMAC-SHA1(auth token, the full URL Twilio called followed by every POST parameter,
//! sorted by name, each name then its value). The URL is `public_url` plus the request
//! target, so `public_url` must be the address Twilio calls. `sent`, `delivered`,
//! `read` move the delivery; `undelivered` bounces it (for good with `30003`, `30005`,
//! `30006`: the handset or number does not exist), `failed` fails it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use dunning_domain::engine::{DriverError, DriverReceipt, Failure, Rendered};
use dunning_domain::ops::deliveries::{Bounce, ProviderState};
use hmac::{Hmac, Mac};
use serde_json::Value;
use sha1::Sha1;
use subtle::ConstantTimeEq;

use super::whatsapp::{agent, no_answer, read_answer};
use crate::channels::settings::{Sms, secret};

/// The callback's path.
pub(crate) const PATH: &str = "/channels/sms";

/// The Twilio driver.
pub(crate) struct Twilio {
    url: String,
    authorization: String,
    from: Option<String>,
    service: Option<String>,
    callback: String,
    agent: ureq::Agent,
}

impl Twilio {
    /// The driver `[channels.sms]` describes; status callbacks come to `public_url`.
    pub(crate) fn new(c: &Sms, public_url: &str) -> Result<Self, String> {
        let sid = c.account_sid.clone().unwrap_or_default();
        let token = secret(
            c.auth_token.as_ref(),
            c.auth_token_file.as_ref(),
            "[channels.sms] auth_token",
        )?
        .ok_or("[channels.sms] auth_token: required")?;
        Ok(Self {
            url: format!(
                "{}/2010-04-01/Accounts/{sid}/Messages.json",
                c.base_url.trim_end_matches('/')
            ),
            authorization: format!("Basic {}", STANDARD.encode(format!("{sid}:{token}"))),
            from: c.from.clone(),
            service: c.messaging_service_sid.clone(),
            callback: format!("{}{PATH}", public_url.trim_end_matches('/')),
            agent: agent(c.timeout_secs),
        })
    }

    /// The form body of `r`.
    pub(crate) fn body(&self, r: &Rendered) -> Result<String, DriverError> {
        let to = r.to.as_deref().unwrap_or_default();
        if to.is_empty() {
            return Err(DriverError::new(
                Failure::Failed,
                "invalid_address",
                "the contact point has no phone number",
            ));
        }
        let mut pairs = vec![("To", to)];
        if let Some(f) = &self.from {
            pairs.push(("From", f));
        }
        if let Some(s) = &self.service {
            pairs.push(("MessagingServiceSid", s));
        }
        pairs.push(("Body", &r.body));
        pairs.push(("StatusCallback", &self.callback));
        Ok(crate::channels::form::body(&pairs))
    }

    /// Sends one SMS.
    pub(crate) fn send(&self, r: &Rendered) -> Result<DriverReceipt, DriverError> {
        let body = self.body(r)?;
        let mut answer = self
            .agent
            .post(&self.url)
            .header("Authorization", &self.authorization)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .send(body.as_bytes())
            .map_err(|e| no_answer(&e))?;
        let status = answer.status().as_u16();
        let doc: Value = serde_json::from_str(&read_answer(&mut answer)).unwrap_or(Value::Null);
        if (200..300).contains(&status) {
            return match doc["sid"].as_str() {
                Some(sid) if !sid.is_empty() => Ok(DriverReceipt {
                    provider_message_id: sid.to_owned(),
                }),
                _ => Err(DriverError::new(
                    Failure::Failed,
                    "sms_no_message_id",
                    "the API accepted the message without a sid",
                )),
            };
        }
        let code = doc["code"].as_i64().unwrap_or(0);
        let title: String = doc["message"]
            .as_str()
            .unwrap_or("no error message")
            .chars()
            .take(200)
            .collect();
        let kind = match (status, code) {
            (429 | 500..=599, _) => Failure::Retry,
            (_, 21211 | 21614) => Failure::Bounced { hard: true },
            _ => Failure::Failed,
        };
        Err(DriverError::new(
            kind,
            format!("sms_{}", if code == 0 { i64::from(status) } else { code }),
            format!("SMS API {status}: {title}"),
        ))
    }
}

/// The signature Twilio sends for a POST of `params` to `url`.
pub(crate) fn signature(token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut mac = <Hmac<Sha1> as Mac>::new_from_slice(token.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    STANDARD.encode(mac.finalize().into_bytes())
}

/// Whether `header` is Twilio's signature of `params` posted to `url`.
pub(crate) fn signed(
    token: &str,
    url: &str,
    params: &[(String, String)],
    header: Option<&[u8]>,
) -> bool {
    let Some(given) = header else { return false };
    let want = signature(token, url, params);
    bool::from(want.as_bytes().ct_eq(given.trim_ascii()))
}

/// The message id and state of a status callback's parameters (`None`: a status that
/// says nothing new, such as `queued` or `sending`, or no `MessageSid`).
pub(crate) fn status(params: &[(String, String)]) -> Option<(String, ProviderState)> {
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let sid = get("MessageSid").or_else(|| get("SmsSid"))?.to_owned();
    let code = get("ErrorCode").unwrap_or_default();
    let failed = |bounce: Bounce, what: &str| ProviderState::Failed {
        code: format!("sms_{}", if code.is_empty() { what } else { code }),
        message: format!("the SMS provider reported the message {what}"),
        bounce,
    };
    let hard = matches!(code, "30003" | "30005" | "30006");
    let state = match get("MessageStatus").or_else(|| get("SmsStatus"))? {
        "sent" => ProviderState::Sent,
        "delivered" => ProviderState::Delivered,
        "read" => ProviderState::Read,
        "undelivered" => failed(
            if hard { Bounce::Hard } else { Bounce::Soft },
            "undelivered",
        ),
        "failed" => failed(if hard { Bounce::Hard } else { Bounce::No }, "failed"),
        _ => return None,
    };
    Some((sid, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Twilio's documentation ("Validating Signatures from Twilio"):
    /// token `12345`, this URL and these parameters sign to this value.
    #[test]
    fn the_signature_of_twilio_s_documented_example() {
        let params: Vec<(String, String)> = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        assert_eq!(
            signature("12345", url, &params),
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        );
        assert!(signed(
            "12345",
            url,
            &params,
            Some(b"0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        assert!(!signed(
            "12346",
            url,
            &params,
            Some(b"0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        assert!(!signed(
            "12345",
            url,
            &params[1..],
            Some(b"0/KCTR6DLpKmkAf8muzZqo1nDgQ=")
        ));
        assert!(!signed("12345", url, &params, None));
    }
}
