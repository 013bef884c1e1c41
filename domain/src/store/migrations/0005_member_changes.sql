-- A count of membership changes kept by triggers, whoever commits them (this process's
-- writer, or another program writing the file): the store's watch connection reads it
-- when `PRAGMA data_version` says someone committed, so a cached principal is dropped
-- at the next request even when the member was removed behind the server's back.
CREATE TABLE member_changes (n INTEGER NOT NULL);
INSERT INTO member_changes (n) VALUES (0);
CREATE TRIGGER members_changed_insert AFTER INSERT ON members BEGIN UPDATE member_changes SET n = n + 1; END;
CREATE TRIGGER members_changed_update AFTER UPDATE ON members BEGIN UPDATE member_changes SET n = n + 1; END;
CREATE TRIGGER members_changed_delete AFTER DELETE ON members BEGIN UPDATE member_changes SET n = n + 1; END;
CREATE TRIGGER organizations_changed_insert AFTER INSERT ON organizations BEGIN UPDATE member_changes SET n = n + 1; END;
CREATE TRIGGER organizations_changed_update AFTER UPDATE ON organizations BEGIN UPDATE member_changes SET n = n + 1; END;
CREATE TRIGGER organizations_changed_delete AFTER DELETE ON organizations BEGIN UPDATE member_changes SET n = n + 1; END;
