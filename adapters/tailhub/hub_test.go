package tailhub

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"example.com/obsvc/domain"
	"github.com/google/uuid"
)

func ptr[T any](v T) *T { return &v }

// admin is a context acting for an admin, as transports make in an open deployment.
func admin(t *testing.T) context.Context {
	return domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
}

func testID() string { return uuid.Must(uuid.NewV7()).String() }

// tailFake is an in-memory store that reads in ingest order, for the hub's unit tests only. It
// allows more than the SQL stores do, so that the hub is shown right under the contract alone:
// each CreateLogs takes the next batch number when it begins, and batches may commit out of that
// order (see holdNext); the horizon is the oldest batch still running. foreign writes a batch as another instance would, unseen by the
// service.
type tailFake struct {
	domain.Store
	mu      sync.Mutex
	project domain.Project
	entries []domain.TailEntry
	tx      uint64
	running map[uint64]bool
	reads   int
	rows    int // entries ReadTail returned
	// hubReads counts the reads of a hub: only a hub bounds its read by a horizon (Before).
	hubReads int
	// holdNext, when set, makes the next CreateLogs take its id, close entered, and wait for it
	// to close before it commits.
	holdNext, entered chan struct{}
}

func (f *tailFake) GetProject(_ context.Context, id string) (domain.Project, error) {
	if id != f.project.ID {
		return domain.Project{}, domain.Errorf(domain.KindNotFound, "not found")
	}
	return f.project, nil
}

func (f *tailFake) CreateLogs(_ context.Context, es []domain.LogEntry, _ domain.LogWrite) (domain.Written, error) {
	f.mu.Lock()
	f.tx++
	tx := f.tx
	if f.running == nil {
		f.running = map[uint64]bool{}
	}
	f.running[tx] = true
	hold, entered := f.holdNext, f.entered
	f.holdNext, f.entered = nil, nil
	f.mu.Unlock()
	if hold != nil {
		close(entered)
		<-hold
	}
	f.commit(tx, es)
	batches := map[string]uint64{}
	for _, e := range es {
		batches[e.ProjectID] = tx
	}
	return domain.Written{Batches: batches}, nil
}

func (f *tailFake) commit(tx uint64, es []domain.LogEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, e := range es {
		f.entries = append(f.entries, domain.TailEntry{LogEntry: e, At: domain.TailPosition{Tx: tx, Pos: int64(i)}})
	}
	delete(f.running, tx)
}

// foreign commits a batch written through another instance.
func (f *tailFake) foreign(es []domain.LogEntry) {
	f.mu.Lock()
	f.tx++
	tx := f.tx
	f.mu.Unlock()
	f.commit(tx, es)
}

func (f *tailFake) horizonLocked() domain.TailPosition {
	xmin := f.tx + 1
	for tx := range f.running {
		xmin = min(xmin, tx)
	}
	return domain.TailPosition{Tx: xmin, Pos: -1}
}

func (f *tailFake) TailHead(context.Context, string) (domain.TailPosition, error) {
	return f.TailHorizon(context.Background(), "")
}

func (f *tailFake) TailHorizon(context.Context, string) (domain.TailPosition, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.horizonLocked(), nil
}

func (f *tailFake) ReadTail(_ context.Context, q domain.TailQuery) ([]domain.TailEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before := q.Before
	if before == (domain.TailPosition{}) {
		before = f.horizonLocked()
	}
	var out []domain.TailEntry
	for _, e := range f.entries {
		if q.After.Before(e.At) && e.At.Before(before) && !slices.Contains(q.Skip, e.At.Tx) && q.Matches(e.LogEntry) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b domain.TailEntry) int {
		if a.At.Before(b.At) {
			return -1
		}
		return 1
	})
	out = out[:min(len(out), q.Limit)]
	f.reads++
	f.rows += len(out)
	if q.Before != (domain.TailPosition{}) {
		f.hubReads++
	}
	return out, nil
}

func (f *tailFake) ReplayTail(context.Context, domain.LogFilter, domain.TailPosition, int) ([]domain.TailEntry, error) {
	return nil, nil
}

func (f *tailFake) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *tailFake) rowCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rows
}

// tailRecorder is one tail's view: the messages it received, in order.
type tailRecorder struct {
	mu   sync.Mutex
	got  []string
	hold chan struct{} // when set, the first call with entries waits for it to close
	held chan struct{}
}

func (r *tailRecorder) fn(entries []domain.TailEntry) error {
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
	svc    *domain.Service
	hub    *Hub
	store  *tailFake
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newTailSetup(t *testing.T) *tailSetup {
	f := &tailFake{project: domain.Project{ID: testID(), Name: "p"}}
	// Polls are rare: only writes through this instance wake the tails.
	o := Options{MaxPerKey: 100, MaxTotal: 100, Poll: time.Hour, Batch: 7, CheckEvery: time.Hour}
	hub := New(f, o)
	svc := domain.NewService(f, domain.Options{NewID: testID, TailStartTimeout: o.ReadTimeout, Tailer: hub})
	ctx, cancel := context.WithCancel(admin(t))
	s := &tailSetup{svc: svc, hub: hub, store: f, ctx: ctx, cancel: cancel}
	t.Cleanup(func() { cancel(); s.wg.Wait(); hub.Close() })
	return s
}

// open starts a tail with filter f and returns once it is open.
func (s *tailSetup) open(t *testing.T, f domain.LogFilter, r *tailRecorder) {
	opened := make(chan struct{})
	f.ProjectID = s.store.project.ID
	s.wg.Go(func() {
		first := true
		err := s.svc.Tail(s.ctx, domain.TailRequest{LogFilter: f}, func(es []domain.TailEntry) error {
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
	var es []domain.LogInput
	for i := range n {
		es = append(es, domain.LogInput{ProjectID: s.store.project.ID, Time: ptr(time.Now().UnixMilli()), Level: ptr("info"), Message: ptr(fmt.Sprint(m + i)), UserID: ptr(fmt.Sprintf("u%d", (m+i)%2))})
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
	forCoalesce(t, testTailHubReadsOncePerWrite)
}

// forCoalesce runs test with hubs that read at every write, and with hubs that read what comes
// within 20ms of handing entries on when the 20ms have passed (Options.Coalesce).
func forCoalesce(t *testing.T, test func(*testing.T, *tailSetup)) {
	for _, c := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(fmt.Sprint("coalesce=", c), func(t *testing.T) {
			s := newTailSetup(t)
			s.hub.opts.Coalesce = c
			test(t, s)
		})
	}
}

func testTailHubReadsOncePerWrite(t *testing.T, s *tailSetup) {
	var all, odd [10]tailRecorder
	for i := range all {
		s.open(t, domain.LogFilter{}, &all[i])
		s.open(t, domain.LogFilter{UserID: ptr("u1")}, &odd[i])
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
	forCoalesce(t, testTailBehindHubReadsAlone)
}

func testTailBehindHubReadsAlone(t *testing.T, s *tailSetup) {
	var fast tailRecorder
	slow := tailRecorder{hold: make(chan struct{}), held: make(chan struct{})}
	s.open(t, domain.LogFilter{}, &fast)
	s.open(t, domain.LogFilter{}, &slow)
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
	s.hub.mu.Lock()
	subs := len(s.hub.hubs[s.store.project.ID].subs)
	s.hub.mu.Unlock()
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
			err := s.svc.Tail(ctx, domain.TailRequest{LogFilter: domain.LogFilter{ProjectID: s.store.project.ID}}, func(es []domain.TailEntry) error {
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
	var hubs, wakeups int
	eventually(t, func() bool {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		hubs, wakeups = len(s.hub.hubs), len(s.hub.wakeup)
		return hubs == 0 && wakeups == 0
	}, func() string {
		return fmt.Sprintf("after every tail ended: %d hubs and %d wake-up channels left", hubs, wakeups)
	})
}

// eventually waits up to 10 s for cond to hold, and fails the test with what says when it
// does not.
func eventually(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what())
		}
		time.Sleep(time.Millisecond)
	}
}

// openJoined opens one unfiltered tail on a project with no hub and returns its recorder once
// the tail takes the reads of the project's new hub and the hub has made its first read. From
// then on the hub reads only when a write through this instance wakes it, by which time the
// write is held: a read that began before the write commits and took its horizon after would
// take the write from the store.
func (s *tailSetup) openJoined(t *testing.T) *tailRecorder {
	t.Helper()
	var r tailRecorder
	s.open(t, domain.LogFilter{}, &r)
	s.joined(t, 1)
	eventually(t, func() bool {
		s.store.mu.Lock()
		defer s.store.mu.Unlock()
		return s.store.hubReads > 0
	}, func() string { return "the hub made no read" })
	return &r
}

// held is how many entries the project's hub holds.
func (s *tailSetup) held() int {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.hub.hubs[s.store.project.ID].heldN
}

// joined waits until n tails take the reads of the project's hub.
func (s *tailSetup) joined(t *testing.T, n int) {
	t.Helper()
	got := 0
	eventually(t, func() bool {
		s.hub.mu.Lock()
		defer s.hub.mu.Unlock()
		got = 0
		if h := s.hub.hubs[s.store.project.ID]; h != nil {
			got = len(h.subs)
		}
		return got == n
	}, func() string { return fmt.Sprintf("%d tails joined the hub, want %d", got, n) })
}

// writeHeld starts a write of n entries from message m whose transaction stays open until the
// returned function is called; it returns once the write has taken its place in ingest order.
func (s *tailSetup) writeHeld(t *testing.T, m, n int) (commit func()) {
	hold, entered := make(chan struct{}), make(chan struct{})
	s.store.mu.Lock()
	s.store.holdNext, s.store.entered = hold, entered
	s.store.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.write(t, m, n)
	}()
	<-entered
	return func() { close(hold); <-done }
}

// foreign commits n entries from message m as another instance would write them.
func (s *tailSetup) foreign(m, n int) {
	var es []domain.LogEntry
	for i := range n {
		es = append(es, domain.LogEntry{ID: testID(), ProjectID: s.store.project.ID, Time: time.Now().UnixMilli(), Level: "info", Message: fmt.Sprint(m + i), UserID: ptr(fmt.Sprintf("u%d", (m+i)%2))})
	}
	s.store.foreign(es)
}

// TestTailHubHandsOnOwnBatchesFromMemory: the hub does not read back what this instance wrote.
// A batch whose transaction began first but commits last holds back the ones after it (written
// here, and written through another instance); once it commits, every tail receives all three
// in ingest order, and the only entries the store was asked for are the other instance's.
func TestTailHubHandsOnOwnBatchesFromMemory(t *testing.T) {
	s := newTailSetup(t)
	var all, odd tailRecorder
	s.open(t, domain.LogFilter{}, &all)
	s.open(t, domain.LogFilter{UserID: ptr("u1")}, &odd)
	s.joined(t, 2)
	rows, reads := s.store.rowCount(), s.store.readCount()

	commit := s.writeHeld(t, 0, 3) // messages 0-2, the oldest transaction
	s.write(t, 3, 3)               // 3-5, committed while 0-2 is still open
	s.foreign(6, 3)                // 6-8, through another instance
	for s.store.readCount() == reads {
		time.Sleep(time.Millisecond) // the hub's read after the write of 3-5
	}
	if got := all.wait(t, 0); len(got) != 0 {
		t.Fatalf("while the oldest batch is open the tail received %v; nothing after it is final", got)
	}
	commit()
	if got := all.wait(t, 9); !equalStrings(got, sequence(0, 9, 1)) {
		t.Fatalf("tail received %v, want 0..8 in ingest order", got)
	}
	if got := odd.wait(t, 4); !equalStrings(got, sequence(1, 9, 2)) {
		t.Fatalf("filtered tail received %v", got)
	}
	if n := s.store.rowCount() - rows; n != 3 {
		t.Errorf("the store handed the tails %d entries; want the 3 written through the other instance, the rest from memory", n)
	}
}

// TestTailHubPacesReads: a hub that has handed nothing on for Coalesce reads a write at once;
// what is written sooner after it handed entries on waits for the rest of the interval, and is
// then read in one read with whatever else came.
func TestTailHubPacesReads(t *testing.T) {
	// paced opens one tail on a hub that paces its reads at coalesce, and returns once the tail
	// has received a first write of n entries (messages 0 to n-1).
	paced := func(t *testing.T, coalesce time.Duration, n int) (*tailSetup, *tailRecorder) {
		s := newTailSetup(t)
		s.hub.opts.Coalesce = coalesce
		r := &tailRecorder{}
		s.open(t, domain.LogFilter{}, r)
		s.joined(t, 1)
		s.write(t, 0, n)
		if got := r.wait(t, n); !equalStrings(got, sequence(0, n, 1)) {
			t.Fatalf("a write to a quiet hub: the tail received %v, want 0..%d without waiting for Coalesce (%v)", got, n-1, coalesce)
		}
		return s, r
	}
	t.Run("quiet hub reads at once, then waits", func(t *testing.T) {
		s, r := paced(t, time.Hour, 2)
		reads := s.store.readCount()
		s.write(t, 2, 2)
		time.Sleep(50 * time.Millisecond)
		if n, got := s.store.readCount()-reads, r.wait(t, 0); n != 0 || len(got) != 2 {
			t.Fatalf("a write within Coalesce of handing entries on: the hub read %d times and the tail received %v; want no read until the interval has passed", n, got)
		}
	})
	t.Run("what waits is read together", func(t *testing.T) {
		s, r := paced(t, time.Second, 1)
		reads := s.store.readCount()
		s.write(t, 1, 2)
		time.Sleep(50 * time.Millisecond) // time enough for a hub that does not wait to read
		s.write(t, 3, 2)
		if got := r.wait(t, 5); !equalStrings(got, sequence(0, 5, 1)) {
			t.Fatalf("the tail received %v, want 0..4 once the interval has passed", got)
		}
		if n := s.store.readCount() - reads; n != 1 {
			t.Errorf("two writes within Coalesce of handing entries on took %d reads of the hub, want 1 after the interval", n)
		}
	})
}

// TestTailHubHoldsBoundedBatches: while an open transaction holds the horizon back, the hub holds
// at most tailHeldReads reads' worth of this instance's batches; the rest it reads from the store
// once the horizon moves, and every tail still receives every entry once, in order.
func TestTailHubHoldsBoundedBatches(t *testing.T) {
	s := newTailSetup(t)
	all := s.openJoined(t)
	rows := s.store.rowCount()
	commit := s.writeHeld(t, 0, 1)
	batch := s.hub.opts.Batch
	limit := tailHeldReads * batch
	n := 1
	for n <= limit+3*batch {
		s.write(t, n, batch)
		n += batch
	}
	if held := s.held(); held > limit || held < limit-batch {
		t.Fatalf("the hub holds %d entries; want at most %d, and about that many", held, limit)
	}
	commit()
	if got := all.wait(t, n); !equalStrings(got, sequence(0, n, 1)) {
		t.Fatalf("tail received %v, want 0..%d once each, in order", got, n-1)
	}
	if read := s.store.rowCount() - rows; read < n-limit || read >= n {
		t.Errorf("the store handed the tail %d of %d entries; want those the hub could not hold (%d or more) and not all", read, n, n-limit)
	}
	if held := s.held(); held != 0 {
		t.Errorf("after handing every entry on the hub still holds %d", held)
	}
}

// TestTailWokenByPartialWrites: entries stored through CreateLogsPartial (the OpenTelemetry
// path) wake the tails of this instance like any other write, and the hub hands them on from
// memory; with polls an hour apart nothing else would bring them.
func TestTailWokenByPartialWrites(t *testing.T) {
	s := newTailSetup(t)
	all := s.openJoined(t)
	rows := s.store.rowCount()
	var in []domain.LogInput
	for i := range 3 {
		in = append(in, domain.LogInput{Level: ptr("info"), Message: ptr(fmt.Sprint(i))})
	}
	if res, err := s.svc.CreateLogsPartial(s.ctx, domain.PartialBatch{ProjectID: s.store.project.ID, Records: in}); err != nil || res.Stored != 3 {
		t.Fatalf("CreateLogsPartial = %+v, %v", res, err)
	}
	if got := all.wait(t, 3); !equalStrings(got, sequence(0, 3, 1)) {
		t.Fatalf("tail received %v, want 0 1 2", got)
	}
	if n := s.store.rowCount() - rows; n != 0 {
		t.Errorf("the store handed the tail %d entries; the hub should have had them from memory", n)
	}
}

// TestTailTakeAgreesWithMatches: what a tail takes of a hub's read, through the read's indexes
// by user, trace and subject, is exactly the entries after its place that its filter matches,
// in order, for random reads, filters and places.
func TestTailTakeAgreesWithMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	pick := func(vs ...string) *string {
		if i := r.IntN(len(vs) + 1); i < len(vs) {
			return &vs[i]
		}
		return nil
	}
	for round := range 500 {
		read := &tailRead{}
		for i := range r.IntN(40) {
			read.entries = append(read.entries, domain.TailEntry{At: domain.TailPosition{Tx: uint64(10 + i/5), Pos: int64(i % 5)}, LogEntry: domain.LogEntry{
				ProjectID: "p", Level: []string{"info", "warn"}[r.IntN(2)], Message: fmt.Sprint("m", i),
				UserID: pick("u1", "u2"), TraceID: pick("t1", "t2"), Subject: pick("s1", "s2"),
			}})
		}
		f := domain.LogFilter{ProjectID: "p", UserID: pick("u1", "u2", "u3"), TraceID: pick("t1", "t2"), Subject: pick("s1", "s2"), Level: pick("info")}
		after := domain.TailPosition{Tx: uint64(9 + r.IntN(10)), Pos: int64(r.IntN(6) - 1)}
		var want []string
		for _, e := range read.entries {
			if after.Before(e.At) && f.Matches(e.LogEntry) {
				want = append(want, e.Message)
			}
		}
		var got []string
		l := tailLoop{f: f, after: after, fn: func(es []domain.TailEntry) error {
			for _, e := range es {
				got = append(got, e.Message)
			}
			return nil
		}}
		if err := l.take(read); err != nil {
			t.Fatal(err)
		}
		if !equalStrings(got, want) {
			t.Fatalf("round %d, filter %+v after %+v: took %v, want %v", round, f, after, got, want)
		}
	}
}

// TestTailGivesItsAdmissionBackOnceStarted: a tail holds the shares of the in-flight limits
// while it starts, and gives them back once (TailRequest.Started), when it has caught up,
// while it stays open.
func TestTailGivesItsAdmissionBackOnceStarted(t *testing.T) {
	s := newTailSetup(t)
	var released atomic.Int32
	ctx := s.ctx
	started := func() { released.Add(11) } // what the transport gives back: two shares, 1 and 10
	s.write(t, 0, 20)                      // a backlog of three reads (Batch 7) from the start
	var got []string
	opened := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.svc.Tail(ctx, domain.TailRequest{LogFilter: domain.LogFilter{ProjectID: s.store.project.ID}, Cursor: domain.EncodeTailToken(domain.TailPosition{}), Started: started}, func(es []domain.TailEntry) error {
			if es == nil && opened != nil {
				if n := released.Load(); n != 0 {
					t.Errorf("released %d before the catch-up", n)
				}
				close(opened)
				opened = nil
			}
			for _, e := range es {
				got = append(got, e.Message)
			}
			return nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for released.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := released.Load(); n != 11 {
		t.Fatalf("released %d, want each share once (11)", n)
	}
	s.cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 {
		t.Fatalf("caught up with %d entries, want 20", len(got))
	}
}

// TestTailsKeptForNewKeys: keys that hold a tail may fill MaxTotal only up to its last quarter;
// a key with none still opens its first there.
func TestTailsKeptForNewKeys(t *testing.T) {
	var tl Hub
	o := Options{MaxPerKey: 3, MaxTotal: 8} // 2 kept for first tails
	for _, who := range []string{"a", "a", "a", "b", "b", "b"} {
		if !tl.acquire(who, o) {
			t.Fatalf("tail %d of %s refused", tl.open[who]+1, who)
		}
	}
	if tl.acquire("a", o) || tl.acquire("b", o) {
		t.Fatal("a key past MaxPerKey opened a tail")
	}
	tl.release("b")
	if tl.acquire("a", o) {
		t.Fatal("a's fourth tail opened past MaxPerKey")
	}
	if !tl.acquire("b", o) {
		t.Fatal("b refused below its share")
	}
	if tl.acquire("b", o) {
		t.Fatal("b took a tail kept for new keys")
	}
	if !tl.acquire("c", o) || !tl.acquire("d", o) {
		t.Fatal("a new key's first tail refused")
	}
	if tl.acquire("e", o) {
		t.Fatal("a tail past MaxTotal opened")
	}
}
