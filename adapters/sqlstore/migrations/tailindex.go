package migrations

// Migration 00017 on both engines: logs_tail, the index a tail read takes from a batch to its
// rows, is keyed by the batch alone. Since 00010 a tail read finds a batch's transaction (or, on
// SQLite, its number) in tail_batches, by the project's key, and names the project again for
// the rows (so that it stays on one shard on Citus); the index does not need to.
//
// On PostgreSQL the index was (project_id, tail_tx, tail_pos): 40 bytes a key, new keys landing
// in the middle of the index at each project's end, where a full page splits in half and its
// left half is never filled again (86 bytes an entry at 1,000,000). Keyed by tail_tx alone, the
// new keys land at the index's end, whose pages fill to the fill factor, and the rows of one
// transaction share one key, which B-tree deduplication stores once with a list of the rows
// (7 bytes an entry in the same test). A read sorts a batch's rows by tail_pos, one batch at a
// time. On SQLite, whose indexes do not deduplicate, it is (tail_tx, tail_pos):
// the 36-byte text project id left out of every key, the rows of a batch still in order.
//
// Partial on both: rows written before 00007 have no tail_tx and are never read by a tail;
// a read's join on tail_tx = tx implies tail_tx IS NOT NULL, so both planners take the index.
// The index is rebuilt in the migration's transaction, reading the table once; nothing is
// rewritten.

// tailIndexVersion is the number of the migration in goose's sequence.
const tailIndexVersion = 17

const (
	tailIndexUpPostgres = `DROP INDEX logs_tail;
CREATE INDEX logs_tail ON logs (tail_tx) WHERE tail_tx IS NOT NULL`
	tailIndexDownPostgres = `DROP INDEX logs_tail;
CREATE INDEX logs_tail ON logs (project_id, tail_tx, tail_pos)`
	tailIndexUpSQLite = `DROP INDEX logs_tail;
CREATE INDEX logs_tail ON logs (tail_tx, tail_pos) WHERE tail_tx IS NOT NULL`
	tailIndexDownSQLite = `DROP INDEX logs_tail;
CREATE INDEX logs_tail ON logs (project_id, tail_tx, tail_pos)`
)
