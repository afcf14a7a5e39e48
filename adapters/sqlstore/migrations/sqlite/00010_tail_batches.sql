-- +goose Up
-- A live tail's position is its project's own: the batch's number in the project's commit order
-- and the entry's place in the batch, so that what a tenant sees of positions depends on its
-- project's writes alone. A batch takes its number from its project's row of tail_seq inside
-- its transaction (one writer: that is commit order), and tail_batches maps each number to the
-- batch's tail_clock number (logs.tail_tx), by which the rows are found.
CREATE TABLE tail_seq (
    project_id TEXT    NOT NULL PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE tail_batches (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    tx         INTEGER NOT NULL,
    PRIMARY KEY (project_id, seq)
) WITHOUT ROWID;
-- The batches written before this release, numbered per project in the order the tail read them.
INSERT INTO tail_batches (project_id, seq, tx)
SELECT project_id, row_number() OVER (PARTITION BY project_id ORDER BY tail_tx), tail_tx
FROM (SELECT DISTINCT project_id, tail_tx FROM logs WHERE tail_tx IS NOT NULL) b;
INSERT INTO tail_seq (project_id, seq) SELECT project_id, max(seq) FROM tail_batches GROUP BY project_id;

-- +goose Down
DROP TABLE tail_batches;
DROP TABLE tail_seq;
