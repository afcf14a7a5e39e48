package domain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// attrsOf is a JSON object of n keys k000, k001, ... with value v (JSON text).
func attrsOf(n int, v string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%03d":%s`, i, v)
	}
	return b.String() + "}"
}

// nested is a value nested in levels containers in all, the outermost an object.
func nested(levels int) string {
	return strings.Repeat(`{"a":`, 1) + strings.Repeat("[", levels-1) + "1" + strings.Repeat("]", levels-1) + "}"
}

// TestAttributeRules states every rule of attributes, trace_id and span_id at its boundary and
// one past it: what is accepted is stored in canonical form, what is not names its pointer and
// reaches no store.
func TestAttributeRules(t *testing.T) {
	l := DefaultLimits()
	// An object whose canonical encoding is exactly n bytes: {"k":"xxx..."} is 8 bytes plus the string.
	ofBytes := func(n int) string { return `{"k":"` + strings.Repeat("x", n-8) + `"}` }
	cases := []struct {
		name  string
		attrs string
		trace *string
		span  *string
		bad   []string // pointers named; nil = accepted
	}{
		{"empty object", `{}`, nil, nil, nil},
		{"every value kind", `{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"a":[1,"2",[3]],"o":{"p":{"q":1}}}`, nil, nil, nil},
		{"128 keys", attrsOf(l.MaxAttributes, "1"), nil, nil, nil},
		{"129 keys", attrsOf(l.MaxAttributes+1, "1"), nil, nil, []string{"/0/attributes"}},
		{"a key of 256 characters", `{"` + strings.Repeat("𝄞", 256) + `":1}`, nil, nil, nil},
		{"a key of 257 characters", `{"` + strings.Repeat("k", 257) + `":1}`, nil, nil, []string{"/0/attributes"}},
		{"an empty key", `{"":1}`, nil, nil, []string{"/0/attributes"}},
		{"64 KiB encoded", ofBytes(l.MaxAttributesBytes), nil, nil, nil},
		{"64 KiB and one byte encoded", ofBytes(l.MaxAttributesBytes + 1), nil, nil, []string{"/0/attributes"}},
		{"nested 32 levels", nested(l.MaxAttributesDepth), nil, nil, nil},
		{"nested 33 levels", nested(l.MaxAttributesDepth + 1), nil, nil, []string{"/0/attributes"}},
		{"an array", `[1]`, nil, nil, []string{"/0/attributes"}},
		{"a string", `"x"`, nil, nil, []string{"/0/attributes"}},
		{"null", `null`, nil, nil, []string{"/0/attributes"}},
		{"not JSON", `{"a":}`, nil, nil, []string{"/0/attributes"}},
		{"two values", `{} {}`, nil, nil, []string{"/0/attributes"}},
		{"NUL in a value", `{"a":"x\u0000y"}`, nil, nil, []string{"/0/attributes"}},
		{"NUL in a nested key", `{"a":[{"b\u0000":1}]}`, nil, nil, []string{"/0/attributes"}},
		{"NUL in a key", `{"a\u0000":1}`, nil, nil, []string{"/0/attributes"}},
		{"invalid UTF-8 in a value", "{\"a\":\"\xff\"}", nil, nil, []string{"/0/attributes"}},
		{"trace id", "", ptr("4bf92f3577b34da6a3ce929d0e0e4736"), nil, nil},
		{"trace id upper case", "", ptr("4BF92F3577B34DA6A3CE929D0E0E4736"), nil, nil},
		{"trace id of 31 digits", "", ptr("4bf92f3577b34da6a3ce929d0e0e473"), nil, []string{"/0/trace_id"}},
		{"trace id of 33 digits", "", ptr("4bf92f3577b34da6a3ce929d0e0e47360"), nil, []string{"/0/trace_id"}},
		{"trace id all zero", "", ptr(strings.Repeat("0", 32)), nil, []string{"/0/trace_id"}},
		{"trace id not hex", "", ptr("4bf92f3577b34da6a3ce929d0e0e473g"), nil, []string{"/0/trace_id"}},
		{"trace id empty", "", ptr(""), nil, []string{"/0/trace_id"}},
		{"span id", "", nil, ptr("00f067aa0ba902b7"), nil},
		{"span id upper case", "", nil, ptr("00F067AA0BA902B7"), nil},
		{"span id of 15 digits", "", nil, ptr("00f067aa0ba902b"), []string{"/0/span_id"}},
		{"span id of 17 digits", "", nil, ptr("00f067aa0ba902b70"), []string{"/0/span_id"}},
		{"span id all zero", "", nil, ptr(strings.Repeat("0", 16)), []string{"/0/span_id"}},
		{"span id with a dash", "", nil, ptr("00f067aa-ba902b7"), []string{"/0/span_id"}},
		{"every problem named", `[]`, ptr("x"), ptr("y"), []string{"/0/trace_id", "/0/span_id", "/0/attributes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := LogInput{ProjectID: testID(), Message: ptr("m"), TraceID: c.trace, SpanID: c.span}
			if c.attrs != "" {
				in.Attributes = json.RawMessage(c.attrs)
			}
			f := newFake()
			_, err := NewService(f, opts(Options{})).CreateLogs(admin(t), []LogInput{in}, "")
			if c.bad == nil {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			var got []string
			if e, ok := err.(*Error); ok && e.Kind == KindInvalid {
				for _, fe := range e.Fields {
					got = append(got, "/"+strings.Join(fe.Path, "/"))
				}
			}
			if !slices.Equal(got, c.bad) {
				t.Errorf("err = %v; want KindInvalid on %q", err, c.bad)
			}
			if len(f.inserted) != 0 {
				t.Errorf("a rejected batch reached the store")
			}
			// The transport's early check states the same rule.
			for _, p := range c.bad {
				field := strings.TrimPrefix(p, "/0/")
				value := c.attrs
				switch field {
				case "trace_id":
					value = *c.trace
				case "span_id":
					value = *c.span
				}
				if DefaultLimits().EntryFieldProblem(field, value) == "" {
					t.Errorf("EntryFieldProblem(%q) accepts what the service refuses", field)
				}
			}
		})
	}
}

// TestAttributesAreStoredCanonical: stores get the object compact with its keys sorted, a key
// sent twice once (the last value), numbers exactly as sent, keys verbatim; ids lower case.
func TestAttributesAreStoredCanonical(t *testing.T) {
	f := newFake()
	in := LogInput{ProjectID: testID(), Message: ptr("m"),
		Attributes: json.RawMessage(` { "z" : 1, "http.method":"GET", "big":12345678901234567890, "f":1.50, "e":1E400, "h":"<&>", "z":2, "ключ.и":[ true , null ] } `),
		TraceID:    ptr("4BF92F3577B34DA6A3CE929D0E0E4736"), SpanID: ptr("00F067AA0BA902B7")}
	if _, err := NewService(f, opts(Options{})).CreateLogs(admin(t), []LogInput{in}, ""); err != nil {
		t.Fatal(err)
	}
	e := f.inserted[0]
	want := `{"big":12345678901234567890,"e":1E400,"f":1.50,"h":"<&>","http.method":"GET","z":2,"ключ.и":[true,null]}`
	if string(e.Attributes) != want {
		t.Errorf("attributes = %s\nwant         %s", e.Attributes, want)
	}
	if *e.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || *e.SpanID != "00f067aa0ba902b7" {
		t.Errorf("ids = %s %s, want lower case", *e.TraceID, *e.SpanID)
	}
	if f.inserted[0].Attributes == nil || !json.Valid(e.Attributes) {
		t.Errorf("attributes not valid JSON: %s", e.Attributes)
	}
}

// TestTraceFilterRules: a trace_id filter follows the field's rule, named as the parameter, and
// reaches the store in lower case.
func TestTraceFilterRules(t *testing.T) {
	for _, c := range []struct {
		name, trace string
		ok          bool
	}{
		{"lower case", "4bf92f3577b34da6a3ce929d0e0e4736", true},
		{"upper case", "4BF92F3577B34DA6A3CE929D0E0E4736", true},
		{"31 digits", "4bf92f3577b34da6a3ce929d0e0e473", false},
		{"33 digits", "4bf92f3577b34da6a3ce929d0e0e47360", false},
		{"all zero", strings.Repeat("0", 32), false},
		{"not hex", strings.Repeat("z", 32), false},
		{"NUL", strings.Repeat("\x00", 32), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := DefaultLimits()
			got, err := l.validateFilter(LogFilter{ProjectID: testID(), TraceID: ptr(c.trace)})
			if !c.ok {
				if e, ok := err.(*Error); !ok || e.Kind != KindInvalid || len(e.Fields) != 1 || e.Fields[0].Param != "trace_id" {
					t.Fatalf("err = %v, want KindInvalid on trace_id", err)
				}
				return
			}
			if err != nil || *got.TraceID != strings.ToLower(c.trace) {
				t.Fatalf("filter = %v, %v; want the trace id in lower case", got.TraceID, err)
			}
		})
	}
}

// TestFingerprintOfBatchesWithoutTheNewFieldsIsUnchanged: a batch sent before attributes and
// trace ids existed keeps its fingerprint, so its retry after the upgrade still replays; each
// new field changes it.
func TestFingerprintOfBatchesWithoutTheNewFieldsIsUnchanged(t *testing.T) {
	in := []LogInput{{ProjectID: "p", Message: ptr("m"), Level: ptr("l"), Time: ptr[int64](7), Subject: ptr("s"), UserID: ptr("u")}, {ProjectID: "q", Message: ptr("n")}}
	const before = "5ce7c92ceee1411516b2ffda69dfd50d0b844a573e5356d39d2ffa0d13ec8b8f" // the previous release's
	if got := fingerprint(in); got != before {
		t.Fatalf("fingerprint = %s, want the previous release's %s", got, before)
	}
	seen := map[string]bool{before: true}
	for _, f := range []func(*LogInput){
		func(e *LogInput) { e.Attributes = json.RawMessage(`{}`) },
		func(e *LogInput) { e.Attributes = json.RawMessage(`{"a":1}`) },
		func(e *LogInput) { e.TraceID = ptr("4bf92f3577b34da6a3ce929d0e0e4736") },
		func(e *LogInput) { e.SpanID = ptr("00f067aa0ba902b7") },
		func(e *LogInput) { e.SeverityText = ptr("WARNING") },
		func(e *LogInput) { e.SeverityText = ptr("Warning") },
		func(e *LogInput) { e.SeverityText = ptr("WARNING"); e.SpanID = ptr("00f067aa0ba902b7") },
	} {
		changed := slices.Clone(in)
		f(&changed[1])
		fp := fingerprint(changed)
		if seen[fp] {
			t.Errorf("two different batches share the fingerprint %s", fp)
		}
		seen[fp] = true
	}
}
