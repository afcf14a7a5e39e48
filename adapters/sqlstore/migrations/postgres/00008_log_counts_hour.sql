-- +goose Up
-- log_counts_hour: the per-minute rollup summed by hour (hour = the hour's first millisecond),
-- kept in the same transactions as log_counts. The day's stats in hourly buckets read 24 hours
-- times the levels instead of 1,440 minutes times the levels. Keyed by project_id like every
-- per-project table (on Citus: distributed and co-located with logs).
CREATE TABLE log_counts_hour (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    hour       bigint NOT NULL,
    level      text   NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, hour, level)
);
INSERT INTO log_counts_hour (project_id, hour, level, n)
SELECT project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level, sum(n) FROM log_counts
GROUP BY project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level;

-- +goose Down
DROP TABLE log_counts_hour;
