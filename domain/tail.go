package domain

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// TailPosition is a place in a project's ingest order: the entry at position Pos of the batch
// Tx. A tail resumes after it. Tx orders batches in commit order as the store guarantees it (see
// TailStore); Pos orders the entries of one batch. Pos -1 stands before every entry of Tx. A
// position is its project's own: the store numbers each project's batches apart, so that what
// a client sees of positions tells nothing of other projects' writes.
type TailPosition struct {
	Tx  uint64
	Pos int64
}

// TailEntry is an entry as a tail delivers it, with its place in ingest order.
type TailEntry struct {
	LogEntry
	At TailPosition
	// Memo, when not nil, is shared by every tail of this instance that hands the entry on: a
	// transport may keep its rendering of the entry there, made once for all of them.
	Memo *TailMemo
}

// TailMemo holds bytes made once, on first use.
type TailMemo struct {
	once sync.Once
	b    []byte
}

// Bytes returns the bytes make returned at the first call of Bytes on m.
func (m *TailMemo) Bytes(make func() []byte) []byte {
	m.once.Do(func() { m.b = make() })
	return m.b
}

// TailQuery asks for the entries of a project matching the filter (its Start and End are not
// used) that come after After in ingest order, at most Limit of them.
type TailQuery struct {
	LogFilter
	After TailPosition
	Limit int
	// Before, when not zero, is a position TailHorizon returned: the read takes only entries
	// before it, every one of them final. When zero the read goes up to what is final as it reads.
	Before TailPosition
	// Skip are batches (their TailPosition.Tx) the read leaves out: the caller holds them.
	Skip []uint64
}

// TailStore reads a project's entries in ingest order.
type TailStore interface {
	// TailHead returns the position after which come the entries committed from now on (and
	// possibly a few committed just before). KindNotFound if the project does not exist.
	TailHead(ctx context.Context, projectID string) (TailPosition, error)
	// TailHorizon is TailHead without looking the project up: every entry of the project
	// committed from now on comes after it, and every batch before it has committed or never
	// will.
	TailHorizon(ctx context.Context, projectID string) (TailPosition, error)
	// ReadTail returns, in ingest order, up to q.Limit entries matching q after q.After whose
	// place is final: no entry committed later may come before them. Entries written before
	// ingest order was recorded are never returned.
	ReadTail(ctx context.Context, q TailQuery) ([]TailEntry, error)
	// ReplayTail returns, in ingest order, the last limit entries matching f (Start and End
	// included) at or before upTo.
	ReplayTail(ctx context.Context, f LogFilter, upTo TailPosition, limit int) ([]TailEntry, error)
}

// tailTokenVersion opens every tail token: the tokens of the first format (JSON, with a position
// that was a database-wide transaction number) do not decode, and are answered 400.
const tailTokenVersion = 2

// maxTailToken bounds the text of a tail token: a longer one is refused before it is decoded.
const maxTailToken = 32

// The bounds of a position the stores hold: batch numbers are 64-bit signed integers, places
// in a batch 32-bit ones.
const (
	maxTailTx  = 1<<63 - 1
	maxTailPos = 1<<31 - 1
)

// EncodeTailToken renders p as the opaque text a client resumes with (the SSE event id): a
// version byte, then the batch number and the place in the batch plus one as unsigned varints,
// in unpadded URL-safe base64.
func EncodeTailToken(p TailPosition) string {
	b := make([]byte, 1, 1+2*binary.MaxVarintLen64)
	b[0] = tailTokenVersion
	b = binary.AppendUvarint(b, p.Tx)
	b = binary.AppendUvarint(b, uint64(p.Pos+1))
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeTailToken parses text made by EncodeTailToken; anything else, a position out of the
// stores' range included, is KindInvalid on param. The text is never echoed back.
func DecodeTailToken(param, text string) (TailPosition, error) {
	bad := ParamError(param, "is not a tail position this service issued")
	if len(text) > maxTailToken {
		return TailPosition{}, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) < 3 || b[0] != tailTokenVersion {
		return TailPosition{}, bad
	}
	tx, n := binary.Uvarint(b[1:])
	if n <= 0 || tx > maxTailTx {
		return TailPosition{}, bad
	}
	pos, m := binary.Uvarint(b[1+n:])
	if m <= 0 || 1+n+m != len(b) || pos > maxTailPos+1 {
		return TailPosition{}, bad
	}
	p := TailPosition{Tx: tx, Pos: int64(pos) - 1}
	if EncodeTailToken(p) != text { // one text per position: no padding bits, no long varints
		return TailPosition{}, bad
	}
	return p, nil
}

// TailOptions bound the live tail.
type TailOptions struct {
	// MaxPerKey bounds the open tails of one API key (of one client address when the service is
	// open), MaxTotal those of the whole instance; beyond either a new tail is KindRateLimited.
	// The last quarter of MaxTotal is kept for the first tail of a key: a key that holds a tail
	// already may open another only while fewer than MaxTotal-MaxTotal/4 are open, so that keys
	// holding many tails between them cannot take every one from a key that holds none.
	MaxPerKey int
	MaxTotal  int
	// ReadTimeout, when positive, bounds each read of the store a tail makes, and a tail's
	// start (the project's check, the replay, and the reads that catch up from a resumed
	// position): a start that takes longer fails as KindUnavailable, or, once the stream is
	// under way, ends it (the client resumes from the last entry it received).
	ReadTimeout time.Duration
	// Poll is how often an idle tail looks for entries written through other instances (entries
	// written through this one wake it at once).
	Poll time.Duration
	// Batch is the most entries one read hands on.
	Batch int
	// CheckEvery is how often an open tail checks that its project still exists.
	CheckEvery time.Duration
	// Coalesce is the least time between two reads of a project's hub that hand entries on:
	// what is written sooner waits, and is read with whatever else comes, when Coalesce has
	// passed. A hub that has handed nothing on for Coalesce reads at once, so a quiet project's
	// entries are not delayed. Under a steady stream the hub asks the store and wakes its tails
	// at most once per Coalesce (more often only while a read of the store stops at Batch), and
	// each tail following it sends (one write, one flush, one wake-up of its client) once per
	// read of the hub, instead of once per write to the project. 0 reads at once.
	Coalesce time.Duration
}

// DefaultTailOptions are the documented defaults.
func DefaultTailOptions() TailOptions {
	return TailOptions{MaxPerKey: 10, MaxTotal: 1000, Poll: 250 * time.Millisecond, Batch: 500, CheckEvery: 5 * time.Second, Coalesce: 100 * time.Millisecond}
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

// TailFunc receives the entries a tail found, in order, to send together; it is called with
// none after each idle wait, so that a transport may keep the connection alive. An error from
// it ends the tail and is returned unchanged. The entries may be shared with other tails: fn
// must not change them, nor keep the slice after it returns.
type TailFunc func(entries []TailEntry) error

// Before reports whether p comes before q in ingest order.
func (p TailPosition) Before(q TailPosition) bool {
	return p.Tx < q.Tx || (p.Tx == q.Tx && p.Pos < q.Pos)
}

// Matches reports whether e matches f as every store's filter matches it: the project, every
// filter given (ANDed; Level and Levels together as one set), time bounds inclusive, q a literal
// substring of the message under simple case folding. f is a filter as the service hands it
// to a store (a trace id in lower case).
func (f LogFilter) Matches(e LogEntry) bool {
	eq := func(want, got *string) bool { return want == nil || (got != nil && *got == *want) }
	if e.ProjectID != f.ProjectID || !eq(f.UserID, e.UserID) || !eq(f.Subject, e.Subject) || !eq(f.TraceID, e.TraceID) {
		return false
	}
	if (f.Level != nil || len(f.Levels) > 0) && (f.Level == nil || *f.Level != e.Level) && !slices.Contains(f.Levels, e.Level) {
		return false
	}
	if (f.Start != nil && e.Time < *f.Start) || (f.End != nil && e.Time > *f.End) {
		return false
	}
	return f.Q == nil || strings.Contains(FoldCase(e.Message), FoldCase(*f.Q))
}

// tailQueue is how many reads of its project's hub a tail may have yet to hand on before the
// hub lets it go (it then reads on its own until it catches up again).
const tailQueue = 16

// tailHeldReads bounds what a hub holds of the batches written through this instance that it
// has not handed on yet (see tailHub.held): at most this many reads' worth (TailOptions.Batch
// entries each). Beyond it a batch is not held, and the hub reads it from the store instead.
const tailHeldReads = 16

// tails counts open tails, wakes them when entries are written through this instance, and
// holds the hubs that read each tailed project once for all its tails.
type tails struct {
	// batch is TailOptions.Batch, for the bound on what a hub holds. Set once, before any tail.
	batch  int
	mu     sync.Mutex
	open   map[string]int
	total  int
	wakeup map[string]chan struct{} // project id -> closed on the next write
	hubs   map[string]*tailHub      // project id -> the hub of its tails on this instance
}

// tailHub reads a project's entries in ingest order, unfiltered, once for all the tails of the
// project on this instance that have caught up with it, and hands every read to each of them;
// each keeps what its filter matches. With one reader per project an instance asks the store
// once per write or poll, at most once per TailOptions.Coalesce under a steady stream, however
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
	// no entry written later can come at or before it. Guarded by tails.mu.
	pos  TailPosition
	subs map[*tailSub]struct{}
	stop context.CancelFunc
	// held are the entries of the batches written through this instance after pos, by batch
	// (TailPosition.Tx), in order within each; heldN counts them. Guarded by tails.mu.
	held  map[uint64][]TailEntry
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

func (t *tails) acquire(who string, o TailOptions) bool {
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

// written hands a committed batch to the hubs of its projects, which hold it (when its place in
// each project's ingest order, batches, is known and they have room) so as not to read it
// back, and wakes the tails of its projects.
func (t *tails) written(batches map[string]uint64, entries []LogEntry) {
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
func (t *tails) hold(batches map[string]uint64, entries []LogEntry) {
	type share struct {
		hub *tailHub
		n   int
		es  []TailEntry
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
	mine := func(i int) (*tailHub, TailPosition) {
		if p := entries[i].ProjectID; p != lastProject || i == 0 {
			lastProject, lastHub, lastTx = p, t.hubs[p], batches[p]
		}
		at := TailPosition{Tx: lastTx, Pos: int64(i)}
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
		if sh := &shares[i]; sh.hub.heldN+sh.n <= tailHeldReads*max(t.batch, 1) {
			sh.es = make([]TailEntry, 0, sh.n)
		}
	}
	for i := range entries {
		if h, at := mine(i); h != nil {
			if sh := find(h); sh.es != nil {
				sh.es = append(sh.es, TailEntry{LogEntry: entries[i], At: at})
			}
		}
	}
	for _, sh := range shares {
		if sh.es == nil {
			continue
		}
		h := sh.hub
		if h.held == nil {
			h.held = map[uint64][]TailEntry{}
		}
		h.held[sh.es[0].At.Tx] = sh.es
		h.heldN += len(sh.es)
	}
}

// hubPos returns the position of the project's hub, if it has one.
func (t *tails) hubPos(projectID string) (TailPosition, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.hubs[projectID]
	if !ok {
		return TailPosition{}, false
	}
	return h.pos, true
}

// join adds a tail that has handed on every matching entry up to after to the project's hub,
// starting one at head (a final position at or before after) when there is none. It returns
// nil when the hub has read past after: entries between are not the tail's yet, and the hub
// has handed them on already.
func (s *Service) join(projectID string, key int, after, head TailPosition) *tailSub {
	t := &s.tails
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.hubs[projectID]
	switch {
	case !ok:
		ctx, stop := context.WithCancel(context.Background())
		h = &tailHub{project: projectID, pos: head, subs: map[*tailSub]struct{}{}, stop: stop}
		if t.hubs == nil {
			t.hubs = map[string]*tailHub{}
		}
		t.hubs[projectID] = h
		go s.runHub(ctx, h)
	case after.Before(h.pos):
		return nil
	}
	sub := &tailSub{hub: h, key: key, reads: make(chan *tailRead, tailQueue), dropped: make(chan struct{})}
	h.subs[sub] = struct{}{}
	return sub
}

// leave takes a tail off its project's hub, and ends the hub when it was the last.
func (t *tails) leave(projectID string, sub *tailSub) {
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
func (t *tails) forget(projectID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetLocked(projectID)
}

func (t *tails) forgetLocked(projectID string) {
	if _, ok := t.hubs[projectID]; !ok {
		delete(t.wakeup, projectID)
	}
}

// runHub reads for the tails of h until the last leaves (ctx ends) or a read fails.
func (s *Service) runHub(ctx context.Context, h *tailHub) {
	t, o := &s.tails, s.tailOpts
	timer := time.NewTimer(o.Poll)
	defer timer.Stop()
	var handed time.Time // when the hub last handed entries on
	for {
		wake := t.waiter(h.project)
		got, need, more, err := s.hubRead(ctx, h)
		var read *tailRead
		if err == nil && len(got) > 0 {
			handed = time.Now()
			memos := make([]TailMemo, len(got))
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
			delete(t.hubs, h.project)
			h.stop()
			t.forgetLocked(h.project)
			for sub := range h.subs {
				sub.err = err
				close(sub.dropped)
			}
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
func (s *Service) hubRead(ctx context.Context, h *tailHub) (got []TailEntry, need [tailKeys]bool, more bool, err error) {
	t, o := &s.tails, s.tailOpts
	// The horizon first: every batch before it has ended, so the read below, which comes later,
	// sees every one that committed, and none after it is taken.
	rctx, cancel := s.readCtx(ctx)
	defer cancel()
	horizon, err := s.tailStore.TailHorizon(rctx, h.project)
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
	read, err := s.tailStore.ReadTail(rctx, TailQuery{LogFilter: LogFilter{ProjectID: h.project}, After: after, Before: horizon, Skip: skip, Limit: o.Batch})
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
	var runs [][]TailEntry
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
	var mine []TailEntry
	switch len(runs) {
	case 0:
	case 1:
		mine = runs[0]
	default:
		mine = make([]TailEntry, 0, n)
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
func mergeTail(a, b []TailEntry) []TailEntry {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return b
	}
	out := make([]TailEntry, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if a[0].At.Before(b[0].At) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// Tail follows the project's entries matching r in ingest order, handing them to fn, until
// ctx ends (nil then), the project is deleted (KindNotFound) or fn fails. Every entry matching
// the filter after the start position is handed on exactly once, in order, whichever instance
// wrote it; a client that resumes from the position of the last entry it received loses
// nothing and sees nothing twice.
//
// A tail first reads on its own from its start until it has caught up with its project's hub
// (see tailHub), then takes the hub's reads; one that falls behind the hub reads on its own
// again.
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
	param := ""
	switch {
	case r.Resume != "":
		param = "Last-Event-ID"
	case r.Cursor != "":
		param = "cursor"
	}
	if param != "" {
		p, err := DecodeTailToken(param, cmp.Or(r.Resume, r.Cursor))
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
	o := s.tailOpts
	// The start (the project's check, the replay, the catch-up from a resumed position) is
	// bounded as a whole, and holds the request's share of the limits on requests in flight
	// (see WithAdmission) until it is done.
	sctx, startDone := context.WithCancel(ctx)
	if o.ReadTimeout > 0 {
		sctx, startDone = context.WithTimeout(ctx, o.ReadTimeout)
	}
	defer startDone()
	if _, err := s.project(sctx, f.ProjectID); err != nil {
		return s.startErr(ctx, sctx, err)
	}
	if s.tailStore == nil {
		return Errorf(KindInternal, "the store cannot read in ingest order")
	}
	who, _ := PrincipalFrom(ctx)
	holder := who.KeyID
	if holder == "" {
		holder = "client " + r.Client
	}
	if !s.tails.acquire(holder, o) {
		return Errorf(KindRateLimited, "too many open tails (at most %d per key, %d in all, of which the last quarter only for a key's first); retry after the time in Retry-After", o.MaxPerKey, o.MaxTotal)
	}
	defer s.tails.release(holder)
	// The start's reads (the replay, the catch-up) are reads like a listing's, and can cost as
	// much: they hold one of the key's read shares (see acquireRead) until the tail has caught
	// up, so a key's tails cannot crowd another key's reads out of the store.
	releaseRead, err := s.acquireRead(sctx, f.ProjectID)
	if err != nil {
		return s.startErr(ctx, sctx, err)
	}
	endRead := func() {
		if releaseRead != nil {
			releaseRead()
			releaseRead = nil
		}
	}
	defer endRead()

	head, err := s.tailStore.TailHead(sctx, f.ProjectID)
	if err != nil {
		return s.startErr(ctx, sctx, s.tailErr(ctx, f.ProjectID, err))
	}
	switch {
	case start != nil && start.Tx > head.Tx:
		// Not a position of this project yet: a tail from there would skip what comes first.
		return ParamError(param, "is not a tail position of this project")
	case start == nil:
		start = &head
		if r.StartTime != nil {
			rf := f
			rf.Start = r.StartTime
			old, err := s.tailStore.ReplayTail(sctx, rf, head, replay)
			if err != nil {
				return s.startErr(ctx, sctx, s.tailErr(ctx, f.ProjectID, err))
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
	tl := tailLoop{s: s, f: f, fn: fn, after: *start, checked: time.Now(), start: sctx, started: func() {
		endRead()
		startDone()
		EndAdmission(ctx)
	}}
	defer func() {
		if tl.sub != nil {
			s.tails.leave(f.ProjectID, tl.sub)
		} else {
			s.tails.forget(f.ProjectID) // it may have asked for a wake-up while reading alone
		}
	}()
	return tl.run(ctx)
}

// startErr is the answer to a tail whose start failed: KindUnavailable when it took longer than
// TailOptions.ReadTimeout (ctx, the request's, still open; sctx, the start's, ended), err else.
func (s *Service) startErr(ctx, sctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(sctx.Err(), context.DeadlineExceeded) {
		return Errorf(KindUnavailable, "the tail's start took longer than %s; retry, or resume from a later position", s.tailOpts.ReadTimeout)
	}
	return err
}

// readCtx bounds one read of the store a tail makes by TailOptions.ReadTimeout.
func (s *Service) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.tailOpts.ReadTimeout > 0 {
		return context.WithTimeout(ctx, s.tailOpts.ReadTimeout)
	}
	return context.WithCancel(ctx)
}

// tailLoop is one open tail after its start.
type tailLoop struct {
	s  *Service
	f  LogFilter
	fn TailFunc
	// after is the place up to which every matching entry has been handed on.
	after   TailPosition
	sub     *tailSub // the tail's place at its hub; nil while it reads on its own
	checked time.Time
	// start bounds the reads of the tail's start, until it first catches up; started, nil
	// from then on, ends the start.
	start   context.Context
	started func()
}

// readCtx is the context of one read of the store: the start's while the tail catches up, one
// bounded by TailOptions.ReadTimeout after.
func (l *tailLoop) readCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.started != nil {
		return l.start, func() {}
	}
	return l.s.readCtx(ctx)
}

func (l *tailLoop) run(ctx context.Context) error {
	s, o := l.s, l.s.tailOpts
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	for {
		if l.sub == nil {
			// On its own: read up to what is final now, then join the hub if it has not read
			// past that since. The hub's place is taken before the read, so the read covers
			// everything up to it (it was final then).
			wake := s.tails.waiter(l.f.ProjectID)
			rctx, cancel := l.readCtx(ctx)
			head, ok := s.tails.hubPos(l.f.ProjectID)
			if !ok {
				var err error
				if head, err = s.tailStore.TailHead(rctx, l.f.ProjectID); err != nil {
					cancel()
					return s.tailErr(ctx, l.f.ProjectID, err)
				}
			}
			got, err := s.tailStore.ReadTail(rctx, TailQuery{LogFilter: l.f, After: l.after, Limit: o.Batch})
			cancel()
			if err != nil {
				return s.tailErr(ctx, l.f.ProjectID, err)
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
				return s.tailErr(ctx, l.f.ProjectID, err)
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
	entries []TailEntry
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
func tailKey(key int, e *LogEntry) *string {
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
func indexKey(f *LogFilter) (int, *string) {
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
	var out []TailEntry
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
	if time.Since(l.checked) >= l.s.tailOpts.CheckEvery {
		l.checked = time.Now()
		rctx, cancel := l.readCtx(ctx)
		_, err := l.s.project(rctx, l.f.ProjectID)
		cancel()
		if err != nil {
			return l.s.tailErr(ctx, l.f.ProjectID, err)
		}
	}
	return l.fn(nil)
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
