package storetest

import (
	"slices"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// runContext is the contract of LogContext.
func runContext(t *testing.T, open Open) {
	t.Run("LogContextAroundAnEntry", func(t *testing.T) { t.Parallel(); testLogContext(t, open(t)) })
	t.Run("LogContextOfAMissingOrExpiredEntry", func(t *testing.T) { t.Parallel(); testLogContextNotFound(t, open(t)) })
	t.Run("LogContextWhateverTheEntrysTimeAgainstItsID", func(t *testing.T) { t.Parallel(); testLogContextTimes(t, open(t)) })
}

// testLogContextTimes: an entry's id is made as it is taken in (UUIDv7, its moment), while its
// time is the sender's; a store may look for the entry near its id's moment first, but finds it
// wherever its time is: moments before it, a day and more before, after, long after.
func testLogContextTimes(t *testing.T, s domain.Store) {
	p := projectWith(t, s, nil)
	in := time.Now().UnixMilli()
	var all []domain.LogEntry
	for _, ms := range []int64{in - 3*day, in - day - 1, in - day + 1, in - 1000, in, in + 1800_000, in + 3*3600_000} {
		all = append(all, entry(p, ms, "info"))
	}
	mustInsert(t, s, all...)
	for i, e := range all {
		before, got, after := logContext(t, s, domain.ContextQuery{ProjectID: p.ID, ID: e.ID, Before: ptr(1), After: ptr(1), Now: in + 4*3600_000})
		if got.ID != e.ID || got.Time != e.Time {
			t.Fatalf("entry %d (time %+d ms from its id): got %s at %d", i, e.Time-in, got.ID, got.Time)
		}
		if want := ids(all[max(i-1, 0):i]); !slices.Equal(ids(before), want) {
			t.Errorf("entry %d: before %v, want %v", i, ids(before), want)
		}
		if want := ids(all[i+1 : min(i+2, len(all))]); !slices.Equal(ids(after), want) {
			t.Errorf("entry %d: after %v, want %v", i, ids(after), want)
		}
	}
}

// logContext asks s for q's context and returns its parts, failing the test on an error.
func logContext(t *testing.T, s domain.Store, q domain.ContextQuery) (before []domain.LogEntry, entry domain.LogEntry, after []domain.LogEntry) {
	t.Helper()
	before, entry, after, err := tryContext(t, s, q)
	if err != nil {
		t.Fatalf("LogContext(%+v): %v", q, err)
	}
	return before, entry, after
}

func tryContext(t *testing.T, s domain.Store, q domain.ContextQuery) (before []domain.LogEntry, entry domain.LogEntry, after []domain.LogEntry, err error) {
	t.Helper()
	if q.Before == nil {
		q.Before = ptr(domain.DefaultContextEntries)
	}
	if q.After == nil {
		q.After = ptr(domain.DefaultContextEntries)
	}
	collect := func(seq func(func(domain.LogEntry, error) bool)) ([]domain.LogEntry, error) {
		var out []domain.LogEntry
		for e, err := range seq {
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		return out, nil
	}
	err = s.LogContext(ctx(t), q, func(c domain.LogContext) error {
		entry = c.Entry
		var err error
		if before, err = collect(c.Before); err != nil {
			return err
		}
		after, err = collect(c.After)
		return err
	})
	return before, entry, after, err
}

// testLogContext: the neighbours are those of the listing order (time, then id: ties by id),
// as many as asked for and no more, fewer at the project's ends, of the project only; the
// query narrows the neighbours, never the entry.
func testLogContext(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "ctx", base)
	other := mustProject(t, s, "other", base)
	// Times 10, 20, 20, 20, 30, ...: three entries share time 20, their order is their ids'.
	var all []domain.LogEntry
	for i, ms := range []int64{10, 20, 20, 20, 30, 40, 50, 60, 70, 80} {
		e := entry(p, ms, []string{"info", "error"}[i%2])
		all = append(all, e)
	}
	// Stored in another order than the listing's: the store orders, not the insert.
	shuffled := slices.Clone(all)
	slices.Reverse(shuffled)
	mustInsert(t, s, shuffled...)
	mustInsert(t, s, entry(other, 20, "info"), entry(other, 25, "info"))
	at := func(q domain.ContextQuery) domain.ContextQuery { q.ProjectID = p.ID; return q }

	// The middle one of the three at time 20 (index 2): ties are ordered by id.
	before, e, after := logContext(t, s, at(domain.ContextQuery{ID: all[2].ID, Before: ptr(2), After: ptr(3)}))
	if e.ID != all[2].ID || e.Time != 20 || e.Message != all[2].Message {
		t.Fatalf("entry = %+v, want %+v", e, all[2])
	}
	if !slices.Equal(ids(before), ids(all[0:2])) || !slices.Equal(ids(after), ids(all[3:6])) {
		t.Fatalf("before %v after %v, want %v and %v", ids(before), ids(after), ids(all[0:2]), ids(all[3:6]))
	}
	// Zero on a side: nothing on it. Beyond the project's ends: what there is.
	before, _, after = logContext(t, s, at(domain.ContextQuery{ID: all[1].ID, Before: ptr(0), After: ptr(1000)}))
	if len(before) != 0 || !slices.Equal(ids(after), ids(all[2:])) {
		t.Fatalf("before %v after %v, want none and %v", ids(before), ids(after), ids(all[2:]))
	}
	before, _, after = logContext(t, s, at(domain.ContextQuery{ID: all[9].ID, Before: ptr(1000), After: ptr(5)}))
	if !slices.Equal(ids(before), ids(all[:9])) || len(after) != 0 {
		t.Fatalf("before %v after %v, want %v and none", ids(before), ids(after), ids(all[:9]))
	}
	// The query narrows the neighbours (errors only); the entry, an info, is answered anyway.
	q, err := domain.ParseQuery("level:error", domain.DefaultLimits().Query)
	if err != nil {
		t.Fatal(err)
	}
	before, e, after = logContext(t, s, at(domain.ContextQuery{ID: all[4].ID, Before: ptr(10), After: ptr(2), Query: ptr("level:error"), Parsed: q}))
	if e.ID != all[4].ID || !slices.Equal(ids(before), ids([]domain.LogEntry{all[1], all[3]})) || !slices.Equal(ids(after), ids([]domain.LogEntry{all[5], all[7]})) {
		t.Fatalf("narrowed: entry %s before %v after %v", e.ID, ids(before), ids(after))
	}
}

// testLogContextNotFound: an unknown id, an entry of another project, an entry past the
// project's retention (as a listing at the same moment leaves it out) and an unknown project
// are each KindNotFound; an entry past the retention is no neighbour either.
func testLogContextNotFound(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(1))
	other := projectWith(t, s, nil)
	cut := now - day
	old, kept, last := entry(p, cut-1, "info"), entry(p, cut, "info"), entry(p, now, "info")
	foreign := entry(other, now, "info")
	mustInsert(t, s, old, kept, last, foreign)
	for name, q := range map[string]domain.ContextQuery{
		"unknown id":      {ProjectID: p.ID, ID: newID()},
		"another project": {ProjectID: p.ID, ID: foreign.ID},
		"expired":         {ProjectID: p.ID, ID: old.ID},
		"unknown project": {ProjectID: newID(), ID: kept.ID},
	} {
		q.Now = now
		if _, _, _, err := tryContext(t, s, q); domain.KindOf(err) != domain.KindNotFound {
			t.Errorf("%s: err = %v, want KindNotFound", name, err)
		}
	}
	before, e, after := logContext(t, s, domain.ContextQuery{ProjectID: p.ID, ID: last.ID, Now: now})
	if e.ID != last.ID || !slices.Equal(ids(before), []string{kept.ID}) || len(after) != 0 {
		t.Fatalf("entry %s before %v after %v, want only the kept entry before", e.ID, ids(before), ids(after))
	}
}
