package domain

import (
	"context"
	"fmt"
	"math"
	"sync"
)

// AlertFeed is where a project's ingest order stands: its newest committed batch (the number
// of TailPosition.Tx; every batch up to it has committed, see TailStore) and how many filtered
// deletes it has seen.
type AlertFeed struct {
	Batch   uint64
	Deletes int64
	// Retention is the project's retention in days (nil: kept forever), read with the rest by
	// AlertFeedHead.
	Retention *int
}

// SecondCount is how many entries have a time within one whole second (Unix ms, the second's
// first millisecond).
type SecondCount struct {
	Second int64
	N      int64
}

// AlertCountStore is what a store that follows ingest order offers alert evaluation so that a
// rule's count does not read its whole window again each time (see alertCounts).
type AlertCountStore interface {
	// AlertFeedHead returns where the project's ingest order stands (zero when nothing was
	// written or deleted).
	AlertFeedHead(ctx context.Context, projectID string) (AlertFeed, error)
	// CountAlertSeconds counts the entries matching f (its Start and End unused) whose time is
	// at or after from, a whole second, per second (the seconds with none left out), and
	// returns where the ingest order stood: both from one snapshot.
	CountAlertSeconds(ctx context.Context, f LogFilter, from int64) (AlertFeed, []SecondCount, error)
	// ReadTail returns, in ingest order, up to q.Limit entries of q's project matching q after
	// q.After and at or before q.Before, every batch in between committed.
	ReadTail(ctx context.Context, q TailQuery) ([]TailEntry, error)
}

// alertFeedPage is how many entries one read of a project's new entries takes.
const alertFeedPage = 5000

// alertCounts keeps, per project and query, how many matching entries each second of time
// holds, so that an evaluation counts its window from memory. Each project's counts stand at a
// place in its ingest order: an evaluation first reads the entries committed since (only
// those, once for every query of the project) and matches them with the Go evaluator, the twin
// of the stores' SQL; a query first counted, or whose rule's window reaches further back than
// what is kept, is counted once in SQL per second from the start of its window. Entries come in
// by their place in ingest order, not by their time, so a late entry is counted in its second
// as soon as it has committed; the seconds before the widest window a query was counted for
// are dropped. A filtered delete (AlertFeed.Deletes) makes the project's counts start over.
// A window the project's retention boundary cuts is counted in SQL instead, as before: the
// boundary moves by the millisecond, and the stores leave out what lies past it. Counts a rule
// has not used for two of its intervals and a minute are dropped.
//
// Memory: one map entry per second holding a match, per query and project kept: at most the
// widest window's seconds (and any second after the evaluation's end that an entry's time
// names).
type alertCounts struct {
	mu       sync.Mutex
	projects map[string]*feedCounts
}

// feedCounts are one project's counts, all at the place at.
type feedCounts struct {
	at      AlertFeed
	queries map[string]*queryCounts // by query text
}

// queryCounts are one query's per-second counts.
type queryCounts struct {
	f LogFilter // the query's filter, without time bounds
	// floor is the first second kept: no second before it is in secs, and every entry at or
	// after it is counted.
	floor int64
	secs  map[int64]int64
	// span is the widest window the query was counted for (ms); keep, when the counts are
	// dropped if not used again.
	span, keep int64
}

// secondOf is the whole second holding t (Unix ms).
func secondOf(t int64) int64 {
	s := t - t%1000
	if t < 0 && t%1000 != 0 {
		s -= 1000
	}
	return s
}

// count returns how many entries of f's project matching f's query have a time in
// [start, end) at now, and true; or false when the project's retention boundary at now cuts
// the window, which the caller counts in SQL instead. interval is the rule's, which tells how
// long the counts are kept unused.
func (c *alertCounts) count(ctx context.Context, st AlertCountStore, f LogFilter, start, end, now int64, interval int) (n int64, ok bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.projects == nil {
		c.projects = map[string]*feedCounts{}
	}
	pid := f.ProjectID
	defer func() {
		if err != nil {
			delete(c.projects, pid) // counts partly moved on are not kept: they start over
		}
	}()
	head, err := st.AlertFeedHead(ctx, pid)
	if err != nil {
		return 0, false, fmt.Errorf("alert counts: where ingest stands: %w", err)
	}
	if head.Retention != nil && now-int64(*head.Retention)*86_400_000 > start {
		return 0, false, nil
	}
	pc := c.projects[pid]
	if pc == nil || pc.at.Deletes != head.Deletes || head.Batch < pc.at.Batch {
		pc = &feedCounts{at: head, queries: map[string]*queryCounts{}}
		c.projects[pid] = pc
	} else {
		if err := pc.advance(ctx, st, pid, pc.at.Batch, head.Batch, nil); err != nil {
			return 0, false, err
		}
		pc.at = head
	}
	key := ""
	if f.Query != nil {
		key = *f.Query
	}
	q := pc.queries[key]
	if q == nil || q.floor > start {
		qf := f
		qf.Start, qf.End = nil, nil
		q = &queryCounts{f: qf, floor: secondOf(start), secs: map[int64]int64{}}
		if err := c.seed(ctx, st, pc, key, q); err != nil {
			return 0, false, err
		}
	}
	q.span = max(q.span, end-start)
	q.keep = max(q.keep, end+2*int64(interval)*1000+60_000)
	for s, k := range q.secs {
		if s >= start && s < end {
			n += k
		}
	}
	if floor := secondOf(end - q.span); floor > q.floor {
		for s := range q.secs {
			if s < floor {
				delete(q.secs, s)
			}
		}
		q.floor = floor
	}
	return n, true, nil
}

// seed counts q afresh from its floor in SQL, as the project's key query, and brings the
// project's other counts to where that count stood in ingest order, reading the batches
// committed since they last moved. A filtered delete in between makes the project start over
// with q alone.
func (c *alertCounts) seed(ctx context.Context, st AlertCountStore, pc *feedCounts, key string, q *queryCounts) error {
	at, secs, err := st.CountAlertSeconds(ctx, q.f, q.floor)
	if err != nil {
		return fmt.Errorf("alert counts: count the window: %w", err)
	}
	for _, sc := range secs {
		q.secs[sc.Second] = sc.N
	}
	pid := q.f.ProjectID
	delete(pc.queries, key)
	switch {
	case at.Deletes != pc.at.Deletes || at.Batch < pc.at.Batch:
		// A delete came in between (or the store stands behind what was read of it before):
		// the others start over when next counted.
		pc = &feedCounts{at: at, queries: map[string]*queryCounts{}}
		c.projects[pid] = pc
	case at.Batch > pc.at.Batch:
		// Batches committed since the head was read: the others count them too.
		if err := pc.advance(ctx, st, pid, pc.at.Batch, at.Batch, nil); err != nil {
			return err
		}
		pc.at.Batch = at.Batch
	}
	pc.queries[key] = q
	return nil
}

// advance counts the entries of batches (from, to] in the project's ingest order: in only, or
// in every query of pc when only is nil.
func (pc *feedCounts) advance(ctx context.Context, st AlertCountStore, projectID string, from, to uint64, only *queryCounts) error {
	if to <= from || (only == nil && len(pc.queries) == 0) {
		return nil
	}
	qs := make([]*queryCounts, 0, len(pc.queries))
	if only != nil {
		qs = append(qs, only)
	} else {
		for _, q := range pc.queries {
			qs = append(qs, q)
		}
	}
	after := TailPosition{Tx: from, Pos: math.MaxInt32}
	for {
		es, err := st.ReadTail(ctx, TailQuery{LogFilter: LogFilter{ProjectID: projectID}, After: after,
			Before: TailPosition{Tx: to, Pos: math.MaxInt32}, Limit: alertFeedPage})
		if err != nil {
			return fmt.Errorf("alert counts: read the new entries: %w", err)
		}
		for i := range es {
			e := &es[i].LogEntry
			// One match state per entry for every query: its words split and its attributes
			// decoded once.
			m := entryMatch{e: e}
			for _, q := range qs {
				if e.Time >= q.floor && q.matches(&m) {
					q.secs[secondOf(e.Time)]++
				}
			}
		}
		if len(es) < alertFeedPage {
			return nil
		}
		after = es[len(es)-1].At
	}
}

// matches is q.f.Matches(m's entry), m shared by the queries matched against the entry. A
// rule's filter holds its project and its query alone; any other filter goes the long way.
func (q *queryCounts) matches(m *entryMatch) bool {
	f := &q.f
	if f.UserID != nil || f.Level != nil || len(f.Levels) > 0 || f.Subject != nil || f.Q != nil || f.TraceID != nil {
		return f.Matches(*m.e)
	}
	return m.e.ProjectID == f.ProjectID && (f.Parsed.Root == nil || m.match(f.Parsed.Root))
}

// sweep drops the counts no rule has used in time (see queryCounts.keep) at now, and the
// projects left with none.
func (c *alertCounts) sweep(now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pid, pc := range c.projects {
		for key, q := range pc.queries {
			if q.keep < now {
				delete(pc.queries, key)
			}
		}
		if len(pc.queries) == 0 {
			delete(c.projects, pid)
		}
	}
}
