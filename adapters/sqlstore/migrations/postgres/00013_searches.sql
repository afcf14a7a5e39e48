-- +goose Up
-- Saved searches: a project's named queries and ranges, which alert rules will name. Small
-- configuration rows read by id alone (an admin key's GET /searches/{id} names no project), so
-- on Citus searches is a reference table like projects, not distributed by project_id: a read
-- by id is then one task on one node, and the foreign key to projects, which deletes a
-- project's searches with it, stays between two reference tables. The unique key serves the
-- listing of a project's searches by name and makes a name taken in the project a conflict;
-- names collate as "C", bytewise, as on SQLite, whatever the database's locale.
CREATE TABLE searches (
    id            uuid        NOT NULL PRIMARY KEY,
    project_id    uuid        NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name          text        COLLATE "C" NOT NULL,
    query         text        NOT NULL,
    range_seconds integer     NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    CONSTRAINT searches_project_name UNIQUE (project_id, name)
);

-- +goose Down
DROP TABLE searches;
