CREATE TABLE oauth_grants (kind TEXT NOT NULL, id TEXT NOT NULL, doc TEXT NOT NULL, expires_ms INTEGER, PRIMARY KEY (kind, id)) WITHOUT ROWID;
CREATE INDEX oauth_grants_expiry ON oauth_grants (expires_ms) WHERE expires_ms IS NOT NULL;
