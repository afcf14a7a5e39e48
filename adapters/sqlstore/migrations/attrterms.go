package migrations

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
)

// Migration 00012 (SQLite only, in Go because an entry's terms are AttributeTerms): the terms
// of every entry's attributes, indexed, for the query language's attribute equalities, which
// PostgreSQL's logs_attr_terms (00011) already serves.
//   - logs_terms, a contentless FTS5 table (contentless_delete=1) keyed by logs' rowid, one
//     token per term: its TermHashes hash as TermToken. detail=none: an equality asks whether
//     a row holds a token, never where, so no positions are kept (a token costs a byte or two).
//   - logs_index_delete, one trigger that removes a row's words and terms with the row (deletes,
//     the retention sweep, a project's cascade), in place of 00011's logs_words_delete.
//
// The backfill walks logs a batch at a time in rowid order, so memory stays bounded however
// large the table is.

// termsMigrationVersion is the number of the migration in goose's sequence.
const termsMigrationVersion = 12

const (
	termsUpSQLite = `CREATE VIRTUAL TABLE logs_terms USING fts5(terms, content='', contentless_delete=1, detail=none, tokenize="ascii");
DROP TRIGGER logs_words_delete;
CREATE TRIGGER logs_index_delete AFTER DELETE ON logs BEGIN DELETE FROM logs_words WHERE rowid = old.rowid; DELETE FROM logs_terms WHERE rowid = old.rowid; END`
	termsDownSQLite = `DROP TRIGGER logs_index_delete;
CREATE TRIGGER logs_words_delete AFTER DELETE ON logs BEGIN DELETE FROM logs_words WHERE rowid = old.rowid; END;
DROP TABLE logs_terms`

	termsReadSQLite  = "SELECT rowid, attributes FROM logs WHERE rowid > ? AND attributes IS NOT NULL ORDER BY rowid LIMIT ?"
	termsWriteSQLite = "INSERT INTO logs_terms (rowid, terms) VALUES (?, ?)"
)

// TermToken is the token of logs_terms that stands for a hash of TermHashes: "t" and its eight
// hexadecimal digits, one token to FTS5's ascii tokenizer.
func TermToken(h int32) string {
	s := strconv.FormatUint(uint64(uint32(h)), 16)
	return "t" + strings.Repeat("0", 8-len(s)) + s
}

// TermTokens is what logs_terms holds for an entry's attributes: the tokens of their terms'
// hashes, space-separated; "" when there are none.
func TermTokens(attrs []byte) string {
	hashes := TermHashes(AttributeTerms(attrs))
	tokens := make([]string, len(hashes))
	for i, h := range hashes {
		tokens[i] = TermToken(h)
	}
	return strings.Join(tokens, " ")
}

// upTermsSQLite creates logs_terms and the trigger and indexes every stored entry's attributes,
// a batch of rows at a time in rowid order.
func upTermsSQLite(ctx context.Context, tx *sql.Tx) error {
	if err := execAll(ctx, tx, termsUpSQLite); err != nil {
		return err
	}
	return backfillSQLite(ctx, tx, termsMigrationVersion, termsReadSQLite, termsWriteSQLite, TermTokens)
}

func downTermsSQLite(ctx context.Context, tx *sql.Tx) error { return execAll(ctx, tx, termsDownSQLite) }
