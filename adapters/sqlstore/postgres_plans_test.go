package sqlstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

func ptr[T any](v T) *T { return &v }

// traceID is the trace id of number n: 32 lower-case hex digits.
func traceID(n int) string { return fmt.Sprintf("%032x", n) }

// planNode is one node of an EXPLAIN (FORMAT JSON) plan.
type planNode struct {
	NodeType   string     `json:"Node Type"`
	Relation   string     `json:"Relation Name"`
	Index      string     `json:"Index Name"`
	Presorted  []string   `json:"Presorted Key"` // of an Incremental Sort
	ActualRows float64    `json:"Actual Rows"`   // with ANALYZE
	Plans      []planNode `json:"Plans"`
}

func (n planNode) walk(fn func(planNode)) {
	fn(n)
	for _, c := range n.Plans {
		c.walk(fn)
	}
}

func (n planNode) String() string {
	s := n.NodeType
	if n.Relation != "" {
		s += " on " + n.Relation
	}
	if n.Index != "" {
		s += " using " + n.Index
	}
	if len(n.Plans) > 0 {
		var kids []string
		for _, c := range n.Plans {
			kids = append(kids, c.String())
		}
		s += " [" + strings.Join(kids, ", ") + "]"
	}
	return s
}

// mustParse is the query language's tree of text.
func mustParse(t *testing.T, text string) domain.Query {
	t.Helper()
	q, err := domain.ParseQuery(text, domain.DefaultLimits().Query)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", text, err)
	}
	return q
}

// explain plans query on conn. With generic set it plans the statement as a prepared statement
// the store reuses (plan_cache_mode = force_generic_plan): the store keeps a prepared statement
// per listing shape and connection, and PostgreSQL switches those to a generic plan, blind to the
// parameter values, once it finds that no worse than the custom ones.
func explain(t *testing.T, conn *sqlx.Conn, query string, args []any, generic bool) planNode {
	t.Helper()
	ctx := t.Context()
	stmt := "EXPLAIN (FORMAT JSON) " + query
	if generic {
		for _, setup := range []string{"SET plan_cache_mode = force_generic_plan", "PREPARE q AS " + query} {
			if _, err := conn.ExecContext(ctx, setup); err != nil {
				t.Fatalf("%s: %v", setup, err)
			}
		}
		defer func() {
			if _, err := conn.ExecContext(context.Background(), "DEALLOCATE q; RESET plan_cache_mode"); err != nil {
				t.Fatal(err)
			}
		}()
		lits := make([]string, len(args))
		for i, a := range args {
			switch v := a.(type) {
			case string:
				lits[i] = pq.QuoteLiteral(v)
			default:
				lits[i] = fmt.Sprint(v)
			}
		}
		stmt, args = "EXPLAIN (FORMAT JSON) EXECUTE q("+strings.Join(lits, ", ")+")", nil
	}
	return planOf(t, conn, stmt, args)
}

// planOf runs stmt, an EXPLAIN (FORMAT JSON) of one statement, and returns its plan.
func planOf(t *testing.T, conn *sqlx.Conn, stmt string, args []any) planNode {
	t.Helper()
	var out []byte
	if err := conn.QueryRowContext(t.Context(), stmt, args...).Scan(&out); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", out, err)
	}
	return plans[0].Plan
}

// planWant is what a plan must show.
type planWant struct {
	indexes []string // logs must be read through one of these, never a Seq Scan
	ordered bool     // read in listing order by an Index (Only) Scan, no Sort but of one time's entries: LIMIT stops early
}

func checkPlan(t *testing.T, plan planNode, want planWant) {
	t.Helper()
	var used []string
	ok := true
	plan.walk(func(n planNode) {
		switch n.NodeType {
		case "Seq Scan":
			ok = false
		case "Sort":
			ok = ok && !want.ordered
		case "Incremental Sort":
			// Rows read in time order (an index ending in time, migration 00019), the entries
			// of one time put in id order as they come: LIMIT still stops early.
			ok = ok && (!want.ordered || slices.Equal(n.Presorted, []string{`logs."time"`}))
		case "Index Scan", "Index Only Scan":
			if n.Relation == "logs" {
				used = append(used, n.Index)
			}
		case "Bitmap Heap Scan":
			ok = ok && !want.ordered
		case "Bitmap Index Scan":
			used = append(used, n.Index) // a bitmap index scan names the index, not the table
		default:
			if n.Relation == "logs" && n.NodeType != "ModifyTable" {
				ok = false // any other way of reading logs
			}
		}
	})
	for _, u := range used {
		ok = ok && slices.Contains(want.indexes, u)
	}
	if !ok || len(used) == 0 {
		t.Errorf("plan %v\nwant logs read only through %v%s, no Seq Scan", plan, want.indexes, map[bool]string{true: " in index order (no Sort, no bitmap)"}[want.ordered])
	}
}

// TestPostgresQueriesUseIndexes shows, on a table of 200,000 entries over 20 projects, that every
// filter combination the API allows, in both orders and with or without a cursor, reads logs
// through the index made for it and never sequentially; a listing whose filter matches many rows
// reads them in index order, so its cost does not grow with the matches. A filter matching a few
// dozen rows may be planned as a bitmap read and a sort of those rows, which is the cheaper plan
// there, and so may DELETE, which reads every match anyway.
func TestPostgresQueriesUseIndexes(t *testing.T) {
	skipUnderRace(t)
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	ctx := t.Context()
	var projects []string
	for i := range 20 {
		id := uuid.Must(uuid.NewV7()).String()
		p := domain.Project{ID: id, Name: fmt.Sprint("p", i), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
		if i%2 == 1 {
			p.RetentionDays = ptr(1) // the listed project has a retention: its bound is a value
		}
		if err := s.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, id)
	}
	conn, err := sqlstore.ReadDB(s).Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ALTER TABLE logs SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	// In each project of 10,000 entries: half belong to user "heavy", the other half to 250 users
	// of 20 entries each ("u1" among them); levels rotate, 2,500 entries each; the attribute
	// session has 1,000 values of 10 entries each, svc 4 of 2,500 each. The first 5,000
	// belong to 100 traces of 50 consecutive entries each (trace 1 among them), the rest to none.
	levels := []string{"debug", "info", "warn", "error"}
	for b := range 20 {
		batch := make([]domain.LogEntry, 10_000)
		for i := range batch {
			n := b*10_000 + i
			k := n / 20 // the entry's position in its project
			user := "heavy"
			if k%2 == 1 {
				user = fmt.Sprint("u", k%500)
			}
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[n%20], Time: int64(n), Level: levels[(k/2)%4],
				Message: fmt.Sprint("Message ", k%7), UserID: ptr(user), Subject: ptr(fmt.Sprint("s", k%100)),
				Attributes: json.RawMessage(fmt.Sprintf(`{"session":"s%d","svc":"c%d"}`, k%1000, k%4))}
			if k < 5_000 {
				batch[i].TraceID = ptr(traceID(1 + k/50))
			}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	// ANALYZE reads a random sample of 300 x default_statistics_target rows; at 1000 the sample
	// is every one of the 200,000 rows, so the statistics, and with them the plans checked
	// below, are the same in every run. (At the default 100, a 30,000-row sample now and then
	// made a DELETE by levels read the project through logs_subject.) Autovacuum is off for the
	// table (set before the rows go in), so that its own sampled ANALYZE cannot replace them.
	for _, stmt := range []string{"SET default_statistics_target = 1000", "ANALYZE logs", "RESET default_statistics_target"} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	p := projects[3]
	pkey, byUser, byLevel, byTrace := []string{"logs_pkey"}, []string{"logs_user"}, []string{"logs_level"}, []string{"logs_trace"}
	bySubject := []string{"logs_subject"}
	byTermsOrProject := slices.Concat([]string{"logs_attr_terms"}, pkey, byUser, byLevel, bySubject)
	trace := ptr(traceID(1))
	start, end := ptr[int64](50_000), ptr[int64](150_000)
	cases := []struct {
		name    string
		f       domain.LogFilter
		indexes []string
		ordered bool // for the listing's custom plan
	}{
		{"project", domain.LogFilter{ProjectID: p}, pkey, true},
		{"project+time", domain.LogFilter{ProjectID: p, Start: start, End: end}, pkey, true},
		{"project+start", domain.LogFilter{ProjectID: p, Start: start}, pkey, true},
		// Half the project's entries are the heavy user's: reading the project in order and
		// testing the user reads about two entries a row, in order, and is as good a plan.
		{"project+heavy user", domain.LogFilter{ProjectID: p, UserID: ptr("heavy")}, slices.Concat(byUser, pkey), true},
		{"project+heavy user+time", domain.LogFilter{ProjectID: p, UserID: ptr("heavy"), Start: start, End: end}, slices.Concat(byUser, pkey), true},
		{"project+rare user", domain.LogFilter{ProjectID: p, UserID: ptr("u1")}, byUser, false},
		{"project+rare user+time", domain.LogFilter{ProjectID: p, UserID: ptr("u1"), Start: start, End: end}, byUser, false},
		{"project+level", domain.LogFilter{ProjectID: p, Level: ptr("error")}, byLevel, true},
		{"project+level+time", domain.LogFilter{ProjectID: p, Level: ptr("error"), Start: start, End: end}, byLevel, true},
		{"project+end+level", domain.LogFilter{ProjectID: p, Level: ptr("warn"), End: end}, byLevel, true},
		{"project+heavy user+level", domain.LogFilter{ProjectID: p, UserID: ptr("heavy"), Level: ptr("warn")}, slices.Concat(byUser, byLevel), true},
		{"project+all filters", domain.LogFilter{ProjectID: p, UserID: ptr("u1"), Level: ptr("warn"), Start: start, End: end}, slices.Concat(byUser, byLevel), false},
		{"unknown project", domain.LogFilter{ProjectID: uuid.Must(uuid.NewV7()).String()}, pkey, true},
		// A trace is a few dozen entries: every combination with trace_id reads them by an index
		// (the trace's, or one of a filter as selective), never the table.
		{"project+trace", domain.LogFilter{ProjectID: p, TraceID: trace}, byTrace, false},
		{"project+trace+time", domain.LogFilter{ProjectID: p, TraceID: trace, Start: ptr[int64](0), End: end}, byTrace, false},
		{"project+trace+start", domain.LogFilter{ProjectID: p, TraceID: trace, Start: ptr[int64](0)}, byTrace, false},
		{"project+trace+heavy user", domain.LogFilter{ProjectID: p, TraceID: trace, UserID: ptr("heavy")}, slices.Concat(byTrace, byUser), false},
		{"project+trace+rare user", domain.LogFilter{ProjectID: p, TraceID: trace, UserID: ptr("u1")}, slices.Concat(byTrace, byUser), false},
		{"project+trace+level", domain.LogFilter{ProjectID: p, TraceID: trace, Level: ptr("error")}, slices.Concat(byTrace, byLevel), false},
		{"project+trace+user+level", domain.LogFilter{ProjectID: p, TraceID: trace, UserID: ptr("heavy"), Level: ptr("warn")}, slices.Concat(byTrace, byUser, byLevel), false},
		{"project+trace+all filters", domain.LogFilter{ProjectID: p, TraceID: trace, UserID: ptr("u1"), Level: ptr("warn"), Start: start, End: end}, slices.Concat(byTrace, byUser, byLevel), false},
		{"project+unknown trace", domain.LogFilter{ProjectID: p, TraceID: ptr(traceID(1 << 40))}, byTrace, false},
		// A subject is 100 entries of a project: read by its index, with any other filter too.
		{"project+subject", domain.LogFilter{ProjectID: p, Subject: ptr("s1")}, bySubject, false},
		{"project+subject+time", domain.LogFilter{ProjectID: p, Subject: ptr("s1"), Start: start, End: end}, bySubject, false},
		{"project+subject+levels", domain.LogFilter{ProjectID: p, Subject: ptr("s1"), Levels: []string{"warn", "error"}}, slices.Concat(bySubject, byLevel), false},
		{"project+subject+user+q", domain.LogFilter{ProjectID: p, Subject: ptr("s1"), UserID: ptr("heavy"), Q: ptr("message")}, slices.Concat(bySubject, byUser), false},
		{"project+subject+trace", domain.LogFilter{ProjectID: p, Subject: ptr("s1"), TraceID: trace}, slices.Concat(bySubject, byTrace), false},
		{"project+rare user+q", domain.LogFilter{ProjectID: p, UserID: ptr("u1"), Q: ptr("zz")}, byUser, false},
		{"project+trace+q", domain.LogFilter{ProjectID: p, TraceID: trace, Q: ptr("%")}, byTrace, false},
		// q alone may read the project's range, nothing more. PostgreSQL has no statistics for
		// the folded-message expression and guesses a match of 0.5% of rows, so it may read
		// the range as a bitmap and sort the matches instead of reading in order.
		{"project+q", domain.LogFilter{ProjectID: p, Q: ptr("MESSAGE 1")}, pkey, false},
		{"project+q+time", domain.LogFilter{ProjectID: p, Q: ptr("nothing"), Start: start, End: end}, pkey, false},
		{"project+long q", domain.LogFilter{ProjectID: p, Q: ptr(strings.Repeat("message 1 ", 10))}, pkey, false}, // a regular expression
		{"project+levels", domain.LogFilter{ProjectID: p, Levels: []string{"warn", "error"}}, slices.Concat(pkey, byLevel), false},
		// An attribute equality: its candidates from logs_attr_terms, which PostgreSQL may AND
		// with the project's entries from an index leading with project_id (here, 10,000 of
		// them, it does), or the project's entries read in order and tested.
		{"project+rare attribute", domain.LogFilter{ProjectID: p, Parsed: mustParse(t, "session:s1")}, byTermsOrProject, false},
		{"project+rare attribute+time", domain.LogFilter{ProjectID: p, Parsed: mustParse(t, "session:s1"), Start: start, End: end}, byTermsOrProject, false},
		{"project+common attribute", domain.LogFilter{ProjectID: p, Parsed: mustParse(t, "svc:c1")}, byTermsOrProject, false},
	}
	for _, c := range cases {
		for _, desc := range []bool{false, true} {
			for _, cursor := range []bool{false, true} {
				// Now as the service sets it: the retention bound is part of every listing.
				q := domain.LogQuery{LogFilter: c.f, Desc: desc, Limit: 100, Now: 150_000}
				if cursor {
					q.After = &domain.Cursor{Time: 100_000, ID: uuid.Must(uuid.NewV7()).String(), Desc: desc}
				}
				query, args := sqlstore.ListSQL(s, q)
				t.Run(fmt.Sprintf("%s/desc=%v/cursor=%v", c.name, desc, cursor), func(t *testing.T) {
					checkPlan(t, explain(t, conn, query, args, false), planWant{indexes: c.indexes, ordered: c.ordered})
				})
				if c.f.Parsed.Root != nil {
					continue // a statement shaped by a tree is never prepared (queryRows): no generic plan
				}
				t.Run(fmt.Sprintf("%s/desc=%v/cursor=%v/generic", c.name, desc, cursor), func(t *testing.T) {
					checkPlan(t, explain(t, conn, query, args, true), planWant{indexes: c.indexes})
				})
			}
		}
		// Every B-tree index but logs_tail (keyed by the batch, migration 00017) leads with
		// project_id, so for a DELETE by project (and time) alone any of them bounds the read
		// to the project.
		indexes := c.indexes
		if c.f.UserID == nil && c.f.Level == nil && c.f.TraceID == nil && c.f.Subject == nil && c.f.Levels == nil {
			indexes = slices.Concat(c.indexes, pkey, byUser, byLevel, bySubject)
		}
		query, args := sqlstore.DeleteSQL(s, c.f)
		t.Run(c.name+"/delete", func(t *testing.T) {
			checkPlan(t, explain(t, conn, query, args, false), planWant{indexes: indexes})
		})
	}

	// A next page starts reading at its cursor, however deep: the buffers a page 7,500 entries
	// into the project reads stay near those of the first page. With the retention bound (or a
	// time bound) ahead of the cursor the scan began at that bound and read every entry before
	// the cursor: about 3x the first page's buffers here, and in proportion to the depth. (Newest
	// first was not affected; it is checked all the same.)
	for _, c := range []struct {
		name string
		f    domain.LogFilter
		desc bool
	}{
		{"project", domain.LogFilter{ProjectID: p}, false},
		{"project+start", domain.LogFilter{ProjectID: p, Start: ptr[int64](0)}, false},
		{"project+end, newest first", domain.LogFilter{ProjectID: p, End: ptr[int64](199_999)}, true},
	} {
		t.Run("deep page/"+c.name, func(t *testing.T) {
			q := domain.LogQuery{LogFilter: c.f, Desc: c.desc, Limit: 100, Now: 200_000}
			first := pageBuffers(t, conn, s, q)
			// The cursor is the entry 7,500 entries from the start of the listing's order.
			q.After = &domain.Cursor{Time: 150_003, ID: uuid.Must(uuid.NewV7()).String(), Desc: c.desc}
			if c.desc {
				q.After.Time = 50_003
			}
			// Twice the first page's: the heap pages of 100 entries vary with where they lie
			// in the batches' runs (a batch's rows go in in key order), 9 to 14 here.
			if deep := pageBuffers(t, conn, s, q); deep > 2*first {
				t.Errorf("a page 7,500 entries in read %d buffers, the first page %d", deep, first)
			}
		})
	}
}

// pageBuffers runs the listing of q under EXPLAIN ANALYZE and returns the buffers it read.
func pageBuffers(t *testing.T, conn *sqlx.Conn, s *sqlstore.Store, q domain.LogQuery) int {
	t.Helper()
	query, args := sqlstore.ListSQL(s, q)
	return queryBuffers(t, conn, query, args)
}

// TestPostgresTermsReadOneProject: a word or an attribute equality reads from its GIN index the
// candidates of the project asked about alone (migration 00016), however many other projects
// hold the same word or value. Ten projects hold the same entries; the index scan of each
// question must hand on the listed project's matches, not ten times as many.
func TestPostgresTermsReadOneProject(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	ctx := t.Context()
	var projects []string
	for i := range 10 {
		id := uuid.Must(uuid.NewV7()).String()
		if err := s.CreateProject(ctx, domain.Project{ID: id, Name: fmt.Sprint("p", i), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, id)
	}
	// Each project: 10,000 entries, 10 of each of 1,000 sessions and of 1,000 order numbers.
	for _, p := range projects {
		batch := make([]domain.LogEntry, 10_000)
		for k := range batch {
			batch[k] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(k), Level: "info",
				Message:    fmt.Sprintf("order o%d shipped", k%1000),
				Attributes: json.RawMessage(fmt.Sprintf(`{"session":"s%d"}`, k%1000))}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := sqlstore.ReadDB(s).Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ANALYZE logs"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ query, index string }{
		{"session:s17", "logs_attr_terms"},
		{"o17", "logs_words"},
	} {
		q := domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: projects[3], Parsed: mustParse(t, c.query)}, Desc: true, Limit: 100, Now: 10_000}
		query, args := sqlstore.ListSQL(s, q)
		if read := indexRows(t, conn, query, args, c.index); read != 10 {
			t.Errorf("%s: %s handed on %v rows, want the project's 10", c.query, c.index, read)
		}
	}
}

// indexRows runs query under EXPLAIN ANALYZE and returns how many rows its bitmap scan of index
// handed on (-1 when the plan reads no bitmap of index, or more than one).
func indexRows(t *testing.T, conn *sqlx.Conn, query string, args []any, index string) float64 {
	t.Helper()
	plan := planOf(t, conn, "EXPLAIN (ANALYZE, FORMAT JSON) "+query, args)
	read, scans := -1.0, 0
	plan.walk(func(n planNode) {
		if n.NodeType == "Bitmap Index Scan" && n.Index == index {
			read, scans = n.ActualRows, scans+1
		}
	})
	if scans != 1 {
		t.Logf("%d bitmap scans of %s in plan %s", scans, index, plan)
		return -1
	}
	return read
}
