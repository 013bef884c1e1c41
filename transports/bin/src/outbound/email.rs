//! E-mail over SMTP (`[channels.email] driver = "smtp"`), on `lettre` with rustls.
//!
//! One connection per message (no pool: a relay that dropped an idle connection never
//! costs a message), within `timeout_secs` to connect and for each reply. `smtp://`
//! upgrades with STARTTLS when the relay offers it (port 25 by default), `smtps://`
//! speaks TLS from the first byte (465); `user:password@` authenticates.
//!
//! Every message carries, in this order of headers and parts:
//! * `From`, `Reply-To` (when configured), `To` (the contact point), `Subject`;
//! * `Message-ID: <{delivery id}@{From's domain}>`: the delivery's
//!   `provider_message_id`, the same on every attempt of one delivery (so a receiver can
//!   tell a retry after a lost answer from a new message);
//! * `List-Unsubscribe: <{signed link}>` and `List-Unsubscribe-Post:
//!   List-Unsubscribe=One-Click` (RFC 8058), the link of [`crate::channels::unsubscribe`];
//! * a text part and an HTML part (`multipart/alternative`), both ending with the
//!   creditor's name and CNPJ (the rendered body's last line) and the unsubscribe link.
//!
//! What the relay answers decides the delivery (`engine::Failure`): `250` sent; a
//! recipient refused for good (`550`, `551`, `553`) bounced, the address marked
//! invalid; `552` (mailbox full) bounced; another `5xx` failed; a `4xx`, a refused or
//! dropped connection, a timeout: tried again after the back-off. The server's reply
//! text is not kept (it often repeats the address): the code says what happened.

use std::time::Duration;

use dunning_core::oauth::page::escape;
use dunning_domain::engine::{DriverError, DriverReceipt, Failure, Rendered};
use lettre::message::header::{Header, HeaderName, HeaderValue};
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{Message, SmtpTransport, Transport};

use crate::channels::settings::Email;
use crate::channels::unsubscribe::Links;

/// `List-Unsubscribe`.
#[derive(Clone, Debug)]
struct ListUnsubscribe(String);

impl Header for ListUnsubscribe {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe")
    }

    fn parse(s: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self(s.to_owned()))
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), self.0.clone())
    }
}

/// `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058).
#[derive(Clone, Debug)]
struct ListUnsubscribePost;

impl Header for ListUnsubscribePost {
    fn name() -> HeaderName {
        HeaderName::new_from_ascii_str("List-Unsubscribe-Post")
    }

    fn parse(_: &str) -> Result<Self, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Self)
    }

    fn display(&self) -> HeaderValue {
        HeaderValue::new(Self::name(), "List-Unsubscribe=One-Click".into())
    }
}

/// Sends e-mail through one SMTP relay.
pub(crate) struct SmtpDriver {
    transport: SmtpTransport,
    from: Mailbox,
    reply_to: Option<Mailbox>,
    /// The `From` address's domain, the right-hand side of every `Message-ID`.
    domain: String,
    links: Links,
}

impl SmtpDriver {
    /// The driver `[channels.email]` describes.
    pub(crate) fn new(cfg: &Email, links: Links) -> Result<Self, String> {
        let raw = cfg.url.as_deref().unwrap_or_default();
        let url = url::Url::parse(raw).map_err(|e| format!("[channels.email] url: {e}"))?;
        let host = url
            .host_str()
            .ok_or("[channels.email] url: no host")?
            .trim_matches(['[', ']'])
            .to_owned();
        let tls = TlsParameters::new(host.clone())
            .map_err(|e| format!("[channels.email] url: TLS for {host}: {e}"))?;
        let (tls, port) = match url.scheme() {
            "smtp" => (Tls::Opportunistic(tls), 25),
            "smtps" => (Tls::Wrapper(tls), 465),
            other => {
                return Err(format!(
                    "[channels.email] url: scheme {other}: smtp or smtps"
                ));
            }
        };
        let mut builder = SmtpTransport::builder_dangerous(host)
            .port(url.port().unwrap_or(port))
            .tls(tls)
            .timeout(Some(Duration::from_secs(cfg.timeout_secs.max(1))));
        if let Some(password) = url.password() {
            let user = crate::channels::form::decode(url.username());
            builder = builder.credentials(Credentials::new(
                user,
                crate::channels::form::decode(password),
            ));
        }
        let mailbox = |what: &str, v: &str| -> Result<Mailbox, String> {
            v.parse()
                .map_err(|e| format!("[channels.email] {what} {v:?}: {e}"))
        };
        let from = mailbox("from", cfg.from.as_deref().unwrap_or_default())?;
        let reply_to = cfg
            .reply_to
            .as_deref()
            .map(|r| mailbox("reply_to", r))
            .transpose()?;
        let domain = from.email.domain().to_owned();
        Ok(Self {
            transport: builder.build(),
            from,
            reply_to,
            domain,
            links,
        })
    }

    /// The message of `r` and its `Message-ID`.
    fn message(&self, r: &Rendered) -> Result<(Message, String), DriverError> {
        let invalid = |what: &str| {
            DriverError::new(
                Failure::Failed,
                "invalid_address",
                format!("the contact point's e-mail address {what}"),
            )
        };
        let to: Mailbox =
            r.to.as_deref()
                .ok_or_else(|| invalid("is missing"))?
                .parse()
                .map_err(|_| invalid("is not a valid mailbox"))?;
        let id = format!("<{}@{}>", r.delivery_id, self.domain);
        let link = r
            .contact_point_id
            .as_deref()
            .map(|cp| self.links.url(&r.org_id, cp));
        let subject = r.subject.clone().unwrap_or_default();
        let mut text = r.body.clone();
        let mut html = format!(
            "<!doctype html><html lang=\"pt-BR\"><head><meta charset=\"utf-8\"><title>{}</title></head><body>",
            escape(&subject)
        );
        for paragraph in r.body.split("\n\n") {
            html.push_str(&format!(
                "<p>{}</p>",
                escape(paragraph).replace('\n', "<br>")
            ));
        }
        let mut b = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject)
            .message_id(Some(id.clone()));
        if let Some(r) = &self.reply_to {
            b = b.reply_to(r.clone());
        }
        if let Some(link) = &link {
            text.push_str(&format!(
                "\n\nPara não receber mais mensagens neste e-mail: {link}\n"
            ));
            html.push_str(&format!(
                "<p style=\"font-size:small\"><a href=\"{}\">Não quero mais receber mensagens neste e-mail</a></p>",
                escape(link)
            ));
            b = b
                .header(ListUnsubscribe(format!("<{link}>")))
                .header(ListUnsubscribePost);
        }
        html.push_str("</body></html>");
        let message = b
            .multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| DriverError::new(Failure::Failed, "invalid_message", e.to_string()))?;
        Ok((message, id))
    }

    /// Sends one e-mail.
    pub(crate) fn send(&self, r: &Rendered) -> Result<DriverReceipt, DriverError> {
        let (message, id) = self.message(r)?;
        match self.transport.send(&message) {
            Ok(_) => Ok(DriverReceipt {
                provider_message_id: id,
            }),
            Err(e) => Err(classify(&e)),
        }
    }
}

/// What an SMTP failure means for the delivery (see the module docs).
fn classify(e: &lettre::transport::smtp::Error) -> DriverError {
    let code = e.status().map(|c| c.to_string());
    match code.as_deref() {
        Some(c @ ("550" | "551" | "553")) => DriverError::new(
            Failure::Bounced { hard: true },
            format!("smtp_{c}"),
            format!("SMTP {c}: the recipient's server refused the address for good"),
        ),
        Some("552") => DriverError::new(
            Failure::Bounced { hard: false },
            "smtp_552",
            "SMTP 552: the recipient's mailbox is full",
        ),
        Some(c) if c.starts_with('5') => DriverError::new(
            Failure::Failed,
            format!("smtp_{c}"),
            format!("SMTP {c}: the relay refused the message for good"),
        ),
        Some(c) => DriverError::new(
            Failure::Retry,
            format!("smtp_{c}"),
            format!("SMTP {c}: the relay refused the message for now"),
        ),
        None if e.is_timeout() => DriverError::new(
            Failure::Retry,
            "smtp_timeout",
            "the relay did not answer in time",
        ),
        None => DriverError::new(
            Failure::Retry,
            "smtp_unavailable",
            format!("no answer from the relay: {}", first_line(&e.to_string())),
        ),
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}
