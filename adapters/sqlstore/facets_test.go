package sqlstore_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/domain"
)

// TestFacetsAgreeWithAReference writes the same random entries to both stores (numbers with
// several texts of one value, strings with escapes, booleans, null, objects and arrays, keys
// that a JSON path must quote, missing fields) and checks that each store's facets and fields
// are exactly what a plain Go count of the entries says, ties and all.
func TestFacetsAgreeWithAReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 3))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	values := []string{`1`, `1.0`, `2`, `-0`, `1e3`, `12345678901234567890`, `"a"`, `"b"`, `"A"`, `"é"`, `"q\"x"`, `"back\\slash"`,
		`"\u0001"`, `"1"`, `true`, `false`, `null`, `{"a":1}`, `[1,2]`, `""`}
	keys := []string{"k1", "k2", "a.b", `q"x`, "$", "level"}
	subjects := []string{"", "s1", "s2", "S1", "é", `a"b`, "a\tb"}
	type entry struct {
		e     domain.LogEntry
		attrs map[string]string // key -> JSON text
	}
	entries := make([]entry, 400)
	for i := range entries {
		attrs := map[string]string{}
		for _, k := range keys {
			if rng.IntN(3) > 0 {
				attrs[k] = pick(values)
			}
		}
		var b bytes.Buffer
		b.WriteByte('{')
		sorted := slices.Sorted(func(yield func(string) bool) {
			for k := range attrs {
				if !yield(k) {
					return
				}
			}
		})
		for j, k := range sorted {
			if j > 0 {
				b.WriteByte(',')
			}
			kj, _ := json.Marshal(k)
			b.Write(kj)
			b.WriteByte(':')
			b.WriteString(attrs[k])
		}
		b.WriteByte('}')
		e := domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), Time: int64(rng.IntN(1000)), Level: pick([]string{"info", "warn", "error"}), Message: pick([]string{"m1", "m2"})}
		if s := pick(subjects); s != "" {
			e.Subject = &s
		}
		if len(attrs) > 0 || rng.IntN(2) == 0 {
			e.Attributes = b.Bytes()
		}
		entries[i] = entry{e, attrs}
	}
	fields := []string{"level", "subject", "user_id", "k1", "k2", "a.b", `q"x`, "$", "attributes.level", "missing"}
	targets := make([]domain.QueryField, len(fields))
	for i, f := range fields {
		targets[i] = domain.ResolveField(f)
	}
	valueOf := func(e entry, t domain.QueryField) (text, order string, ok bool) {
		if t.Attribute {
			v, ok := e.attrs[t.Name]
			return v, v, ok
		}
		var s *string
		switch t.Name {
		case "level":
			s = &e.e.Level
		case "subject":
			s = e.e.Subject
		case "user_id":
			s = e.e.UserID
		}
		if s == nil {
			return "", "", false
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(*s)
		return strings.TrimSuffix(b.String(), "\n"), *s, true
	}
	type ranged struct{ start, end int64 }
	ranges := []ranged{{0, 999}, {100, 500}, {700, 700}}
	reference := func(r ranged, limit int) ([]domain.Facet, []domain.FieldCount) {
		var in []entry
		for _, e := range entries {
			if e.e.Time >= r.start && e.e.Time <= r.end {
				in = append(in, e)
			}
		}
		facets := make([]domain.Facet, len(fields))
		for i, t := range targets {
			counts, texts := map[string]int64{}, map[string]string{}
			var present int64
			for _, e := range in {
				if text, order, ok := valueOf(e, t); ok {
					counts[order]++
					texts[order] = text
					present++
				}
			}
			orders := make([]string, 0, len(counts))
			for o := range counts {
				orders = append(orders, o)
			}
			slices.SortFunc(orders, func(a, b string) int { return cmp.Or(cmp.Compare(counts[b], counts[a]), strings.Compare(a, b)) })
			f := domain.Facet{Field: fields[i], Values: []domain.FacetValue{}, Missing: int64(len(in)) - present, Other: present}
			for _, o := range orders[:min(limit, len(orders))] {
				f.Values = append(f.Values, domain.FacetValue{Value: texts[o], Count: counts[o]})
				f.Other -= counts[o]
			}
			facets[i] = f
		}
		keyCounts := map[string]int64{}
		for _, e := range in {
			for k := range e.attrs {
				keyCounts[k]++
			}
		}
		keys := []domain.FieldCount{}
		for k, n := range keyCounts {
			keys = append(keys, domain.FieldCount{Field: k, Count: n})
		}
		slices.SortFunc(keys, func(a, b domain.FieldCount) int {
			return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Field, b.Field))
		})
		return facets, keys
	}

	for name, open := range map[string]func(*testing.T) domain.Store{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			p := uuid.Must(uuid.NewV7()).String()
			now := time.Now().UTC()
			if err := s.CreateProject(t.Context(), domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
				t.Fatal(err)
			}
			batch := make([]domain.LogEntry, len(entries))
			for i, e := range entries {
				batch[i] = e.e
				batch[i].ProjectID = p
			}
			if _, err := s.CreateLogs(t.Context(), batch, domain.LogWrite{}); err != nil {
				t.Fatal(err)
			}
			for _, r := range ranges {
				for _, limit := range []int{1, 3, 100} {
					wantFacets, wantKeys := reference(r, limit)
					f := domain.LogFilter{ProjectID: p, Start: &r.start, End: &r.end}
					got, err := s.Facets(t.Context(), domain.FacetsQuery{LogFilter: f, Fields: fields, Targets: targets, Limit: limit, Now: now.UnixMilli()})
					if err != nil {
						t.Fatal(err)
					}
					for i := range got {
						if got[i].Values == nil {
							got[i].Values = []domain.FacetValue{}
						}
					}
					if !reflect.DeepEqual(got, wantFacets) {
						t.Errorf("range %v limit %d: facets\n%s\nwant\n%s", r, limit, show(got), show(wantFacets))
					}
					keys, err := s.Fields(t.Context(), domain.FieldsQuery{LogFilter: f, Limit: 1000, Now: now.UnixMilli()})
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(keys, wantKeys) {
						t.Errorf("range %v: fields %v, want %v", r, keys, wantKeys)
					}
				}
			}
		})
	}
}

func show(fs []domain.Facet) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "%s:", f.Field)
		for _, v := range f.Values {
			fmt.Fprintf(&b, " %s=%d", v.Value, v.Count)
		}
		fmt.Fprintf(&b, " other=%d missing=%d\n", f.Other, f.Missing)
	}
	return b.String()
}
