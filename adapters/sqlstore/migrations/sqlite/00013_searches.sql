-- +goose Up
-- Saved searches: a project's named queries and ranges, which alert rules will name. The unique
-- key serves the listing of a project's searches by name (BINARY collation: bytewise) and makes a
-- name taken in the project a conflict. Timestamps are Unix microseconds, as projects' are.
CREATE TABLE searches (
    id            TEXT    NOT NULL PRIMARY KEY,
    project_id    TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name          TEXT    NOT NULL,
    query         TEXT    NOT NULL,
    range_seconds INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    CONSTRAINT searches_project_name UNIQUE (project_id, name)
);

-- +goose Down
DROP TABLE searches;
