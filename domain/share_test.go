package domain

import (
	"context"
	"testing"
	"time"
)

// TestReadShareQueuesAndForgetsKeys: past its share a key's read waits for one of its own reads
// and then runs; a read whose request ends while it waits is KindUnavailable; and once no read
// of a key runs or waits, nothing of it is kept.
func TestReadShareQueuesAndForgetsKeys(t *testing.T) {
	l := DefaultLimits()
	l.MaxReadsPerKey, l.ReadShareWait = 1, time.Hour
	s := NewService(newFake(), opts(Options{Limits: l}))
	const project = "0190c9b4-0000-7000-8000-000000000001"
	ctx := WithPrincipal(t.Context(), Principal{ProjectID: project, KeyID: "k"})
	list := func(ctx context.Context, fn PageFunc) error {
		return s.ListLogs(ctx, LogQuery{LogFilter: LogFilter{ProjectID: project}}, fn)
	}
	holding, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- list(ctx, func(Page) error { close(holding); <-release; return nil })
	}()
	<-holding

	// A read whose request ends while it waits for the share.
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := list(ended, func(Page) error { return nil }); KindOf(err) != KindUnavailable {
		t.Errorf("a read whose request ended while waiting: %v, want unavailable", err)
	}

	second := make(chan error, 1)
	go func() { second <- list(ctx, func(Page) error { return nil }) }()
	close(release)
	if err := <-first; err != nil {
		t.Errorf("first read: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the read that waited: %v", err)
	}
	s.shares.mu.Lock()
	defer s.shares.mu.Unlock()
	if len(s.shares.keys) != 0 {
		t.Errorf("%d keys kept after their reads ended", len(s.shares.keys))
	}
}
