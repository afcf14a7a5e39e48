package e2e

import (
	"context"
	"runtime"
	"testing"

	"example.com/obsvc/adapters/readshare"
	"example.com/obsvc/app/server"
	"example.com/obsvc/domain"
)

// TestOneKeysReadsLeaveOthersTheirShare: with the default MAX_READS_PER_KEY (half the store's
// read connections), a key whose reads all hang (each holding a store connection mid-listing)
// gets 429 for its next listing, stats and filtered delete, while another key's listing is
// served at once; on both stores.
func TestOneKeysReadsLeaveOthersTheirShare(t *testing.T) {
	forEachStore(t, testReadShare)
}

func testReadShare(t *testing.T, open storeOpener) {
	st := open(t)
	cfg := server.DefaultConfig()
	cfg.ReadShareWait = 0 // refuse at once past the share: the test waits for nothing
	limits := cfg.Limits()
	limits.MaxReadsPerKey = cfg.ReadShare(st.Pools(), runtime.GOMAXPROCS(0))
	if limits.MaxReadsPerKey < 1 {
		t.Fatalf("share %d", limits.MaxReadsPerKey)
	}
	svc := domain.NewService(st, domain.Options{Limits: limits, NewID: server.NewID, ReadShares: readshare.New(limits.MaxReadsPerKey, limits.ReadShareWait)})
	admin := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	key := func(name string) (context.Context, string) {
		p, err := svc.CreateProject(admin, domain.ProjectInput{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		msg := "m"
		if _, err := svc.CreateLogs(admin, []domain.LogInput{{ProjectID: p.ID, Message: &msg}, {ProjectID: p.ID, Message: &msg}}, ""); err != nil {
			t.Fatal(err)
		}
		return domain.WithPrincipal(t.Context(), domain.Principal{ProjectID: p.ID, KeyID: name}), p.ID
	}
	ctxA, pa := key("a")
	ctxB, pb := key("b")
	list := func(ctx context.Context, project string, held func()) error {
		return svc.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: project}, Limit: 1}, func(p domain.Page) error {
			for _, err := range p.Entries {
				if err != nil {
					return err
				}
				held() // the listing's rows, and its connection, are held until held returns
			}
			return nil
		})
	}

	// Key a's reads hang mid-listing, as many as its share.
	started, unblock := make(chan struct{}), make(chan struct{})
	done := make(chan error, limits.MaxReadsPerKey)
	for range limits.MaxReadsPerKey {
		go func() { done <- list(ctxA, pa, func() { started <- struct{}{}; <-unblock }) }()
	}
	for range limits.MaxReadsPerKey {
		<-started
	}
	func() {
		defer func() { // let a's reads finish even when an assertion fails
			close(unblock)
			for range limits.MaxReadsPerKey {
				if err := <-done; err != nil {
					t.Errorf("a hanging read: %v", err)
				}
			}
		}()
		if err := list(ctxA, pa, func() {}); domain.KindOf(err) != domain.KindRateLimited {
			t.Errorf("key a's next listing: %v, want rate limited", err)
		}
		q := "m"
		if _, err := svc.DeleteLogs(ctxA, domain.LogFilter{ProjectID: pa, Q: &q}); domain.KindOf(err) != domain.KindRateLimited {
			t.Errorf("key a's filtered delete: %v, want rate limited", err)
		}
		start, end := int64(0), int64(1)
		if _, err := svc.LogStats(ctxA, domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: pa, Start: &start, End: &end}, Step: 1000}); domain.KindOf(err) != domain.KindRateLimited {
			t.Errorf("key a's stats: %v, want rate limited", err)
		}
		served := 0
		if err := list(ctxB, pb, func() { served++ }); err != nil || served != 1 {
			t.Errorf("key b's listing beside a's hanging ones: %d entries, %v", served, err)
		}
	}()
	// Its share back, key a is served again.
	if err := list(ctxA, pa, func() {}); err != nil {
		t.Errorf("key a after its reads finished: %v", err)
	}
}
