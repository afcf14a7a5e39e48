package readshare

import (
	"context"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// pages is a store whose listings are one empty page each.
type pages struct{ domain.Store }

func (pages) ListLogs(_ context.Context, _ domain.LogQuery, fn domain.PageFunc) error {
	return fn(domain.Page{})
}

// TestReadShareQueuesAndForgetsKeys: past its share a key's read waits for one of its own reads
// and then runs; a read whose request ends while it waits is KindUnavailable; and once no read
// of a key runs or waits, nothing of it is kept.
func TestReadShareQueuesAndForgetsKeys(t *testing.T) {
	shares := New(1, time.Hour)
	s := domain.NewService(pages{}, domain.Options{ReadShares: shares})
	const project = "0190c9b4-0000-7000-8000-000000000001"
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{ProjectID: project, KeyID: "k"})
	list := func(ctx context.Context, fn domain.PageFunc) error {
		return s.ListLogs(ctx, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: project}}, fn)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- list(ctx, func(domain.Page) error { close(holding); <-release; return nil })
	}()
	<-holding

	// A read whose request ends while it waits for the share.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := list(ended, func(domain.Page) error { return nil }); domain.KindOf(err) != domain.KindUnavailable {
		t.Errorf("a read whose request ended while waiting: %v, want unavailable", err)
	}

	second := make(chan error, 1)
	go func() { second <- list(ctx, func(domain.Page) error { return nil }) }()
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first read: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the read that waited: %v", err)
	}
	shares.mu.Lock()
	defer shares.mu.Unlock()
	if len(shares.keys) != 0 {
		t.Errorf("%d keys kept after their reads ended", len(shares.keys))
	}
}
