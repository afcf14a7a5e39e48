-- +goose Up
-- Alert rules count from per-second counts kept as entries are written, not from the entries
-- of the window each time. alert_queries holds the queries a project's rules count (by the
-- SHA-256 of the text): each registration takes a new id, and the ingest transaction adds the
-- batch's matching entries to alert_counts under that id for every second at or after floor. A
-- registration counts the entries already written in a write transaction of its own (one writer:
-- no batch commits in between), so every entry is counted exactly once. span is the widest
-- window counted (seconds before end - span are dropped), used_at when a rule last counted it (a
-- query left unused for an hour is dropped). Deleting a project deletes them.
CREATE TABLE alert_queries (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    query_key  TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    query      TEXT    NOT NULL,
    floor      INTEGER NOT NULL,
    span       INTEGER NOT NULL,
    used_at    INTEGER NOT NULL,
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
