-- A provider's message id (an e-mail's Message-ID, WhatsApp's wamid, an SMS provider's
-- sid) to the delivery it belongs to, across organizations: a provider's status
-- callback names only its own id. One row per accepted send.
CREATE TABLE provider_messages (channel text COLLATE "C" NOT NULL, message_id text COLLATE "C" NOT NULL, org text COLLATE "C" NOT NULL, delivery_id text COLLATE "C" NOT NULL, PRIMARY KEY (channel, message_id));
