-- The notification's payload names the schema of the table written, not the writer's
-- search path: an operator's `UPDATE tenant_a.members ...` from a session whose search
-- path is elsewhere still reaches the stores of `tenant_a`, and only them (each
-- listener counts the notifications of its own schema).
CREATE OR REPLACE FUNCTION members_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('dunning_members', TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;
