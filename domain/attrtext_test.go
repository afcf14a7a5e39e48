package domain

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"unicode/utf8"
)

func TestAttributeText(t *testing.T) {
	cases := []struct {
		attrs, key, want string
		found, ok        bool
	}{
		{`{"a":1,"b":"x"}`, "a", `1`, true, true},
		{`{"a":1,"b":"x"}`, "b", `"x"`, true, true},
		{`{"a":1,"b":"x"}`, "c", ``, false, true},
		{`{"n":1e3,"z":-0.50}`, "n", `1e3`, true, true},
		{`{"n":1e3,"z":-0.50}`, "z", `-0.50`, true, true},
		{`{"t":true,"f":false,"u":null}`, "u", `null`, true, true},
		{`{"t":true,"f":false,"u":null}`, "f", `false`, true, true},
		// Containers come back whole, with whatever they hold, keys of the same name included.
		{`{"a":{"b":{"b":1},"c":[1,"]}"]},"b":2}`, "a", `{"b":{"b":1},"c":[1,"]}"]}`, true, true},
		{`{"a":{"b":{"b":1},"c":[1,"]}"]},"b":2}`, "b", `2`, true, true},
		{`{"a":[[],{},"\""],"b":[]}`, "b", `[]`, true, true},
		// Strings keep their escapes; a key written with escapes is compared decoded.
		{`{"s":"a\"b\\","t":1}`, "t", `1`, true, true},
		{`{"s":"a\"b\\","t":1}`, "s", `"a\"b\\"`, true, true},
		{`{"k\"q":1,"k\u00e9":2}`, `k"q`, `1`, true, true},
		{`{"k\"q":1,"k\u00e9":2}`, "ké", `2`, true, true},
		{`{"k\"q":1}`, `k\"q`, ``, false, true},
		// Keys are compared whole, bytes and all.
		{`{"service.name":"cart","service":"x"}`, "service", `"x"`, true, true},
		{`{"é":1}`, "é", `1`, true, true},
		{`{"é":1}`, "e", ``, false, true},
		// No attributes.
		{``, "a", ``, false, true},
		{`null`, "a", ``, false, true},
		{`{}`, "a", ``, false, true},
		// Not the compact form, or not an object: the caller asks the store.
		{`{ "a":1}`, "a", ``, false, false},
		{`{"a": 1}`, "a", ``, false, false},
		{`{"a":1 }`, "a", ``, false, false},
		{`{"a":1,"b":2} `, "c", ``, false, false},
		{`{}x`, "a", ``, false, false},
		{`[1]`, "a", ``, false, false},
		{`{"a":1`, "a", ``, false, false},
		{`{`, "a", ``, false, false},
		{`{"a":1}}`, "b", ``, false, false},
		{`{"a":}`, "a", ``, false, false},
		{`{"a"1}`, "a", ``, false, false},
		{`{"a":"x`, "a", ``, false, false},
		{`{"a":[1}`, "a", ``, false, false},
		{`{"a":1,}`, "b", ``, false, false},
		{`{"a":1;"b":2}`, "b", ``, false, false},
	}
	for _, c := range cases {
		v, found, ok := AttributeText([]byte(c.attrs), c.key)
		if string(v) != c.want || found != c.found || ok != c.ok {
			t.Errorf("AttributeText(%s, %q) = %q, %v, %v; want %q, %v, %v", c.attrs, c.key, v, found, ok, c.want, c.found, c.ok)
		}
	}
}

func TestAttributeKeys(t *testing.T) {
	cases := []struct {
		attrs string
		want  []string
		ok    bool
	}{
		{`{"a":1,"b":{"c":2},"é":[]}`, []string{"a", "b", "é"}, true},
		{`{"k\"q":1,"k\u00e9":2,"x\\":3}`, []string{`k"q`, "ké", `x\`}, true},
		{`{}`, nil, true},
		{``, nil, true},
		{`null`, nil, true},
		{`{"a":1, "b":2}`, []string{"a"}, false},
		{`{"a":1`, nil, false},
		{`[1]`, nil, false},
	}
	for _, c := range cases {
		var got []string
		ok := AttributeKeys([]byte(c.attrs), func(k []byte) { got = append(got, string(k)) })
		if ok != c.ok || ok && !slices.Equal(got, c.want) {
			t.Errorf("AttributeKeys(%s) = %q, %v; want %q, %v", c.attrs, got, ok, c.want, c.ok)
		}
	}
}

// FuzzAttributeText: for attributes as canonicalAttributes stores them, every member's text is
// the one encoding/json finds, and a key not there is not found; for any other input the scan
// never panics and, when it answers, answers as encoding/json does.
func FuzzAttributeText(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":"x"}`, `{"a":{"b":[1,{"c":"]"}]},"b":"\"\\"}`, `{"k\u2028":1e-7,"é":true}`,
		`{"a": 1}`, `{}`, `null`, `[{"a":1}]`, `{"a":"\ud800"}`,
	} {
		f.Add([]byte(s), "a")
	}
	l := DefaultLimits()
	f.Fuzz(func(t *testing.T, raw []byte, key string) {
		if v, found, ok := AttributeText(raw, key); ok {
			// An answer holds for what encoding/json reads from the same text, when that is valid
			// UTF-8 (encoding/json replaces what is not) and an object without repeated keys (the
			// form stores keep has neither).
			var m map[string]json.RawMessage
			if utf8.Valid(raw) && json.Unmarshal(raw, &m) == nil && m != nil && !hasRepeatedKey(raw) {
				want, has := m[key]
				if found != has || found && !bytes.Equal(v, want) {
					t.Fatalf("AttributeText(%s, %q) = %s, %v; encoding/json: %s, %v", raw, key, v, found, want, has)
				}
				var keys []string
				if AttributeKeys(raw, func(k []byte) { keys = append(keys, string(k)) }) {
					slices.Sort(keys)
					if !slices.Equal(keys, slices.Sorted(maps.Keys(m))) {
						t.Fatalf("AttributeKeys(%s) = %q; encoding/json: %q", raw, keys, slices.Sorted(maps.Keys(m)))
					}
				}
			}
		}
		stored, problem := l.canonicalAttributes(raw, nil)
		if problem != "" {
			return
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(stored, &m); err != nil {
			t.Fatalf("stored attributes %s: %v", stored, err)
		}
		var keys []string
		if !AttributeKeys(stored, func(k []byte) { keys = append(keys, string(k)) }) || !slices.Equal(keys, slices.Sorted(maps.Keys(m))) {
			t.Fatalf("AttributeKeys(%s) = %q; want %q", stored, keys, slices.Sorted(maps.Keys(m)))
		}
		for k, want := range withKey(m, key) {
			v, found, ok := AttributeText(stored, k)
			if !ok || found != (want != nil) || !bytes.Equal(v, want) {
				t.Fatalf("AttributeText(%s, %q) = %s, %v, %v; want %s", stored, k, v, found, ok, want)
			}
		}
	})
}

// withKey is m's members and key, nil when m has no such member.
func withKey(m map[string]json.RawMessage, key string) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	if _, ok := out[key]; !ok {
		out[key] = nil
	}
	return out
}

// hasRepeatedKey reports whether the JSON object text raw names a top-level key twice.
func hasRepeatedKey(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		k, _ := tok.(string)
		if seen[k] {
			return true
		}
		seen[k] = true
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
