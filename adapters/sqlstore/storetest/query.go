package storetest

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"example.com/obsvc/domain"
)

// The query language's differential test: random trees over random entries, each written out
// as text (Query.String), parsed back as a client's query would be, and asked of the store; the
// store must give exactly the ids the Go evaluator (the live tail's) gives. Then the same
// queries delete what they list, and stats totals equal what paging yields.

// queryWords is the pool of message words: case, accents, digits, "_", a request id, and
// syntax characters of the language inside messages.
var queryWords = []string{"Payment", "payment", "declined", "DÉCLINÉ", "Straße", "ΣΊΣΥΦΟΣ", "timeout",
	"a_b", "739a4b5df5876246", "500", "404", "pay", "payload", "ok", "café", "x"}

// querySeparators join message words: a phrase matches whatever separates its words.
var querySeparators = []string{" ", ", ", "! ", " - ", ":", "(", ") ", `"`, `\`, "*", " AND ", " or ", "\t", "/"}

// attribute keys, some shadowing a field, some with JSON-path or syntax characters.
var queryKeys = []string{"http.route", "status", "code", "ok", "level", "service.name", `we"ird$[0]`, "ключ", "nested", "none"}

// queryAttrValues draws a value for key k: strings, numbers as text (integers, decimals,
// exponents, out of float64's range), booleans, null, objects and arrays.
func queryAttrValue(r *rand.Rand, k string) any {
	switch k {
	case "http.route":
		return []string{"/checkout", "/health", "/checkout/pay", "/Checkout", ""}[r.IntN(5)]
	case "status", "code":
		return []any{json.Number("200"), json.Number("500"), json.Number("500.0"), json.Number("5e2"), "500", "200",
			json.Number("-1"), json.Number("299.5"), json.Number("1e400"), json.Number("0.1")}[r.IntN(10)]
	case "ok":
		return []any{true, false, "true", nil}[r.IntN(4)]
	case "nested":
		return []any{map[string]any{"a": json.Number("1")}, []any{"x", json.Number("2")}, "{}"}[r.IntN(3)]
	case "level":
		return []string{"error", "info"}[r.IntN(2)]
	}
	return []string{"cart", "Cart", "a b", "π", `q"uote`}[r.IntN(5)]
}

// QueryCorpus makes n random entries of project p for the query language: every field, attribute
// types and keys as above, around at over span ms.
func QueryCorpus(r *rand.Rand, p string, n int, at, span int64) []domain.LogEntry {
	levels := []string{"info", "error", "warn", "debug", "fatal"}
	subjects := []string{"checkout", "Checkout", "auth", "a b"}
	traces := []string{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7"}
	spans := []string{"00f067aa0ba902b7", "b7ad6b7169203331"}
	out := make([]domain.LogEntry, n)
	for i := range out {
		var msg strings.Builder
		for j := range 1 + r.IntN(5) {
			if j > 0 {
				msg.WriteString(querySeparators[r.IntN(len(querySeparators))])
			}
			msg.WriteString(queryWords[r.IntN(len(queryWords))])
		}
		e := domain.LogEntry{ID: newID(), ProjectID: p, Time: at - r.Int64N(span), Level: levels[r.IntN(len(levels))], Message: msg.String()}
		if r.IntN(3) > 0 {
			e.Subject = ptr(subjects[r.IntN(len(subjects))])
		}
		if r.IntN(2) == 0 {
			e.UserID = ptr([]string{"u1", "u2", "U1"}[r.IntN(3)])
		}
		if r.IntN(3) == 0 {
			e.TraceID = ptr(traces[r.IntN(len(traces))])
			e.SpanID = ptr(spans[r.IntN(len(spans))])
		}
		if r.IntN(5) > 0 {
			attrs := map[string]any{}
			for range 1 + r.IntN(4) {
				k := queryKeys[r.IntN(len(queryKeys)-1)] // never "none"
				attrs[k] = queryAttrValue(r, k)
			}
			raw, err := json.Marshal(attrs)
			if err != nil {
				panic(err)
			}
			e.Attributes = raw
		}
		out[i] = e
	}
	return out
}

// RandomQuery draws a query tree over QueryCorpus's pools, depth at most d.
func RandomQuery(r *rand.Rand, d int) domain.QueryNode {
	if d > 0 {
		switch r.IntN(6) {
		case 0, 1:
			terms := make([]domain.QueryNode, 2+r.IntN(2))
			for i := range terms {
				terms[i] = RandomQuery(r, d-1)
			}
			if r.IntN(2) == 0 {
				return domain.QueryAnd{Terms: terms}
			}
			return domain.QueryOr{Terms: terms}
		case 2:
			return domain.QueryNot{Term: RandomQuery(r, d-1)}
		}
	}
	field := func() domain.QueryField {
		if r.IntN(2) == 0 {
			return domain.QueryField{Name: queryKeys[r.IntN(len(queryKeys))], Attribute: true}
		}
		return domain.QueryField{Name: []string{domain.FieldLevel, domain.FieldSubject, domain.FieldUserID, domain.FieldTraceID, domain.FieldSpanID}[r.IntN(5)]}
	}
	num := func() *float64 { return ptr([]float64{-1, 0.1, 200, 299.5, 300, 500, 1e300}[r.IntN(7)]) }
	switch r.IntN(5) {
	case 0:
		ws := make([]string, 1+r.IntN(2))
		for i := range ws {
			ws[i] = domain.Words(queryWords[r.IntN(len(queryWords))])[0]
		}
		q := domain.QueryWords{Words: ws, Prefix: r.IntN(4) == 0}
		if q.Prefix {
			last := []rune(ws[len(ws)-1])
			ws[len(ws)-1] = string(last[:1+r.IntN(len(last))])
		}
		return q
	case 1:
		return domain.QueryExists{Field: field()}
	case 2:
		f := domain.QueryField{Name: queryKeys[r.IntN(len(queryKeys))], Attribute: true}
		q := domain.QueryRange{Field: f}
		if r.IntN(3) > 0 {
			q.Min, q.MinInclusive = num(), r.IntN(2) == 0
		}
		if q.Min == nil || r.IntN(2) == 0 {
			q.Max, q.MaxInclusive = num(), r.IntN(2) == 0
		}
		return q
	}
	f := field()
	values := map[string][]string{
		domain.FieldLevel:   {"error", "ERROR", "Warning", "inf", "e"},
		domain.FieldSubject: {"checkout", "Checkout", "a b", "auth", "c"},
		domain.FieldUserID:  {"u1", "U1", "u"},
		domain.FieldTraceID: {"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7"},
		domain.FieldSpanID:  {"00f067aa0ba902b7", "b7ad6b7169203331"},
	}[f.Name]
	if f.Attribute {
		values = []string{"/checkout", "/Checkout", "/check", "500", "500.0", "200", "5e2", "true", "false", "cart", "a b", "π", `q"uote`, "x", "{}", "1e400", "0.1"}
	}
	q := domain.QueryEquals{Field: f, Value: values[r.IntN(len(values))], Prefix: r.IntN(5) == 0}
	if f.Name == domain.FieldTraceID || f.Name == domain.FieldSpanID {
		q.Prefix = false
	}
	if !q.Prefix && f.Attribute {
		if n, err := strconv.ParseFloat(q.Value, 64); err == nil {
			q.Number = &n
		}
		if b, err := strconv.ParseBool(q.Value); err == nil && (q.Value == "true" || q.Value == "false") {
			q.Bool = &b
		}
	}
	return q
}

// testQueryDifferential is the differential test this file opens with; the project keeps one
// day, so some entries are expired, and another project's entries must never show.
func testQueryDifferential(t *testing.T, s domain.Store) {
	const span = 6 * 3600_000
	p, other := projectWith(t, s, ptr(1)), projectWith(t, s, nil)
	r := rand.New(rand.NewPCG(uint64(base.UnixNano()), 32))
	at, cutoff := now, now-day
	held := QueryCorpus(r, p.ID, 700, at, span)
	for i := range held[:30] { // expired: invisible to every question
		held[i].Time = cutoff - 1 - r.Int64N(span)
	}
	mustInsert(t, s, held...)
	mustInsert(t, s, QueryCorpus(r, other.ID, 50, at, span)...)
	limits := domain.DefaultLimits().Query
	ask := func(f domain.LogFilter) ([]string, []string) {
		t.Helper()
		var want []string
		for _, e := range held {
			if e.Time >= cutoff && f.Matches(e) {
				want = append(want, e.ID)
			}
		}
		got, _ := page(t, s, domain.LogQuery{LogFilter: f, Now: at})
		gotIDs := ids(got)
		slices.Sort(want)
		slices.Sort(gotIDs)
		return gotIDs, want
	}
	matched := 0
	// A few thousand random queries, in make test's plain run. Under the race detector, which
	// looks for data races and not for wrong answers, a tenth: there the SQLite driver (Go
	// translated from C) runs about ten times slower, and the full draw took four minutes of CI
	// twice over (the terms-read and terms-tested paths).
	queries := 2500
	if raceDetector {
		queries = 250
	}
	for i := range queries {
		tree := domain.Query{Root: RandomQuery(r, r.IntN(4))}
		text := tree.String()
		parsed, err := domain.ParseQuery(text, limits)
		if err != nil {
			t.Fatalf("query %d: ParseQuery(%q) of a tree's own text: %v", i, text, err)
		}
		f := domain.LogFilter{ProjectID: p.ID, Query: &text, Parsed: parsed}
		if r.IntN(4) == 0 {
			f.Start, f.End = ptr(at-span/2), ptr(at)
		}
		got, want := ask(f)
		if !slices.Equal(got, want) {
			t.Fatalf("query %d %q: the store lists %d entries, the Go evaluator %d (only the store: %v; only Go: %v)",
				i, text, len(got), len(want), minus(got, want), minus(want, got))
		}
		if len(want) > 0 && len(want) < len(held)-30 {
			matched++
		}
		if i%10 == 0 {
			start, end := at-span, at
			q := domain.StatsQuery{LogFilter: f, Step: 3600_000, By: domain.ByNone, Now: at}
			q.Start, q.End = &start, &end
			counts, err := s.LogStats(ctx(t), q)
			if err != nil {
				t.Fatalf("LogStats(%q): %v", text, err)
			}
			var total int64
			for _, c := range counts {
				total += c.N
			}
			inRange, _ := ask(q.LogFilter)
			if total != int64(len(inRange)) {
				t.Fatalf("stats of %q total %d, paging yields %d", text, total, len(inRange))
			}
		}
	}
	// The test means something only if most queries select some entries and leave others.
	if matched < queries/4 {
		t.Fatalf("only %d of %d queries selected a proper part of the entries: the draw is too narrow", matched, queries)
	}
	// DELETE removes exactly what GET lists, query by query, until little is left.
	for i := 0; len(held) > 100 && i < 40; i++ {
		text := domain.Query{Root: RandomQuery(r, 1)}.String()
		parsed, err := domain.ParseQuery(text, limits)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", text, err)
		}
		f := domain.LogFilter{ProjectID: p.ID, Query: &text, Parsed: parsed}
		listed, _ := ask(f)
		n, err := s.DeleteLogs(ctx(t), f)
		if err != nil {
			t.Fatalf("DeleteLogs(%q): %v", text, err)
		}
		// Expired entries match the delete too (it does not look at retention): count them.
		var expired int64
		held = slices.DeleteFunc(held, func(e domain.LogEntry) bool {
			if f.Matches(e) {
				if e.Time < cutoff {
					expired++
				}
				return true
			}
			return false
		})
		if n != int64(len(listed))+expired {
			t.Fatalf("DeleteLogs(%q) removed %d, the listing showed %d (+%d expired)", text, n, len(listed), expired)
		}
		if got, want := ask(domain.LogFilter{ProjectID: p.ID}); !slices.Equal(got, want) {
			t.Fatalf("after DeleteLogs(%q): %d entries left, want %d", text, len(got), len(want))
		}
	}
}

// minus is what a holds that b does not, at most five of them.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) && len(out) < 5 {
			out = append(out, x)
		}
	}
	return out
}
