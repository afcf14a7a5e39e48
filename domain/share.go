package domain

import (
	"context"
	"sync"
	"time"
)

// shares bounds how many store reads (listings, searches, stats, filtered deletes) each key
// runs at once, so that one key's expensive reads cannot hold every connection of the store
// while another key waits: past its share a read waits, up to ReadShareWait, for one of the
// key's own reads to finish, then is refused as KindRateLimited. Only keys with reads running
// or waiting have an entry, so memory is bounded by the requests in flight.
type shares struct {
	mu   sync.Mutex
	keys map[string]*share
}

// share is one key's: a slot per read it may run, and how many reads hold or wait for one.
type share struct {
	slots chan struct{}
	users int
}

// shareKey is whom a read counts against: the API key, or the project when the service is open
// (no keys: every caller is the same anonymous admin).
func shareKey(ctx context.Context, projectID string) string {
	if p, ok := PrincipalFrom(ctx); ok && p.KeyID != "" {
		return "key " + p.KeyID
	}
	return "project " + projectID
}

// acquireRead takes one of the caller's read slots and returns its release. With
// MaxReadsPerKey zero or less it takes nothing.
func (s *Service) acquireRead(ctx context.Context, projectID string) (func(), error) {
	limit := s.limits.MaxReadsPerKey
	if limit <= 0 {
		return func() {}, nil
	}
	key := shareKey(ctx, projectID)
	s.shares.mu.Lock()
	if s.shares.keys == nil {
		s.shares.keys = map[string]*share{}
	}
	sh := s.shares.keys[key]
	if sh == nil {
		sh = &share{slots: make(chan struct{}, limit)}
		s.shares.keys[key] = sh
	}
	sh.users++
	s.shares.mu.Unlock()
	leave := func() {
		s.shares.mu.Lock()
		if sh.users--; sh.users == 0 {
			delete(s.shares.keys, key)
		}
		s.shares.mu.Unlock()
	}
	select {
	case sh.slots <- struct{}{}:
		return func() { <-sh.slots; leave() }, nil
	default:
	}
	wait := time.NewTimer(max(s.limits.ReadShareWait, 0))
	defer wait.Stop()
	select {
	case sh.slots <- struct{}{}:
		return func() { <-sh.slots; leave() }, nil
	case <-wait.C:
		leave()
		return nil, Errorf(KindRateLimited, "this key already has %d reads running, its share of the store; retry when one has finished", limit)
	case <-ctx.Done():
		leave()
		return nil, Unavailable(ctx.Err())
	}
}
