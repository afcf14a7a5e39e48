package migrations

import "strings"

// Migration 00019 on both engines: the indexes of the field filters end in time, not (time,
// id), and those of nullable fields hold only the entries that have the field.
//
// Since 00001 each index of a field filter, (project_id, FIELD, time, id), ended in the
// listing order, so that a filtered page was one index range read in order. The id, 16 bytes
// on PostgreSQL (a uuid) and 36 on SQLite (its text) in every key, only orders the entries of
// one project and value written in the same microsecond; the row's place in the table that
// every index entry holds (PostgreSQL's ctid, SQLite's rowid) keeps those keys apart. Without
// it a page is still one index range read in time order: the entries of one time are put in id
// order as they come (PostgreSQL: an Incremental Sort over the index scan; SQLite: a sorter for
// the last term of the ORDER BY), and a cursor's (time, id) bounds the range by its time, its
// id tested on the entries of that time.
//
// logs_user and logs_subject become partial, WHERE the field IS NOT NULL (logs_trace was
// already): an entry without the field was in them only to be skipped, and, on PostgreSQL, an
// index whose time follows a column a listing does not filter on would otherwise be a way to
// read any listing by time: with keys ending in time (a cursor's (time, id) read there as a
// condition on time alone), the planner read a q listing by time through all of a project's
// logs_subject and sorted it (5,084 buffers on the plan test's table, against 201 through the
// primary key). A partial index serves only the listings that filter on its field.
//
// logs_level keeps (time, id) on PostgreSQL: level is never NULL, and with keys ending in time
// the generic plan of a level listing with a time range became a bitmap of the project's whole
// range. On SQLite, where the store names the index of a field filter (listTable), it
// ends in time too.
//
// Each index is dropped and built again in the migration's transaction: one read of the table
// per index, nothing rewritten.

// fieldIndexesVersion is the number of the migration in goose's sequence.
const fieldIndexesVersion = 19

// fieldIndex is an index of a field filter: its name, its columns before time, its partial
// condition since 00019 and before (empty for none), and whether PostgreSQL keeps it as it was.
type fieldIndex struct {
	name, lead, where, whereBefore string
	postgresKeeps                  bool
}

var fieldIndexes = []fieldIndex{
	{"logs_user", "project_id, user_id", " WHERE user_id IS NOT NULL", "", false},
	{"logs_level", "project_id, level", "", "", true},
	{"logs_subject", "project_id, subject", " WHERE subject IS NOT NULL", "", false},
	{"logs_trace", "project_id, trace_id", " WHERE trace_id IS NOT NULL", " WHERE trace_id IS NOT NULL", false},
}

// fieldIndexesDDL is 00019 up (or down) on PostgreSQL (or SQLite).
func fieldIndexesDDL(up, postgres bool) string {
	var stmts []string
	for _, ix := range fieldIndexes {
		if postgres && ix.postgresKeeps {
			continue
		}
		tail, where := "time", ix.where
		if !up {
			tail, where = "time, id", ix.whereBefore
		}
		stmts = append(stmts, "DROP INDEX "+ix.name, "CREATE INDEX "+ix.name+" ON logs ("+ix.lead+", "+tail+")"+where)
	}
	return strings.Join(stmts, ";\n")
}
