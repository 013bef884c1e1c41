-- The tallies' trigger function finds `tallies` in the schema it was created in (the
-- store's search path when this migration runs), not on the writer's: an operator's
-- `INSERT INTO tenant_a.debtors ...` or `DELETE FROM tenant_a.charges ...` from a session
-- whose search path is elsewhere failed ("relation tallies does not exist") or, where
-- another schema had a `tallies`, counted there.
ALTER FUNCTION tally() SET search_path FROM CURRENT;
