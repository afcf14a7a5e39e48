package domain

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// pagedStore serves ListLogs from entries (already in (Time, ID) order) by keyset, as a real
// store does, recording each query; LogContext records its question.
type pagedStore struct {
	*fakeStore
	entries []LogEntry
	queries []LogQuery
	context []ContextQuery
}

func (s *pagedStore) ListLogs(_ context.Context, q LogQuery, fn PageFunc) error {
	s.queries = append(s.queries, q)
	var rest []LogEntry
	for _, e := range s.entries {
		if q.After == nil || e.Time > q.After.Time || (e.Time == q.After.Time && e.ID > q.After.ID) {
			rest = append(rest, e)
		}
	}
	var page Page
	if len(rest) > q.Limit {
		rest = rest[:q.Limit]
		last := rest[len(rest)-1]
		page.Next = &Cursor{Time: last.Time, ID: last.ID}
	}
	page.Entries = func(yield func(LogEntry, error) bool) {
		for _, e := range rest {
			if !yield(e, nil) {
				return
			}
		}
	}
	return fn(page)
}

func (s *pagedStore) LogContext(_ context.Context, q ContextQuery, fn ContextFunc) error {
	s.context = append(s.context, q)
	none := func(func(LogEntry, error) bool) {}
	return fn(LogContext{Entry: LogEntry{ID: q.ID}, Before: none, After: none})
}

// TestExportLogsReadsEveryPageUnderOneShare: an export reads page after page from where the
// last ended, each of the page size, with one retention moment, until a page has no next; it
// holds one read share from the first page to the last.
func TestExportLogsReadsEveryPageUnderOneShare(t *testing.T) {
	project := testID()
	st := &pagedStore{fakeStore: newFake()}
	for i := range 5 {
		st.entries = append(st.entries, LogEntry{ID: testID(), ProjectID: project, Time: int64(i / 2)})
	}
	shares := &oneShare{}
	clock := time.UnixMilli(1_000)
	s := NewService(st, opts(Options{ReadShares: shares, Now: func() time.Time { clock = clock.Add(time.Second); return clock }}))
	var got []string
	var pages int
	err := s.ExportLogs(admin(t), LogFilter{ProjectID: project}, 2, time.Minute, func(p Page) error {
		pages++
		if _, err := shares.Acquire(t.Context(), "project "+project); KindOf(err) != KindRateLimited {
			t.Errorf("page %d: the export does not hold its read share (a second read got %v)", pages, err)
		}
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			got = append(got, e.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range st.entries {
		want = append(want, e.ID)
	}
	if !slices.Equal(got, want) || pages != 3 || len(st.queries) != 3 {
		t.Fatalf("exported %d of %d entries in %d pages (%d reads), want all in 3", len(got), len(want), pages, len(st.queries))
	}
	for i, q := range st.queries {
		if q.Limit != 2 || q.Now != st.queries[0].Now || (i > 0) != (q.After != nil) {
			t.Errorf("read %d: limit %d, now %d, after %v", i, q.Limit, q.Now, q.After)
		}
	}
	if release, err := shares.Acquire(t.Context(), "project "+project); err != nil {
		t.Errorf("the export kept its read share: %v", err)
	} else {
		release()
	}
	// The page size is the server's: none means the default, more than MaxPageSize the most.
	for _, size := range []int{0, 1 << 20} {
		st.queries = nil
		if err := s.ExportLogs(admin(t), LogFilter{ProjectID: project}, size, 0, func(Page) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if want := map[int]int{0: DefaultLimits().DefaultPageSize, 1 << 20: DefaultLimits().MaxPageSize}[size]; st.queries[0].Limit != want {
			t.Errorf("page size %d reads pages of %d, want %d", size, st.queries[0].Limit, want)
		}
	}
}

// TestExportLogsChecksBeforeReading: a bad filter, a project key of another project and a
// malformed project id are answered without a read.
func TestExportLogsChecksBeforeReading(t *testing.T) {
	st := &pagedStore{fakeStore: newFake()}
	s := NewService(st, opts(Options{}))
	project := testID()
	other := WithPrincipal(t.Context(), Principal{ProjectID: testID(), KeyID: "k"})
	for name, c := range map[string]struct {
		ctx  context.Context
		f    LogFilter
		kind Kind
	}{
		"bad query":     {admin(t), LogFilter{ProjectID: project, Query: ptr("a )")}, KindInvalid},
		"range":         {admin(t), LogFilter{ProjectID: project, Start: ptr[int64](2), End: ptr[int64](1)}, KindInvalid},
		"other project": {other, LogFilter{ProjectID: project}, KindForbidden},
		"malformed id":  {admin(t), LogFilter{ProjectID: "nope"}, KindNotFound},
	} {
		err := s.ExportLogs(c.ctx, c.f, 10, 0, func(Page) error { t.Fatalf("%s: a page was handed on", name); return nil })
		if KindOf(err) != c.kind {
			t.Errorf("%s: %v, want kind %v", name, err, c.kind)
		}
	}
	if len(st.queries) != 0 {
		t.Errorf("%d reads for refused exports", len(st.queries))
	}
}

// TestLogContextRules: each side defaults to 50 and is 0 to 1,000; the query is parsed for the
// store; a malformed id is not found; nothing refused reaches the store.
func TestLogContextRules(t *testing.T) {
	st := &pagedStore{fakeStore: newFake()}
	s := NewService(st, opts(Options{}))
	project, id := testID(), testID()
	none := func(LogContext) error { return nil }
	if err := s.LogContext(admin(t), ContextQuery{ProjectID: project, ID: id, After: ptr(0), Query: ptr("level:error")}, none); err != nil {
		t.Fatal(err)
	}
	q := st.context[0]
	if *q.Before != DefaultContextEntries || *q.After != 0 || q.Parsed.Root == nil || q.Now == 0 {
		t.Fatalf("the store was asked %+v, want before 50, after 0, the query parsed, now set", q)
	}
	for name, c := range map[string]struct {
		q      ContextQuery
		kind   Kind
		params []string
	}{
		"before -1":    {ContextQuery{ProjectID: project, ID: id, Before: ptr(-1)}, KindInvalid, []string{"before"}},
		"both beyond":  {ContextQuery{ProjectID: project, ID: id, Before: ptr(1001), After: ptr(1001)}, KindInvalid, []string{"before", "after"}},
		"bad query":    {ContextQuery{ProjectID: project, ID: id, Query: ptr("(")}, KindInvalid, []string{"query"}},
		"malformed id": {ContextQuery{ProjectID: project, ID: "x"}, KindNotFound, nil},
	} {
		err := s.LogContext(admin(t), c.q, none)
		if KindOf(err) != c.kind {
			t.Errorf("%s: %v, want kind %v", name, err, c.kind)
			continue
		}
		var params []string
		if e, ok := err.(*Error); ok {
			for _, f := range e.Fields {
				params = append(params, f.Param)
			}
		}
		if !slices.Equal(params, c.params) {
			t.Errorf("%s: names %v, want %v", name, params, c.params)
		}
	}
	if len(st.context) != 1 {
		t.Errorf("%d questions reached the store, want the one valid", len(st.context))
	}
}

// slowStore yields n entries of one page, waiting delay before each, as a store does that
// reads under ctx: a cancelled ctx ends the page with its error.
type slowStore struct {
	*fakeStore
	n     int
	delay time.Duration
}

func (s *slowStore) ListLogs(ctx context.Context, q LogQuery, fn PageFunc) error {
	return fn(Page{Entries: func(yield func(LogEntry, error) bool) {
		for i := range s.n {
			time.Sleep(s.delay)
			if err := ctx.Err(); err != nil {
				yield(LogEntry{}, err)
				return
			}
			if !yield(LogEntry{ID: testID(), ProjectID: q.ProjectID, Time: int64(i)}, nil) {
				return
			}
		}
	}})
}

// TestExportPageTimeoutCountsTheStoreOnly: the page timeout bounds the time a page's read
// spends in the store; a consumer that takes its time with each entry (a slow client) does not
// use it up, a store that takes longer than it does.
func TestExportPageTimeoutCountsTheStoreOnly(t *testing.T) {
	const timeout = 60 * time.Millisecond
	project := testID()
	export := func(st *slowStore, hold time.Duration) (int, error) {
		n := 0
		err := NewService(st, opts(Options{})).ExportLogs(admin(t), LogFilter{ProjectID: project}, 10, timeout, func(p Page) error {
			for _, err := range p.Entries {
				if err != nil {
					return err
				}
				n++
				time.Sleep(hold)
			}
			time.Sleep(hold) // and the page's last flush
			return nil
		})
		return n, err
	}
	if n, err := export(&slowStore{fakeStore: newFake(), n: 4}, 40*time.Millisecond); err != nil || n != 4 {
		t.Errorf("a consumer holding each of 4 entries 40 ms under a %v page timeout: %d entries, %v; want all 4", timeout, n, err)
	}
	if n, err := export(&slowStore{fakeStore: newFake(), n: 4, delay: 40 * time.Millisecond}, 0); !errors.Is(err, context.Canceled) || n > 2 {
		t.Errorf("a store taking 40 ms for each of 4 entries under a %v page timeout: %d entries, %v; want it cut", timeout, n, err)
	}
}
