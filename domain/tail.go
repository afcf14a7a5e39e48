package domain

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// TailPosition is a place in a project's ingest order: the entry at position Pos of the batch
// Tx. A tail resumes after it. Tx orders batches in commit order as the store guarantees it (see
// TailStore); Pos orders the entries of one batch. Pos -1 stands before every entry of Tx.
type TailPosition struct {
	Tx  uint64
	Pos int64
}

// TailEntry is an entry as a tail delivers it, with its place in ingest order.
type TailEntry struct {
	LogEntry
	At TailPosition
}

// TailQuery asks for the entries of a project matching the filter (its Start and End are not
// used) that come after After in ingest order, at most Limit of them.
type TailQuery struct {
	LogFilter
	After TailPosition
	Limit int
}

// TailStore reads a project's entries in ingest order.
type TailStore interface {
	// TailHead returns the position after which come the entries committed from now on (and
	// possibly a few committed just before). KindNotFound if the project does not exist.
	TailHead(ctx context.Context, projectID string) (TailPosition, error)
	// ReadTail returns, in ingest order, up to q.Limit entries matching q after q.After whose
	// place is final: no entry committed later may come before them. Entries written before
	// ingest order was recorded are never returned.
	ReadTail(ctx context.Context, q TailQuery) ([]TailEntry, error)
	// ReplayTail returns, in ingest order, the last limit entries matching f (Start and End
	// included) at or before upTo.
	ReplayTail(ctx context.Context, f LogFilter, upTo TailPosition, limit int) ([]TailEntry, error)
}

type tokenWire struct {
	X uint64 `json:"x"`
	P int64  `json:"p"`
}

// EncodeTailToken renders p as the opaque text a client resumes with (the SSE event id).
func EncodeTailToken(p TailPosition) string {
	b, _ := json.Marshal(tokenWire{X: p.Tx, P: p.Pos}) // plain fields always marshal
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeTailToken parses text made by EncodeTailToken; anything else is KindInvalid on param.
func DecodeTailToken(param, text string) (TailPosition, error) {
	bad := ParamError(param, "is not a tail position this service issued")
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil {
		return TailPosition{}, bad
	}
	var w tokenWire
	if err := json.Unmarshal(b, &w); err != nil || w.P < -1 {
		return TailPosition{}, bad
	}
	return TailPosition{Tx: w.X, Pos: w.P}, nil
}

// TailOptions bound the live tail.
type TailOptions struct {
	// MaxPerKey bounds the open tails of one API key (of one client address when the service is
	// open), MaxTotal those of the whole instance; beyond either a new tail is KindRateLimited.
	MaxPerKey int
	MaxTotal  int
	// Poll is how often an idle tail looks for entries written through other instances (entries
	// written through this one wake it at once).
	Poll time.Duration
	// Batch is the most entries one read hands on.
	Batch int
	// CheckEvery is how often an open tail checks that its project still exists.
	CheckEvery time.Duration
}

// DefaultTailOptions are the documented defaults.
func DefaultTailOptions() TailOptions {
	return TailOptions{MaxPerKey: 10, MaxTotal: 1000, Poll: 250 * time.Millisecond, Batch: 500, CheckEvery: 5 * time.Second}
}

// TailRequest is what a client asks of a tail: the filter, and where to start. Resume (the
// last event id a client saw) wins over Cursor; with neither the tail starts at the entries
// ingested from now on, after replaying, when StartTime is set, the last ReplayLimit entries
// with Time >= StartTime.
type TailRequest struct {
	LogFilter
	Resume      string
	Cursor      string
	StartTime   *int64
	ReplayLimit int
	// Client names who holds the tail for MaxPerKey when the service is open (no key).
	Client string
}

// TailFunc receives the entries a tail found, in order; it is called with none after each idle
// wait, so that a transport may keep the connection alive. An error from it ends the tail and
// is returned unchanged.
type TailFunc func(entries []TailEntry) error

// tails counts open tails and wakes them when entries are written through this instance.
type tails struct {
	mu     sync.Mutex
	open   map[string]int
	total  int
	wakeup map[string]chan struct{} // project id -> closed on the next write
}

func (t *tails) acquire(who string, o TailOptions) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if (o.MaxTotal > 0 && t.total >= o.MaxTotal) || (o.MaxPerKey > 0 && t.open[who] >= o.MaxPerKey) {
		return false
	}
	if t.open == nil {
		t.open = map[string]int{}
	}
	t.open[who]++
	t.total++
	return true
}

func (t *tails) release(who string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if t.open[who]--; t.open[who] <= 0 {
		delete(t.open, who)
	}
}

// waiter returns a channel closed at the next write to the project through this instance.
func (t *tails) waiter(projectID string) <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.wakeup == nil {
		t.wakeup = map[string]chan struct{}{}
	}
	ch, ok := t.wakeup[projectID]
	if !ok {
		ch = make(chan struct{})
		t.wakeup[projectID] = ch
	}
	return ch
}

// written wakes the tails of the batch's projects.
func (t *tails) written(entries []LogEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range entries {
		if ch, ok := t.wakeup[e.ProjectID]; ok {
			close(ch)
			delete(t.wakeup, e.ProjectID)
		}
	}
}

// Tail follows the project's entries matching r in ingest order, handing them to fn, until
// ctx ends (nil then), the project is deleted (KindNotFound) or fn fails. Every entry matching
// the filter after the start position is handed on exactly once, in order, whichever instance
// wrote it; a client that resumes from the position of the last entry it received loses
// nothing and sees nothing twice.
func (s *Service) Tail(ctx context.Context, r TailRequest, fn TailFunc) error {
	f, err := s.limits.validateFilter(r.LogFilter)
	if err != nil {
		return err
	}
	f.Start, f.End = nil, nil
	if err := authorize(ctx, f.ProjectID); err != nil {
		return err
	}
	var start *TailPosition
	switch {
	case r.Resume != "":
		p, err := DecodeTailToken("Last-Event-ID", r.Resume)
		if err != nil {
			return err
		}
		start = &p
	case r.Cursor != "":
		p, err := DecodeTailToken("cursor", r.Cursor)
		if err != nil {
			return err
		}
		start = &p
	}
	replay := r.ReplayLimit
	switch {
	case replay == 0:
		replay = 100
	case replay < 0 || replay > s.limits.MaxPageSize:
		return ParamError("limit", fmt.Sprintf("must be between 1 and %d", s.limits.MaxPageSize))
	}
	if _, err := s.project(ctx, f.ProjectID); err != nil {
		return err
	}
	if s.tailStore == nil {
		return Errorf(KindInternal, "the store cannot read in ingest order")
	}
	who, _ := PrincipalFrom(ctx)
	holder := who.KeyID
	if holder == "" {
		holder = "client " + r.Client
	}
	o := s.tailOpts
	if !s.tails.acquire(holder, o) {
		return Errorf(KindRateLimited, "too many open tails (at most %d per key, %d in all); retry after the time in Retry-After", o.MaxPerKey, o.MaxTotal)
	}
	defer s.tails.release(holder)

	if start == nil {
		head, err := s.tailStore.TailHead(ctx, f.ProjectID)
		if err != nil {
			return s.tailErr(ctx, f.ProjectID, err)
		}
		start = &head
		if r.StartTime != nil {
			rf := f
			rf.Start = r.StartTime
			old, err := s.tailStore.ReplayTail(ctx, rf, head, replay)
			if err != nil {
				return s.tailErr(ctx, f.ProjectID, err)
			}
			if len(old) > 0 {
				if err := fn(old); err != nil {
					return err
				}
			}
		}
	}
	// The start is fixed: tell the transport now, so a client knows its tail is open.
	if err := fn(nil); err != nil {
		return err
	}
	q := TailQuery{LogFilter: f, After: *start, Limit: o.Batch}
	checked := time.Now()
	timer := time.NewTimer(o.Poll)
	defer timer.Stop()
	for {
		// Take the wake-up channel before reading, so a write that lands after the read wakes
		// the wait below.
		wake := s.tails.waiter(f.ProjectID)
		got, err := s.tailStore.ReadTail(ctx, q)
		if err != nil {
			return s.tailErr(ctx, f.ProjectID, err)
		}
		if len(got) > 0 {
			q.After = got[len(got)-1].At
			if err := fn(got); err != nil {
				return err
			}
			if len(got) == q.Limit {
				continue // more is waiting
			}
		}
		if time.Since(checked) >= o.CheckEvery {
			checked = time.Now()
			if _, err := s.project(ctx, f.ProjectID); err != nil {
				return s.tailErr(ctx, f.ProjectID, err)
			}
		}
		timer.Reset(o.Poll)
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		case <-timer.C:
		}
		if len(got) == 0 {
			if err := fn(nil); err != nil {
				return err
			}
		}
	}
}

// tailErr is the answer to a failed tail read: nothing when the tail was ended, a project
// that is gone as KindNotFound.
func (s *Service) tailErr(ctx context.Context, projectID string, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	if KindOf(err) == KindNotFound {
		return projectNotFound(projectID)
	}
	return fmt.Errorf("tail: %w", err)
}
