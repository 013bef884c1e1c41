-- PostgreSQL twin of ../0002_tallies.sql: per-organization row counts kept by one
-- trigger function (an upsert that updates a row fires no INSERT trigger, so a replaced
-- document counts once, as on SQLite).
CREATE TABLE tallies (org text COLLATE "C" NOT NULL, tbl text COLLATE "C" NOT NULL, n bigint NOT NULL, PRIMARY KEY (org, tbl));
CREATE FUNCTION tally() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO tallies (org, tbl, n) VALUES (NEW.org, TG_TABLE_NAME, 1)
      ON CONFLICT (org, tbl) DO UPDATE SET n = tallies.n + 1;
  ELSE
    UPDATE tallies SET n = n - 1 WHERE org = OLD.org AND tbl = TG_TABLE_NAME;
  END IF;
  RETURN NULL;
END
$$;
INSERT INTO tallies (org, tbl, n) SELECT org, 'organizations', COUNT(*) FROM organizations GROUP BY org;
CREATE TRIGGER organizations_tally AFTER INSERT OR DELETE ON organizations FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'members', COUNT(*) FROM members GROUP BY org;
CREATE TRIGGER members_tally AFTER INSERT OR DELETE ON members FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'debtors', COUNT(*) FROM debtors GROUP BY org;
CREATE TRIGGER debtors_tally AFTER INSERT OR DELETE ON debtors FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'contact_points', COUNT(*) FROM contact_points GROUP BY org;
CREATE TRIGGER contact_points_tally AFTER INSERT OR DELETE ON contact_points FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'charges', COUNT(*) FROM charges GROUP BY org;
CREATE TRIGGER charges_tally AFTER INSERT OR DELETE ON charges FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'rulers', COUNT(*) FROM rulers GROUP BY org;
CREATE TRIGGER rulers_tally AFTER INSERT OR DELETE ON rulers FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'steps', COUNT(*) FROM steps GROUP BY org;
CREATE TRIGGER steps_tally AFTER INSERT OR DELETE ON steps FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'deliveries', COUNT(*) FROM deliveries GROUP BY org;
CREATE TRIGGER deliveries_tally AFTER INSERT OR DELETE ON deliveries FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'events', COUNT(*) FROM events GROUP BY org;
CREATE TRIGGER events_tally AFTER INSERT OR DELETE ON events FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'credit_bureau_records', COUNT(*) FROM credit_bureau_records GROUP BY org;
CREATE TRIGGER credit_bureau_records_tally AFTER INSERT OR DELETE ON credit_bureau_records FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'protests', COUNT(*) FROM protests GROUP BY org;
CREATE TRIGGER protests_tally AFTER INSERT OR DELETE ON protests FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'agreements', COUNT(*) FROM agreements GROUP BY org;
CREATE TRIGGER agreements_tally AFTER INSERT OR DELETE ON agreements FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'decisions', COUNT(*) FROM decisions GROUP BY org;
CREATE TRIGGER decisions_tally AFTER INSERT OR DELETE ON decisions FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'exports', COUNT(*) FROM exports GROUP BY org;
CREATE TRIGGER exports_tally AFTER INSERT OR DELETE ON exports FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'webhooks', COUNT(*) FROM webhooks GROUP BY org;
CREATE TRIGGER webhooks_tally AFTER INSERT OR DELETE ON webhooks FOR EACH ROW EXECUTE FUNCTION tally();
INSERT INTO tallies (org, tbl, n) SELECT org, 'webhook_deliveries', COUNT(*) FROM webhook_deliveries GROUP BY org;
CREATE TRIGGER webhook_deliveries_tally AFTER INSERT OR DELETE ON webhook_deliveries FOR EACH ROW EXECUTE FUNCTION tally();
