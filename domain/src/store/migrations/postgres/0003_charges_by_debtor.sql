-- PostgreSQL twin of ../0003_charges_by_debtor.sql.
CREATE INDEX charges_debtor_status_due ON charges (org, debtor_id NULLS FIRST, status NULLS FIRST, due_date NULLS FIRST, id);
