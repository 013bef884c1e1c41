-- A provider's message id (an e-mail's Message-ID, WhatsApp's wamid, an SMS provider's
-- sid) to the delivery it belongs to, across organizations: a provider's status
-- callback names only its own id. One row per accepted send.
CREATE TABLE provider_messages (channel TEXT NOT NULL, message_id TEXT NOT NULL, org TEXT NOT NULL, delivery_id TEXT NOT NULL, PRIMARY KEY (channel, message_id)) WITHOUT ROWID;
