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
// is its own statement, bounded by pageTimeout when positive (the export as a whole is not:
// it lasts as long as the client takes the entries); entries are left out by the retention as
// of the export's start. A project that does not exist, or that is deleted while the export
// runs, is KindNotFound.
func (s *Service) ExportLogs(ctx context.Context, f LogFilter, pageSize int, pageTimeout time.Duration, fn PageFunc) error {
	q := LogQuery{LogFilter: f, Limit: min(pageSize, s.limits.MaxPageSize)}
	if pageSize <= 0 {
		q.Limit = s.limits.DefaultPageSize
	}
	q, err := s.pageQuery(q)
	if err != nil {
		return err
	}
	if err := authorize(ctx, q.ProjectID); err != nil {
		return err
	}
	if !validID(q.ProjectID) {
		return projectNotFound(q.ProjectID)
	}
	q.Now = s.now().UnixMilli()
	release, err := s.acquireRead(ctx, q.ProjectID)
	if err != nil {
		return err
	}
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

// exportPage reads one page of an export, within timeout when it is positive.
func (s *Service) exportPage(ctx context.Context, q LogQuery, timeout time.Duration, fn PageFunc) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return s.store.ListLogs(ctx, q, fn)
}
