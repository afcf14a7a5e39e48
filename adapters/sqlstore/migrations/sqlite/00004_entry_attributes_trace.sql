-- +goose Up
-- OpenTelemetry's entry model: attributes (a JSON object as the text the domain encoded, so
-- numbers come back exactly as sent) and the trace context. All nullable: the rows written
-- before keep NULL and read back without them. (00003 is a Go migration: sqlstore.hashIdempotencyScopes.)
ALTER TABLE logs ADD COLUMN attributes TEXT;
ALTER TABLE logs ADD COLUMN trace_id TEXT;
ALTER TABLE logs ADD COLUMN span_id TEXT;
-- "Every log of this trace in this project" is a range of this index, in listing order. Partial:
-- entries without a trace cost it nothing; trace_id = ? lets SQLite use it.
CREATE INDEX logs_trace ON logs (project_id, trace_id, time, id) WHERE trace_id IS NOT NULL;

-- +goose Down
DROP INDEX logs_trace;
ALTER TABLE logs DROP COLUMN span_id;
ALTER TABLE logs DROP COLUMN trace_id;
ALTER TABLE logs DROP COLUMN attributes;
