-- +goose Up
-- The live tail follows ingest order. A sequence taken at insert is not commit order here (a
-- later number may commit first), so each row carries the id of the transaction that wrote it
-- and its position in that batch: a tail reads only rows whose transaction is older than the
-- xmin of its own snapshot, which no transaction still running can precede, and resumes after
-- (tail_tx, tail_pos). Nothing global is taken on the insert path.
-- Rows written before this release keep NULL: they are history, never live.
-- The column is added without a default (instant, no table rewrite); the default, volatile,
-- applies to rows written from now on.
ALTER TABLE logs ADD COLUMN tail_tx xid8;
ALTER TABLE logs ALTER COLUMN tail_tx SET DEFAULT pg_current_xact_id();
ALTER TABLE logs ADD COLUMN tail_pos integer;
-- Every tail query names the project and reads in (tail_tx, tail_pos) order.
CREATE INDEX logs_tail ON logs (project_id, tail_tx, tail_pos);

-- +goose Down
DROP INDEX logs_tail;
ALTER TABLE logs DROP COLUMN tail_pos;
ALTER TABLE logs DROP COLUMN tail_tx;
