package migrations

import (
	"context"
	"database/sql"
	"fmt"
	"math"

	"github.com/lib/pq"

	"example.com/obsvc/domain"
)

// Migration 00011 (both engines, in Go because a message's words are domain.WordText, which no
// SQL engine has): the words of every message, indexed, for the query language's word and
// phrase terms.
//   - PostgreSQL: logs.words, the message's WordText (its words joined by single spaces), and
//     logs_words, a GIN index (array_ops) over string_to_array(words, ' '): a needle's words
//     find their entries in the index, and strpos on ' ' || words || ' ' tests the phrase.
//     logs.attr_terms, the hashes of the attributes' terms (AttributeTerms, TermHashes), and
//     logs_attr_terms, a GIN index over them: an attribute equality finds its candidates there.
//   - SQLite: logs_words, a contentless FTS5 table (contentless_delete=1) keyed by logs' rowid,
//     whose ascii tokenizer with "_" a token character splits WordText exactly at its spaces;
//     the store inserts a row's words beside the row, and a trigger removes them with the row
//     (deletes, the retention sweep, a project's cascade).
//
// The backfill walks projects a batch at a time in id order, and each project's entries a batch
// at a time in (time, id) order, so memory stays bounded however large the table is; on
// PostgreSQL each batch is written back in one statement. Every statement but the read of
// projects names the project, so on Citus each is routed to the node holding it.

// wordsMigrationVersion is the number of the migration in goose's sequence.
const wordsMigrationVersion = 11

// wordsBatch is how many projects or entries the backfill reads at a time.
const wordsBatch = 2000

const (
	wordsUpPostgres = `ALTER TABLE logs ADD COLUMN words text NOT NULL DEFAULT '';
ALTER TABLE logs ADD COLUMN attr_terms int4[]`
	wordsIndexPostgres = `CREATE INDEX logs_words ON logs USING gin (string_to_array(words, ' '));
CREATE INDEX logs_attr_terms ON logs USING gin (attr_terms)`
	wordsDownPostgres = `DROP INDEX logs_attr_terms;
DROP INDEX logs_words;
ALTER TABLE logs DROP COLUMN attr_terms;
ALTER TABLE logs DROP COLUMN words`
	wordsUpSQLite = `CREATE VIRTUAL TABLE logs_words USING fts5(words, content='', contentless_delete=1, tokenize="ascii tokenchars '_'");
CREATE TRIGGER logs_words_delete AFTER DELETE ON logs BEGIN DELETE FROM logs_words WHERE rowid = old.rowid; END`
	wordsDownSQLite = `DROP TRIGGER logs_words_delete;
DROP TABLE logs_words`

	wordsRead = "SELECT time, id, message, attributes FROM logs WHERE project_id = $1 AND (time, id) > ($2, $3) ORDER BY time, id LIMIT $4"
	// wordsWriteBatch: the batch's hashes are one array ($7), each row's a slice of it from o to
	// e (none when o > e): a cast of text to an array is a STABLE function, which Citus refuses
	// in an UPDATE with column references.
	wordsWriteBatch = "UPDATE logs SET words = v.w, attr_terms = CASE WHEN v.o <= v.e THEN ($7::int4[])[v.o:v.e] END" +
		" FROM unnest($2::bigint[], $3::uuid[], $4::text[], $5::int4[], $6::int4[]) AS v(t, i, w, o, e)" +
		" WHERE logs.project_id = $1 AND logs.time = v.t AND logs.id = v.i"
	wordsReadSQLite  = "SELECT rowid, message FROM logs WHERE rowid > ? ORDER BY rowid LIMIT ?"
	wordsWriteSQLite = "INSERT INTO logs_words (rowid, words) VALUES (?, ?)"
)

// WordsStatements is every per-project statement of 00011 as it runs on PostgreSQL, with
// arguments for a project, for the Citus routing test.
func WordsStatements() []Statement {
	return []Statement{
		{"words: read entries", wordsRead, func(p string) []any { return []any{p, int64(math.MinInt64), leastID, wordsBatch} }},
		{"words: write a batch", wordsWriteBatch, func(p string) []any {
			return []any{p, pq.Array([]int64{1}), pq.Array([]string{leastID}), pq.Array([]string{"a b"}), pq.Array([]int32{1}), pq.Array([]int32{2}), pq.Array([]int32{7, 8})}
		}},
	}
}

func execAll(ctx context.Context, tx *sql.Tx, ddl string) error {
	for _, stmt := range splitStatements(ddl) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}

// citusSequential makes the rest of a migration's transaction run DDL on Citus over one
// connection per worker. By default Citus uses several, after which the transaction may not
// read the reference table projects; on plain PostgreSQL the setting is an unused placeholder.
const citusSequential = "SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"

// sequentialDDL is a migration of fixed statements (ddl) on PostgreSQL and Citus, after
// citusSequential.
func sequentialDDL(ddl string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := execAll(ctx, tx, citusSequential); err != nil {
			return err
		}
		return execAll(ctx, tx, ddl)
	}
}

// ddlOnly is a migration of fixed statements (ddl) alone.
func ddlOnly(ddl string) func(context.Context, *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error { return execAll(ctx, tx, ddl) }
}

// upWordsPostgres adds the column, fills it, then builds the index (once, over the filled
// column, rather than entry by entry).
func upWordsPostgres(ctx context.Context, tx *sql.Tx) error {
	// The backfill below reads projects after DDL on the shards (see citusSequential).
	if err := execAll(ctx, tx, citusSequential); err != nil {
		return err
	}
	if err := execAll(ctx, tx, wordsUpPostgres); err != nil {
		return err
	}
	after := leastID
	for {
		ids, err := readStrings(ctx, tx, "SELECT id FROM projects WHERE id > $1 ORDER BY id LIMIT $2", after, wordsBatch)
		if err != nil {
			return fmt.Errorf("migration %05d: read projects: %w", wordsMigrationVersion, err)
		}
		for _, id := range ids {
			if err := projectWords(ctx, tx, id); err != nil {
				return fmt.Errorf("migration %05d: project %s: %w", wordsMigrationVersion, id, err)
			}
		}
		if len(ids) < wordsBatch {
			break
		}
		after = ids[len(ids)-1]
	}
	return execAll(ctx, tx, wordsIndexPostgres)
}

// projectWords fills words and attr_terms on one project's entries (those with any).
func projectWords(ctx context.Context, tx *sql.Tx, project string) error {
	afterTime, afterID := int64(math.MinInt64), leastID
	times, ids, words := make([]int64, 0, wordsBatch), make([]string, 0, wordsBatch), make([]string, 0, wordsBatch)
	from, to, hashes := make([]int32, 0, wordsBatch), make([]int32, 0, wordsBatch), make([]int32, 0, 4*wordsBatch)
	for {
		rows, err := tx.QueryContext(ctx, wordsRead, project, afterTime, afterID, wordsBatch)
		if err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		times, ids, words = times[:0], ids[:0], words[:0]
		from, to, hashes = from[:0], to[:0], hashes[:0]
		n := 0
		for rows.Next() {
			var msg string
			var attrs []byte
			if err := rows.Scan(&afterTime, &afterID, &msg, &attrs); err != nil {
				_ = rows.Close()
				return fmt.Errorf("read entries: %w", err)
			}
			n++
			w, h := domain.WordText(msg), TermHashes(AttributeTerms(attrs))
			if w != "" || len(h) > 0 {
				// PostgreSQL's arrays count from 1: this row's hashes are [o, e] (o > e: none).
				times, ids, words = append(times, afterTime), append(ids, afterID), append(words, w)
				from, to = append(from, int32(len(hashes)+1)), append(to, int32(len(hashes)+len(h)))
				hashes = append(hashes, h...)
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read entries: %w", err)
		}
		if len(ids) > 0 {
			if _, err := tx.ExecContext(ctx, wordsWriteBatch, project, pq.Array(times), pq.Array(ids), pq.Array(words), pq.Array(from), pq.Array(to), pq.Array(hashes)); err != nil {
				return fmt.Errorf("write words: %w", err)
			}
		}
		if n < wordsBatch {
			return nil
		}
	}
}

func downWordsPostgres(ctx context.Context, tx *sql.Tx) error {
	return execAll(ctx, tx, wordsDownPostgres)
}

// upWordsSQLite creates the FTS5 table and its trigger and indexes every stored message, a
// batch of rows at a time in rowid order.
func upWordsSQLite(ctx context.Context, tx *sql.Tx) error {
	if err := execAll(ctx, tx, wordsUpSQLite); err != nil {
		return err
	}
	return backfillSQLite(ctx, tx, wordsMigrationVersion, wordsReadSQLite, wordsWriteSQLite, func(msg []byte) string { return domain.WordText(string(msg)) })
}

// backfillSQLite fills an FTS5 table of SQLite from logs, a batch of rows at a time in rowid
// order: read selects a row's rowid and one column (rowid > ?, ORDER BY rowid, LIMIT ?), text
// makes what write indexes for the row from the column ("" for nothing).
func backfillSQLite(ctx context.Context, tx *sql.Tx, version int, read, write string, text func([]byte) string) error {
	type row struct {
		rowid int64
		text  string
	}
	var after int64 = math.MinInt64
	batch := make([]row, 0, wordsBatch)
	for {
		rows, err := tx.QueryContext(ctx, read, after, wordsBatch)
		if err != nil {
			return fmt.Errorf("migration %05d: read entries: %w", version, err)
		}
		batch = batch[:0]
		n := 0
		for rows.Next() {
			var col []byte
			if err := rows.Scan(&after, &col); err != nil {
				_ = rows.Close()
				return fmt.Errorf("migration %05d: read entries: %w", version, err)
			}
			n++
			if t := text(col); t != "" {
				batch = append(batch, row{after, t})
			}
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("migration %05d: read entries: %w", version, err)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("migration %05d: read entries: %w", version, err)
		}
		for _, r := range batch {
			if _, err := tx.ExecContext(ctx, write, r.rowid, r.text); err != nil {
				return fmt.Errorf("migration %05d: index: %w", version, err)
			}
		}
		if n < wordsBatch {
			return nil
		}
	}
}

func downWordsSQLite(ctx context.Context, tx *sql.Tx) error { return execAll(ctx, tx, wordsDownSQLite) }
