package esbulk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"example.com/obsvc/domain"
)

// referenceFlatten is the mapping's rule written the plain way, as the reader it replaced did:
// decode into a map (a name sent twice keeps its last value), then walk each object's members
// in sorted order, decoding each nested object in turn, a later path overwriting an earlier.
func referenceFlatten(doc []byte) (map[string]json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil || obj == nil {
		return nil, false
	}
	var walk func(prefix string, obj map[string]json.RawMessage, out map[string]json.RawMessage) error
	walk = func(prefix string, obj map[string]json.RawMessage, out map[string]json.RawMessage) error {
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			if v := obj[k]; len(v) > 0 && v[0] == '{' {
				var child map[string]json.RawMessage
				if err := json.Unmarshal(v, &child); err != nil {
					return err
				}
				if len(child) > 0 {
					if err := walk(key, child, out); err != nil {
						return err
					}
					continue
				}
			}
			out[key] = obj[k]
		}
		return nil
	}
	out := map[string]json.RawMessage{}
	if walk("", obj, out) != nil {
		return nil, false
	}
	return out, true
}

func sameRaw(a, b json.RawMessage) bool { return bytes.Equal(a, b) }

// sameFlat compares m.flatten with referenceFlatten on doc, which must be valid UTF-8 without
// lone surrogate escapes (toInput refuses those before it flattens). m is shared by the
// documents of a test, as a request's documents share it.
func sameFlat(t *testing.T, m *mapper, doc []byte) {
	t.Helper()
	got, ok := m.flatten(doc)
	want, wantOK := referenceFlatten(doc)
	if ok != wantOK {
		t.Fatalf("%q: ok %v, the reference %v", doc, ok, wantOK)
	}
	if !maps.EqualFunc(got, want, sameRaw) {
		t.Fatalf("%q:\n got  %q\n want %q", doc, got, want)
	}
	if !ok {
		return
	}
	// The attributes written from it are one JSON object of the same members.
	var back map[string]json.RawMessage
	if err := json.Unmarshal(encodeFlat(got), &back); err != nil {
		t.Fatalf("%q: encodeFlat wrote no object: %v: %s", doc, err, encodeFlat(got))
	}
	if !maps.EqualFunc(back, want, sameRaw) {
		t.Fatalf("%q: encodeFlat read back %q, want %q", doc, back, want)
	}
}

func TestFlattenAsTheReference(t *testing.T) {
	m := newMapper(domain.DefaultLimits())
	for _, doc := range []string{
		`{}`, `{ }`, `null`, `[]`, `"x"`, `1`, `{"a":1} {}`, `{"a":1}x`, `{"a":1`, `{"a":}`, `{"a" 1}`,
		`{"a":1,}`, `{,}`, `{"a":{"b":1},"a.b":2}`, `{"a.b":2,"a":{"b":1}}`,
		`{"a":{"x":1},"a":{"y":2}}`, `{"a":{"x":1},"a":3}`, `{"a":3,"a":{"x":1}}`,
		`{"a":{},"b":{ "c" : { } }}`, `{"a":[1, {"b" : 2}], "c" : "d" }`, " \t{\"a\":1}\n ",
		`{"\u0061":1,"a":2}`, `{"a\"b":{"c\\d":"e"}}`, `{"":{"":1}}`, `{"a":{"":1},"a.":2}`,
		`{"n":-0.5e+10,"t":true,"f":false,"z":null}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`,
		`{"x":{"y":{"z":{"w":[[[]]]}}}}`, `{"é":{"ü":"ß"}}`, `{"a":"\ud83d\ude00"}`,
		strings.Repeat(`{"a":`, 200) + `1` + strings.Repeat(`}`, 200),
		strings.Repeat(`{"a":`, 10001) + `1` + strings.Repeat(`}`, 10001),
	} {
		sameFlat(t, m, []byte(doc))
	}
}

// TestFlattenRandom holds the mapper's flatten to the reference on random documents made to collide:
// few names, dotted names, repeats, nesting, empty objects, odd spacing.
func TestFlattenRandom(t *testing.T) {
	m := newMapper(domain.DefaultLimits())
	r := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "a.b", "b.a", "a.a", "", ".", "a.", "é", `q"`}
	space := func() string { return []string{"", "", " ", "\n\t "}[r.IntN(4)] }
	var value func(depth int) string
	value = func(depth int) string {
		switch n := r.IntN(9); {
		case n < 4 && depth < 4:
			var b strings.Builder
			b.WriteString("{" + space())
			for i := range r.IntN(4) {
				if i > 0 {
					b.WriteString("," + space())
				}
				k, _ := json.Marshal(names[r.IntN(len(names))])
				b.WriteString(string(k) + space() + ":" + space() + value(depth+1) + space())
			}
			b.WriteString("}")
			return b.String()
		case n == 4:
			return "[" + space() + "1," + space() + `{"a" : 2}` + "]"
		case n == 5:
			return fmt.Sprint(r.IntN(1000))
		case n == 6:
			return `null`
		default:
			return `"s` + fmt.Sprint(r.IntN(10)) + `"`
		}
	}
	for range 5000 {
		doc := space() + value(0) + space()
		if !utf8.ValidString(doc) {
			t.Fatalf("the generator wrote invalid UTF-8: %q", doc)
		}
		sameFlat(t, m, []byte(doc))
	}
}

// FuzzFlatten: on any valid UTF-8 without lone surrogate escapes, the mapper's flatten answers
// as the reference does; on any other input it refuses.
func FuzzFlatten(f *testing.F) {
	for _, seed := range []string{"{\"a\":\"\xff\"}", `{"a":["\ud800"]}`, `{"a\udc00":1}`, `{"a":{"b":"\ud83d\ude00"}}`, `{"a":{"b":1},"a.b":2}`, `{"a":{"x":1},"a":{"y":2}}`, `{"a":{}}`, `[1]`, `{"a":1} {}`} {
		f.Add([]byte(seed))
	}
	m := newMapper(domain.DefaultLimits())
	f.Fuzz(func(t *testing.T, doc []byte) {
		if !utf8.Valid(doc) || loneSurrogate(doc) {
			// toInput names these problems only once flatten has refused the document.
			if _, ok := m.flatten(doc); ok {
				t.Fatalf("%q: flatten took a document that is not valid UTF-8 or holds a lone surrogate", doc)
			}
			return
		}
		sameFlat(t, m, doc)
	})
}

// BenchmarkToInput maps a document as a shipper writes it (ECS names, nested objects), with
// and without attributes left over.
func BenchmarkToInput(b *testing.B) {
	m := newMapper(domain.DefaultLimits())
	for _, c := range []struct{ name, doc string }{
		{"fields", `{"@timestamp":"2026-01-02T03:04:05.678Z","log":{"level":"warn"},"message":"GET /api/orders/18342 answered 200 in 12 ms for request 739a4b5df5876246","service":{"name":"checkout"},"user":{"id":"u-1234"}}`},
		{"attributes", `{"@timestamp":"2026-01-02T03:04:05.678Z","log":{"level":"warn","logger":"http"},"message":"GET /api/orders/18342 answered 200","service":{"name":"checkout"},"host":{"name":"web-3"},"http":{"request":{"method":"GET"},"response":{"status_code":200}},"url":{"path":"/api/orders/18342"},"labels":{"env":"prod","zone":"b"}}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			doc := []byte(c.doc)
			b.ReportAllocs()
			for b.Loop() {
				if _, problem := m.toInput(doc); problem != "" {
					b.Fatal(problem)
				}
			}
		})
	}
}
