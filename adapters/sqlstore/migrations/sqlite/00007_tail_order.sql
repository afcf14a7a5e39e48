-- +goose Up
-- The live tail follows ingest order. SQLite has one writer at a time, so a number taken inside
-- the writing transaction is commit order: tail_clock counts batches, and each row carries its
-- batch's number and its position in the batch. Rows written before this release keep NULL:
-- they are history, never live.
CREATE TABLE tail_clock (
    id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    tx INTEGER NOT NULL
);
INSERT INTO tail_clock (id, tx) VALUES (1, 0);
ALTER TABLE logs ADD COLUMN tail_tx INTEGER;
ALTER TABLE logs ADD COLUMN tail_pos INTEGER;
CREATE INDEX logs_tail ON logs (project_id, tail_tx, tail_pos);

-- +goose Down
DROP INDEX logs_tail;
ALTER TABLE logs DROP COLUMN tail_pos;
ALTER TABLE logs DROP COLUMN tail_tx;
DROP TABLE tail_clock;
