package domain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// The fixed bounds of the stats parameters (the API contract states them).
const (
	// MinStatsStep is the narrowest stats bucket in milliseconds; MaxStatsBuckets the most
	// buckets one stats request may ask for.
	MinStatsStep    = 1000
	MaxStatsBuckets = 1000
)

// Stats groupings: what one series of a stats answer stands for.
const (
	ByLevel   = "level"
	BySubject = "subject"
	ByNone    = "none"
)

// StatsQuery asks how many of a project's entries match a filter in each bucket of Step
// milliseconds from Start to End (both required, inclusive), one series per value of By.
type StatsQuery struct {
	LogFilter
	Step int64
	By   string
	// Now is the time of the question (Unix ms), as for a listing; the service sets it.
	Now int64
	// MaxSeries is the most values of By the answer may hold (zero: no bound; the service sets
	// it): a store that finds more stops reading and answers ErrTooManySeries.
	MaxSeries int
}

// ErrTooManySeries is a store's answer to a stats question with more than MaxSeries values of
// its grouping.
var ErrTooManySeries = errors.New("more series than the stats question allows")

// BucketCount is how many matching entries of one bucket (0-based) have one value of the
// grouping (nil: no subject, or the one series of ByNone). Stores answer with these.
type BucketCount struct {
	Bucket int
	Value  *string
	N      int64
}

// Stats is a dense count of entries over time: Buckets holds each bucket's start time, and every
// series one count per bucket.
type Stats struct {
	Step    int64
	Buckets []int64
	Series  []Series
	Total   int64
}

// Series is the counts of the entries with one value of the grouping.
type Series struct {
	Value  *string
	Counts []int64
	Total  int64
}

// bucketCount is how many buckets q asks for; it assumes a valid query.
func (q StatsQuery) bucketCount() int {
	return int(uint64(*q.End-*q.Start)/uint64(q.Step)) + 1
}

// validateStats checks a stats question: the filter's own rules, then the range and the step.
func (l Limits) validateStats(q StatsQuery) (StatsQuery, error) {
	f, err := l.validateFilter(q.LogFilter)
	var fields []FieldError
	var invalid *Error
	if errors.As(err, &invalid) && invalid.Kind == KindInvalid {
		fields = invalid.Fields
	} else if err != nil {
		return q, err
	}
	q.LogFilter = f
	if q.Start == nil {
		fields = append(fields, FieldError{Param: "start_time", Detail: "is required"})
	}
	if q.End == nil {
		fields = append(fields, FieldError{Param: "end_time", Detail: "is required"})
	}
	switch q.By {
	case "":
		q.By = ByLevel
	case ByLevel, BySubject, ByNone:
	default:
		fields = append(fields, FieldError{Param: "by", Detail: "must be level, subject or none"})
	}
	switch {
	case q.Step < MinStatsStep:
		fields = append(fields, FieldError{Param: "step", Detail: fmt.Sprintf("must be at least %d", MinStatsStep)})
	case q.Start != nil && q.End != nil && *q.Start <= *q.End:
		span := uint64(*q.End - *q.Start)
		if span > math.MaxInt64 || span/uint64(q.Step) >= MaxStatsBuckets {
			fields = append(fields, FieldError{Param: "step", Detail: fmt.Sprintf("makes more than %d buckets between start_time and end_time", MaxStatsBuckets)})
		}
	}
	if len(fields) > 0 {
		return q, &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: fields}
	}
	return q, nil
}

// LogStats counts the project's entries matching q's filter per bucket and per value of q.By.
// The counts are exact: the total is the number of entries a listing with the same filter
// yields, expired entries left out alike. The project must exist (KindNotFound otherwise).
func (s *Service) LogStats(ctx context.Context, q StatsQuery) (Stats, error) {
	q, err := s.limits.validateStats(q)
	if err != nil {
		return Stats{}, err
	}
	if err := authorize(ctx, q.ProjectID); err != nil {
		return Stats{}, err
	}
	if !validID(q.ProjectID) {
		return Stats{}, projectNotFound(q.ProjectID)
	}
	q.Now = s.now().UnixMilli()
	q.MaxSeries = s.limits.MaxStatsSeries
	release, err := s.acquireRead(ctx, q.ProjectID)
	if err != nil {
		return Stats{}, err
	}
	defer release()
	counts, err := s.store.LogStats(ctx, q)
	if KindOf(err) == KindNotFound {
		return Stats{}, projectNotFound(q.ProjectID)
	}
	if errors.Is(err, ErrTooManySeries) {
		return Stats{}, &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: []FieldError{{Param: "by",
			Detail: fmt.Sprintf("makes more than %d series with this filter; narrow the filter or the time range, or group by less", q.MaxSeries)}}}
	}
	if err != nil {
		return Stats{}, fmt.Errorf("log stats: %w", err)
	}
	return denseStats(q, counts), nil
}

// denseStats lays counts out as the answer: every bucket present, series ordered by value (nil
// first), ByNone always one series.
func denseStats(q StatsQuery, counts []BucketCount) Stats {
	n := q.bucketCount()
	st := Stats{Step: q.Step, Buckets: make([]int64, n)}
	for i := range st.Buckets {
		st.Buckets[i] = *q.Start + int64(i)*q.Step
	}
	series := map[string]*Series{}
	const null = "\x00" // no stored value holds NUL
	key := func(v *string) string {
		if v == nil {
			return null
		}
		return *v
	}
	if q.By == ByNone {
		series[null] = &Series{Counts: make([]int64, n)}
	}
	for _, c := range counts {
		if c.N == 0 || c.Bucket < 0 || c.Bucket >= n {
			continue
		}
		v := c.Value
		if q.By == ByNone {
			v = nil
		}
		sr, ok := series[key(v)]
		if !ok {
			sr = &Series{Value: v, Counts: make([]int64, n)}
			series[key(v)] = sr
		}
		sr.Counts[c.Bucket] += c.N
		sr.Total += c.N
		st.Total += c.N
	}
	keys := make([]string, 0, len(series))
	for k := range series {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		st.Series = append(st.Series, *series[k])
	}
	return st
}
