package sqlstore_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestSQLiteFieldListingsReadTheirIndex: on SQLite a listing filtered by one field, in either
// order, with or without a cursor and a time range, reads the range of that field's index from
// its bound on time, in time order, and sorts nothing but the entries of one time by id (since
// migration 00019 the index ends in time: a sorter for the last term of the ORDER BY, which
// SQLite empties at each new time and stops at the LIMIT): never the primary key's range of the
// project, never a sort of every match. (Left to its planner, SQLite read the primary key in 19
// of these 32 shapes before 00019, every one by user, level or subject with a cursor or a time
// range among them, and in all 32 after.)
func TestSQLiteFieldListingsReadTheirIndex(t *testing.T) {
	skipUnderRace(t)
	s := storetest.OpenSQLite(t)
	ctx := t.Context()
	projects := newProjects(t, s, 4)
	levels := []string{"debug", "info", "warn", "error"}
	for b := range 4 {
		batch := make([]domain.LogEntry, 5_000)
		for i := range batch {
			n := b*5_000 + i
			batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: projects[n%4], Time: int64(n / 3), Level: levels[n%4],
				Message: "m", UserID: ptr(fmt.Sprint("u", n%50)), Subject: ptr(fmt.Sprint("s", n%20)), TraceID: ptr(traceID(1 + n/100))}
		}
		if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	p := projects[1]
	filters := []struct {
		index string
		f     domain.LogFilter
	}{
		{"logs_user", domain.LogFilter{ProjectID: p, UserID: ptr("u1")}},
		{"logs_level", domain.LogFilter{ProjectID: p, Level: ptr("info")}},
		{"logs_subject", domain.LogFilter{ProjectID: p, Subject: ptr("s1")}},
		{"logs_trace", domain.LogFilter{ProjectID: p, TraceID: ptr(traceID(3))}},
	}
	bound := regexp.MustCompile(`\(project_id=\? AND [a-z_]+=\? AND (time|\(time,id\))[<>]`)
	for _, c := range filters {
		for _, timed := range []bool{false, true} {
			for _, desc := range []bool{false, true} {
				for _, cursor := range []bool{false, true} {
					f := c.f
					if timed {
						f.Start, f.End = ptr[int64](1_000), ptr[int64](5_000)
					}
					q := domain.LogQuery{LogFilter: f, Desc: desc, Limit: 100, Now: 10_000}
					if cursor {
						q.After = &domain.Cursor{Time: 3_000, ID: uuid.Must(uuid.NewV7()).String(), Desc: desc}
					}
					t.Run(fmt.Sprintf("%s/time=%v/desc=%v/cursor=%v", c.index, timed, desc, cursor), func(t *testing.T) {
						query, args := sqlstore.ListSQL(s, q)
						plan := sqlitePlan(t, sqlstore.ReadDB(s), query, args)
						var read []string
						for _, line := range strings.Split(plan, "\n") {
							if strings.Contains(line, " logs ") || strings.HasSuffix(line, " logs") {
								read = append(read, line)
							}
						}
						ok := len(read) == 1 && strings.Contains(read[0], "SEARCH logs USING INDEX "+c.index+" ") && bound.MatchString(read[0])
						for _, line := range strings.Split(plan, "\n") {
							// The one sort allowed: of the entries of one time, by id.
							if strings.Contains(line, "TEMP B-TREE") && !strings.HasSuffix(line, "TEMP B-TREE FOR LAST TERM OF ORDER BY") {
								ok = false
							}
						}
						if !ok {
							t.Errorf("plan:\n%s\nwant logs read once, by a range of %s bounded by time, sorting the entries of one time at most", plan, c.index)
						}
					})
				}
			}
		}
	}
}
