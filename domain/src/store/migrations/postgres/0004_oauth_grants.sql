CREATE TABLE oauth_grants (kind text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL, doc json NOT NULL, expires_ms bigint, PRIMARY KEY (kind, id));
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_ms) WHERE expires_ms IS NOT NULL;
