package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"example.com/obsvc/domain"
)

// TestNDJSONArray: an NDJSON batch is the JSON array of its non-blank lines, byte for byte but
// for the '[', ']' and the commas that replace line ends, with the line of each entry.
func TestNDJSONArray(t *testing.T) {
	cases := []struct {
		body  string
		array string
		lines []int
	}{
		{"", "[]", []int{}},
		{"\n \n\t\r\n", "[\n \n\t\r\n]", []int{}},
		{`{"a":1}`, `[{"a":1}]`, []int{1}},
		{"{\"a\":1}\n", "[{\"a\":1}\n]", []int{1}},
		{"{\"a\":1}\n{\"b\":2}", "[{\"a\":1},{\"b\":2}]", []int{1, 2}},
		{"\n{\"a\":1}\r\n\r\n  \n{\"b\":[1,2]}\n\n", "[\n{\"a\":1}\r,\r\n  \n{\"b\":[1,2]}\n\n]", []int{2, 5}},
		{" {\"a\":1} \n[1]\n\"s\"\n", "[ {\"a\":1} ,[1],\"s\"\n]", []int{1, 2, 3}},
	}
	for _, c := range cases {
		array, lines, err := ndjsonArray(context.Background(), []byte(c.body), 10)
		if err != nil {
			t.Errorf("ndjsonArray(%q): %v", c.body, err)
			continue
		}
		if string(array) != c.array || !slices.Equal(lines, c.lines) {
			t.Errorf("ndjsonArray(%q) = %q, %v; want %q, %v", c.body, array, lines, c.array, c.lines)
		}
		if !json.Valid(array) {
			t.Errorf("ndjsonArray(%q) = %q: not JSON", c.body, array)
		}
	}
}

// TestNDJSONArrayRefuses: a line that is not exactly one JSON value in valid UTF-8 is a 400
// naming its entry (pointer index among non-blank lines) and its line; too many entries is a 413.
func TestNDJSONArrayRefuses(t *testing.T) {
	cases := []struct {
		name, body string
		kind       domain.Kind
		path       []string
		detail     string // what the detail starts with
	}{
		{"two values on one line", "{}\n\n{\"a\":1} {\"b\":2}\n", domain.KindInvalid, []string{"1"}, "line 3: the line is not valid JSON"},
		{"an object over two lines", "{}\n{\"a\":\n1}\n", domain.KindInvalid, []string{"1"}, "line 2: the line is not valid JSON"},
		{"not JSON", "{}\nnope\n", domain.KindInvalid, []string{"1"}, "line 2: the line is not valid JSON"},
		{"invalid UTF-8", "{}\n{}\r\n{\"message\":\"a\xffb\"}\n", domain.KindInvalid, []string{"2", "message"}, "line 3: must be valid UTF-8"},
		{"a name given twice is the checker's business", "{\"a\":1,\"a\":2}\n", 0, nil, ""},
		{"too many entries", strings.Repeat("{}\n\n", 11), domain.KindTooLarge, nil, ""},
	}
	for _, c := range cases {
		_, _, err := ndjsonArray(context.Background(), []byte(c.body), 10)
		if c.kind == 0 {
			if err != nil {
				t.Errorf("%s: %v, want none", c.name, err)
			}
			continue
		}
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != c.kind {
			t.Errorf("%s: %v, want kind %v", c.name, err, c.kind)
			continue
		}
		if c.path == nil {
			continue
		}
		if len(de.Fields) != 1 || !reflect.DeepEqual(de.Fields[0].Path, c.path) || !strings.HasPrefix(de.Fields[0].Detail, c.detail) {
			t.Errorf("%s: fields %+v, want one at %q starting %q", c.name, de.Fields, c.path, c.detail)
		}
	}
}

// TestNDJSONAnnotate: the problems of an NDJSON batch's entries name their lines, others are
// left as they are, and the error annotated is not changed.
func TestNDJSONAnnotate(t *testing.T) {
	in := &domain.Error{Kind: domain.KindInvalid, Msg: "invalid log entries", Fields: []domain.FieldError{
		{Path: []string{"0", "time"}, Detail: "must be an integer"},
		{Path: []string{"1"}, Detail: "must be an object"},
		{Path: []string{}, Detail: "the whole body"},
		{Param: "Idempotency-Key", Detail: "a parameter"},
	}}
	out := ndjsonLines{3, 7}.annotate(in)
	var de *domain.Error
	if !errors.As(out, &de) {
		t.Fatalf("annotate = %T", out)
	}
	want := []string{"line 3: must be an integer", "line 7: must be an object", "the whole body", "a parameter"}
	for i, f := range de.Fields {
		if f.Detail != want[i] {
			t.Errorf("field %d: %q, want %q", i, f.Detail, want[i])
		}
	}
	if in.Fields[0].Detail != "must be an integer" {
		t.Errorf("annotate changed its input: %q", in.Fields[0].Detail)
	}
	if (ndjsonLines{1}).annotate(nil) != nil {
		t.Error("annotate(nil) is not nil")
	}
}
