//! Every HTTP client (and the SMTP one) the binary opens toward another machine, in one
//! place, so what leaves the machine, with which timeouts, size bounds and address
//! policy, is read in one directory:
//!
//! * [`webhook`]: webhook deliveries (`[webhooks] driver = "http"`), under the address
//!   policy ([`webhook::guarded_agent`]) every fetch of an address a client chose
//!   shares;
//! * [`email`], [`whatsapp`], [`sms`]: the channel providers of messages to debtors
//!   (SMTP, the WhatsApp Cloud API, Twilio), and the formats of their callbacks;
//! * [`client_metadata`]: OAuth client metadata documents (the embedded authorization
//!   server), through the webhook's address policy;
//! * [`jwks`]: the configured JWKS (the keys themselves are [`crate::keys`]');
//! * [`otlp`]: the OpenTelemetry exporter's posts.
//!
//! What is sent, when and to whom is decided elsewhere (the domain, [`crate::channels`],
//! [`crate::keys`], [`crate::telemetry`]); these modules only move bytes.

pub(crate) mod client_metadata;
pub(crate) mod email;
pub(crate) mod jwks;
pub(crate) mod otlp;
pub(crate) mod sms;
pub(crate) mod webhook;
pub(crate) mod whatsapp;
