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
