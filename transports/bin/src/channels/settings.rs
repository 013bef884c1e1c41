//! `[channels]`: how messages to debtors leave the machine (or do not). Every channel's
//! driver defaults to `record`: nothing is sent, as before (`cargo run -- serve` on the
//! embedded default sends nothing). Example, every key with its default unless noted:
//!
//! ```toml
//! [channels]
//! retry_base_secs = 60          # first back-off after a temporary failure, doubling
//! retry_max_secs = 3600         # the longest back-off
//! max_attempts = 6              # then the delivery fails with the last error
//!
//! [channels.email]
//! driver = "smtp"                          # record (default) | smtp
//! url = "smtp://127.0.0.1:2525"            # smtp:// (STARTTLS when offered) or smtps://;
//!                                          # user:password@ allowed (percent-encoded)
//! from = "Cobranca Demo <cobranca@demo.example>"
//! reply_to = "financeiro@demo.example"     # optional
//! per_minute = 600                         # outbound budget of the channel, this process
//! timeout_secs = 30                        # connect, and each SMTP reply
//!
//! [channels.whatsapp]
//! driver = "cloud_api"                     # record (default) | cloud_api
//! base_url = "https://graph.facebook.com/v21.0"
//! phone_number_id = "1234567890"
//! access_token = "EAAG..."                 # or access_token_file = "/etc/..."
//! app_secret = "..."                       # or app_secret_file: X-Hub-Signature-256 of callbacks
//! verify_token = "..."                     # the callback URL's verification handshake
//! language = "pt_BR"
//! templates = { reminder = "cobranca_lembrete" }   # our template id -> approved name
//! per_minute = 600
//! timeout_secs = 10
//!
//! [channels.sms]
//! driver = "twilio"                        # record (default) | twilio
//! base_url = "https://api.twilio.com"
//! account_sid = "AC..."
//! auth_token = "..."                       # or auth_token_file: basic auth and callbacks
//! from = "+5511999990000"                  # or messaging_service_sid = "MG..."
//! per_minute = 600
//! timeout_secs = 10
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

/// `[channels]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Channels {
    /// First back-off after a temporary failure (seconds), doubling each retry.
    pub(crate) retry_base_secs: u64,
    /// Longest back-off (seconds).
    pub(crate) retry_max_secs: u64,
    /// Attempts before a delivery fails with its last error.
    pub(crate) max_attempts: u32,
    /// `[channels.email]`.
    pub(crate) email: Email,
    /// `[channels.whatsapp]`.
    pub(crate) whatsapp: WhatsApp,
    /// `[channels.sms]`.
    pub(crate) sms: Sms,
}

impl Default for Channels {
    fn default() -> Self {
        Self {
            retry_base_secs: 60,
            retry_max_secs: 3600,
            max_attempts: 6,
            email: Email::default(),
            whatsapp: WhatsApp::default(),
            sms: Sms::default(),
        }
    }
}

/// `[channels.email] driver`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EmailDriver {
    /// Nothing leaves the machine.
    #[default]
    Record,
    /// SMTP (`lettre`).
    Smtp,
}

/// `[channels.email]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Email {
    /// Which driver.
    pub(crate) driver: EmailDriver,
    /// `smtp://` or `smtps://` URL of the relay.
    pub(crate) url: Option<String>,
    /// The `From` mailbox.
    pub(crate) from: Option<String>,
    /// The `Reply-To` mailbox.
    pub(crate) reply_to: Option<String>,
    /// Messages a minute this process sends on the channel.
    pub(crate) per_minute: u32,
    /// Connect and per-reply timeout.
    pub(crate) timeout_secs: u64,
}

impl Default for Email {
    fn default() -> Self {
        Self {
            driver: EmailDriver::Record,
            url: None,
            from: None,
            reply_to: None,
            per_minute: 600,
            timeout_secs: 30,
        }
    }
}

/// `[channels.whatsapp] driver`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WhatsAppDriver {
    /// Nothing leaves the machine.
    #[default]
    Record,
    /// The WhatsApp Business Cloud API.
    CloudApi,
}

/// `[channels.whatsapp]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct WhatsApp {
    /// Which driver.
    pub(crate) driver: WhatsAppDriver,
    /// The Graph API base URL, version included.
    pub(crate) base_url: String,
    /// The sending number's id.
    pub(crate) phone_number_id: Option<String>,
    /// The bearer token.
    pub(crate) access_token: Option<String>,
    /// A file holding it.
    pub(crate) access_token_file: Option<PathBuf>,
    /// The app secret the callbacks are signed with.
    pub(crate) app_secret: Option<String>,
    /// A file holding it.
    pub(crate) app_secret_file: Option<PathBuf>,
    /// The token of the callback URL's verification handshake.
    pub(crate) verify_token: Option<String>,
    /// The templates' language.
    pub(crate) language: String,
    /// Our template ids (built-in names, step ids) to the names approved at the provider.
    pub(crate) templates: BTreeMap<String, String>,
    /// Messages a minute this process sends on the channel.
    pub(crate) per_minute: u32,
    /// Whole-request timeout.
    pub(crate) timeout_secs: u64,
}

impl Default for WhatsApp {
    fn default() -> Self {
        Self {
            driver: WhatsAppDriver::Record,
            base_url: "https://graph.facebook.com/v21.0".into(),
            phone_number_id: None,
            access_token: None,
            access_token_file: None,
            app_secret: None,
            app_secret_file: None,
            verify_token: None,
            language: "pt_BR".into(),
            templates: BTreeMap::new(),
            per_minute: 600,
            timeout_secs: 10,
        }
    }
}

/// `[channels.sms] driver`.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SmsDriver {
    /// Nothing leaves the machine.
    #[default]
    Record,
    /// Twilio's Messages API.
    Twilio,
}

/// `[channels.sms]`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Sms {
    /// Which driver.
    pub(crate) driver: SmsDriver,
    /// The API's base URL.
    pub(crate) base_url: String,
    /// The account.
    pub(crate) account_sid: Option<String>,
    /// Its auth token (basic auth, callback signatures).
    pub(crate) auth_token: Option<String>,
    /// A file holding it.
    pub(crate) auth_token_file: Option<PathBuf>,
    /// The sending number.
    pub(crate) from: Option<String>,
    /// Or a messaging service.
    pub(crate) messaging_service_sid: Option<String>,
    /// Messages a minute this process sends on the channel.
    pub(crate) per_minute: u32,
    /// Whole-request timeout.
    pub(crate) timeout_secs: u64,
}

impl Default for Sms {
    fn default() -> Self {
        Self {
            driver: SmsDriver::Record,
            base_url: "https://api.twilio.com".into(),
            account_sid: None,
            auth_token: None,
            auth_token_file: None,
            from: None,
            messaging_service_sid: None,
            per_minute: 600,
            timeout_secs: 10,
        }
    }
}

/// A secret given inline or in a file (trimmed), or `None`.
pub(crate) fn secret(
    inline: Option<&String>,
    file: Option<&PathBuf>,
    what: &str,
) -> Result<Option<String>, String> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(format!("{what}: give it inline or in a file, not both")),
        (Some(s), None) => Ok(Some(s.clone())),
        (None, Some(f)) => std::fs::read_to_string(f)
            .map(|s| Some(s.trim().to_owned()))
            .map_err(|e| format!("{what}: {}: {e}", f.display())),
        (None, None) => Ok(None),
    }
}

impl Channels {
    /// What must hold whatever the drivers (checked at start, with the file's words).
    pub(crate) fn check(&self) -> Result<(), String> {
        // A send must end well inside its claim (the engine sends within the first half
        // of a 5-minute claim): each driver's timeout at most 60 s.
        for (name, t) in [
            ("email", self.email.timeout_secs),
            ("whatsapp", self.whatsapp.timeout_secs),
            ("sms", self.sms.timeout_secs),
        ] {
            if !(1..=60).contains(&t) {
                return Err(format!("[channels.{name}] timeout_secs: from 1 to 60"));
            }
        }
        for (name, n) in [
            ("email", self.email.per_minute),
            ("whatsapp", self.whatsapp.per_minute),
            ("sms", self.sms.per_minute),
        ] {
            if n == 0 {
                return Err(format!("[channels.{name}] per_minute: must be positive"));
            }
        }
        if self.retry_base_secs == 0 || self.retry_max_secs < self.retry_base_secs {
            return Err("[channels] retry_base_secs: positive, at most retry_max_secs".into());
        }
        if self.max_attempts == 0 {
            return Err("[channels] max_attempts: must be positive".into());
        }
        if self.email.driver == EmailDriver::Smtp {
            let url = self.email.url.as_deref().unwrap_or_default();
            if !(url.starts_with("smtp://") || url.starts_with("smtps://")) {
                return Err(
                    "[channels.email] url: an smtp:// or smtps:// URL (driver smtp)".into(),
                );
            }
            if self.email.from.is_none() {
                return Err("[channels.email] from: required with driver smtp".into());
            }
        }
        if self.whatsapp.driver == WhatsAppDriver::CloudApi {
            let w = &self.whatsapp;
            if w.phone_number_id.is_none()
                || (w.access_token.is_none() && w.access_token_file.is_none())
            {
                return Err(
                    "[channels.whatsapp]: phone_number_id and access_token (or access_token_file) with driver cloud_api".into(),
                );
            }
            if !(w.base_url.starts_with("http://") || w.base_url.starts_with("https://")) {
                return Err("[channels.whatsapp] base_url: an http(s) URL".into());
            }
        }
        if self.sms.driver == SmsDriver::Twilio {
            let s = &self.sms;
            if s.account_sid.is_none() || (s.auth_token.is_none() && s.auth_token_file.is_none()) {
                return Err(
                    "[channels.sms]: account_sid and auth_token (or auth_token_file) with driver twilio".into(),
                );
            }
            if s.from.is_none() == s.messaging_service_sid.is_none() {
                return Err("[channels.sms]: exactly one of from, messaging_service_sid".into());
            }
            if !(s.base_url.starts_with("http://") || s.base_url.starts_with("https://")) {
                return Err("[channels.sms] base_url: an http(s) URL".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Channels, String> {
        let c: Channels = toml::from_str(text).map_err(|e| e.to_string())?;
        c.check().map(|()| c)
    }

    #[test]
    fn every_driver_records_by_default() {
        let c = parse("").unwrap();
        assert_eq!(c.email.driver, EmailDriver::Record);
        assert_eq!(c.whatsapp.driver, WhatsAppDriver::Record);
        assert_eq!(c.sms.driver, SmsDriver::Record);
    }

    #[test]
    fn the_issue_s_email_table_parses() {
        let c = parse(
            "[email]\ndriver = \"smtp\"\nurl = \"smtp://127.0.0.1:2525\"\n\
             from = \"Cobranca Demo <cobranca@demo.example>\"\nreply_to = \"financeiro@demo.example\"\n",
        )
        .unwrap();
        assert_eq!(c.email.driver, EmailDriver::Smtp);
        assert_eq!(c.email.reply_to.as_deref(), Some("financeiro@demo.example"));
    }

    #[test]
    fn refusals_name_the_key() {
        for (text, key) in [
            ("[email]\ndriver = \"smtp\"\nfrom = \"a@b.c\"", "url"),
            (
                "[email]\ndriver = \"smtp\"\nurl = \"http://x\"\nfrom = \"a@b.c\"",
                "url",
            ),
            ("[email]\ndriver = \"smtp\"\nurl = \"smtp://x:25\"", "from"),
            ("[email]\ntimeout_secs = 61", "timeout_secs"),
            ("[sms]\nper_minute = 0", "per_minute"),
            ("[whatsapp]\ndriver = \"cloud_api\"", "phone_number_id"),
            (
                "[sms]\ndriver = \"twilio\"\naccount_sid = \"AC1\"\nauth_token = \"t\"",
                "from",
            ),
            ("max_attempts = 0", "max_attempts"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        assert!(parse("[email]\ndriver = \"sendgrid\"").is_err());
        assert!(parse("[email]\nurll = \"x\"").is_err());
    }
}
