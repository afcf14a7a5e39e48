package sqlstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestPingDoesNotWaitForBusyPools holds every connection of the store's pools (slow clients
// reading a page without consuming it, and a write transaction left open): readiness must still
// answer at once, since the store is up; it has a connection of its own.
func TestPingDoesNotWaitForBusyPools(t *testing.T) {
	t.Run("SQLite", func(t *testing.T) {
		s := storetest.OpenSQLite(t)
		testPingWithBusyPools(t, s)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		s := storetest.OpenPostgres(t, pg.NewDatabase(t))
		testPingWithBusyPools(t, s)
	})
}

func testPingWithBusyPools(t *testing.T, s *sqlstore.Store) {
	ctx := t.Context()
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "p", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Level: "info", Message: "m"}}, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}

	n := sqlstore.ReadDB(s).Stats().MaxOpenConnections
	release, entered := make(chan struct{}), make(chan struct{}, max(n, 0))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(release)
	readers := sqlstore.ReadDB(s)
	if n <= 0 {
		t.Fatalf("the read pool is unbounded (%d): nothing to exhaust", n)
	}
	for range n {
		wg.Go(func() {
			// A page is open (its rows hold a connection) until the callback returns.
			err := s.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 10}, func(domain.Page) error {
				entered <- struct{}{}
				<-release
				return nil
			})
			if err != nil {
				t.Errorf("slow listing: %v", err)
			}
		})
	}
	if w := sqlstore.WriteDB(s); w != readers {
		tx, err := w.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "DELETE FROM logs WHERE project_id = ?", uuid.Must(uuid.NewV7()).String()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d slow listings hold a connection after 10 s", i, n)
		}
	}
	// The pools are exhausted indeed: another read waits.
	busy, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, err := readers.ExecContext(busy, "SELECT 1")
	cancel()
	if err == nil {
		t.Fatal("a read found a free connection: the test holds too few")
	}

	const within = time.Second
	pingCtx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	began := time.Now()
	if err := s.Ping(pingCtx); err != nil {
		t.Fatalf("Ping with every pool connection busy: %v (after %v), want an answer within %v", err, time.Since(began), within)
	}
}
