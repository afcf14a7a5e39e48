package domain

import "context"

// Alert counts: a rule's evaluation counts its window from per-second counts that the store
// keeps as entries are written, not from the entries themselves, so that its cost does not grow
// with the window's entries. The store registers each query a rule counts the first time (or
// when a rule's window reaches further back than what is kept), counting the entries already
// written once, in SQL; from then on every batch written adds its matching entries to the
// query's counts in its own transaction, matched by CountAlertMatches, the Go twin of the
// stores' SQL. A late entry is counted in its second when it is written, as the contract says.

// AlertCountStore is what a store offers alert evaluation when it keeps alert counts.
type AlertCountStore interface {
	// CountAlertWindow returns how many entries of f's project match f's query (f's other
	// fields but ProjectID, Query and Parsed unset) with a time in [start, end), whole seconds,
	// and true; or false, counting nothing, when the project's retention boundary at now lies
	// after start (the boundary moves by the millisecond: the caller counts that window
	// through the stats path, which leaves out what lies past it).
	CountAlertWindow(ctx context.Context, f LogFilter, start, end, now int64) (n int64, ok bool, err error)
}

// AlertCountQuery is a query whose matches a store counts per second as entries are written:
// those of its project with a time at or after Floor.
type AlertCountQuery struct {
	ProjectID string
	Query     Query
	Floor     int64
}

// CountAlertMatches counts, for each query of qs, the entries of es that match it, per whole
// second of their time (out[i][second] = n). Each entry's words are split and its attributes
// decoded once for all the queries.
func CountAlertMatches(es []LogEntry, qs []AlertCountQuery) []map[int64]int64 {
	out := make([]map[int64]int64, len(qs))
	for i := range out {
		out[i] = map[int64]int64{}
	}
	roots := make([]QueryNode, len(qs))
	for j, q := range qs {
		if q.Query.Root != nil {
			roots[j] = compared(q.Query.Root)
		}
	}
	var m entryMatch
	for i := range es {
		e := &es[i]
		m.next(e)
		for j, q := range qs {
			if e.ProjectID == q.ProjectID && e.Time >= q.Floor && (roots[j] == nil || m.match(roots[j])) {
				out[j][SecondOf(e.Time)]++
			}
		}
	}
	return out
}

// SecondOf is the whole second holding t (Unix ms), rounded down for times before 1970 too.
func SecondOf(t int64) int64 { return t - ((t%1000)+1000)%1000 }
