package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/adapters/httpapi/apitest"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/api/rest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// tailCollector follows a tail through reconnects, cutting the connection every cutEvery
// events, and records every entry it receives.
type tailCollector struct {
	mu    sync.Mutex
	seen  map[string]int
	dups  int
	total int
	last  string
	// at is the place of the last entry received: each next one must come after it, in ingest
	// order, across reconnects too.
	at     domain.TailPosition
	checks func(rest.LogEntry) error
}

func (c *tailCollector) run(ctx context.Context, url string, cutEvery, want int, ready chan<- struct{}) error {
	c.seen = map[string]int{}
	first := true
	for {
		n := 0
		status, err := apitest.ReadEvents(ctx, url, c.last, func(ev apitest.Event) bool {
			if first {
				first = false
				close(ready)
			}
			if ev.Event != "log" {
				return true
			}
			var e rest.LogEntry
			if err := json.Unmarshal([]byte(ev.Data), &e); err != nil {
				return false
			}
			at, err := domain.DecodeTailToken("id", ev.ID)
			if err != nil {
				panic(err)
			}
			if !c.at.Before(at) {
				panic(fmt.Sprintf("entry %s at %+v came after one at %+v: not in ingest order", e.Id, at, c.at))
			}
			c.at = at
			c.mu.Lock()
			c.seen[e.Id]++
			if c.seen[e.Id] > 1 {
				c.dups++
			}
			c.total++
			c.last = ev.ID
			c.mu.Unlock()
			if c.checks != nil {
				if err := c.checks(e); err != nil {
					panic(err)
				}
			}
			n++
			return n < cutEvery && len(c.seen) < want
		})
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil && !strings.Contains(err.Error(), "connection reset") {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("tail answered %d", status)
		}
		if len(c.seen) >= want {
			return nil
		}
	}
}

// group runs functions and keeps their errors.
type group struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func (g *group) Go(fn func() error) {
	g.wg.Go(func() {
		if err := fn(); err != nil {
			g.mu.Lock()
			g.errs = append(g.errs, err)
			g.mu.Unlock()
		}
	})
}

func (g *group) Wait() error {
	g.wg.Wait()
	if len(g.errs) > 0 {
		return g.errs[0]
	}
	return nil
}

// TestTailExactlyOnce posts 10,000 entries from 4 concurrent clients through two instances on
// one PostgreSQL database (one instance on SQLite) while a tail on one of them is cut every 50
// events and resumes with Last-Event-ID: it receives every entry once, and a filtered tail
// receives exactly the matching ones.
func TestTailExactlyOnce(t *testing.T) {
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			var a, b server.Store
			if kind == "sqlite" {
				a = openSQLiteStore(t)
				b = a
			} else {
				if testing.Short() {
					t.Skip("-short: PostgreSQL")
				}
				url := pg.NewDatabase(t)
				for _, p := range []*server.Store{&a, &b} {
					s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = s.Close() })
					*p = s
				}
			}
			cfg := server.DefaultConfig()
			cfg.TailPoll = 100 * time.Millisecond
			_, srvA := servetest.Serve(t, cfg, a, nil)
			_, srvB := servetest.Serve(t, cfg, b, nil)
			proj, _ := seedProjects(t, a)

			const total, writers, batch = 10_000, 4, 50
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()

			all := &tailCollector{}
			filtered := &tailCollector{checks: func(e rest.LogEntry) error {
				if e.UserId == nil || *e.UserId != "u1" || e.Level != "error" {
					return fmt.Errorf("filtered tail got %+v", e)
				}
				return nil
			}}
			readyAll, readyFiltered := make(chan struct{}), make(chan struct{})
			var g group
			g.Go(func() error {
				return all.run(ctx, srvB.URL+"/logs/tail?project_id="+proj.ID, 50, total, readyAll)
			})
			g.Go(func() error {
				return filtered.run(ctx, srvA.URL+"/logs/tail?project_id="+proj.ID+"&user_id=u1&log_level=error", 50, total/4, readyFiltered)
			})
			// A tail's start is taken before its first bytes; the retry field comes within a poll.
			for _, ch := range []chan struct{}{readyAll, readyFiltered} {
				select {
				case <-ch:
				case <-ctx.Done():
					t.Fatal("a tail did not start")
				}
			}

			var w group
			for c := range writers {
				w.Go(func() error {
					for i := 0; i < total/writers; i += batch {
						var buf bytes.Buffer
						buf.WriteByte('[')
						for k := range batch {
							if k > 0 {
								buf.WriteByte(',')
							}
							n := c*total/writers + i + k
							// A quarter of the entries are u1 at level error.
							user, level := fmt.Sprintf("u%d", n%2), []string{"error", "info"}[(n/2)%2]
							fmt.Fprintf(&buf, `{"project_id":%q,"message":"m%d","user_id":%q,"level":%q,"time":%d}`, proj.ID, n, user, level, 1_700_000_000_000-int64(n))
						}
						buf.WriteByte(']')
						target := []string{srvA.URL, srvB.URL}[(c+i/batch)%2]
						resp, err := http.Post(target+"/logs", "application/json", &buf)
						if err != nil {
							return err
						}
						_ = resp.Body.Close()
						if resp.StatusCode != http.StatusCreated {
							return fmt.Errorf("POST /logs: %d", resp.StatusCode)
						}
					}
					return nil
				})
			}
			if err := w.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := g.Wait(); err != nil {

				t.Fatalf("tail: %v (all: %d unique, filtered: %d unique)", err, len(all.seen), len(filtered.seen))
			}
			if len(all.seen) != total || all.dups != 0 {
				t.Errorf("tail: %d unique entries, %d duplicates; want %d, 0", len(all.seen), all.dups, total)
			}
			if len(filtered.seen) != total/4 || filtered.dups != 0 {
				t.Errorf("filtered tail: %d unique entries, %d duplicates; want %d, 0", len(filtered.seen), filtered.dups, total/4)
			}
		})
	}
}
