-- +goose Up
-- log_counts_hour: the per-minute rollup summed by hour (hour = the hour's first millisecond),
-- kept in the same transactions as log_counts. The day's stats in hourly buckets read 24 hours
-- times the levels instead of 1,440 minutes times the levels.
--
-- Both rollups are kept in their primary key's order (WITHOUT ROWID), n beside the key: a range
-- of either is one range of one b-tree, where a rowid table reads the key's index and then looks
-- each row up in the table. log_counts is rebuilt so, its rows copied.
CREATE TABLE log_counts_hour (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    hour       INTEGER NOT NULL,
    level      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, hour, level)
) WITHOUT ROWID;
INSERT INTO log_counts_hour (project_id, hour, level, n)
SELECT project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level, sum(n) FROM log_counts
GROUP BY project_id, minute - ((minute % 3600000) + 3600000) % 3600000, level;
CREATE TABLE log_counts_by_key (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     INTEGER NOT NULL,
    level      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, minute, level)
) WITHOUT ROWID;
INSERT INTO log_counts_by_key (project_id, minute, level, n) SELECT project_id, minute, level, n FROM log_counts;
DROP TABLE log_counts;
ALTER TABLE log_counts_by_key RENAME TO log_counts;

-- +goose Down
CREATE TABLE log_counts_by_rowid (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     INTEGER NOT NULL,
    level      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, minute, level)
);
INSERT INTO log_counts_by_rowid (project_id, minute, level, n) SELECT project_id, minute, level, n FROM log_counts;
DROP TABLE log_counts;
ALTER TABLE log_counts_by_rowid RENAME TO log_counts;
DROP TABLE log_counts_hour;
