package sqlstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// TestPostgresMigrationsAreSafeWhenInstancesStartTogether opens several stores on one fresh
// database at once: the advisory lock serialises their migrations, so all succeed and work.
func TestPostgresMigrationsAreSafeWhenInstancesStartTogether(t *testing.T) {
	url := pg.NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := sqlstore.OpenPostgres(t.Context(), url, sqlstore.DefaultPostgresOptions())
			if err != nil {
				errs[i] = err
				return
			}
			defer s.Close()
			p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: fmt.Sprint("instance ", i), CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
			errs[i] = s.CreateProject(t.Context(), p)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("instance %d: %v", i, err)
		}
	}
}

// TestPostgresBatchFailingMidCopyLeavesNothing sends a batch whose third row the server rejects
// inside the COPY stream (PostgreSQL text cannot hold U+0000; the domain refuses such input
// before it gets here, which is why this is not in the shared contract): the rows before it must
// not stay.
func TestPostgresBatchFailingMidCopyLeavesNothing(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "p", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	batch := make([]domain.LogEntry, 5)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Time: int64(i), Level: "info", Message: "m"}
	}
	batch[2].Message = "nul\x00byte"
	if _, err := s.CreateLogs(t.Context(), batch, domain.LogWrite{}); err == nil {
		t.Fatal("a batch with a NUL byte was stored")
	}
	var n int
	if err := sqlstore.ReadDB(s).GetContext(t.Context(), &n, "SELECT count(*) FROM logs"); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a batch that failed mid-COPY left %d rows, want 0", n)
	}
	// The connection that carried the failed COPY is usable again.
	if _, err := s.CreateLogs(t.Context(), batch[:2], domain.LogWrite{}); err != nil {
		t.Errorf("a good batch after the failed one: %v", err)
	}
}

// TestPostgresOutageIsUnavailableAndRecovers stops the server under a live store: calls fail
// fast as KindUnavailable, and the same store works again once the server is back.
//
// It stops the package's shared server, so it must run alone. It does: it is not parallel, and
// Go runs a package's top-level tests one after another, each with all of its parallel subtests
// (storetest's) finished before the next starts; top-level parallel tests would only start after
// every sequential one had ended.
func TestPostgresOutageIsUnavailableAndRecovers(t *testing.T) {
	s := storetest.OpenPostgres(t, pg.NewDatabase(t))
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "p", CreatedAt: time.Now().UTC(), UpdatedAt: time.Now().UTC()}
	if err := s.CreateProject(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	pg.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pg.Start(t)
		}
	}()
	const timeout, slack = 3 * time.Second, time.Second
	calls := map[string]func(ctx context.Context) error{
		"GetProject": func(ctx context.Context) error { _, err := s.GetProject(ctx, p.ID); return err },
		"CreateLogs": func(ctx context.Context) error {
			_, err := s.CreateLogs(ctx, []domain.LogEntry{{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Level: "info", Message: "m"}}, domain.LogWrite{})
			return err
		},
		"ListLogs": func(ctx context.Context) error {
			return s.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Limit: 10}, func(domain.Page) error { return nil })
		},
		"DeleteLogs": func(ctx context.Context) error {
			_, err := s.DeleteLogs(ctx, domain.LogFilter{ProjectID: p.ID})
			return err
		},
		"Ping": s.Ping,
	}
	for name, call := range calls {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		began := time.Now()
		err := call(ctx)
		took := time.Since(began)
		cancel()
		if domain.KindOf(err) != domain.KindUnavailable {
			t.Errorf("%s during the outage: %v (kind %v), want KindUnavailable", name, err, domain.KindOf(err))
		}
		if took > timeout+slack {
			t.Errorf("%s during the outage took %v, want at most %v: it must not hang", name, took, timeout+slack)
		}
	}
	pg.Start(t)
	restarted = true
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		_, err := s.GetProject(ctx, p.ID)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store did not recover after the server came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
