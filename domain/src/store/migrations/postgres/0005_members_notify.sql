-- Processes that cache who may do what (the binary's principals) hear of every change
-- to members and organizations, whoever made it (another replica, an operator's SQL):
-- one NOTIFY per statement, delivered at commit (and folded into one per transaction).
-- The payload names the schema, so stores of several schemas in one database can tell.
CREATE FUNCTION members_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dunning_members', current_schema());
    RETURN NULL;
END
$$;
CREATE TRIGGER members_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON members
    FOR EACH STATEMENT EXECUTE FUNCTION members_changed();
CREATE TRIGGER organizations_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON organizations
    FOR EACH STATEMENT EXECUTE FUNCTION members_changed();
