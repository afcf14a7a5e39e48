package domain

import (
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
		{"unknown by", StatsQuery{LogFilter: LogFilter{ProjectID: p, Start: i(0), End: i(1)}, Step: 1000, By: "user"}, "by"},
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
