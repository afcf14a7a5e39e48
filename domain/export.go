package domain

import (
	"context"
	"fmt"
	"time"
)

// ExportLogs streams every entry of the project matching f, oldest first, with no limit on how
// many: it reads them in keyset pages of pageSize (DefaultPageSize when not positive, at most
// MaxPageSize), one store read after another, and hands each page to fn as the store reads it,
// so memory does not grow with the export. fn is called at least once when the project exists
// (with an empty page when nothing matches); its error ends the export, and is returned
// wrapped.
//
// The export is one read: it holds one read share from its first page to its last. Each page
// is its own statement, whose time in the store pageTimeout bounds when positive (the export
// as a whole is not: it lasts as long as the client takes the entries; see exportPage);
// entries are left out by the retention as of the export's start. A project that does not
// exist, or that is deleted while the export runs, is KindNotFound.
func (s *Service) ExportLogs(ctx context.Context, f LogFilter, pageSize int, pageTimeout time.Duration, fn PageFunc) error {
	q := LogQuery{LogFilter: f, Limit: min(pageSize, s.limits.MaxPageSize)}
	if pageSize <= 0 {
		q.Limit = s.limits.DefaultPageSize
	}
	q, err := s.pageQuery(q)
	if err != nil {
		return err
	}
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return err
	}
	q.Now = now
	defer release()
	for {
		var next *Cursor
		err := s.exportPage(ctx, q, pageTimeout, func(p Page) error {
			next = p.Next
			return fn(p)
		})
		if KindOf(err) == KindNotFound {
			return projectNotFound(q.ProjectID)
		}
		if err != nil {
			return fmt.Errorf("export logs: %w", err)
		}
		if next == nil {
			return nil
		}
		q.After = next
	}
}

// exportPage reads one page of an export. With a positive timeout it bounds the time the page
// spends in the store, not the time fn takes to hand the entries on: a slow but steady client
// is paced by the transport's own stall bound, and must not fail a page whose reads were quick.
// The clock runs while the store is asked for the next entry and stops while fn holds one.
func (s *Service) exportPage(ctx context.Context, q LogQuery, timeout time.Duration, fn PageFunc) error {
	if timeout <= 0 {
		return s.store.ListLogs(ctx, q, fn)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	expire := func() { cancel(context.DeadlineExceeded) }
	b := &storeBudget{left: timeout, started: time.Now(), running: true, expire: expire}
	b.timer = time.AfterFunc(timeout, expire)
	defer b.timer.Stop()
	return s.store.ListLogs(ctx, q, func(p Page) error {
		entries := p.Entries
		p.Entries = func(yield func(LogEntry, error) bool) {
			defer b.pause() // the page is read: what fn does after is its own time
			for e, err := range entries {
				b.pause()
				more := yield(e, err)
				b.resume()
				if !more {
					return
				}
			}
		}
		return fn(p)
	})
}

// storeBudget is the time a page's read may still spend in the store; pause and resume are
// called by the one goroutine that reads the page.
type storeBudget struct {
	timer   *time.Timer
	expire  func()
	left    time.Duration
	started time.Time
	running bool
}

// pause stops the clock while the consumer holds an entry.
func (b *storeBudget) pause() {
	if !b.running {
		return
	}
	b.running = false
	if b.timer.Stop() {
		b.left -= time.Since(b.started)
	} else {
		b.left = 0 // the budget ran out: the page's context is cancelled already
	}
}

// resume starts the clock again as the store is asked for the next entry.
func (b *storeBudget) resume() {
	if b.running {
		return
	}
	if b.left <= 0 {
		b.expire()
		return
	}
	b.running = true
	b.started = time.Now()
	b.timer.Reset(b.left)
}
