// Package readshare bounds how many store reads each key runs at once (domain.ReadShares), so
// that one key's expensive reads cannot hold every connection of the store while another key
// waits.
package readshare

import (
	"context"
	"sync"
	"time"

	"example.com/obsvc/domain"
)

// Shares is a per-key semaphore: past its share a read waits, up to the configured wait, for
// one of the key's own reads to finish, then is refused as KindRateLimited. Only keys with reads
// running or waiting have an entry, so memory is bounded by the requests in flight.
type Shares struct {
	limit int
	wait  time.Duration
	mu    sync.Mutex
	keys  map[string]*share
}

var _ domain.ReadShares = (*Shares)(nil)

// share is one key's: a slot per read it may run, and how many reads hold or wait for one.
type share struct {
	slots chan struct{}
	users int
}

// New returns shares of limit reads per key, a read past them waiting up to wait (negative: not
// at all). With limit zero or less Acquire takes nothing.
func New(limit int, wait time.Duration) *Shares {
	return &Shares{limit: limit, wait: max(wait, 0)}
}

// Acquire takes one of key's read slots and returns its release: KindRateLimited when none
// frees within the wait, KindUnavailable when ctx ends first.
func (s *Shares) Acquire(ctx context.Context, key string) (func(), error) {
	limit := s.limit
	if limit <= 0 {
		return func() {}, nil
	}
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]*share{}
	}
	sh := s.keys[key]
	if sh == nil {
		sh = &share{slots: make(chan struct{}, limit)}
		s.keys[key] = sh
	}
	sh.users++
	s.mu.Unlock()
	leave := func() {
		s.mu.Lock()
		if sh.users--; sh.users == 0 {
			delete(s.keys, key)
		}
		s.mu.Unlock()
	}
	select {
	case sh.slots <- struct{}{}:
		return func() { <-sh.slots; leave() }, nil
	default:
	}
	wait := time.NewTimer(s.wait)
	defer wait.Stop()
	select {
	case sh.slots <- struct{}{}:
		return func() { <-sh.slots; leave() }, nil
	case <-wait.C:
		leave()
		return nil, domain.Errorf(domain.KindRateLimited, "this key already has %d reads running, its share of the store; retry when one has finished", limit)
	case <-ctx.Done():
		leave()
		return nil, domain.Unavailable(ctx.Err())
	}
}
