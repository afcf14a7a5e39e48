package storetest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"example.com/obsvc/domain"
)

// runSearch is the search and stats part of the contract.
func runSearch(t *testing.T, open Open) {
	t.Run("SearchFoldsCaseAndMatchesLiterally", func(t *testing.T) { t.Parallel(); testSearchQ(t, open(t)) })
	t.Run("SubjectAndRepeatedLevels", func(t *testing.T) { t.Parallel(); testSubjectAndLevels(t, open(t)) })
	t.Run("StatsMatchAGoReferenceOverRandomFilters", func(t *testing.T) { t.Parallel(); testStatsProperty(t, open(t)) })
	t.Run("QueryLanguageMatchesTheGoEvaluator", func(t *testing.T) { t.Parallel(); testQueryDifferential(t, open(t)) })
	t.Run("StatsTopSeriesAndOtherOverEveryGrouping", func(t *testing.T) { t.Parallel(); testStatsTopSeries(t, open(t)) })
}

// RunQueryLanguage runs the query language's differential case alone, for a store opened with
// other options than Run's (such as SQLite's IndexedTerms, which decides whether a term is read
// from its index or tested on each entry: both must give the evaluator's answer).
func RunQueryLanguage(t *testing.T, open Open) {
	t.Run("QueryLanguageMatchesTheGoEvaluator", func(t *testing.T) { t.Parallel(); testQueryDifferential(t, open(t)) })
}

func testSearchQ(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "q", base)
	msgs := []string{"CAFÉ au lait", "café noir", "Straße", "STRASSE", "100% done", "100 done", "snake_case", "snakeXcase",
		`C:\temp`, `C:temp`, "Kelvin \u212a", "kelvin k", "ΣΊΣΥΦΟΣ", "σίσυφος", "plain"}
	var batch []domain.LogEntry
	for i, m := range msgs {
		e := entry(p, int64(i), "info")
		e.Message = m
		batch = append(batch, e)
	}
	mustInsert(t, s, batch...)
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"é", []string{"CAFÉ au lait", "café noir"}},
		{"CAFÉ", []string{"CAFÉ au lait", "café noir"}},
		{"strasse", []string{"STRASSE"}}, // simple folding: ß is not ss
		{"straße", []string{"Straße"}},
		{"%", []string{"100% done"}},
		{"0%", []string{"100% done"}},
		{"_", []string{"snake_case"}},
		{"e_c", []string{"snake_case"}},
		{`\`, []string{`C:\temp`}},
		{`:\t`, []string{`C:\temp`}},
		{"KELVIN K", []string{"Kelvin \u212a", "kelvin k"}},
		{"\u212aELVIN", []string{"Kelvin \u212a", "kelvin k"}},
		{"σίσυφος", []string{"ΣΊΣΥΦΟΣ", "σίσυφος"}},
		{"nothing", nil},
	} {
		got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID, Q: ptr(c.q)}})
		var gotMsgs []string
		for _, e := range got {
			gotMsgs = append(gotMsgs, e.Message)
		}
		if !slices.Equal(gotMsgs, c.want) {
			t.Errorf("q=%q matched %q, want %q", c.q, gotMsgs, c.want)
		}
	}
	// Deleting by q removes what listing by q shows, and nothing else.
	n, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, Q: ptr("_")})
	if err != nil || n != 1 {
		t.Fatalf("DeleteLogs q=_ = %d, %v; want 1", n, err)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != len(msgs)-1 {
		t.Fatalf("after deleting q=_ the project holds %d entries, want %d", len(got), len(msgs)-1)
	}
}

func testSubjectAndLevels(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "s", base)
	var batch []domain.LogEntry
	for i, lv := range []string{"info", "error", "fatal", "warn", "error", "debug"} {
		e := entry(p, int64(i), lv)
		if i%2 == 0 {
			e.Subject = ptr("checkout")
		}
		batch = append(batch, e)
	}
	mustInsert(t, s, batch...)
	count := func(f domain.LogFilter) int {
		f.ProjectID = p.ID
		got, _ := page(t, s, domain.LogQuery{LogFilter: f})
		return len(got)
	}
	for _, c := range []struct {
		name string
		f    domain.LogFilter
		want int
	}{
		{"subject", domain.LogFilter{Subject: ptr("checkout")}, 3},
		{"subject is exact", domain.LogFilter{Subject: ptr("Checkout")}, 0},
		{"one level as before", domain.LogFilter{Level: ptr("error")}, 2},
		{"one level in Levels", domain.LogFilter{Levels: []string{"error"}}, 2},
		{"levels are either", domain.LogFilter{Levels: []string{"error", "fatal"}}, 3},
		{"levels and subject", domain.LogFilter{Levels: []string{"error", "fatal"}, Subject: ptr("checkout")}, 2},
		{"unknown levels", domain.LogFilter{Levels: []string{"x", "y"}}, 0},
	} {
		if got := count(c.f); got != c.want {
			t.Errorf("%s: %d entries, want %d", c.name, got, c.want)
		}
	}
}

// The reference: what every store must answer, in plain Go.

// Matches reports whether e matches f, as the contract states it (time bounds inclusive, every
// filter ANDed, q a literal substring under simple case folding).
func Matches(e domain.LogEntry, f domain.LogFilter) bool {
	eq := func(p *string, v *string) bool { return p == nil || (v != nil && *v == *p) }
	levels := f.Levels
	if f.Level != nil {
		levels = append([]string{*f.Level}, levels...)
	}
	return e.ProjectID == f.ProjectID && eq(f.UserID, e.UserID) && eq(f.Subject, e.Subject) && eq(f.TraceID, e.TraceID) &&
		(len(levels) == 0 || slices.Contains(levels, e.Level)) &&
		(f.Q == nil || strings.Contains(domain.FoldCase(e.Message), domain.FoldCase(*f.Q))) &&
		(f.Start == nil || e.Time >= *f.Start) && (f.End == nil || e.Time <= *f.End)
}

// StatsKey is one cell of a stats answer: a bucket and a value of the grouping ("" for none;
// "=" and the value for a grouping that may have none; statsOther for the other values).
type StatsKey struct {
	Bucket int
	Value  string
}

// ReferenceStats counts held entries (those at or after cutoff) as a store must.
func ReferenceStats(held []domain.LogEntry, q domain.StatsQuery, cutoff int64) map[StatsKey]int64 {
	out := map[StatsKey]int64{}
	f := q.LogFilter
	f.Start, f.End = q.Start, q.End
	for _, e := range held {
		if e.Time < cutoff || !Matches(e, f) {
			continue
		}
		k := StatsKey{Bucket: int((e.Time - *q.Start) / q.Step)}
		switch q.By {
		case domain.ByLevel:
			k.Value = e.Level
		case domain.BySubject, domain.ByUserID, domain.ByTraceID, domain.BySpanID:
			if v := map[string]*string{domain.BySubject: e.Subject, domain.ByUserID: e.UserID, domain.ByTraceID: e.TraceID, domain.BySpanID: e.SpanID}[q.By]; v != nil {
				k.Value = "=" + *v
			}
		default:
			if key, ok := q.Attribute(); ok {
				if v, ok := attributeText(e, key); ok {
					k.Value = "=" + v
				}
			}
		}
		out[k]++
	}
	return out
}

// StoreStats asks s for q and sums its answer into cells like ReferenceStats'.
func StoreStats(t *testing.T, s domain.Store, q domain.StatsQuery) map[StatsKey]int64 {
	t.Helper()
	counts, err := s.LogStats(ctx(t), q)
	if err != nil {
		t.Fatalf("LogStats(%+v): %v", q, err)
	}
	out := map[StatsKey]int64{}
	for _, c := range counts {
		k := StatsKey{Bucket: c.Bucket}
		switch {
		case c.Other:
			k.Value = statsOther
		case c.Value != nil:
			k.Value = *c.Value
			if q.By != domain.ByLevel {
				k.Value = "=" + k.Value
			}
		}
		if c.N != 0 {
			out[k] += c.N
		}
	}
	return out
}

// Corpus makes random entries of project p whose fields draw from small pools, so that random
// filters match some of them: messages with capitals, accents, LIKE metacharacters and
// backslashes; times around at over span ms, on and off whole minutes.
func Corpus(r *rand.Rand, p string, n int, at, span int64, newID func() string) []domain.LogEntry {
	words := []string{"Payment", "payment", "DÉCLINÉ", "décliné", "100%", "a_b", `C:\x`, "Straße", "ok", "ΣΊΣΥΦΟΣ"}
	levels := []string{"info", "error", "fatal", "warn"}
	subjects := []string{"checkout", "Checkout", "auth"}
	users := []string{"u1", "u2"}
	traces := []string{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7"}
	out := make([]domain.LogEntry, n)
	for i := range out {
		e := domain.LogEntry{ID: newID(), ProjectID: p, Time: at - r.Int64N(span), Level: levels[r.IntN(len(levels))],
			Message: words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]}
		if r.IntN(4) == 0 {
			e.Time = e.Time / 60000 * 60000
		}
		if r.IntN(3) > 0 {
			e.Subject = ptr(subjects[r.IntN(len(subjects))])
		}
		if r.IntN(2) == 0 {
			e.UserID = ptr(users[r.IntN(len(users))])
		}
		if r.IntN(3) == 0 {
			e.TraceID = ptr(traces[r.IntN(len(traces))])
		}
		out[i] = e
	}
	return out
}

// RandomFilter draws a filter of project p over the pools of Corpus, within [at-span, at].
func RandomFilter(r *rand.Rand, p string, at, span int64) domain.LogFilter {
	f := domain.LogFilter{ProjectID: p}
	pick := func(vs ...string) *string { return ptr(vs[r.IntN(len(vs))]) }
	if r.IntN(4) == 0 {
		f.Q = pick("payment", "PAYMENT", "é", "É", "%", "_", `\`, "0%", "a_", "strasse", "straße", "σίσυφος", "zzz")
	}
	if r.IntN(4) == 0 {
		f.Subject = pick("checkout", "Checkout", "auth", "none")
	}
	if r.IntN(5) == 0 {
		f.UserID = pick("u1", "u2")
	}
	if r.IntN(6) == 0 {
		f.TraceID = pick("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7")
	}
	switch r.IntN(4) {
	case 0:
		f.Levels = []string{"error"}
	case 1:
		f.Levels = []string{"error", "fatal"}
	}
	if r.IntN(3) == 0 {
		f.Start = ptr(at - r.Int64N(span))
	}
	if r.IntN(3) == 0 {
		f.End = ptr(at - r.Int64N(span))
		if f.Start != nil && *f.End < *f.Start {
			f.Start, f.End = f.End, f.Start
		}
	}
	return f
}

// RandomStats draws a stats question of filter f within [at-span, at]: on and off whole minutes.
func RandomStats(r *rand.Rand, f domain.LogFilter, at, span int64) domain.StatsQuery {
	start := at - span + r.Int64N(span/2)
	if r.IntN(2) == 0 {
		start = start / 60000 * 60000
	}
	end := start + r.Int64N(span)
	step := []int64{60_000, 300_000, 3_600_000, 61_000, 1000 * (1 + r.Int64N(5000))}[r.IntN(5)]
	if (end-start)/step >= domain.MaxStatsBuckets {
		step = (end-start)/(domain.MaxStatsBuckets-1) + 1
	}
	f.Start, f.End = &start, &end
	by := []string{domain.ByLevel, domain.BySubject, domain.ByNone}[r.IntN(3)]
	return domain.StatsQuery{LogFilter: f, Step: step, By: by, Now: at}
}

// testStatsProperty checks, over random batches, filters, deletes and sweeps, that listing and
// stats give exactly what the reference gives over the entries the store should hold: the stats
// total is the number of entries paging yields, before and after every change.
func testStatsProperty(t *testing.T, s domain.Store) {
	r := rand.New(rand.NewPCG(uint64(base.UnixNano()), 14))
	const span = 6 * 3600_000
	at := now
	p := projectWith(t, s, ptr(1))
	other := projectWith(t, s, nil)
	var held []domain.LogEntry
	cutoff := at - day
	const lag = 30_007 // not a whole minute
	for round := range 6 {
		batch := Corpus(r, p.ID, 200, at, span, newID)
		if round == 2 { // some entries already past the retention: hidden, then swept
			for i := range batch[:20] {
				batch[i].Time = cutoff - 1 - r.Int64N(span)
			}
		}
		if round == 1 { // some entries at the retention boundary asked below (lag), to the millisecond
			for i, d := range []int64{-1, 0, 1, 2, 29_990} {
				batch[i].Time = cutoff + lag + d
			}
		}
		mustInsert(t, s, batch...)
		mustInsert(t, s, Corpus(r, other.ID, 20, at, span, newID)...)
		held = append(held, batch...)
		for range 25 {
			f := RandomFilter(r, p.ID, at, span)
			checkFilter(t, s, held, f, at, cutoff)
			q := RandomStats(r, f, at, span)
			want := ReferenceStats(held, q, cutoff)
			if got := StoreStats(t, s, q); !maps.Equal(got, want) {
				t.Fatalf("round %d: stats of %s = %v, want %v", round, describe(q), got, want)
			}
		}
		// A dashboard question the rollup answers, cut by the retention boundary.
		q := domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p.ID, Start: ptr(cutoff - 3*3600_000 - 7), End: ptr(at)}, Step: 3600_000, By: domain.ByLevel, Now: at}
		if got, want := StoreStats(t, s, q), ReferenceStats(held, q, cutoff); !maps.Equal(got, want) {
			t.Fatalf("round %d: dashboard stats = %v, want %v", round, got, want)
		}
		// From a whole minute and from a whole hour (the hourly rollup), to the end and to a
		// range end inside a minute; then asked a little later, the retention boundary inside a
		// minute and an hour: that minute the range's last, or the boundary after the range's end.
		for _, from := range []int64{floorMin(at - day), floorHour(at-day) - 3*3600_000} {
			q.Start, q.Now = ptr(from), at
			for _, end := range []int64{at, at - 7} {
				q.End = ptr(end)
				if got, want := StoreStats(t, s, q), ReferenceStats(held, q, cutoff); !maps.Equal(got, want) {
					t.Fatalf("round %d: aligned dashboard stats from %d to %d = %v, want %v", round, from, end, got, want)
				}
			}
			q.Now = at + lag
			for _, end := range []int64{at, cutoff + lag + 1, cutoff + lag + 29_992, cutoff + lag - 1} {
				q.End = ptr(end)
				if got, want := StoreStats(t, s, q), ReferenceStats(held, q, cutoff+lag); !maps.Equal(got, want) {
					t.Fatalf("round %d: stats from %d to %d (cutoff %d) = %v, want %v", round, from, end, cutoff+lag, got, want)
				}
			}
		}
		// An unknown project is KindNotFound, whether the rollup answers or the entries do.
		for _, sub := range []*string{nil, ptr("auth")} {
			u := q
			u.ProjectID, u.Subject = newID(), sub
			if _, err := s.LogStats(ctx(t), u); domain.KindOf(err) != domain.KindNotFound {
				t.Fatalf("LogStats of an unknown project (subject %v) = %v, want KindNotFound", sub, err)
			}
		}
		switch round % 3 {
		case 0:
			f := RandomFilter(r, p.ID, at, span)
			n, err := s.DeleteLogs(ctx(t), f)
			if err != nil {
				t.Fatalf("DeleteLogs: %v", err)
			}
			kept := held[:0:0]
			for _, e := range held {
				if !Matches(e, f) {
					kept = append(kept, e)
				}
			}
			if n != int64(len(held)-len(kept)) {
				t.Fatalf("DeleteLogs(%+v) = %d, want %d", f, n, len(held)-len(kept))
			}
			held = kept
		case 2:
			if _, err := s.SweepLogs(ctx(t), p.ID, at, 7); err != nil {
				t.Fatalf("SweepLogs: %v", err)
			}
			for {
				n, err := s.SweepLogs(ctx(t), p.ID, at, 1000)
				if err != nil {
					t.Fatalf("SweepLogs: %v", err)
				}
				if n == 0 {
					break
				}
			}
			held = slices.DeleteFunc(held, func(e domain.LogEntry) bool { return e.Time < cutoff })
		}
	}
}

func floorMin(t int64) int64 { return t - ((t%60000)+60000)%60000 }

func floorHour(t int64) int64 { return t - ((t%3600_000)+3600_000)%3600_000 }

// checkFilter lists f (all pages, both orders) and compares the ids with the reference.
func checkFilter(t *testing.T, s domain.Store, held []domain.LogEntry, f domain.LogFilter, at, cutoff int64) {
	t.Helper()
	var want []string
	for _, e := range held {
		if e.Time >= cutoff && Matches(e, f) {
			want = append(want, e.ID)
		}
	}
	got, _ := page(t, s, domain.LogQuery{LogFilter: f, Now: at})
	gotIDs := ids(got)
	for i := 1; i < len(got); i++ {
		if got[i].Time < got[i-1].Time || got[i].Time == got[i-1].Time && got[i].ID <= got[i-1].ID {
			t.Fatalf("listing of %+v out of order", f)
		}
	}
	slices.Sort(want)
	slices.Sort(gotIDs)
	if !slices.Equal(gotIDs, want) {
		t.Fatalf("listing of %s: %d entries, want %d", describeFilter(f), len(gotIDs), len(want))
	}
}

func describeFilter(f domain.LogFilter) string {
	s := func(p *string) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%q", *p)
	}
	i := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{q=%s subject=%s user=%s trace=%s levels=%q start=%s end=%s}", s(f.Q), s(f.Subject), s(f.UserID), s(f.TraceID), f.Levels, i(f.Start), i(f.End))
}

func describe(q domain.StatsQuery) string {
	return fmt.Sprintf("%s step=%d by=%s", describeFilter(q.LogFilter), q.Step, q.By)
}

// testStatsTopSeries checks, over random entries whose fields and attributes draw from pools
// with values of every JSON type, that a store's stats by every grouping, with any number of
// series, give exactly the reference's top series and the rest as other, per bucket: the same
// values, the same counts, nothing lost.
func testStatsTopSeries(t *testing.T, s domain.Store) {
	r := rand.New(rand.NewPCG(uint64(base.UnixNano()), 32))
	const span = 3 * 3600_000
	at := now
	p := projectWith(t, s, nil)
	var held []domain.LogEntry
	for range 4 {
		batch := attributeCorpus(r, p.ID, 150, at, span)
		mustInsert(t, s, batch...)
		held = append(held, batch...)
	}
	bys := []string{domain.ByLevel, domain.BySubject, domain.ByUserID, domain.ByTraceID, domain.BySpanID, domain.ByNone,
		domain.ByAttributePrefix + "code", domain.ByAttributePrefix + "route", domain.ByAttributePrefix + "a.b",
		domain.ByAttributePrefix + `we"ird\key`, domain.ByAttributePrefix + "level", domain.ByAttributePrefix + "absent"}
	for round := range 120 {
		f := domain.LogFilter{ProjectID: p.ID}
		if r.IntN(4) == 0 {
			f.Levels = []string{"error", "fatal"}
		}
		q := RandomStats(r, f, at, span)
		q.By = bys[round%len(bys)]
		q.Series = []int{0, 1, 2, 3, 5, 10, 100}[r.IntN(7)]
		want := TopStats(ReferenceStats(held, q, 0), q.Series)
		if got := TopStats(StoreStats(t, s, q), q.Series); !maps.Equal(got, want) {
			t.Fatalf("round %d: stats of %s series=%d =\n %v\nwant\n %v", round, describe(q), q.Series, got, want)
		}
	}
}

// attributeCorpus makes random entries of project p with attributes: code a number or the
// string of one (500 and "500" are two values), route a string with JSON escapes, "a.b" (a key
// with a dot), `we"ird\key` (a key to be quoted), level (an attribute shadowing the field), and
// values null, true, an array and an object; ids drawn from pools of a few.
func attributeCorpus(r *rand.Rand, p string, n int, at, span int64) []domain.LogEntry {
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	out := make([]domain.LogEntry, n)
	for i := range out {
		e := domain.LogEntry{ID: newID(), ProjectID: p, Time: at - r.Int64N(span), Level: pick("info", "error", "fatal", "warn", "debug"), Message: "m"}
		if r.IntN(4) == 0 {
			e.Time = e.Time / 60000 * 60000
		}
		if r.IntN(4) > 0 {
			e.Subject = ptr(pick("a", "b", "c", "d", "e", "B", "é", "ab"))
		}
		if r.IntN(2) == 0 {
			e.UserID = ptr(pick("u1", "u2", "u3"))
		}
		if r.IntN(2) == 0 {
			e.TraceID = ptr(pick("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7", "0000000000000000000000000000000a"))
			e.SpanID = ptr(pick("00f067aa0ba902b7", "00000000000000a1"))
		}
		attrs := map[string]any{}
		if r.IntN(5) > 0 {
			attrs["code"] = json.Number(pick("500", "200", "404", "500.0", "-1", "1E400", "12345678901234567890"))
			if r.IntN(3) == 0 {
				attrs["code"] = pick("500", "200", "")
			}
		}
		if r.IntN(3) > 0 {
			attrs["route"] = pick("/checkout", "/cart", "/", "\u2028 \" \\ \t <&>", "Straße", "/checkout ")
		}
		switch r.IntN(6) {
		case 0:
			attrs["a.b"] = nil
		case 1:
			attrs["a.b"] = true
		case 2:
			attrs["a.b"] = []any{json.Number("1"), "2", map[string]any{"g": nil}}
		case 3:
			attrs["a.b"] = map[string]any{"x": json.Number("1.50"), "y": "\u0001"}
		case 4:
			attrs["a.b"] = false
		}
		if r.IntN(2) == 0 {
			attrs[`we"ird\key`] = pick("x", "y")
		}
		if r.IntN(3) == 0 {
			attrs["level"] = pick("error", "info")
		}
		if len(attrs) > 0 || r.IntN(2) == 0 {
			b, err := encodeJSON(attrs)
			if err != nil {
				panic(err)
			}
			e.Attributes = b
		}
		out[i] = e
	}
	return out
}

// encodeJSON encodes v as the domain keeps attributes: compact, keys sorted, HTML not escaped.
func encodeJSON(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// statsOther is the value of StatsKey of the counts of the values past a question's series.
const statsOther = "\x00other"

// TopStats shapes cells as a stats answer with at most series values (zero: every value) does:
// the values with the largest totals, ties by value ("" for entries without one first, then
// bytewise; ReferenceStats and StoreStats prefix every value with "="), and the rest summed per
// bucket under statsOther. It keeps a store's own other cells there, so a store's answer of
// the top series and other and one of every value shape alike.
func TopStats(cells map[StatsKey]int64, series int) map[StatsKey]int64 {
	totals := map[string]int64{}
	for k, n := range cells {
		if k.Value != statsOther {
			totals[k.Value] += n
		}
	}
	values := slices.Collect(maps.Keys(totals))
	slices.SortFunc(values, func(a, b string) int { return cmp.Or(cmp.Compare(totals[b], totals[a]), strings.Compare(a, b)) })
	kept := map[string]bool{}
	for i, v := range values {
		kept[v] = series <= 0 || i < series
	}
	out := map[StatsKey]int64{}
	for k, n := range cells {
		if !kept[k.Value] {
			k.Value = statsOther
		}
		if n != 0 {
			out[k] += n
		}
	}
	return out
}

// attributeText is the JSON text of the attribute key of e as stored, and whether e has it.
func attributeText(e domain.LogEntry, key string) (string, bool) {
	if e.Attributes == nil {
		return "", false
	}
	var attrs map[string]json.RawMessage
	if err := json.Unmarshal(e.Attributes, &attrs); err != nil {
		panic(fmt.Sprintf("attributes %s: %v", e.Attributes, err))
	}
	v, ok := attrs[key]
	return string(v), ok
}
