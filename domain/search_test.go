package domain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func TestFoldCase(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"CAFÉ", "café"},
		{"Straße", "straße"},
		{"STRASSE", "strasse"},
		{"\u212a", "k"},        // Kelvin sign folds with k
		{"ΣΊΣΥΦΟΣ", "ςίςυφος"}, // Σ, σ and ς are one orbit
		{"σίσυφος", "ςίςυφος"},
		{"100%_\\", "100%_\\"},
	} {
		if got := FoldCase(c.in); got != c.want {
			t.Errorf("FoldCase(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Equal under simple folding exactly when the forms are equal, for every pair of runes in
	// a range covering Latin, Greek, Cyrillic and a few oddities.
	for r := rune(0); r < 0x600; r++ {
		for f := r; ; {
			if FoldCase(string(f)) != FoldCase(string(r)) {
				t.Fatalf("%U and %U fold apart", r, f)
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
	}
	if strings.Contains(FoldCase("ABC"), "A") {
		t.Fatal("ASCII capitals survive folding")
	}
}

func TestValidateStats(t *testing.T) {
	l := DefaultLimits()
	p := "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f"
	i := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name  string
		q     StatsQuery
		param string
	}{
		{"no start", StatsQuery{LogFilter: LogFilter{ProjectID: p, End: i(1)}, Step: 1000}, "start_time"},
		{"step too small", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1)}, Step: 999}, "step"},
		{"too many buckets", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1_000_000)}, Step: 1000}, "step"},
		{"whole int64 range", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(-1 << 63), End: i(1<<63 - 1)}, Step: 1<<63 - 1}, "step"},
		{"unknown by", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1)}, Step: 1000, By: "message"}, "by"},
		{"empty q", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1), Q: new(string)}, Step: 1000}, "q"},
	} {
		_, err := l.validateStats(c.q)
		e, ok := err.(*Error)
		if !ok || e.Kind != KindInvalid || len(e.Fields) == 0 || e.Fields[0].Param != c.param {
			t.Errorf("%s: %v, want invalid %s", c.name, err, c.param)
		}
	}
	q, err := l.validateStats(StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(999_999), Level: new(string)}, Step: 1000})
	if err == nil {
		t.Errorf("an empty level passed: %+v", q)
	}
	q, err = l.validateStats(StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(999_999)}, Step: 1000})
	if err != nil || q.bucketCount() != 1000 || q.By != ByLevel {
		t.Errorf("1,000 buckets: %+v, %v", q, err)
	}
	st := denseStats(q, []BucketCount{{Bucket: 3, Value: ptrTo("error"), N: 2}, {Bucket: 3, Value: ptrTo("error"), N: 1}})
	if st.Total != 3 || len(st.Series) != 1 || st.Series[0].Counts[3] != 3 || len(st.Buckets) != 1000 || st.Buckets[999] != 999_000 {
		t.Errorf("dense stats = total %d, series %d", st.Total, len(st.Series))
	}
}

func ptrTo(s string) *string { return &s }

func TestValidateStatsByAndSeries(t *testing.T) {
	l := DefaultLimits()
	p := "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f"
	i := func(v int64) *int64 { return &v }
	ask := func(by string, series int) StatsQuery {
		return StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1)}, Step: 1000, By: by, Series: series}
	}
	for _, c := range []struct {
		by, want string
		series   int
	}{
		{"", ByLevel, DefaultStatsSeries},
		{"subject", BySubject, 1},
		{"user_id", ByUserID, 100},
		{"trace_id", ByTraceID, 0},
		{"span_id", BySpanID, 0},
		{"none", ByNone, 0},
		{"http.route", "attributes.http.route", 0},
		{"attributes.level", "attributes.level", 0},
		{"attributes.attributes.x", "attributes.attributes.x", 0},
		{"user", "attributes.user", 0},
		{"Level", "attributes.Level", 0},
	} {
		q, err := l.validateStats(ask(c.by, c.series))
		want := cmp.Or(c.series, DefaultStatsSeries)
		if err != nil || q.By != c.want || q.Series != want {
			t.Errorf("by=%q series=%d: by %q series %d, %v; want %q %d", c.by, c.series, q.By, q.Series, err, c.want, want)
		}
	}
	for _, c := range []struct {
		by     string
		series int
		param  string
	}{
		{"message", 0, "by"},
		{"attributes.", 0, "by"},
		{"attributes." + strings.Repeat("k", l.MaxAttributeKeyChars+1), 0, "by"},
		{"a\x00b", 0, "by"},
		{"level", -1, "series"},
		{"level", MaxStatsSeries + 1, "series"},
	} {
		_, err := l.validateStats(ask(c.by, c.series))
		e, ok := err.(*Error)
		if !ok || e.Kind != KindInvalid || len(e.Fields) != 1 || e.Fields[0].Param != c.param {
			t.Errorf("by=%q series=%d: %v, want invalid %s", c.by, c.series, err, c.param)
		}
	}
}

// TestDenseStatsTopSeries: the series with the largest totals (ties by value, nil first),
// ordered by value, then the rest summed per bucket as other; a store's own other counts join
// it; the whole stays exact.
func TestDenseStatsTopSeries(t *testing.T) {
	start := int64(0)
	end := int64(2999)
	q := StatsQuery{LogFilter: LogFilter{Start: &start, End: &end}, Step: 1000, By: ByAttributePrefix + "code", Series: 3}
	s := ptrTo
	counts := []BucketCount{
		{Bucket: 0, Value: s(`500`), N: 4},
		{Bucket: 1, Value: s(`"500"`), N: 4},
		{Bucket: 2, Value: nil, N: 2},
		{Bucket: 0, Value: nil, N: 2},      // nil: 4, ties with 500 and "500", ranks first
		{Bucket: 2, Value: s(`"b"`), N: 3}, // below the ties: other
		{Bucket: 1, Value: s(`"a"`), N: 1},
		{Bucket: 2, Other: true, N: 5},
	}
	st := denseStats(q, counts)
	type row struct {
		value  string
		other  bool
		counts string
		total  int64
	}
	var got []row
	for _, sr := range st.Series {
		v := "<nil>"
		if sr.Value != nil {
			v = *sr.Value
		}
		got = append(got, row{v, sr.Other, fmt.Sprint(sr.Counts), sr.Total})
	}
	want := []row{
		{"<nil>", false, "[2 0 2]", 4},
		{`"500"`, false, "[0 4 0]", 4},
		{`500`, false, "[4 0 0]", 4},
		{"<nil>", true, "[0 1 8]", 9},
	}
	if !slices.Equal(got, want) || st.Total != 21 || !st.Attribute {
		t.Errorf("series = %v total %d attribute %v, want %v total 21", got, st.Total, st.Attribute, want)
	}
	q.Series = 10
	if st := denseStats(q, counts[:6]); len(st.Series) != 5 || st.Series[4].Other || st.Total != 16 {
		t.Errorf("every value within series: %+v", st)
	}
}
