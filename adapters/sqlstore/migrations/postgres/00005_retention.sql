-- +goose Up
-- How many days a project keeps its log entries; NULL keeps them forever (every project so far).
-- Adding a nullable column without a default rewrites nothing: instant on a large table.
ALTER TABLE projects ADD COLUMN retention_days integer CHECK (retention_days BETWEEN 1 AND 3650);

-- +goose Down
ALTER TABLE projects DROP COLUMN retention_days;
