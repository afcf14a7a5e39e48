-- +goose Up
-- OpenTelemetry's entry model: attributes (a JSON object, kept as the text the domain encoded, so
-- numbers come back exactly as sent; json, not jsonb, which would rewrite them) and the trace
-- context. All nullable: the rows written before keep NULL and read back without them.
ALTER TABLE logs ADD COLUMN attributes json;
ALTER TABLE logs ADD COLUMN trace_id text;
ALTER TABLE logs ADD COLUMN span_id text;
-- "Every log of this trace in this project" is a range of this index, in listing order in either
-- direction. Partial: entries without a trace (every row written before) cost it nothing, and
-- trace_id = $n implies trace_id IS NOT NULL, so the planner may use it for any such query.
CREATE INDEX logs_trace ON logs (project_id, trace_id, time, id) WHERE trace_id IS NOT NULL;

-- +goose Down
DROP INDEX logs_trace;
ALTER TABLE logs DROP COLUMN span_id;
ALTER TABLE logs DROP COLUMN trace_id;
ALTER TABLE logs DROP COLUMN attributes;
