//! Messages to debtors leaving the machine: the channel drivers of the ruler engine's
//! outbox (`engine::DeliveryDriver`), and the routes providers and debtors call back on.
//!
//! The domain decides who may be messaged, renders the text with the creditor's
//! identification, claims each delivery with a lease and records what the driver
//! answered (`ops::deliveries::record_send`); this module only moves bytes:
//!
//! * [`Drivers`] picks the channel's driver ([`email`] over SMTP, [`whatsapp`] and
//!   [`sms`] over their providers' HTTP APIs, or the recording one, the default, which
//!   sends nothing), after the channel's own outbound budget ([`Budget`]): a message
//!   past it is deferred, not attempted;
//! * every send is one log line and one count of `dunning_channel_sends_total` with the
//!   channel and the outcome, never the text or the address;
//! * [`callbacks::Routes`] serves `/channels/...` (status callbacks, unsubscribe), bound
//!   by the core like the authorization server's open endpoints.

use std::sync::Mutex;
use std::time::Instant;

use dunning_domain::engine::{DeliveryDriver, DriverError, DriverReceipt, Failure, Rendered};
use serde_json::Value;

pub(crate) mod callbacks;
pub(crate) mod form;
pub(crate) mod settings;
pub(crate) mod unsubscribe;

use crate::outbound::{email, sms, whatsapp};

use settings::{Channels, EmailDriver, SmsDriver, WhatsAppDriver};

/// Sends per channel: `dunning_channel_sends_total{channel, outcome}`.
pub(crate) const SENDS: &str = "dunning_channel_sends_total";
/// Callbacks per channel: `dunning_channel_callbacks_total{channel, outcome}`.
pub(crate) const CALLBACKS: &str = "dunning_channel_callbacks_total";

/// One channel's driver.
enum Driver {
    /// Records: nothing leaves the machine.
    Record,
    Smtp(Box<email::SmtpDriver>),
    CloudApi(Box<whatsapp::CloudApi>),
    Twilio(Box<sms::Twilio>),
}

/// A GCRA bucket: `per_minute` sends a minute, as many at once.
#[derive(Debug)]
pub(crate) struct Budget {
    interval_ms: u64,
    burst_ms: u64,
    tat: Mutex<Option<Instant>>,
}

impl Budget {
    pub(crate) fn new(per_minute: u32) -> Self {
        let interval_ms = 60_000 / u64::from(per_minute.max(1));
        Self {
            interval_ms,
            burst_ms: interval_ms * u64::from(per_minute.max(1) - 1),
            tat: Mutex::new(None),
        }
    }

    /// Takes one send now, or says in how many ms one is free.
    pub(crate) fn take(&self, now: Instant) -> Result<(), u64> {
        let mut tat = self
            .tat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let t = tat.map_or(now, |t| t.max(now));
        let ahead = u64::try_from(t.duration_since(now).as_millis()).unwrap_or(u64::MAX);
        if ahead > self.burst_ms {
            return Err(ahead - self.burst_ms);
        }
        *tat = Some(t + std::time::Duration::from_millis(self.interval_ms));
        Ok(())
    }
}

/// The drivers `[channels]` chose, one budget per channel.
pub(crate) struct Drivers {
    email: (Driver, Budget),
    whatsapp: (Driver, Budget),
    sms: (Driver, Budget),
}

impl Drivers {
    /// The drivers of `c`; `links` signs the e-mails' unsubscribe links.
    pub(crate) fn new(
        c: &Channels,
        links: &unsubscribe::Links,
        public_url: &str,
    ) -> Result<Self, String> {
        let email = match c.email.driver {
            EmailDriver::Record => Driver::Record,
            EmailDriver::Smtp => {
                Driver::Smtp(Box::new(email::SmtpDriver::new(&c.email, links.clone())?))
            }
        };
        let whatsapp = match c.whatsapp.driver {
            WhatsAppDriver::Record => Driver::Record,
            WhatsAppDriver::CloudApi => {
                Driver::CloudApi(Box::new(whatsapp::CloudApi::new(&c.whatsapp)?))
            }
        };
        let sms = match c.sms.driver {
            SmsDriver::Record => Driver::Record,
            SmsDriver::Twilio => Driver::Twilio(Box::new(sms::Twilio::new(&c.sms, public_url)?)),
        };
        for (channel, d) in [("email", &email), ("whatsapp", &whatsapp), ("sms", &sms)] {
            let name = match d {
                Driver::Record => "record (nothing leaves the machine)",
                Driver::Smtp(_) => "smtp",
                Driver::CloudApi(_) => "WhatsApp Cloud API",
                Driver::Twilio(_) => "Twilio Messages API",
            };
            tracing::info!(channel, driver = name, "channel driver");
        }
        Ok(Self {
            email: (email, Budget::new(c.email.per_minute)),
            whatsapp: (whatsapp, Budget::new(c.whatsapp.per_minute)),
            sms: (sms, Budget::new(c.sms.per_minute)),
        })
    }

    fn send_on(
        &self,
        (driver, budget): &(Driver, Budget),
        delivery: &Value,
        r: &Rendered,
    ) -> Result<DriverReceipt, DriverError> {
        if let Err(after_ms) = budget.take(Instant::now()) {
            return Err(DriverError::new(
                Failure::Deferred { after_ms },
                "channel_budget",
                format!("the {} channel's outbound budget is spent", r.channel),
            ));
        }
        match driver {
            Driver::Record => Ok(record(delivery)),
            Driver::Smtp(d) => d.send(r),
            Driver::CloudApi(d) => d.send(r),
            Driver::Twilio(d) => d.send(r),
        }
    }
}

/// The retry policy of `[channels]`.
pub(crate) fn policy(c: &Channels) -> dunning_domain::engine::SendPolicy {
    dunning_domain::engine::SendPolicy {
        base_ms: c.retry_base_secs.saturating_mul(1000),
        max_ms: c.retry_max_secs.saturating_mul(1000),
        max_attempts: c.max_attempts,
    }
}

/// The recording driver's receipt.
fn record(delivery: &Value) -> DriverReceipt {
    let id = delivery
        .get("id")
        .and_then(Value::as_str)
        .unwrap_or_default();
    DriverReceipt {
        provider_message_id: format!("local-{id}"),
    }
}

/// The outcome label of a send.
fn outcome(r: &Result<DriverReceipt, DriverError>) -> &'static str {
    match r {
        Ok(_) => "sent",
        Err(e) => match e.kind {
            Failure::Failed => "failed",
            Failure::Bounced { .. } => "bounced",
            Failure::Retry => "retry",
            Failure::Deferred { .. } => "deferred",
        },
    }
}

impl DeliveryDriver for Drivers {
    fn send(&self, delivery: &Value, r: &Rendered) -> Result<DriverReceipt, DriverError> {
        let started = Instant::now();
        let result = match r.channel.as_str() {
            "email" => self.send_on(&self.email, delivery, r),
            "whatsapp" => self.send_on(&self.whatsapp, delivery, r),
            "sms" => self.send_on(&self.sms, delivery, r),
            // Tasks and webhook steps: recorded (a person or the webhook outbox acts).
            _ => Ok(record(delivery)),
        };
        let outcome = outcome(&result);
        let channel = crate::telemetry::metrics::channel(&r.channel);
        metrics::counter!(SENDS, "channel" => channel, "outcome" => outcome).increment(1);
        let field = |k: &str| delivery.get(k).and_then(Value::as_str).unwrap_or_default();
        let ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &result {
            Ok(_) => tracing::info!(
                delivery_id = field("id"),
                charge_id = field("charge_id"),
                channel,
                outcome,
                ms,
                "delivery sent"
            ),
            Err(e) => tracing::warn!(
                delivery_id = field("id"),
                charge_id = field("charge_id"),
                channel,
                outcome,
                code = %e.code,
                ms,
                "delivery not sent"
            ),
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_budget_lets_its_burst_through_then_says_when() {
        let b = Budget::new(3);
        let t0 = Instant::now();
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_ok());
        assert!(b.take(t0).is_ok());
        let wait = b.take(t0).unwrap_err();
        assert!((1..=20_000).contains(&wait), "{wait}");
        assert!(b.take(t0 + Duration::from_millis(wait)).is_ok());
    }
}
