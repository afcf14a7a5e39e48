-- +goose Up
-- Alert evaluation keeps per-second counts of each rule's query and moves them on by reading
-- only the batches committed since (tail_seq.seq); a filtered delete takes entries away behind
-- that position, so it counts itself here, in its own transaction, and the counts start over
-- when the number moves. Adding a column with a constant default rewrites no row.
ALTER TABLE tail_seq ADD COLUMN deletes INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE tail_seq DROP COLUMN deletes;
