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

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// queryCorpus is the entries the query tests store, by name: every kind of field and attribute
// value the query language tells apart, keys with syntax characters and of other scripts, and
// numbers beyond float64's range.
func queryCorpus(p string) map[string]domain.LogEntry {
	s := func(v string) *string { return &v }
	e := func(level, msg, attrs string) domain.LogEntry {
		en := domain.LogEntry{ProjectID: p, Level: level, Message: msg}
		if attrs != "" {
			en.Attributes = []byte(attrs)
		}
		return en
	}
	c := map[string]domain.LogEntry{
		"e0": e("error", "Payment declined: card 739a4b5df5876246", `{"$.x[0]":"odd","a.b":"x","http.status":500,"ok":true,"svc":"cart"}`),
		"e1": e("info", "payment, declined!", `{"http.status":"500","ok":"true","svc":"cartography"}`),
		"e2": e("warn", "PAYMENT retry_later ÜNÏCÖDÉ", `{"big":1E400,"http.status":500.0,"n":null,"ok":false,"tiny":1e-400,"x\"y":"q"}`),
		"e3": e("debug", "nothing here", ""),
		"e4": e("info", "payments declined_x", `{"arr":[500],"http.status":404,"nested":{"svc":"cart"}}`),
		"e5": e("fatal", "ünïcödé word", `{"http.status":9007199254740993,"ключ.имя":"значение"}`),
		"e6": e("info", "", `{"huge":-1e131072,"long":0.`+strings.Repeat("0", 20000)+`1,"neg":-0,"svc":""}`),
	}
	e0 := c["e0"]
	e0.Subject, e0.UserID = s("checkout"), s("u1")
	e0.TraceID, e0.SpanID = s("4bf92f3577b34da6a3ce929d0e0e4736"), s("00f067aa0ba902b7")
	c["e0"] = e0
	return c
}

// queryCases are hand-built trees and the names of the entries each must select.
func queryCases() []struct {
	name string
	root domain.QueryNode
	want string
} {
	f := func(v float64) *float64 { return &v }
	b := func(v bool) *bool { return &v }
	attr := func(k string) domain.QueryField { return domain.QueryField{Name: k, Attribute: true} }
	field := func(k string) domain.QueryField { return domain.QueryField{Name: k} }
	words := func(text string, prefix bool) domain.QueryWords {
		return domain.QueryWords{Words: domain.Words(text), Prefix: prefix}
	}
	status500 := domain.QueryEquals{Field: attr("http.status"), Value: "500", Number: f(500)}
	return []struct {
		name string
		root domain.QueryNode
		want string
	}{
		{"phrase whatever separates", words("payment declined", false), "e0 e1"},
		{"word, not a longer word", words("declined", false), "e0 e1"},
		{"prefix", words("pay", true), "e0 e1 e2 e4"},
		{"phrase with a prefix", words("payment decl", true), "e0 e1"},
		{"word with underscore", words("retry_later", false), "e2"},
		{"unicode folded", words("ÜnÏcÖdÉ", false), "e2 e5"},
		{"request id", words("739A4B5DF5876246", false), "e0"},
		{"not a word", domain.QueryNot{Term: words("payment", false)}, "e3 e4 e5 e6"},
		{"number and string", status500, "e0 e1 e2"},
		{"not number", domain.QueryNot{Term: status500}, "e3 e4 e5 e6"},
		{"string exactly", domain.QueryEquals{Field: attr("svc"), Value: "cart"}, "e0"},
		{"string prefix", domain.QueryEquals{Field: attr("svc"), Value: "cart", Prefix: true}, "e0 e1"},
		{"empty string", domain.QueryEquals{Field: attr("svc"), Value: ""}, "e6"},
		{"empty prefix", domain.QueryEquals{Field: attr("svc"), Value: "", Prefix: true}, "e0 e1 e6"},
		{"empty field prefix", domain.QueryEquals{Field: field("subject"), Value: "", Prefix: true}, "e0"},
		{"boolean true", domain.QueryEquals{Field: attr("ok"), Value: "true", Bool: b(true)}, "e0 e1"},
		{"boolean false", domain.QueryEquals{Field: attr("ok"), Value: "false", Bool: b(false)}, "e2"},
		{"exists null", domain.QueryExists{Field: attr("n")}, "e2"},
		{"not exists", domain.QueryNot{Term: domain.QueryExists{Field: attr("n")}}, "e0 e1 e3 e4 e5 e6"},
		{"key with quote", domain.QueryExists{Field: attr(`x"y`)}, "e2"},
		{"key with path syntax", domain.QueryEquals{Field: attr("$.x[0]"), Value: "odd"}, "e0"},
		{"key with a dot", domain.QueryEquals{Field: attr("a.b"), Value: "x"}, "e0"},
		{"key in cyrillic", domain.QueryEquals{Field: attr("ключ.имя"), Value: "значение"}, "e5"},
		{"hostile key", domain.QueryExists{Field: attr("'; DROP TABLE logs; --")}, ""},
		{"range from", domain.QueryRange{Field: attr("http.status"), Min: f(400), MinInclusive: true}, "e0 e2 e4 e5"},
		{"range closed", domain.QueryRange{Field: attr("http.status"), Min: f(200), Max: f(499), MinInclusive: true, MaxInclusive: true}, "e4"},
		{"range exclusive", domain.QueryRange{Field: attr("http.status"), Min: f(404), Max: f(500)}, ""},
		{"range on a string", domain.QueryRange{Field: attr("svc"), Min: f(-1e300)}, ""},
		{"out of range number", domain.QueryRange{Field: attr("big"), Min: f(0)}, ""},
		{"out of range below", domain.QueryRange{Field: attr("huge"), Max: f(0)}, ""},
		{"not out of range", domain.QueryNot{Term: domain.QueryRange{Field: attr("big"), Min: f(0)}}, "e0 e1 e2 e3 e4 e5 e6"},
		{"underflow is zero", domain.QueryEquals{Field: attr("tiny"), Value: "0", Number: f(0)}, "e2"},
		{"long underflow is zero", domain.QueryRange{Field: attr("long"), Min: f(0), Max: f(0), MinInclusive: true, MaxInclusive: true}, "e6"},
		{"minus zero", domain.QueryEquals{Field: attr("neg"), Value: "0", Number: f(0)}, "e6"},
		{"float64 rounding", domain.QueryEquals{Field: attr("http.status"), Value: "9007199254740992", Number: f(9007199254740992)}, "e5"},
		{"level canonical", domain.QueryEquals{Field: field("level"), Value: "ERROR"}, "e0"},
		{"level synonym", domain.QueryEquals{Field: field("level"), Value: "WARNING"}, "e2"},
		{"level prefix", domain.QueryEquals{Field: field("level"), Value: "in", Prefix: true}, "e1 e4 e6"},
		{"subject", domain.QueryEquals{Field: field("subject"), Value: "checkout"}, "e0"},
		{"not subject", domain.QueryNot{Term: domain.QueryEquals{Field: field("subject"), Value: "checkout"}}, "e1 e2 e3 e4 e5 e6"},
		{"subject prefix", domain.QueryEquals{Field: field("subject"), Value: "check", Prefix: true}, "e0"},
		{"not user prefix", domain.QueryNot{Term: domain.QueryEquals{Field: field("user_id"), Value: "u", Prefix: true}}, "e1 e2 e3 e4 e5 e6"},
		{"exists subject", domain.QueryExists{Field: field("subject")}, "e0"},
		{"not exists span", domain.QueryNot{Term: domain.QueryExists{Field: field("span_id")}}, "e1 e2 e3 e4 e5 e6"},
		{"exists message", domain.QueryExists{Field: field("message")}, "e0 e1 e2 e3 e4 e5 e6"},
		{"trace upper case", domain.QueryEquals{Field: field("trace_id"), Value: "4BF92F3577B34DA6A3CE929D0E0E4736"}, "e0"},
		{"not trace", domain.QueryNot{Term: domain.QueryEquals{Field: field("trace_id"), Value: "4bf92f3577b34da6a3ce929d0e0e4736"}}, "e1 e2 e3 e4 e5 e6"},
		{"and or not", domain.QueryOr{Terms: []domain.QueryNode{
			domain.QueryAnd{Terms: []domain.QueryNode{words("pay", true), domain.QueryNot{Term: domain.QueryEquals{Field: field("level"), Value: "error"}}}},
			domain.QueryExists{Field: attr("n")},
		}}, "e1 e2 e4"},
		{"empty and", domain.QueryAnd{}, "e0 e1 e2 e3 e4 e5 e6"},
		{"empty or", domain.QueryOr{}, ""},
		{"not not", domain.QueryNot{Term: domain.QueryNot{Term: domain.QueryExists{Field: attr("svc")}}}, "e0 e1 e6"},
		{"hostile words", domain.QueryWords{Words: []string{`a"b`, "or", "near"}}, ""},
	}
}

// seedQueryCorpus stores the corpus in a new project (and one entry of another project that
// every tree would select) and returns the project and the ids by name.
func seedQueryCorpus(t *testing.T, s domain.Store) (string, map[string]string) {
	t.Helper()
	now := time.Now().UTC()
	p, other := tailProjects(t, s, "query", now)
	corpus := queryCorpus(p.ID)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range corpus {
			if !yield(n) {
				return
			}
		}
	})
	byName := map[string]string{}
	var batch []domain.LogEntry
	for i, n := range names {
		e := corpus[n]
		e.ID = uuid.Must(uuid.NewV7()).String()
		e.Time = now.UnixMilli() - int64(len(names)-i)
		byName[n] = e.ID
		batch = append(batch, e)
	}
	foreign := corpus["e0"]
	foreign.ID, foreign.ProjectID, foreign.Time = uuid.Must(uuid.NewV7()).String(), other.ID, now.UnixMilli()
	if _, err := s.CreateLogs(t.Context(), append(batch, foreign), domain.LogWrite{}); err != nil {
		t.Fatalf("CreateLogs: %v", err)
	}
	return p.ID, byName
}

func namesOf(byName map[string]string, ids []string) string {
	var out []string
	for n, id := range byName {
		if slices.Contains(ids, id) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func listIDs(t *testing.T, s domain.Store, f domain.LogFilter) []string {
	t.Helper()
	var out []string
	err := s.ListLogs(t.Context(), domain.LogQuery{LogFilter: f, Limit: 10_000, Now: time.Now().UnixMilli()}, func(p domain.Page) error {
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			out = append(out, e.ID)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ListLogs: %v", err)
	}
	return out
}

// TestQueryTrees renders every node type and the tricky cases of the query language's semantics
// on both stores: each hand-built tree lists exactly the entries named (the same on both), the
// tail's SQL reads exactly those, stats count as many, and a DELETE with the tree removes
// exactly what it lists.
func TestQueryTrees(t *testing.T) {
	for name, open := range map[string]func(*testing.T) domain.Store{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			p, byName := seedQueryCorpus(t, s)
			for _, c := range queryCases() {
				t.Run(c.name, func(t *testing.T) { checkTree(t, s, p, byName, c.root, c.want) })
			}
		})
	}
}

func checkTree(t *testing.T, s domain.Store, p string, byName map[string]string, root domain.QueryNode, want string) {
	t.Helper()
	c := struct{ name, want string }{t.Name(), want}
	f := domain.LogFilter{ProjectID: p, Parsed: domain.Query{Root: root}}
	if got := namesOf(byName, listIDs(t, s, f)); got != c.want {
		t.Errorf("%s: listed %q, want %q", c.name, got, c.want)
	}
	ts := s.(tailReader)
	tail, err := ts.ReadTail(t.Context(), domain.TailQuery{LogFilter: f, Limit: 100})
	if err != nil {
		t.Fatalf("%s: ReadTail: %v", c.name, err)
	}
	var tailIDs []string
	for _, e := range tail {
		tailIDs = append(tailIDs, e.ID)
	}
	if got := namesOf(byName, tailIDs); got != c.want {
		t.Errorf("%s: the tail read %q, want %q", c.name, got, c.want)
	}
	// Stats of whole minutes from a whole minute, which the rollup would answer without a
	// tree: counted from the entries, as many as listed.
	now := time.Now().UnixMilli()
	start, end := now-now%60_000-120_000, now+60_000
	counts, err := s.LogStats(t.Context(), domain.StatsQuery{LogFilter: domain.LogFilter{ProjectID: p, Parsed: f.Parsed, Start: &start, End: &end},
		Step: 60_000, By: domain.ByLevel, Now: now})
	if err != nil {
		t.Fatalf("%s: LogStats: %v", c.name, err)
	}
	var total int64
	for _, b := range counts {
		total += b.N
	}
	if want := len(strings.Fields(c.want)); total != int64(want) {
		t.Errorf("%s: stats counted %d, want %d", c.name, total, want)
	}
}

// TestQueryDelete: a DELETE with a tree removes exactly the entries the listing lists, on both
// stores, and the rest stay searchable (their words too).
func TestQueryDelete(t *testing.T) {
	for name, open := range map[string]func(*testing.T) domain.Store{"sqlite": openSQLite, "postgres": openPostgres} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			for _, c := range queryCases() {
				p, byName := seedQueryCorpus(t, s)
				f := domain.LogFilter{ProjectID: p, Parsed: domain.Query{Root: c.root}}
				listed := listIDs(t, s, f)
				n, err := s.DeleteLogs(t.Context(), f)
				if err != nil {
					t.Fatalf("%s: DeleteLogs: %v", c.name, err)
				}
				if int(n) != len(listed) {
					t.Errorf("%s: deleted %d, listed %d", c.name, n, len(listed))
				}
				rest := listIDs(t, s, domain.LogFilter{ProjectID: p})
				for _, id := range listed {
					if slices.Contains(rest, id) {
						t.Errorf("%s: %s listed but not deleted", c.name, namesOf(byName, []string{id}))
					}
				}
				if len(rest)+len(listed) != len(byName) {
					t.Errorf("%s: %d left + %d deleted, want %d", c.name, len(rest), len(listed), len(byName))
				}
				if left := listIDs(t, s, f); len(left) != 0 {
					t.Errorf("%s: the tree still lists %s after its delete", c.name, namesOf(byName, left))
				}
				if c.name == "number and string" {
					// What remains is found by its words; the deleted entries' words are gone.
					w := domain.LogFilter{ProjectID: p, Parsed: domain.Query{Root: domain.QueryWords{Words: []string{"pay"}, Prefix: true}}}
					if got := namesOf(byName, listIDs(t, s, w)); got != "e4" {
						t.Errorf("after the delete, pay* lists %q, want e4", got)
					}
				}
			}
		})
	}
}

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
		e := domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), Time: int64(rng.IntN(1000)), Level: pick([]string{"info", "warn", "error"}), Message: pick([]string{"m1", "m2", ""})}
		if rng.IntN(7) > 0 {
			s := pick(subjects) // "" among them: a subject that is empty, not missing
			e.Subject = &s
		}
		if len(attrs) > 0 || rng.IntN(2) == 0 {
			e.Attributes = b.Bytes()
		}
		entries[i] = entry{e, attrs}
	}
	// Alone in its range, so that it is the first row a statement reads: an empty message and
	// subject are values, not missing fields.
	empty := ""
	entries = append(entries, entry{domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), Time: 1500, Level: "info", Subject: &empty}, map[string]string{}})
	fields := []string{"level", "message", "subject", "user_id", "k1", "k2", "a.b", `q"x`, "$", "attributes.level", "missing"}
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
		case "message":
			s = &e.e.Message
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
	ranges := []ranged{{0, 999}, {100, 500}, {700, 700}, {1000, 1499}, {1500, 1500}} // {1000, 1499} holds no entry
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
			// The service counts (the default), the store groups (no memory to count in), and the
			// service gives up part-way through and the store groups.
			paths := []struct {
				name   string
				memory int64
			}{{"counted", 32 << 20}, {"grouped", 0}, {"grouped after counting", 2000}}
			for _, r := range ranges {
				for _, limit := range []int{1, 3, 100} {
					wantFacets, wantKeys := reference(r, limit)
					f := domain.LogFilter{ProjectID: p, Start: &r.start, End: &r.end}
					for _, path := range paths {
						sqlstore.SetFacetsMemory(s.(*sqlstore.Store), path.memory)
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
							t.Errorf("%s, range %v limit %d: facets\n%s\nwant\n%s", path.name, r, limit, show(got), show(wantFacets))
						}
						keys, err := s.Fields(t.Context(), domain.FieldsQuery{LogFilter: f, Limit: limit, Now: now.UnixMilli()})
						if err != nil {
							t.Fatal(err)
						}
						if want := wantKeys[:min(limit, len(wantKeys))]; !reflect.DeepEqual(keys, want) {
							t.Errorf("%s, range %v limit %d: fields %v, want %v", path.name, r, limit, keys, want)
						}
					}
				}
			}
			// Each of the entry's own fields alone, so that it is a statement's first column.
			r := ranged{1500, 1500}
			f := domain.LogFilter{ProjectID: p, Start: &r.start, End: &r.end}
			want, _ := reference(r, 3)
			for i, t0 := range targets {
				if t0.Attribute {
					continue
				}
				for _, path := range paths {
					sqlstore.SetFacetsMemory(s.(*sqlstore.Store), path.memory)
					got, err := s.Facets(t.Context(), domain.FacetsQuery{LogFilter: f, Fields: fields[i : i+1], Targets: targets[i : i+1], Limit: 3, Now: now.UnixMilli()})
					if err != nil {
						t.Fatal(err)
					}
					if got[0].Values == nil {
						got[0].Values = []domain.FacetValue{}
					}
					if !reflect.DeepEqual(got[0], want[i]) {
						t.Errorf("%s, %s alone: facets\n%s\nwant\n%s", path.name, fields[i], show(got), show(want[i:i+1]))
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
