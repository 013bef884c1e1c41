-- Money as whole centavos (it was double precision): the BRL amount times 100, rounded.
-- Their indexes are rebuilt with the columns; the documents are untouched.
ALTER TABLE debtors ALTER COLUMN overdue_amount TYPE bigint USING round(overdue_amount * 100)::bigint;
ALTER TABLE charges ALTER COLUMN amount TYPE bigint USING round(amount * 100)::bigint;
