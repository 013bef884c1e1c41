CREATE INDEX charges_debtor_status_due ON charges (org, debtor_id, status, due_date, id);
