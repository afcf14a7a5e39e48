-- +goose Up
CREATE TABLE projects (
    id         uuid        NOT NULL PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX projects_created_at ON projects (created_at, id);

-- Every logs query names a project, so project_id leads the primary key and every index (the
-- table can be distributed by project_id as it is); each index ends in (time, id), the listing
-- order, so a filtered page is an index range scan in either direction.
CREATE TABLE logs (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    time       bigint NOT NULL,
    id         uuid   NOT NULL,
    level      text   NOT NULL,
    message    text   NOT NULL,
    subject    text,
    user_id    text,
    PRIMARY KEY (project_id, time, id)
);
CREATE INDEX logs_user ON logs (project_id, user_id, time, id);
CREATE INDEX logs_level ON logs (project_id, level, time, id);

-- +goose Down
DROP TABLE logs;
DROP TABLE projects;
