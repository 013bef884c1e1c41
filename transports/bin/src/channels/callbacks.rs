//! `/channels/...`: the routes providers and debtors call back on, outside the MCP
//! endpoint and `/v1`'s bearer auth (the core bounds them: declared bodies of at most
//! 64 KiB, a per-address rate limit shared with the authorization server's open
//! endpoints, see `dunning_core::callbacks`).
//!
//! | route | what |
//! |---|---|
//! | `GET /channels/whatsapp` | the verification handshake ([`crate::outbound::whatsapp`]) |
//! | `POST /channels/whatsapp` | statuses, `X-Hub-Signature-256` |
//! | `POST /channels/sms` | a status, `X-Twilio-Signature` ([`crate::outbound::sms`]) |
//! | `GET`/`POST /channels/unsubscribe?t=…` | the e-mails' unsubscribe link ([`super::unsubscribe`]) |
//!
//! For a status, in order: the signature over the raw body (`401` and nothing read
//! further when it is wrong or missing, or when the channel has no secret configured);
//! then each status is applied (`ops::deliveries::apply_provider_status`: idempotent,
//! monotonic); a message id no delivery has is logged and answered `200` like the others,
//! since a provider retries anything else; a store failure is `500` (the provider
//! retries later). Log lines and `dunning_channel_callbacks_total` carry the channel and
//! the outcome, never an address.

use dunning_core::{Callbacks, Env, Request, Response};
use dunning_domain::Domain;
use dunning_domain::ops::deliveries::{self, Applied, ProviderState, Unsubscribed};
use http::header::{ALLOW, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use serde_json::Value;

use super::CALLBACKS;
use super::form;
use super::settings::{Channels, WhatsAppDriver, secret};
use super::unsubscribe::{self, Links};
use crate::clock::Clock;
use crate::outbound::{sms, whatsapp};

/// The WhatsApp callback's path.
pub(crate) const WHATSAPP: &str = "/channels/whatsapp";

/// The routes, with the secrets they check.
pub(crate) struct Routes {
    domain: Domain,
    clock: Clock,
    links: Links,
    public_url: String,
    app_secret: Option<String>,
    verify_token: Option<String>,
    twilio_token: Option<String>,
}

impl Routes {
    /// The routes of `c` on `domain`.
    pub(crate) fn new(
        c: &Channels,
        domain: Domain,
        clock: Clock,
        links: Links,
        public_url: &str,
    ) -> Result<Self, String> {
        let w = &c.whatsapp;
        let s = &c.sms;
        if w.driver == WhatsAppDriver::CloudApi
            && w.app_secret.is_none()
            && w.app_secret_file.is_none()
        {
            tracing::warn!(
                "[channels.whatsapp] has no app_secret: its status callbacks are refused (401) and deliveries stay sent"
            );
        }
        Ok(Self {
            domain,
            clock,
            links,
            public_url: public_url.trim_end_matches('/').to_owned(),
            app_secret: secret(
                w.app_secret.as_ref(),
                w.app_secret_file.as_ref(),
                "[channels.whatsapp] app_secret",
            )?,
            verify_token: w.verify_token.clone(),
            twilio_token: secret(
                s.auth_token.as_ref(),
                s.auth_token_file.as_ref(),
                "[channels.sms] auth_token",
            )?,
        })
    }

    fn whatsapp(&self, req: &Request<'_>) -> Response {
        match req.method {
            "GET" => self.whatsapp_verify(req),
            "POST" => {
                let Some(secret) = &self.app_secret else {
                    return refused("whatsapp", "no [channels.whatsapp] app_secret configured");
                };
                let header = req.single_header("x-hub-signature-256").ok().flatten();
                if !whatsapp::signed(secret, req.body, header) {
                    return refused("whatsapp", "bad X-Hub-Signature-256");
                }
                let doc: Value = serde_json::from_slice(req.body).unwrap_or(Value::Null);
                self.apply("whatsapp", whatsapp::statuses(&doc))
            }
            _ => not_allowed("GET, POST"),
        }
    }

    fn whatsapp_verify(&self, req: &Request<'_>) -> Response {
        let params = form::parse(req.query().unwrap_or_default());
        let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let expected = self.verify_token.as_deref();
        let ok = get("hub.mode") == Some("subscribe")
            && expected.is_some()
            && get("hub.verify_token") == expected;
        match get("hub.challenge") {
            Some(challenge) if ok => text(StatusCode::OK, challenge.to_owned()),
            _ => {
                let mut r = text(StatusCode::FORBIDDEN, "verification refused\n".into());
                r.log.reason = Some("WhatsApp verification: wrong hub.verify_token or mode".into());
                r
            }
        }
    }

    fn sms(&self, req: &Request<'_>) -> Response {
        if req.method != "POST" {
            return not_allowed("POST");
        }
        let Some(token) = &self.twilio_token else {
            return refused("sms", "no [channels.sms] auth_token configured");
        };
        let params = form::parse(&String::from_utf8_lossy(req.body));
        let url = format!("{}{}", self.public_url, req.target);
        let header = req.single_header("x-twilio-signature").ok().flatten();
        if !sms::signed(token, &url, &params, header) {
            return refused("sms", "bad X-Twilio-Signature");
        }
        self.apply("sms", sms::status(&params).into_iter().collect())
    }

    /// Applies each status; `200` unless the store failed.
    fn apply(&self, channel: &'static str, statuses: Vec<(String, ProviderState)>) -> Response {
        for (id, state) in statuses {
            let now = self.clock.now();
            match deliveries::apply_provider_status(&self.domain, now, channel, &id, &state) {
                Ok(applied) => {
                    let outcome = match &applied {
                        Applied::Unknown => "unknown",
                        Applied::Unchanged { .. } => "unchanged",
                        Applied::Changed { .. } => "changed",
                    };
                    metrics::counter!(CALLBACKS, "channel" => channel, "outcome" => outcome)
                        .increment(1);
                    match applied {
                        Applied::Unknown => tracing::info!(
                            channel,
                            provider_message_id = %id,
                            "status callback for a message no delivery has; ignored"
                        ),
                        Applied::Unchanged { status } | Applied::Changed { status } => {
                            tracing::info!(channel, outcome, status = %status, "status callback")
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(channel, error = %e, "status callback failed; the provider retries");
                    metrics::counter!(CALLBACKS, "channel" => channel, "outcome" => "error")
                        .increment(1);
                    let mut r = text(StatusCode::INTERNAL_SERVER_ERROR, "try again\n".into());
                    r.log.reason = Some("the store failed applying a status callback".into());
                    return r;
                }
            }
        }
        text(StatusCode::OK, "ok\n".into())
    }

    fn unsubscribe(&self, req: &Request<'_>) -> Response {
        let token = unsubscribe::token_of(req.query()).unwrap_or_default();
        let Some((org, cp)) = self.links.verify(&token) else {
            let mut r = html(
                StatusCode::BAD_REQUEST,
                unsubscribe::page(
                    "Link inválido",
                    "<p>Este link de cancelamento não é válido. Use o link do e-mail recebido.</p>",
                ),
            );
            r.log.reason = Some("unsubscribe link with a bad signature".into());
            return r;
        };
        match req.method {
            "GET" => html(StatusCode::OK, unsubscribe::confirm_page(&token)),
            "POST" => match deliveries::unsubscribe(&self.domain, self.clock.now(), &org, &cp) {
                Ok(Unsubscribed::Now | Unsubscribed::Already) => {
                    tracing::info!(channel = "email", outcome = "opted_out", "unsubscribe link");
                    html(
                        StatusCode::OK,
                        unsubscribe::page(
                            "Pronto",
                            "<p>Você não receberá mais mensagens de cobrança neste endereço de e-mail.</p>",
                        ),
                    )
                }
                Ok(Unsubscribed::Unknown) => html(
                    StatusCode::NOT_FOUND,
                    unsubscribe::page(
                        "Endereço não encontrado",
                        "<p>Este endereço não está mais cadastrado.</p>",
                    ),
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "unsubscribe failed");
                    let mut r = html(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        unsubscribe::page("Tente de novo", "<p>Não foi possível agora.</p>"),
                    );
                    r.log.reason = Some("the store failed recording an unsubscribe".into());
                    r
                }
            },
            _ => not_allowed("GET, POST"),
        }
    }
}

impl Callbacks for Routes {
    fn serves(&self, path: &str) -> bool {
        matches!(path, WHATSAPP | sms::PATH | unsubscribe::PATH)
    }

    fn handle(&self, req: &Request<'_>, _env: &Env) -> Response {
        match req.path() {
            WHATSAPP => self.whatsapp(req),
            sms::PATH => self.sms(req),
            _ => self.unsubscribe(req),
        }
    }
}

fn text(status: StatusCode, body: String) -> Response {
    let mut r = Response::empty(status);
    r.headers.push((
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    ));
    r.body = body.into_bytes();
    r
}

fn html(status: StatusCode, body: Vec<u8>) -> Response {
    let mut r = Response::empty(status);
    r.headers.push((
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    ));
    r.body = body;
    r
}

/// `401`: nothing is read past the signature.
fn refused(channel: &'static str, why: &'static str) -> Response {
    metrics::counter!(CALLBACKS, "channel" => channel, "outcome" => "bad_signature").increment(1);
    let mut r = text(StatusCode::UNAUTHORIZED, "bad signature\n".into());
    r.log.reason = Some(why.into());
    r
}

fn not_allowed(allow: &'static str) -> Response {
    let mut r = Response::empty(StatusCode::METHOD_NOT_ALLOWED);
    r.headers.push((ALLOW, HeaderValue::from_static(allow)));
    r
}
