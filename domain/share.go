package domain

import "context"

// shareKey is whom a read counts against: the API key, or the project when the service is open
// (no keys: every caller is the same anonymous admin).
func shareKey(ctx context.Context, projectID string) string {
	if p, ok := PrincipalFrom(ctx); ok && p.KeyID != "" {
		return "key " + p.KeyID
	}
	return "project " + projectID
}

// acquireRead takes one of the caller's read shares (Options.ReadShares) and returns its
// release. Without ReadShares it takes nothing.
func (s *Service) acquireRead(ctx context.Context, projectID string) (func(), error) {
	if s.shares == nil {
		return func() {}, nil
	}
	return s.shares.Acquire(ctx, shareKey(ctx, projectID))
}

// openRead begins a read of a project's entries as every read use case does: the caller may read
// the project (authorize), an id that cannot be a project's is KindNotFound, and one of the
// caller's read shares is taken, whose release the caller defers. now is the moment the read
// compares the project's retention with, in Unix milliseconds.
func (s *Service) openRead(ctx context.Context, projectID string) (now int64, release func(), err error) {
	if err := authorize(ctx, projectID); err != nil {
		return 0, nil, err
	}
	if !validID(projectID) {
		return 0, nil, projectNotFound(projectID)
	}
	now = s.now().UnixMilli()
	release, err = s.acquireRead(ctx, projectID)
	return now, release, err
}
