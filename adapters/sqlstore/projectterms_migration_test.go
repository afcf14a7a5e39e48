package sqlstore_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// TestProjectTermsMigration upgrades a PostgreSQL database that the previous release (schema
// version 15) filled to migration 00016, then takes it back down and up again: three projects
// hold the same words and attribute values, in ASCII messages (words derived) and others
// (words stored). After each upgrade a word, a phrase, a prefix and attribute equalities list
// exactly the asked project's entries, and the GIN index of each term hands on that project's
// candidates alone; after the downgrade the previous release's indexes are back and its
// statements find the same entries.
func TestProjectTermsMigration(t *testing.T) {
	ctx := t.Context()
	dsn := pg.NewDatabase(t)
	raw, bind := migratedTo(t, "postgres", dsn, 15)
	const perProject = 3000
	created := time.Now().UTC()
	var projects []string
	want := map[string][]string{} // each query's ids in the first project, sorted below
	for pi := range 3 {
		p := uuid.Must(uuid.NewV7()).String()
		projects = append(projects, p)
		if _, err := raw.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), p, created, created); err != nil {
			t.Fatal(err)
		}
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The previous release's row: words as StoredWords leaves them, attr_terms its hashes.
		insert := bind("INSERT INTO logs (project_id, time, id, level, message, attributes, words, attr_terms, tail_pos) VALUES (?, ?, ?, 'info', ?, ?, ?, ?, ?)")
		for i := range perProject {
			msg := fmt.Sprintf("order o%d shipped to Berlin", i%300)
			if i%2 == 1 {
				msg = fmt.Sprintf("order o%d shipped to Zürich", i%300)
			}
			attrs := fmt.Sprintf(`{"code":%d,"session":"s%d"}`, 500+i%3, i%300)
			id := uuid.Must(uuid.NewV7()).String()
			terms := migrations.TermHashes(migrations.AttributeTerms([]byte(attrs)))
			if _, err := tx.ExecContext(ctx, insert, p, int64(i), id, msg, attrs, migrations.StoredWords(msg), pq.Array(terms), i); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
			if pi == 0 && i%300 == 17 {
				want["o17"] = append(want["o17"], id)
				want[`"o17 shipped"`] = append(want[`"o17 shipped"`], id)
				want["session:s17"] = append(want["session:s17"], id)
				if i%3 == 0 {
					want["session:s17 AND code:500"] = append(want["session:s17 AND code:500"], id)
				}
			}
			if pi == 0 && i%300 == 17 && i%2 == 1 {
				want["o17 zürich"] = append(want["o17 zürich"], id)
			}
			if pi == 0 && i%300 >= 170 && i%300 < 180 {
				want["o17*"] = append(want["o17*"], id)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	want["o17*"] = append(want["o17*"], want["o17"]...)
	if _, err := raw.ExecContext(ctx, "ANALYZE logs"); err != nil {
		t.Fatal(err)
	}
	for _, ids := range want {
		slices.Sort(ids)
	}
	// index is the GIN index the query's whole words or equality read (none for a prefix alone).
	index := map[string]string{"o17": "logs_words", `"o17 shipped"`: "logs_words", "o17 zürich": "logs_words",
		"session:s17": "logs_attr_terms", "session:s17 AND code:500": "logs_attr_terms"}
	ask := func(t *testing.T, s *sqlstore.Store, scoped bool) {
		t.Helper()
		conn, err := sqlstore.ReadDB(s).Connx(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		for text, ids := range want {
			q := domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: projects[0], Parsed: mustParse(t, text)}, Limit: 1000, Now: perProject}
			query, args := sqlstore.ListSQL(s, q)
			var got []string
			if err := conn.SelectContext(ctx, &got, "SELECT id FROM ("+query+") l", args...); err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			slices.Sort(got)
			if !slices.Equal(got, ids) {
				t.Errorf("%s lists %d entries, want the first project's %d", text, len(got), len(ids))
			}
			if ix := index[text]; ix != "" && scoped {
				if read := indexRows(t, conn, query, args, ix); read < 0 || read > float64(len(ids)) {
					t.Errorf("%s: %s handed on %v rows, want at most the project's %d", text, ix, read, len(ids))
				}
			}
		}
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	open := func() (*sqlstore.Store, error) {
		return sqlstore.OpenPostgres(ctx, dsn, sqlstore.DefaultPostgresOptions())
	}
	t.Run("up", func(t *testing.T) { ask(t, openUpgraded(t, open), true) })
	// Down: 00016's down puts back the previous release's indexes, which its statements read.
	t.Run("down", func(t *testing.T) {
		db, err := sqlx.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := sqlstore.MigrateDownTo(ctx, db.DB, "postgres", 15); err != nil {
			t.Fatal(err)
		}
		for ix, def := range map[string]string{
			"logs_words":      "CREATE INDEX logs_words ON public.logs USING gin (string_to_array(",
			"logs_attr_terms": "CREATE INDEX logs_attr_terms ON public.logs USING gin (attr_terms)",
		} {
			var got string
			if err := db.QueryRowContext(ctx, "SELECT pg_get_indexdef(CAST($1 AS regclass))", ix).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(got, def) {
				t.Errorf("after the down migration %s is %s, want the previous release's %s...", ix, got, def)
			}
		}
		// The previous release's statements of a word and an equality, by its indexes.
		for _, c := range []struct {
			query string
			arg   any
			want  []string
		}{
			{"string_to_array(" + migrations.WordsExpr + ", ' ') @> CAST($2 AS text[])", pq.Array([]string{"o17"}), want["o17"]},
			{"attr_terms && CAST($2 AS int4[])", pq.Array(migrations.TermHashes([]string{migrations.StringTerm("session", "s17")})), want["session:s17"]},
		} {
			var got []string
			if err := db.SelectContext(ctx, &got, "SELECT id FROM logs WHERE project_id = $1 AND "+c.query+" ORDER BY id", projects[0], c.arg); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s finds %d entries, want %d", c.query, len(got), len(c.want))
			}
		}
	})
	t.Run("up again", func(t *testing.T) { ask(t, openUpgraded(t, open), true) })
}
