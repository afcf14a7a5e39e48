package domain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// The fixed bounds of the stats parameters (the API contract states them).
const (
	// MinStatsStep is the narrowest stats bucket in milliseconds; MaxStatsBuckets the most
	// buckets one stats request may ask for.
	MinStatsStep    = 1000
	MaxStatsBuckets = 1000
	// DefaultStatsSeries and MaxStatsSeries are the default and the largest number of series
	// (values of by) a stats answer holds besides the one of the other values.
	DefaultStatsSeries = 10
	MaxStatsSeries     = 100
)

// Stats groupings: what one series of a stats answer stands for. Besides these, by names an
// attribute: "attributes.<key>", or a bare key that is none of the entry's fields.
const (
	ByLevel   = FieldLevel
	BySubject = FieldSubject
	ByUserID  = FieldUserID
	ByTraceID = FieldTraceID
	BySpanID  = FieldSpanID
	ByNone    = "none"
	// ByAttributePrefix begins the by of an attribute once validated: ByAttributePrefix + key.
	ByAttributePrefix = "attributes."
)

// StatsQuery asks how many of a project's entries match a filter in each bucket of Step
// milliseconds from Start to End (both required, inclusive), one series per value of By.
type StatsQuery struct {
	LogFilter
	Step int64
	// By is the grouping: ByLevel, BySubject, ByUserID, ByTraceID, BySpanID, ByNone, or
	// ByAttributePrefix + an attribute key (the service writes every attribute so).
	By string
	// Series is the most values of By the answer holds (the service sets it, 1 to
	// MaxStatsSeries; zero: every value). The store answers the counts of the Series values
	// with the largest totals, ties by value (nil first, then bytewise), and sums those of every
	// other value per bucket as Other counts; it may answer every value instead when there are
	// few (the levels the rollup holds): the service ranks what it gets the same way.
	Series int
	// Now is the time of the question (Unix ms), as for a listing; the service sets it.
	Now int64
}

// Attribute is the attribute key q groups by, and whether it groups by one.
func (q StatsQuery) Attribute() (string, bool) {
	return strings.CutPrefix(q.By, ByAttributePrefix)
}

// BucketCount is how many matching entries of one bucket (0-based) have one value of the
// grouping (nil: entries without it, or the one series of ByNone), or, with Other, the values
// past the query's Series. Stores answer with these. The value of an attribute is its JSON
// text as stored (`"500"` and `500` are two values; JSON null is `null`).
type BucketCount struct {
	Bucket int
	Value  *string
	Other  bool
	N      int64
}

// Stats is a dense count of entries over time: Buckets holds each bucket's start time, and every
// series one count per bucket.
type Stats struct {
	Step    int64
	Buckets []int64
	Series  []Series
	Total   int64
	// Attribute says the grouping is an attribute: each Value is then the value's JSON text.
	Attribute bool
}

// Series is the counts of the entries with one value of the grouping, or (Other, Value nil)
// those of every value past the question's Series.
type Series struct {
	Value  *string
	Other  bool
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
	if by, detail := l.statsBy(q.By); detail != "" {
		fields = append(fields, FieldError{Param: "by", Detail: detail})
	} else {
		q.By = by
	}
	switch {
	case q.Series == 0:
		q.Series = DefaultStatsSeries
	case q.Series < 1 || q.Series > MaxStatsSeries:
		fields = append(fields, FieldError{Param: "series", Detail: fmt.Sprintf("must be from 1 to %d", MaxStatsSeries)})
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

// statsBy is by as StatsQuery holds it (ByLevel when empty), or the problem with it: the
// entry's fields but message, none, "attributes.<key>" and any other name as an attribute key,
// under the rules of a stored key.
func (l Limits) statsBy(by string) (string, string) {
	switch by {
	case "":
		return ByLevel, ""
	case ByLevel, BySubject, ByUserID, ByTraceID, BySpanID, ByNone:
		return by, ""
	case FieldMessage:
		return "", "must not be message: group by level, subject, user_id, trace_id, span_id, none or an attribute key"
	}
	key := strings.TrimPrefix(by, ByAttributePrefix)
	if d := checkChars(key, 1, l.MaxAttributeKeyChars); d != "" {
		return "", "an attribute key that " + d
	}
	return ByAttributePrefix + key, ""
}

// LogStats counts the project's entries matching q's filter per bucket and per value of q.By.
// The counts are exact: the total is the number of entries a listing with the same filter
// yields, expired entries left out alike. The project must exist (KindNotFound otherwise).
func (s *Service) LogStats(ctx context.Context, q StatsQuery) (Stats, error) {
	q, err := s.limits.validateStats(q)
	if err != nil {
		return Stats{}, err
	}
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return Stats{}, err
	}
	q.Now = now
	defer release()
	counts, err := s.store.LogStats(ctx, q)
	if KindOf(err) == KindNotFound {
		return Stats{}, projectNotFound(q.ProjectID)
	}
	if err != nil {
		return Stats{}, fmt.Errorf("log stats: %w", err)
	}
	return denseStats(q, counts), nil
}

// denseStats lays counts out as the answer: every bucket present; the q.Series values with the
// largest totals (ties by value, nil first, then bytewise), ordered by value (nil first), then,
// when other values exist, one Other series of their sums; ByNone always one series.
func denseStats(q StatsQuery, counts []BucketCount) Stats {
	n := q.bucketCount()
	_, attr := q.Attribute()
	st := Stats{Step: q.Step, Buckets: make([]int64, n), Attribute: attr}
	for i := range st.Buckets {
		st.Buckets[i] = *q.Start + int64(i)*q.Step
	}
	type key struct {
		value string
		null  bool
	}
	series := map[key]*Series{}
	other := &Series{Other: true, Counts: make([]int64, n)}
	if q.By == ByNone {
		series[key{null: true}] = &Series{Counts: make([]int64, n)}
	}
	for _, c := range counts {
		if c.N == 0 || c.Bucket < 0 || c.Bucket >= n {
			continue
		}
		sr := other
		if !c.Other {
			v := c.Value
			if q.By == ByNone {
				v = nil
			}
			k := key{null: v == nil}
			if v != nil {
				k.value = *v
			}
			var ok bool
			if sr, ok = series[k]; !ok {
				sr = &Series{Value: v, Counts: make([]int64, n)}
				series[k] = sr
			}
		}
		sr.Counts[c.Bucket] += c.N
		sr.Total += c.N
		st.Total += c.N
	}
	byValue := func(a, b *Series) int {
		if a.Value == nil || b.Value == nil {
			return cmp.Compare(boolInt(a.Value != nil), boolInt(b.Value != nil))
		}
		return strings.Compare(*a.Value, *b.Value)
	}
	ranked := slices.Collect(maps.Values(series))
	slices.SortFunc(ranked, func(a, b *Series) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), byValue(a, b))
	})
	if q.Series > 0 && len(ranked) > q.Series {
		for _, sr := range ranked[q.Series:] {
			for i, c := range sr.Counts {
				other.Counts[i] += c
			}
			other.Total += sr.Total
		}
		ranked = ranked[:q.Series]
	}
	slices.SortFunc(ranked, byValue)
	for _, sr := range ranked {
		st.Series = append(st.Series, *sr)
	}
	if other.Total > 0 {
		st.Series = append(st.Series, *other)
	}
	return st
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
