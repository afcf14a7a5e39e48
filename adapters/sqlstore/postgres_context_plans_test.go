package sqlstore_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestPostgresContextUsesThePrimaryKey shows, on 4 projects of 10,000 entries, that the three
// statements of a context read logs only through the primary key (project_id, time, id), never
// sequentially, and that each side is a keyset read from the anchor that stops after its LIMIT:
// the buffers a side reads do not grow with how deep in the project its anchor is. The anchor
// itself is found by its id within the project's range of the key (there is no index on the id
// alone), an index-only read.
func TestPostgresContextUsesThePrimaryKey(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	ctx := t.Context()
	var projects []string
	for i := range 4 {
		id := uuid.Must(uuid.NewV7()).String()
		p := domain.Project{ID: id, Name: fmt.Sprint("p", i), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC(), RetentionDays: ptr(1)}
		if err := s.CreateProject(ctx, p); err != nil {
			t.Fatal(err)
		}
		projects = append(projects, id)
	}
	levels := []string{"debug", "info", "warn", "error"}
	var anchors []domain.LogEntry // entries of projects[1] at positions 100, 5,000 and 9,900
	for b := range 4 {
		batch := make([]domain.LogEntry, 10_000)
		for i := range batch {
			n := b*10_000 + i
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[n%4], Time: int64(n / 2), Level: levels[(n/4)%4],
				Message: fmt.Sprint("Message ", n%7)}
			if k := n / 4; n%4 == 1 && (k == 100 || k == 5_000 || k == 9_900) {
				anchors = append(anchors, batch[i])
			}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	conn := analyzedConn(t, s)
	pkey := []string{"logs_pkey"}
	level, err := domain.ParseQuery("level:error", domain.DefaultLimits().Query)
	if err != nil {
		t.Fatal(err)
	}
	var buffers [2][]int // per side, per anchor
	var found []int      // the anchor's read, per anchor
	for i, a := range anchors {
		for _, narrowed := range []bool{false, true} {
			q := domain.ContextQuery{ProjectID: a.ProjectID, ID: a.ID, Before: ptr(50), After: ptr(50), Now: 20_000}
			if narrowed {
				q.Query, q.Parsed = ptr("level:error"), level
			}
			queries, args := sqlstore.ContextSQL(s, q, a.Time, a.ID)
			for j, query := range queries {
				name := fmt.Sprintf("anchor %d/narrowed=%v/%s", i, narrowed, []string{"entry", "before", "after"}[j])
				indexes := pkey
				if narrowed && j > 0 {
					indexes = []string{"logs_pkey", "logs_level"} // level:error is served by the level's index
				}
				// The side after is read in index order, so that its LIMIT stops the read,
				// unless what is left of the project after the anchor is small (the anchor
				// 100 entries from the end), where a bitmap read and a sort are cheaper. The
				// side before is sorted back into order above its read: its 50 rows.
				ordered := j == 2 && !narrowed && i < 2
				t.Run(name, func(t *testing.T) {
					checkPlan(t, explain(t, conn, query, args[j], false), planWant{indexes: indexes, ordered: ordered})
					if !narrowed { // a query tree's statements are sent unprepared: always a custom plan
						checkPlan(t, explain(t, conn, query, args[j], true), planWant{indexes: indexes})
					}
				})
				if j == 0 && !narrowed {
					found = append(found, queryBuffers(t, conn, query, args[j]))
				}
				if j > 0 && !narrowed {
					buffers[j-1] = append(buffers[j-1], queryBuffers(t, conn, query, args[j]))
				}
			}
		}
	}
	for side, bs := range buffers {
		for _, b := range bs[1:] {
			if b > bs[0]+bs[0]/2 {
				t.Errorf("side %d of an anchor deep in the project read %d buffers, near its start %d (all: %v)", side, b, bs[0], bs)
			}
		}
	}
	t.Logf("buffers read at anchors 100, 5,000 and 9,900 entries into a project of 10,000: finding the anchor %v, the side before %v, the side after %v",
		found, buffers[0], buffers[1])
}

// analyzedConn is a connection of s's readers, closed when t ends, after ANALYZE of logs.
func analyzedConn(t *testing.T, s *sqlstore.Store) *sqlx.Conn {
	t.Helper()
	conn, err := sqlstore.ReadDB(s).Connx(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.ExecContext(t.Context(), "ANALYZE logs"); err != nil {
		t.Fatal(err)
	}
	return conn
}

// queryBuffers runs query under EXPLAIN ANALYZE and returns the buffers it read.
func queryBuffers(t *testing.T, conn *sqlx.Conn, query string, args []any) int {
	t.Helper()
	var out []byte
	if err := conn.QueryRowContext(t.Context(), "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+query, args...).Scan(&out); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("plan %s: %v", out, err)
	}
	return plans[0].Plan.Hit + plans[0].Plan.Read
}

// TestPostgresReadsStartWhereTheirTimeDoes shows, in a project of 30 days and 30,000 entries,
// two reads that begin at a moment rather than at the project's oldest entry: the first look for
// a context's anchor, within the day before its id's moment (the entry taken in now), and an
// oldest-first page from an hour ago (start_time with the retention bound beside it, which
// PostgreSQL's B-tree used to start from). Each reads a small part of the buffers the read of
// the project's whole range does.
func TestPostgresReadsStartWhereTheirTimeDoes(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	ctx := t.Context()
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "near", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	in := time.Now().UnixMilli()
	batch := make([]domain.LogEntry, 30_000)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Time: in - int64(30_000-i)*86_400, Level: "info", Message: fmt.Sprint("Message ", i)}
	}
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	conn := analyzedConn(t, s)
	a := batch[len(batch)-1]
	q := domain.ContextQuery{ProjectID: p.ID, ID: a.ID, Before: ptr(50), After: ptr(50), Now: in}
	queries, args := sqlstore.ContextSQL(s, q, a.Time, a.ID)
	near, nearArgs := sqlstore.ContextNearSQL(s, q, in)
	whole, first := queryBuffers(t, conn, queries[0], args[0]), queryBuffers(t, conn, near, nearArgs)
	checkPlan(t, explain(t, conn, near, nearArgs, false), planWant{indexes: []string{"logs_pkey"}})
	if first*5 > whole {
		t.Errorf("the anchor near its id's moment read %d buffers, the project's whole range %d", first, whole)
	}
	start := in - 3600_000
	list, listArgs := sqlstore.ListSQL(s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID, Start: &start}, Limit: 100, Now: in})
	page := queryBuffers(t, conn, list, listArgs)
	if page*5 > whole {
		t.Errorf("an oldest-first page from an hour ago read %d buffers, the project's whole range %d", page, whole)
	}
	t.Logf("buffers: the anchor near its id's moment %d, a page from an hour ago %d, the project's whole range %d", first, page, whole)
}
