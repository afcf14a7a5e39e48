package domain

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// tailFake is an in-memory store that reads in ingest order, for the hub's unit tests only:
// each CreateLogs is one batch, committed at once, in call order (as on SQLite).
type tailFake struct {
	Store
	mu      sync.Mutex
	project Project
	entries []TailEntry
	tx      uint64
	reads   int
}

func (f *tailFake) GetProject(_ context.Context, id string) (Project, error) {
	if id != f.project.ID {
		return Project{}, Errorf(KindNotFound, "not found")
	}
	return f.project, nil
}

func (f *tailFake) CreateLogs(_ context.Context, es []LogEntry, _ *IdempotencyRecord, _ time.Duration, _ AdmitFunc) (*IdempotencyRecord, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tx++
	for i, e := range es {
		f.entries = append(f.entries, TailEntry{LogEntry: e, At: TailPosition{Tx: f.tx, Pos: int64(i)}})
	}
	return nil, nil
}

func (f *tailFake) TailHead(context.Context, string) (TailPosition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return TailPosition{Tx: f.tx, Pos: math.MaxInt32}, nil
}

func (f *tailFake) ReadTail(_ context.Context, q TailQuery) ([]TailEntry, error) {
	f.mu.Lock()
	var out []TailEntry
	for _, e := range f.entries {
		if q.After.Before(e.At) && q.Matches(e.LogEntry) && len(out) < q.Limit {
			out = append(out, e)
		}
	}
	f.reads++
	f.mu.Unlock()
	return out, nil
}

func (f *tailFake) ReplayTail(context.Context, LogFilter, TailPosition, int) ([]TailEntry, error) {
	return nil, nil
}

func (f *tailFake) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// tailRecorder is one tail's view: the messages it received, in order.
type tailRecorder struct {
	mu   sync.Mutex
	got  []string
	hold chan struct{} // when set, the first call with entries waits for it to close
	held chan struct{}
}

func (r *tailRecorder) fn(entries []TailEntry) error {
	if len(entries) > 0 && r.hold != nil {
		close(r.held)
		<-r.hold
		r.hold = nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range entries {
		r.got = append(r.got, e.Message)
	}
	return nil
}

func (r *tailRecorder) wait(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := append([]string(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type tailSetup struct {
	svc    *Service
	store  *tailFake
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newTailSetup(t *testing.T) *tailSetup {
	f := &tailFake{project: Project{ID: testID(), Name: "p"}}
	// Polls are rare: only writes through this instance wake the tails.
	svc := NewService(f, opts(Options{Tail: TailOptions{MaxPerKey: 100, MaxTotal: 100, Poll: time.Hour, Batch: 7, CheckEvery: time.Hour}}))
	ctx, cancel := context.WithCancel(admin(t))
	s := &tailSetup{svc: svc, store: f, ctx: ctx, cancel: cancel}
	t.Cleanup(func() { cancel(); s.wg.Wait() })
	return s
}

// open starts a tail with filter f and returns once it is open.
func (s *tailSetup) open(t *testing.T, f LogFilter, r *tailRecorder) {
	opened := make(chan struct{})
	f.ProjectID = s.store.project.ID
	s.wg.Go(func() {
		first := true
		err := s.svc.Tail(s.ctx, TailRequest{LogFilter: f}, func(es []TailEntry) error {
			if first {
				first = false
				close(opened)
			}
			return r.fn(es)
		})
		if err != nil {
			t.Errorf("Tail: %v", err)
		}
	})
	<-opened
}

// write posts one batch of n entries, messages from m on, users alternating u0 and u1.
func (s *tailSetup) write(t *testing.T, m, n int) {
	var es []LogInput
	for i := range n {
		es = append(es, LogInput{ProjectID: s.store.project.ID, Time: ptr(time.Now().UnixMilli()), Level: ptr("info"), Message: ptr(fmt.Sprint(m + i)), UserID: ptr(fmt.Sprintf("u%d", (m+i)%2))})
	}
	if _, err := s.svc.CreateLogs(s.ctx, es, ""); err != nil {
		t.Fatal(err)
	}
}

func sequence(from, to, step int) []string {
	var out []string
	for i := from; i < to; i += step {
		out = append(out, fmt.Sprint(i))
	}
	return out
}

func equalStrings(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// TestTailHubReadsOncePerWrite: twenty tails of one project cost the store about one read per
// write, not twenty, and each still receives what its filter matches, in order, once.
func TestTailHubReadsOncePerWrite(t *testing.T) {
	s := newTailSetup(t)
	var all, odd [10]tailRecorder
	for i := range all {
		s.open(t, LogFilter{}, &all[i])
		s.open(t, LogFilter{UserID: ptr("u1")}, &odd[i])
	}
	before := s.store.readCount()
	const writes, per = 50, 3
	for w := range writes {
		s.write(t, w*per, per)
	}
	for i := range all {
		if got := all[i].wait(t, writes*per); !equalStrings(got, sequence(0, writes*per, 1)) {
			t.Fatalf("tail %d received %v", i, got)
		}
		if got := odd[i].wait(t, writes*per/2); !equalStrings(got, sequence(1, writes*per, 2)) {
			t.Fatalf("filtered tail %d received %v", i, got)
		}
	}
	// A read per tail per write would be 20 per write. The hub needs about one; a tail that a
	// busy scheduler (the race detector, a loaded machine) leaves behind reads on its own until
	// it catches up, so allow a few per write, far below what one read per tail would take.
	if reads := s.store.readCount() - before; reads > 5*writes {
		t.Errorf("%d writes with %d tails open took %d reads; one hub should need about one per write (one read per tail: %d)", writes, len(all)+len(odd), reads, writes*(len(all)+len(odd)))
	}
}

// TestTailBehindHubReadsAlone: a tail that stops taking entries is let go by the hub once its
// queue is full, while the others go on; when it takes entries again it reads on its own,
// catches up, and has received every entry once, in order.
func TestTailBehindHubReadsAlone(t *testing.T) {
	s := newTailSetup(t)
	var fast tailRecorder
	slow := tailRecorder{hold: make(chan struct{}), held: make(chan struct{})}
	s.open(t, LogFilter{}, &fast)
	s.open(t, LogFilter{}, &slow)
	s.write(t, 0, 2)
	<-slow.held
	// Each write is one hub read (wait for it), so the slow tail's queue fills.
	n := 2
	for range tailQueue + 4 {
		before := s.store.readCount()
		s.write(t, n, 2)
		n += 2
		for s.store.readCount() == before {
			time.Sleep(time.Millisecond)
		}
	}
	if got := fast.wait(t, n); !equalStrings(got, sequence(0, n, 1)) {
		t.Fatalf("the fast tail received %v", got)
	}
	s.svc.tails.mu.Lock()
	subs := len(s.svc.tails.hubs[s.store.project.ID].subs)
	s.svc.tails.mu.Unlock()
	if subs != 1 {
		t.Fatalf("the hub holds %d tails, want 1: the one behind should be let go", subs)
	}
	close(slow.hold)
	s.write(t, n, 2)
	n += 2
	if got := slow.wait(t, n); !equalStrings(got, sequence(0, n, 1)) {
		t.Fatalf("the tail that fell behind received %v, want 0..%d once each", got, n-1)
	}
	if got := fast.wait(t, n); !equalStrings(got, sequence(0, n, 1)) {
		t.Fatalf("the fast tail received %v", got)
	}
}

// TestTailsLeaveNothingBehind: once every tail of a project has ended, this instance keeps no
// hub and no wake-up channel for it, so projects nobody tails any more (or that were deleted)
// cost nothing however many come and go.
func TestTailsLeaveNothingBehind(t *testing.T) {
	s := newTailSetup(t)
	var r [3]tailRecorder
	ctx, cancel := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	for i := range r {
		opened := make(chan struct{})
		wg.Go(func() {
			first := true
			err := s.svc.Tail(ctx, TailRequest{LogFilter: LogFilter{ProjectID: s.store.project.ID}}, func(es []TailEntry) error {
				if first {
					first = false
					close(opened)
				}
				return r[i].fn(es)
			})
			if err != nil {
				t.Errorf("Tail: %v", err)
			}
		})
		<-opened
	}
	s.write(t, 0, 5)
	for i := range r {
		if got := r[i].wait(t, 5); len(got) != 5 {
			t.Fatalf("tail %d received %v", i, got)
		}
	}
	cancel()
	wg.Wait()
	// The hub's goroutine ends on its own after the last tail left: wait for it to let go.
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.svc.tails.mu.Lock()
		hubs, wakeups := len(s.svc.tails.hubs), len(s.svc.tails.wakeup)
		s.svc.tails.mu.Unlock()
		if hubs == 0 && wakeups == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after every tail ended: %d hubs and %d wake-up channels left", hubs, wakeups)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
