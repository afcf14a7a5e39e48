package sqlstore_test

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestWordsMigrationIndexesStoredEntries upgrades a database that the previous release (schema
// version 10) filled to migration 00011, on both engines: entries written before the upgrade,
// more than one batch of the backfill in one project, are found by their words, phrases and
// prefixes afterwards (each project's own), an entry written after is found beside them, and a
// deleted old entry is no longer found. On SQLite the upgrade runs 00012 too, whose backfill
// indexes the old entries' attribute terms: the attribute equalities below read them (fewer
// than 5,000 entries hold each value).
func TestWordsMigrationIndexesStoredEntries(t *testing.T) {
	skipUnderRace(t)
	onBothEngines(t, testWordsMigration)
}

// oldWordEntries is how many entries the first project holds: more than one batch (2,000).
const oldWordEntries = 2300

func testWordsMigration(t *testing.T, engine, dsn string, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	wordsMigration(t, engine, dsn, nil, timeArg, open)
}

// wordsMigration runs the upgrade on a database at dsn; prepare, when not nil, runs on the
// schema of version 10 before the old entries are written (Citus distributes it).
func wordsMigration(t *testing.T, engine, dsn string, prepare func(*sql.DB) error, timeArg func(time.Time) any, open func() (*sqlstore.Store, error)) {
	ctx := t.Context()
	raw, bind := migratedTo(t, engine, dsn, 10)
	if prepare != nil {
		if err := prepare(raw); err != nil {
			t.Fatalf("prepare the schema of version 10: %v", err)
		}
	}
	created := time.Now().UTC().Truncate(time.Microsecond)
	projects := []string{uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()}
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	insert := bind("INSERT INTO logs (project_id, time, id, level, message, attributes) VALUES (?, ?, ?, 'info', ?, ?)")
	ids := map[string]string{} // by message, for the first project
	for pi, p := range projects {
		if _, err := tx.ExecContext(ctx, bind("INSERT INTO projects (id, name, created_at, updated_at) VALUES (?, 'p', ?, ?)"), p, timeArg(created), timeArg(created)); err != nil {
			t.Fatal(err)
		}
		n := oldWordEntries
		if pi == 1 {
			n = 3
		}
		for i := range n {
			msg := fmt.Sprintf("Request %d: Payment DECLINED, retry_after=%d", i, i%7)
			switch i {
			case 0:
				msg = "Needle 739a4b5df5876246 found"
			case 1:
				msg = "ÜNÏCÖDÉ, naïve!"
			case 2:
				msg = ""
			}
			id := uuid.Must(uuid.NewV7()).String()
			// Attributes on some: a number, the same number as a string, or neither.
			var attrs any
			switch i % 3 {
			case 0:
				attrs = fmt.Sprintf(`{"http.status":%d.0,"svc":"cart"}`, 500+i%2)
			case 1:
				attrs = `{"http.status":"500"}`
			}
			if _, err := tx.ExecContext(ctx, insert, p, int64(i), id, msg, attrs); err != nil {
				t.Fatalf("write an old entry: %v", err)
			}
			if pi == 0 {
				ids[msg] = id
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	s := upgrade(t, raw, open)

	count := func(root domain.QueryNode) int {
		return len(listIDs(t, s, domain.LogFilter{ProjectID: projects[0], Parsed: domain.Query{Root: root}}))
	}
	fiveHundred := 500.0
	words := func(text string, prefix bool) domain.QueryNode {
		return domain.QueryWords{Words: domain.Words(text), Prefix: prefix}
	}
	for _, c := range []struct {
		root domain.QueryNode
		want int
	}{
		{words("739A4B5DF5876246", false), 1},
		{words("ünïcödé NAÏVE", false), 1},
		{words("payment declined", false), oldWordEntries - 3},
		{words("request 5", false), 1},
		{words("request 2", true), 10 + 100 + 300}, // 20-29, 200-299, 2000-2299 (2 is the empty message)
		{words("retry_after 3", false), 329},       // 3, 10, ..., 2299
		{domain.QueryNot{Term: words("payment", false)}, 3},
		// Attributes written before: i%3 == 1 (767) hold "500", i%6 == 0 (384) hold 500.0.
		{domain.QueryEquals{Field: domain.QueryField{Name: "http.status", Attribute: true}, Value: "500", Number: &fiveHundred}, 767 + 384},
		{domain.QueryEquals{Field: domain.QueryField{Name: "svc", Attribute: true}, Value: "cart"}, 767},
	} {
		if got := count(c.root); got != c.want {
			t.Errorf("%#v: %d entries, want %d", c.root, got, c.want)
		}
	}
	// The other project's old entries are its own.
	if got := len(listIDs(t, s, domain.LogFilter{ProjectID: projects[1], Parsed: domain.Query{Root: words("needle", false)}})); got != 1 {
		t.Errorf("the second project's needle: %d entries, want 1", got)
	}
	// Written after the upgrade: found beside the old ones.
	fresh := domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[0], Time: 1, Level: "info", Message: "needle again"}
	if _, err := s.CreateLogs(ctx, []domain.LogEntry{fresh}, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	if got := count(words("needle", false)); got != 2 {
		t.Errorf("needle after a new entry: %d entries, want 2", got)
	}
	// An old entry deleted takes its words with it.
	if n, err := s.DeleteLogs(ctx, domain.LogFilter{ProjectID: projects[0], Parsed: domain.Query{Root: words("739a4b5df5876246", false)}}); err != nil || n != 1 {
		t.Fatalf("delete the old needle: %d, %v", n, err)
	}
	if got := count(words("needle", false)); got != 1 {
		t.Errorf("needle after the delete: %d entries, want 1", got)
	}
}
