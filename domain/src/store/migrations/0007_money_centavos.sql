-- Money as whole centavos (it was REAL): each amount column is dropped with its index,
-- added back as INTEGER, filled from its document (the stored BRL number times 100,
-- rounded), and indexed again. An UPDATE fires no tally trigger (those count inserts and
-- deletes), and the documents, which are what every answer is built from, are untouched.
DROP INDEX debtors_overdue_amount;
ALTER TABLE debtors DROP COLUMN overdue_amount;
ALTER TABLE debtors ADD COLUMN overdue_amount INTEGER;
UPDATE debtors SET overdue_amount = CAST(round(json_extract(doc, '$.overdue_amount') * 100) AS INTEGER)
  WHERE json_type(doc, '$.overdue_amount') IN ('integer', 'real');
CREATE INDEX debtors_overdue_amount ON debtors (org, overdue_amount, id);
DROP INDEX charges_amount;
ALTER TABLE charges DROP COLUMN amount;
ALTER TABLE charges ADD COLUMN amount INTEGER;
UPDATE charges SET amount = CAST(round(json_extract(doc, '$.amount') * 100) AS INTEGER)
  WHERE json_type(doc, '$.amount') IN ('integer', 'real');
CREATE INDEX charges_amount ON charges (org, amount, id);
