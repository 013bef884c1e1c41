-- The names a page of charges carries are read by primary key from this index alone
-- (`sql::Dialect::pointed`). Without it, once `VACUUM` had marked the table's pages
-- all-visible, the generic plan read them from `debtors_name` (org, name, id), the
-- only index that held both columns: one walk of the organization's whole name index
-- for each charge of the page, costed on the organization's estimated share of the
-- table, however many debtors it really has. SQLite finds them by primary key.
CREATE UNIQUE INDEX debtors_names ON debtors (org, id) INCLUDE (name);
