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
