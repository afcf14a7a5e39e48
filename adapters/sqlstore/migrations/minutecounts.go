package migrations

import (
	"strconv"
	"strings"
)

// Migration 00018 on both engines: the per-minute rollup moves into the hourly one. Each row
// of log_counts_hour (a project, an hour, a level, n) gains the counts of its 60 minutes,
// columns m0 to m59 (MinuteColumns), and log_counts, one row per project, minute and level,
// is dropped.
//
// A rollup row costs its key and its page space whatever it counts: on PostgreSQL about 120
// bytes an entry in log_counts and its key where a project writes two entries a minute (the
// harness's 1,000,000 entries over 30 days and 10 projects), a tenth of all the bytes of an
// entry (the B-tree of its key, whose new rows land in the middle at each project's end, stays
// half full). The hourly row holds all of them in one: 60 four-byte integers (SQLite stores a 0 in
// its record header alone), at most 24 rows a day and level for a project, however many
// entries. The stats statement reads whole hours from n as before and the minutes of the cut
// hours from the columns, one row per hour.
//
// The columns are added with a constant default (no table rewrite on PostgreSQL), filled by one
// statement from log_counts summed by hour (the hourly rows are the per-minute rows summed, the
// two written in the same transactions since 00008), then log_counts is dropped. Down puts the
// per-minute rows back from the columns (those of a count other than 0: log_counts never held
// one) and drops the columns.

// minuteCountsVersion is the number of the migration in goose's sequence.
const minuteCountsVersion = 18

// MinutesPerHour is how many minute columns a row of log_counts_hour holds.
const MinutesPerHour = 60

// MinuteColumns are the columns of log_counts_hour since 00018 holding the counts of the hour's
// minutes, the first minute's first: "m0" to "m59".
func MinuteColumns() []string {
	out := make([]string, MinutesPerHour)
	for i := range out {
		out[i] = "m" + strconv.Itoa(i)
	}
	return out
}

// minuteCountsFill sets the minute columns of every row of log_counts_hour from log_counts:
// its rows summed by hour, each minute (o, its offset in the hour) into its column. The same
// text on both engines (UPDATE ... FROM: PostgreSQL, SQLite since 3.33).
func minuteCountsFill() string {
	var set, sums []string
	for i, c := range MinuteColumns() {
		set = append(set, c+" = c."+c)
		sums = append(sums, "SUM(CASE WHEN o = "+strconv.Itoa(i*60000)+" THEN n ELSE 0 END) AS "+c)
	}
	return "UPDATE log_counts_hour SET " + strings.Join(set, ", ") +
		" FROM (SELECT project_id, minute - o AS hour, level, " + strings.Join(sums, ", ") +
		" FROM (SELECT project_id, minute, level, n, ((minute % 3600000) + 3600000) % 3600000 AS o FROM log_counts) m" +
		" GROUP BY project_id, minute - o, level) c" +
		" WHERE log_counts_hour.project_id = c.project_id AND log_counts_hour.hour = c.hour AND log_counts_hour.level = c.level"
}

// minuteCountsUnfold writes log_counts back from the minute columns: a row for every minute
// whose count is not 0.
func minuteCountsUnfold() string {
	var parts []string
	for i, c := range MinuteColumns() {
		parts = append(parts, "SELECT project_id, hour + "+strconv.Itoa(i*60000)+", level, "+c+" FROM log_counts_hour WHERE "+c+" <> 0")
	}
	return "INSERT INTO log_counts (project_id, minute, level, n) " + strings.Join(parts, " UNION ALL ")
}

// minuteCountsUpPostgres is 00018 on PostgreSQL: one ALTER TABLE adds the columns.
func minuteCountsUpPostgres() string {
	var add []string
	for _, c := range MinuteColumns() {
		add = append(add, "ADD COLUMN "+c+" integer NOT NULL DEFAULT 0")
	}
	return "ALTER TABLE log_counts_hour " + strings.Join(add, ", ") + ";\n" +
		minuteCountsFill() + ";\n" +
		"DROP TABLE log_counts"
}

// minuteCountsDownPostgres is 00018's down on PostgreSQL: log_counts as 00006 made it.
func minuteCountsDownPostgres() string {
	var drop []string
	for _, c := range MinuteColumns() {
		drop = append(drop, "DROP COLUMN "+c)
	}
	return `CREATE TABLE log_counts (
    project_id uuid   NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     bigint NOT NULL,
    level      text   NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, minute, level)
);
` + minuteCountsUnfold() + ";\n" +
		"ALTER TABLE log_counts_hour " + strings.Join(drop, ", ")
}

// minuteCountsUpSQLite is 00018 on SQLite, whose ALTER TABLE adds one column at a time (each
// a change of the schema alone, the rows untouched).
func minuteCountsUpSQLite() string {
	var b strings.Builder
	for _, c := range MinuteColumns() {
		b.WriteString("ALTER TABLE log_counts_hour ADD COLUMN " + c + " INTEGER NOT NULL DEFAULT 0;\n")
	}
	return b.String() + minuteCountsFill() + ";\n" + "DROP TABLE log_counts"
}

// minuteCountsDownSQLite is 00018's down on SQLite: log_counts as 00008 left it (WITHOUT
// ROWID), and the columns dropped one at a time.
func minuteCountsDownSQLite() string {
	var b strings.Builder
	b.WriteString(`CREATE TABLE log_counts (
    project_id TEXT    NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    minute     INTEGER NOT NULL,
    level      TEXT    NOT NULL,
    n          INTEGER NOT NULL,
    PRIMARY KEY (project_id, minute, level)
) WITHOUT ROWID;
`)
	b.WriteString(minuteCountsUnfold() + ";\n")
	for i, c := range MinuteColumns() {
		b.WriteString("ALTER TABLE log_counts_hour DROP COLUMN " + c)
		if i < MinutesPerHour-1 {
			b.WriteString(";\n")
		}
	}
	return b.String()
}
