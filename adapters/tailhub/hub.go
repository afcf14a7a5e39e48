// Package tailhub is the live tail's fan-out (domain.Tailer): one reader per tailed project on
// this instance, whose reads every tail of the project that has caught up shares. Its
// goroutines belong to the Hub: each project's reader ends when its last tail leaves, and Close
// ends them all and waits for them.
//
// Pacing (Options.Coalesce): what is written to a project sooner than Coalesce after
// its hub last handed entries on waits, and is read with whatever else comes, when Coalesce has
// passed. A hub that has handed nothing on for Coalesce reads at once, so a quiet project's
// entries are not delayed. Under a steady stream the hub asks the store and wakes its tails at
// most once per Coalesce (more often only while a read of the store stops at Batch), and each
// tail following it sends (one write, one flush, one wake-up of its client) once per read of
// the hub, instead of once per write to the project.
package tailhub

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"time"

	"example.com/obsvc/domain"
)

// tailQueue is how many reads of its project's hub a tail may have yet to hand on before the
// hub lets it go (it then reads on its own until it catches up again).
const tailQueue = 16

// tailHeldReads bounds what a hub holds of the batches written through this instance that it
// has not handed on yet (see tailHub.held): at most this many reads' worth (Options.Batch
// entries each). Beyond it a batch is not held, and the hub reads it from the store instead.
const tailHeldReads = 16

// Options bound the live tail.
type Options struct {
	// MaxPerKey bounds the open tails of one API key (of one client address when the service is
	// open), MaxTotal those of the whole instance; beyond either a new tail is KindRateLimited.
	// The last quarter of MaxTotal is kept for the first tail of a key: a key that holds a tail
	// already may open another only while fewer than MaxTotal-MaxTotal/4 are open, so that keys
	// holding many tails between them cannot take every one from a key that holds none.
	MaxPerKey int
	MaxTotal  int
	// ReadTimeout, when positive, bounds each read of the store a tail makes once it has
	// caught up: a read that takes longer ends the stream (the client resumes from the last
	// entry it received). The start's reads are bounded by the start's context
	// (domain.Options.TailStartTimeout).
	ReadTimeout time.Duration
	// Poll is how often an idle tail looks for entries written through other instances (entries
	// written through this one wake it at once).
	Poll time.Duration
	// Batch is the most entries one read hands on.
	Batch int
	// CheckEvery is how often an open tail checks that its project still exists.
	CheckEvery time.Duration
	// Coalesce is the least time between two reads that hand a project's entries on to its
	// tails (the Tailer's pacing); 0 reads at once.
	Coalesce time.Duration
}

// DefaultOptions are the documented defaults.
func DefaultOptions() Options {
	return Options{MaxPerKey: 10, MaxTotal: 1000, Poll: 250 * time.Millisecond, Batch: 500, CheckEvery: 5 * time.Second, Coalesce: 100 * time.Millisecond}
}

// Store reads a project's entries in ingest order: what a tail's start reads (domain.TailStore),
// and what a tail reads after.
type Store interface {
	domain.TailStore
	// TailHorizon is TailHead without looking the project up: every entry of the project
	// committed from now on comes after it, and every batch before it has committed or never
	// will.
	TailHorizon(ctx context.Context, projectID string) (domain.TailPosition, error)
	// ReadTail returns, in ingest order, up to q.Limit entries matching q after q.After whose
	// place is final: no entry committed later may come before them. Entries written before
	// ingest order was recorded are never returned.
	ReadTail(ctx context.Context, q domain.TailQuery) ([]domain.TailEntry, error)
}

// Hub follows the tails of this instance (domain.Tailer): it wakes them when entries are
// written through this instance, and holds the hubs that read each tailed project once for all
// its tails.
type Hub struct {
	store Store
	opts  Options
	// base is the parent of every project's reader; Close ends it and waits for them (wg).
	base   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool
	open   map[string]int // holder -> its open tails
	total  int
	wakeup map[string]chan struct{} // project id -> closed on the next write
	hubs   map[string]*tailHub      // project id -> the hub of its tails on this instance
}

var _ domain.Tailer = (*Hub)(nil)

// errClosed ends the tails of a Hub that was closed while they were open.
var errClosed = errors.New("the tail hub was closed")

// New returns a Hub reading store, bounded by o (the zero value means
// DefaultOptions). Close ends its goroutines.
func New(store Store, o Options) *Hub {
	if o == (Options{}) {
		o = DefaultOptions()
	}
	base, cancel := context.WithCancel(context.Background())
	return &Hub{store: store, opts: o, base: base, cancel: cancel}
}

// Close ends every project's reader and waits for them; a tail still open then ends with an
// error, and one that starts after fails at once.
func (t *Hub) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
}

// Open counts a tail of holder in (see domain.Tailer).
func (t *Hub) Open(holder string) (func(), error) {
	if !t.acquire(holder, t.opts) {
		return nil, domain.Errorf(domain.KindRateLimited, "too many open tails (at most %d per key, %d in all, of which the last quarter only for a key's first)", t.opts.MaxPerKey, t.opts.MaxTotal)
	}
	var once sync.Once
	return func() { once.Do(func() { t.release(holder) }) }, nil
}

func (t *Hub) acquire(who string, o Options) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	held := t.open[who]
	total := o.MaxTotal
	if held > 0 {
		total -= o.MaxTotal / 4 // the rest is kept for the first tail of other keys
	}
	if (o.MaxTotal > 0 && t.total >= total) || (o.MaxPerKey > 0 && held >= o.MaxPerKey) {
		return false
	}
	if t.open == nil {
		t.open = map[string]int{}
	}
	t.open[who]++
	t.total++
	return true
}

func (t *Hub) release(who string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	if t.open[who]--; t.open[who] <= 0 {
		delete(t.open, who)
	}
}

// Follow hands f.Fn what the tail's filter matches after f.After (see domain.Tailer). A tail
// first reads on its own from its start until it has caught up with its project's hub (see
// tailHub), then takes the hub's reads; one that falls behind the hub reads on its own again.
func (t *Hub) Follow(ctx context.Context, f domain.TailFollow) error {
	l := tailLoop{s: t, f: f.Filter, fn: f.Fn, after: f.After, checked: time.Now(), start: f.Start, started: f.Started, check: f.Check}
	if l.start == nil {
		l.start = ctx
	}
	if l.started == nil {
		l.started = func() {}
	}
	if l.check == nil {
		l.check = func(context.Context) error { return nil }
	}
	defer func() {
		if l.sub != nil {
			t.leave(f.Filter.ProjectID, l.sub)
		} else {
			t.forget(f.Filter.ProjectID) // it may have asked for a wake-up while reading alone
		}
	}()
	return l.run(ctx)
}

// memo is the hub's domain.TailMemo: one per entry of a read, shared by every tail it hands the
// read to.
type memo struct {
	once sync.Once
	b    []byte
}

func (m *memo) Bytes(e *domain.TailEntry, render func(*domain.TailEntry) []byte) []byte {
	m.once.Do(func() { m.b = render(e) })
	return m.b
}

// tailErr is the answer to a failed read: nothing when the tail was ended.
func tailErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// tailHub reads a project's entries in ingest order, unfiltered, once for all the tails of the
// project on this instance that have caught up with it, and hands every read to each of them;
// each keeps what its filter matches. With one reader per project an instance asks the store
// once per write or poll, at most once per Options.Coalesce under a steady stream, however
// many tails are open.
//
// What this instance writes to the project the hub does not read back: each batch comes with
// its place in ingest order (Written.Batches) and the hub holds its entries until the store's
// horizon passes them, then hands them on in order among the entries it reads of batches
// written through other instances, which are the only ones it asks the store for.
type tailHub struct {
	project string
	// pos is where the next read starts. It is always a place the store called final: a
	// position TailHead or TailHorizon returned or one of an entry ReadTail returned, so that
	// no entry written later can come at or before it. Guarded by Hub.mu.
	pos  domain.TailPosition
	subs map[*tailSub]struct{}
	stop context.CancelFunc
	// held are the entries of the batches written through this instance after pos, by batch
	// (TailPosition.Tx), in order within each; heldN counts them. Guarded by Hub.mu.
	held  map[uint64][]domain.TailEntry
	heldN int
}

// tailSub is one tail's place at its hub.
type tailSub struct {
	hub   *tailHub
	reads chan *tailRead
	// key is the index of a read the tail's filter looks entries up by (tailKeys: none).
	key int
	// dropped is closed when the hub lets the tail go: its queue was full, or a read failed
	// (err, set first).
	dropped chan struct{}
	err     error
}

// waiter returns a channel closed at the next write to the project through this instance.
func (t *Hub) waiter(projectID string) <-chan struct{} {
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

// Written hands a committed batch to the hubs of its projects, which hold it (when its place in
// each project's ingest order, batches, is known and they have room) so as not to read it
// back, and wakes the tails of its projects.
func (t *Hub) Written(batches map[string]uint64, entries []domain.LogEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(batches) > 0 && len(t.hubs) > 0 {
		t.hold(batches, entries)
	}
	for _, e := range entries {
		if ch, ok := t.wakeup[e.ProjectID]; ok {
			close(ch)
			delete(t.wakeup, e.ProjectID)
		}
	}
}

// hold gives each hub of a project of the batch (numbered batches[project] in its project's
// order) the batch's entries of its project that it
// has not read yet, when it has room for them. A batch names few projects, usually one: the
// entries are counted per hub first, so that each hub's share is made once, at its size: a
// hub holds every entry of its project written through this instance, and growing its share
// as it filled allocated about twice the batch. Called with t.mu held.
func (t *Hub) hold(batches map[string]uint64, entries []domain.LogEntry) {
	type share struct {
		hub *tailHub
		n   int
		es  []domain.TailEntry
	}
	var shares []share
	find := func(h *tailHub) *share {
		for i := range shares {
			if shares[i].hub == h {
				return &shares[i]
			}
		}
		return nil
	}
	// mine is the hub of entries[i], if it holds the entry. Entries of one project come
	// together, so the last project's hub is kept.
	lastProject, lastHub, lastTx := "", (*tailHub)(nil), uint64(0)
	mine := func(i int) (*tailHub, domain.TailPosition) {
		if p := entries[i].ProjectID; p != lastProject || i == 0 {
			lastProject, lastHub, lastTx = p, t.hubs[p], batches[p]
		}
		at := domain.TailPosition{Tx: lastTx, Pos: int64(i)}
		if lastHub == nil || lastTx == 0 || !lastHub.pos.Before(at) { // no hub, no place, or the hub read the entry from the store already
			return nil, at
		}
		return lastHub, at
	}
	for i := range entries {
		if h, _ := mine(i); h != nil {
			if sh := find(h); sh != nil {
				sh.n++
			} else {
				shares = append(shares, share{hub: h, n: 1})
			}
		}
	}
	for i := range shares {
		// A share the hub has no room for stays nil: the hub reads the batch from the store.
		if sh := &shares[i]; sh.hub.heldN+sh.n <= tailHeldReads*max(t.opts.Batch, 1) {
			sh.es = make([]domain.TailEntry, 0, sh.n)
		}
	}
	for i := range entries {
		if h, at := mine(i); h != nil {
			if sh := find(h); sh.es != nil {
				sh.es = append(sh.es, domain.TailEntry{LogEntry: entries[i], At: at})
			}
		}
	}
	for _, sh := range shares {
		if sh.es == nil {
			continue
		}
		h := sh.hub
		if h.held == nil {
			h.held = map[uint64][]domain.TailEntry{}
		}
		h.held[sh.es[0].At.Tx] = sh.es
		h.heldN += len(sh.es)
	}
}

// hubPos returns the position of the project's hub, if it has one.
func (t *Hub) hubPos(projectID string) (domain.TailPosition, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.hubs[projectID]
	if !ok {
		return domain.TailPosition{}, false
	}
	return h.pos, true
}

// join adds a tail that has handed on every matching entry up to after to the project's hub,
// starting one at head (a final position at or before after) when there is none. It returns
// nil when the hub has read past after: entries between are not the tail's yet, and the hub
// has handed them on already.
func (t *Hub) join(projectID string, key int, after, head domain.TailPosition) *tailSub {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.hubs[projectID]
	switch {
	case !ok:
		if t.closed { // no reader starts any more: the tail ends
			sub := &tailSub{hub: &tailHub{}, reads: make(chan *tailRead), dropped: make(chan struct{}), err: errClosed}
			close(sub.dropped)
			return sub
		}
		ctx, stop := context.WithCancel(t.base)
		h = &tailHub{project: projectID, pos: head, subs: map[*tailSub]struct{}{}, stop: stop}
		if t.hubs == nil {
			t.hubs = map[string]*tailHub{}
		}
		t.hubs[projectID] = h
		t.wg.Go(func() { t.runHub(ctx, h) })
	case after.Before(h.pos):
		return nil
	}
	sub := &tailSub{hub: h, key: key, reads: make(chan *tailRead, tailQueue), dropped: make(chan struct{})}
	h.subs[sub] = struct{}{}
	return sub
}

// leave takes a tail off its project's hub, and ends the hub when it was the last.
func (t *Hub) leave(projectID string, sub *tailSub) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := sub.hub
	if t.hubs[projectID] != h {
		return // the hub ended already
	}
	delete(h.subs, sub)
	if len(h.subs) == 0 {
		delete(t.hubs, projectID)
		h.stop()
		t.forgetLocked(projectID)
	}
}

// forget drops the project's wake-up channel when no hub of it is left on this instance, so
// that projects nobody tails any more, or that were deleted, leave nothing behind. Only a hub
// blocks on that channel; a tail reading alone merely looks at it, and asks for a new one on
// its next read.
func (t *Hub) forget(projectID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(projectID)
}

func (t *Hub) forgetLocked(projectID string) {
	if _, ok := t.hubs[projectID]; !ok {
		delete(t.wakeup, projectID)
	}
}

// endLocked ends h, which has failed with err, and lets its tails go with it. Called with t.mu
// held.
func (t *Hub) endLocked(h *tailHub, err error) {
	delete(t.hubs, h.project)
	h.stop()
	t.forgetLocked(h.project)
	for sub := range h.subs {
		sub.err = err
		close(sub.dropped)
	}
}

// runHub reads for the tails of h until the last leaves (ctx ends) or a read fails.
func (t *Hub) runHub(ctx context.Context, h *tailHub) {
	o := t.opts
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.hubs[h.project] == h { // Close ended the reader while tails were open
			t.endLocked(h, errClosed)
		}
	}()
	timer := time.NewTimer(o.Poll)
	defer timer.Stop()
	var handed time.Time // when the hub last handed entries on
	for {
		wake := t.waiter(h.project)
		got, need, more, err := t.hubRead(ctx, h)
		var read *tailRead
		if err == nil && len(got) > 0 {
			handed = time.Now()
			memos := make([]memo, len(got))
			for i := range got {
				got[i].Memo = &memos[i] // the hub's own: taken out of held, not handed on yet
			}
			read = &tailRead{entries: got}
			// The indexes are made here, before any tail looks: left to the first tail that
			// needs one, the hub's other tails would queue behind it one after another.
			for key, ok := range need {
				if ok {
					read.makeIndex(key)
				}
			}
		}
		t.mu.Lock()
		if t.hubs[h.project] != h { // the last tail left
			t.forgetLocked(h.project) // the wake-up this read asked for, after leave dropped its own
			t.mu.Unlock()
			return
		}
		if err != nil {
			if t.base.Err() != nil {
				err = errClosed
			}
			t.endLocked(h, err)
			t.mu.Unlock()
			return
		}
		if read != nil {
			for sub := range h.subs {
				select {
				case sub.reads <- read:
				default: // the tail is behind: it reads on its own until it catches up
					delete(h.subs, sub)
					close(sub.dropped)
				}
			}
			if len(h.subs) == 0 {
				delete(t.hubs, h.project)
				h.stop()
				t.forgetLocked(h.project)
				t.mu.Unlock()
				return
			}
		}
		t.mu.Unlock()
		if more {
			continue // more is waiting
		}
		timer.Reset(o.Poll)
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-timer.C:
		}
		// Under a steady stream the hub reads at most once per Coalesce: what is written
		// sooner after it last handed entries on waits for the rest of the interval, and is
		// read with whatever else comes by then. A hub that has handed nothing on for
		// Coalesce reads at once.
		if wait := o.Coalesce - time.Since(handed); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
		}
	}
}

// hubRead takes the hub past the entries of its project that are final now, up to the store's
// horizon or Batch entries read from the store, and returns them in ingest order: the ones it
// holds from memory, the others read from the store. more says the read stopped at Batch; need
// names the indexes (see tailRead) that the hub's tails look entries up by.
func (t *Hub) hubRead(ctx context.Context, h *tailHub) (got []domain.TailEntry, need [tailKeys]bool, more bool, err error) {
	o := t.opts
	// The horizon first: every batch before it has ended, so the read below, which comes later,
	// sees every one that committed, and none after it is taken.
	rctx, cancel := t.readCtx(ctx)
	defer cancel()
	horizon, err := t.store.TailHorizon(rctx, h.project)
	if err != nil {
		return nil, need, false, err
	}
	t.mu.Lock()
	after := h.pos
	skip := make([]uint64, 0, len(h.held))
	for tx := range h.held {
		skip = append(skip, tx)
	}
	t.mu.Unlock()
	slices.Sort(skip)
	read, err := t.store.ReadTail(rctx, domain.TailQuery{LogFilter: domain.LogFilter{ProjectID: h.project}, After: after, Before: horizon, Skip: skip, Limit: o.Batch})
	if err != nil {
		return nil, need, false, err
	}
	end := horizon
	if more = len(read) == o.Batch; more {
		end = read[len(read)-1].At // a read entry, so no held one is at end
	}
	if !after.Before(end) {
		end = after // never back
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	// Only the batches left out of the read come from memory: one handed over since may have
	// been read from the store. Each batch's entries after after and before end are one run of
	// its held slice; a single run is handed on as it is, several are joined once.
	var runs [][]domain.TailEntry
	n := 0
	for _, tx := range skip {
		es := h.held[tx]
		lo := sort.Search(len(es), func(i int) bool { return after.Before(es[i].At) })
		hi := sort.Search(len(es), func(i int) bool { return !es[i].At.Before(end) })
		if lo < hi {
			runs = append(runs, es[lo:hi:hi]) // capped: an append must not reach the rest of held
			n += hi - lo
		}
	}
	var mine []domain.TailEntry
	switch len(runs) {
	case 0:
	case 1:
		mine = runs[0]
	default:
		mine = make([]domain.TailEntry, 0, n)
		for _, r := range runs {
			mine = append(mine, r...)
		}
	}
	got = mergeTail(read, mine)
	h.pos = end
	for tx, es := range h.held {
		i := 0
		for i < len(es) && !end.Before(es[i].At) {
			i++
		}
		h.heldN -= i
		if i == len(es) {
			delete(h.held, tx)
		} else {
			h.held[tx] = es[i:]
		}
	}
	for sub := range h.subs {
		if sub.key < tailKeys {
			need[sub.key] = true
		}
	}
	return got, need, more, nil
}

// mergeTail merges two runs of entries, each in ingest order and no position in both.
func mergeTail(a, b []domain.TailEntry) []domain.TailEntry {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return b
	}
	out := make([]domain.TailEntry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].At.Before(b[0].At) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// readCtx bounds one read of the store a tail makes by Options.ReadTimeout.
func (t *Hub) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if t.opts.ReadTimeout > 0 {
		return context.WithTimeout(ctx, t.opts.ReadTimeout)
	}
	return context.WithCancel(ctx)
}

// tailLoop is one open tail after its start.
type tailLoop struct {
	s  *Hub
	f  domain.LogFilter
	fn domain.TailFunc
	// after is the place up to which every matching entry has been handed on.
	after   domain.TailPosition
	sub     *tailSub // the tail's place at its hub; nil while it reads on its own
	checked time.Time
	// check says whether the project still exists (domain.TailFollow.Check).
	check func(ctx context.Context) error
	// start bounds the reads of the tail's start, until it first catches up; started, nil
	// from then on, ends the start.
	start   context.Context
	started func()
}

// readCtx is the context of one read of the store: the start's while the tail catches up, one
// bounded by Options.ReadTimeout after.
func (l *tailLoop) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.started != nil {
		return l.start, func() {}
	}
	return l.s.readCtx(ctx)
}

func (l *tailLoop) run(ctx context.Context) error {
	s, o := l.s, l.s.opts
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		if l.sub == nil {
			// On its own: read up to what is final now, then join the hub if it has not read
			// past that since. The hub's place is taken before the read, so the read covers
			// everything up to it (it was final then).
			wake := s.waiter(l.f.ProjectID)
			rctx, cancel := l.readCtx(ctx)
			head, ok := s.hubPos(l.f.ProjectID)
			if !ok {
				var err error
				if head, err = s.store.TailHead(rctx, l.f.ProjectID); err != nil {
					cancel()
					return tailErr(ctx, err)
				}
			}
			got, err := s.store.ReadTail(rctx, domain.TailQuery{LogFilter: l.f, After: l.after, Limit: o.Batch})
			cancel()
			if err != nil {
				return tailErr(ctx, err)
			}
			if len(got) < o.Batch && l.started != nil {
				l.started() // caught up: the start is over
				l.started = nil
			}
			if len(got) > 0 {
				l.after = got[len(got)-1].At
				if err := l.fn(got); err != nil {
					return err
				}
				if len(got) == o.Batch {
					continue // more is waiting
				}
			}
			if l.after.Before(head) {
				l.after = head // nothing between matches
			}
			key, _ := indexKey(&l.f)
			if l.sub = s.join(l.f.ProjectID, key, l.after, head); l.sub != nil {
				continue
			}
			// The hub read on meanwhile: read again, at once if there is news.
			select {
			case <-ctx.Done():
				return nil
			case <-wake:
			default:
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case got := <-l.sub.reads:
			if err := l.take(got); err != nil {
				return err
			}
			continue
		case <-l.sub.dropped:
			// Hand on what the hub read before it let go, then read on alone (or end, when the
			// hub's read failed).
			for done := false; !done; {
				select {
				case got := <-l.sub.reads:
					if err := l.take(got); err != nil {
						return err
					}
				default:
					done = true
				}
			}
			if err := l.sub.err; err != nil {
				return tailErr(ctx, err)
			}
			l.sub = nil
			continue
		case <-tick.C:
		}
		if err := l.idle(ctx); err != nil {
			return err
		}
	}
}

// tailRead is one read of a hub, handed to each of its tails: the entries in ingest order, and
// indexes of them by the fields a filter names one value of, each made once, by the first tail
// that needs it. A tail following one user of a busy project looks at that user's entries
// only, instead of testing every entry against its filter.
type tailRead struct {
	entries []domain.TailEntry
	once    [tailKeys]sync.Once
	index   [tailKeys]map[string][]int32
}

// The fields a tailRead may be indexed by, most selective first.
const (
	keyUser = iota
	keyTrace
	keySubject
	tailKeys
)

// tailKey is the field of e a key names, nil when e has none.
func tailKey(key int, e *domain.LogEntry) *string {
	switch key {
	case keyUser:
		return e.UserID
	case keyTrace:
		return e.TraceID
	}
	return e.Subject
}

// candidates returns the positions, ascending, of the entries whose key field is v.
func (r *tailRead) candidates(key int, v string) []int32 {
	r.makeIndex(key)
	return r.index[key][v]
}

// makeIndex makes the read's index by key, once.
func (r *tailRead) makeIndex(key int) {
	r.once[key].Do(func() {
		m := map[string][]int32{}
		for i := range r.entries {
			if k := tailKey(key, &r.entries[i].LogEntry); k != nil {
				m[*k] = append(m[*k], int32(i))
			}
		}
		r.index[key] = m
	})
}

// indexKey is the index of a read that a tail with filter f looks entries up by, the most
// selective field it names, and the value; tailKeys when it names none.
func indexKey(f *domain.LogFilter) (int, *string) {
	switch {
	case f.UserID != nil:
		return keyUser, f.UserID
	case f.TraceID != nil:
		return keyTrace, f.TraceID
	case f.Subject != nil:
		return keySubject, f.Subject
	}
	return tailKeys, nil
}

// take hands on the entries of one of the hub's reads that come after the tail's place and
// match its filter.
func (l *tailLoop) take(r *tailRead) error {
	read := r.entries
	from := sort.Search(len(read), func(i int) bool { return l.after.Before(read[i].At) })
	if from == len(read) {
		return nil
	}
	l.after = read[len(read)-1].At
	f := &l.f
	var out []domain.TailEntry
	if key, v := indexKey(f); key < tailKeys {
		for _, i := range r.candidates(key, *v) {
			if int(i) >= from && f.Matches(read[i].LogEntry) {
				out = append(out, read[i])
			}
		}
	} else {
		// Hand on the read itself when every entry matches; copy only the matching ones otherwise.
		out = read[from:]
		for i, e := range out {
			if !f.Matches(e.LogEntry) {
				kept := slices.Clone(out[:i])
				for _, e := range out[i+1:] {
					if f.Matches(e.LogEntry) {
						kept = append(kept, e)
					}
				}
				out = kept
				break
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return l.fn(out)
}

// idle runs after a quiet poll interval: it checks now and then that the project still exists
// and lets the transport keep the connection alive.
func (l *tailLoop) idle(ctx context.Context) error {
	if time.Since(l.checked) >= l.s.opts.CheckEvery {
		l.checked = time.Now()
		rctx, cancel := l.readCtx(ctx)
		err := l.check(rctx)
		cancel()
		if err != nil {
			return tailErr(ctx, err)
		}
	}
	return l.fn(nil)
}
