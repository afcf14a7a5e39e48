-- +goose Up
-- Alert rules count from per-second counts kept as entries are written, not from the entries
-- of the window each time. alert_queries holds the queries a project's rules count (by the
-- SHA-256 of the text), each registration with a new id. A registration takes the project's row
-- of tail_seq for a moment to record upto, the project's newest batch: every later batch, once it
-- holds that row, reads the registration and adds its matching entries at or after floor to
-- alert_counts under its id in its own transaction; the entries of batches up to upto (and those
-- written before ingest order was kept) are counted afterwards, without the lock, and added once,
-- with counted set (0 until then). span is the widest window counted (seconds before end - span
-- are dropped), used_at when a rule last counted it (a query unused for an hour is dropped). Both
-- keyed by project_id like every per-project table (on Citus: distributed and co-located with
-- logs); deleting a project deletes them.
CREATE TABLE alert_queries (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    query_key  text   NOT NULL,
    id         uuid   NOT NULL,
    query      text   NOT NULL,
    floor      bigint NOT NULL,
    span       bigint NOT NULL,
    used_at    bigint NOT NULL,
    upto       bigint NOT NULL,
    counted    bigint NOT NULL,
    PRIMARY KEY (project_id, query_key)
);
CREATE TABLE alert_counts (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    query_id   uuid   NOT NULL,
    second     bigint NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, query_id, second)
);

-- +goose Down
DROP TABLE alert_counts;
DROP TABLE alert_queries;
