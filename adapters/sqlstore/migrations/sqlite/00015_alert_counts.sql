-- +goose Up
-- Alert rules count from per-second counts kept as entries are written, not from the entries
-- of the window each time. alert_queries holds the queries a project's rules count (by the
-- SHA-256 of the text), each registration with a new id. A registration records upto, the
-- project's newest batch, in a write transaction (one writer: no batch commits meanwhile): every
-- later batch reads the registration and adds its matching entries at or after floor to
-- alert_counts under its id in its own transaction; the entries of batches up to upto (and those
-- written before ingest order was kept) are counted afterwards and added once, with counted set
-- (0 until then). span is the widest window counted (seconds before end - span are dropped),
-- used_at when a rule last counted it (a query unused for an hour is dropped). Deleting a project
-- deletes them.
CREATE TABLE alert_queries (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    query_key  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    floor      INTEGER NOT NULL,
    span       INTEGER NOT NULL,
    used_at    INTEGER NOT NULL,
    upto       INTEGER NOT NULL,
    counted    INTEGER NOT NULL,
    PRIMARY KEY (project_id, query_key)
) WITHOUT ROWID;
CREATE TABLE alert_counts (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    query_id   TEXT    NOT NULL,
    second     INTEGER NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, query_id, second)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE alert_counts;
DROP TABLE alert_queries;
