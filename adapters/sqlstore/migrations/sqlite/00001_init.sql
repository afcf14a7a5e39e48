-- +goose Up
-- Timestamps are Unix microseconds: the precision the PostgreSQL store keeps too.
CREATE TABLE projects (
    id         TEXT    NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX projects_created_at ON projects (created_at, id);

-- Every logs query names a project, so project_id leads the primary key and every index; each
-- index ends in (time, id), the listing order, so filtered pages are read in index order.
CREATE TABLE logs (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    time       INTEGER NOT NULL,
    id         TEXT    NOT NULL,
    level      TEXT    NOT NULL,
    message    TEXT    NOT NULL,
    subject    TEXT,
    user_id    TEXT,
    PRIMARY KEY (project_id, time, id)
);
CREATE INDEX logs_user ON logs (project_id, user_id, time, id);
CREATE INDEX logs_level ON logs (project_id, level, time, id);

-- +goose Down
DROP TABLE logs;
DROP TABLE projects;
