package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

func TestCountElements(t *testing.T) {
	cases := []struct {
		body    string
		n       int
		isArray bool
	}{
		{`[]`, 0, true},
		{` [ ] `, 0, true},
		{`[{}]`, 1, true},
		{`[{},{}]`, 2, true},
		{"\n[ {\"a\":[1,2,{\"b\":\",]\"}]} , \"x,\\\",\" ,3,null]", 4, true},
		{`[[1,2],[3]]`, 2, true},
		{`["a\\",2,"\\\"]",3]`, 4, true},
		{`{"a":[1,2]}`, 0, false},
		{`"[1,2]"`, 0, false},
		{``, 0, false},
	}
	for _, c := range cases {
		n, isArray := countElements([]byte(c.body))
		if n != c.n || isArray != c.isArray {
			t.Errorf("countElements(%q) = %d, %v; want %d, %v", c.body, n, isArray, c.n, c.isArray)
		}
	}
}

func TestLogsCheckerStopsWhenTimeIsUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := logsChecker{limits: domain.DefaultLimits()}
	_, err := c.check(ctx, []byte(`[{},{}]`))
	if domain.KindOf(err) != domain.KindUnavailable || !errors.Is(err, context.Canceled) {
		t.Fatalf("check after the deadline = %v, want KindUnavailable wrapping the context's error", err)
	}
}

func TestValidationErrorIsCapped(t *testing.T) {
	var many openapi3.MultiError
	for range 500 {
		many = append(many, &openapi3.SchemaError{Reason: "bad"})
	}
	err := validationError(many, 100)
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("validationError = %T, want *domain.Error", err)
	}
	if len(de.Fields) != 100 || !strings.Contains(de.Msg, "400 more problems not listed") {
		t.Fatalf("%d fields, message %q; want 100 and the count of the rest", len(de.Fields), de.Msg)
	}
}

// BenchmarkCountElements is the cost the batch limit adds to every POST /logs: one byte scan.
func BenchmarkCountElements(b *testing.B) {
	entry := `{"project_id":"01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f","message":"` + strings.Repeat("m", 1000) + `","level":"info"},`
	body := []byte("[" + strings.TrimSuffix(strings.Repeat(entry, 10_000), ",") + "]")
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if n, _ := countElements(body); n != 10_000 {
			b.Fatalf("counted %d", n)
		}
	}
}

// FuzzCountElements: on any valid JSON array the scan counts what the decoder decodes.
func FuzzCountElements(f *testing.F) {
	for _, s := range []string{`[]`, `[{}]`, `[1,"a,b",[2,3],{"k":"\"]"}]`, `["\\",null]`, `{"a":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var raw []json.RawMessage
		if json.Unmarshal([]byte(s), &raw) != nil || raw == nil {
			return
		}
		if n, isArray := countElements([]byte(s)); !isArray || n != len(raw) {
			t.Fatalf("countElements(%q) = %d, %v; the decoder finds %d", s, n, isArray, len(raw))
		}
	})
}

// The batch check decodes is the one the handler stores: it must be what the generated decoder
// would have made of the same well-shaped body.
func TestLogsCheckerDecodesAsTheGeneratedDecoder(t *testing.T) {
	c := logsChecker{limits: domain.DefaultLimits()}
	for _, body := range []string{
		`[]`,
		`[{"project_id":"p","message":"m"}]`,
		`[{"project_id":"p","message":""}]`,
		`[{"project_id":"p","message":"tab\tquote\" \u00e9 \ud83d\ude00 slash\/","level":"warn","subject":"s","user_id":"u",` +
			`"time":-12,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","attributes":{"a":[1,{"b":null}],"n":12345678901234567890}}]`,
		`[{"project_id":"p","message":"é ünïcode 😀"},{"project_id":"q","message":"m","time":0,"attributes":{}}]`,
	} {
		got, err := c.check(context.Background(), []byte(body))
		if err != nil {
			t.Errorf("check(%s) = %v", body, err)
			continue
		}
		var want rest.CreateLogsJSONRequestBody
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatalf("generated type: %v", err)
		}
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Errorf("check(%s) decoded\n%s\nthe generated decoder\n%s", body, gj, wj)
		}
	}
}

// A batch over decodeOnceMax is only checked; the generated decoder decodes it.
func TestLogsCheckerLeavesLargeBatchesToTheGeneratedDecoder(t *testing.T) {
	c := logsChecker{limits: domain.DefaultLimits()}
	body := "[" + strings.Repeat(`{"project_id":"p","message":"m"},`, decodeOnceMax) + `{"project_id":"p","message":"m"}]`
	batch, err := c.check(context.Background(), []byte(body))
	if err != nil || batch != nil {
		t.Fatalf("check of %d entries = %d entries, %v; want nil, nil", decodeOnceMax+1, len(batch), err)
	}
	bad := "[" + strings.Repeat(`{"project_id":"p","message":"m"},`, decodeOnceMax) + `{"project_id":"p","message":7}]`
	if _, err := c.check(context.Background(), []byte(bad)); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("check of a large bad batch = %v, want KindInvalid", err)
	}
}

// What encoding/json would alter or drop is refused, naming its pointer, before any decode:
// invalid UTF-8, a contract field given twice or in another case.
func TestLogsCheckerRefusesWhatTheDecoderWouldAlter(t *testing.T) {
	c := logsChecker{limits: domain.DefaultLimits()}
	for _, tc := range []struct{ body, pointer string }{
		{"[{\"project_id\":\"p\",\"message\":\"bad utf-8 \xff\xfe\"}]", "/0/message"},
		{`[{"project_id":"p","message":"a lone \ud800 surrogate"}]`, "/0/message"},
		{"[{\"project_id\":\"p\",\"message\":\"m\",\"attributes\":{\"k\":[1,\"\xc3\x28\"]}}]", "/0/attributes/k/1"},
		{"[{\"project_id\":\"p\",\"message\":\"m\",\"extra\":\"\xff\"}]", "/0/extra"},
		{`[{"project_id":"p","message":"m","Message":"case variant"}]`, "/0/Message"},
		{`[{"project_id":"p","message":"m","LEVEL":"error"}]`, "/0/LEVEL"},
		{`[{"project_id":"p","message":"first","message":"second"}]`, "/0/message"},
		{`[{"project_id":"p","message":"m"},{"project_id":"p","message":"m","x":1,"x":2}]`, "/1/x"},
		{`[{"project_id":"p","message":"m","\u006cevel":"error","level":"info"}]`, "/0/level"},
	} {
		_, err := c.check(context.Background(), []byte(tc.body))
		var de *domain.Error
		if !errors.As(err, &de) || de.Kind != domain.KindInvalid || len(de.Fields) == 0 {
			t.Errorf("check(%q) = %v, want KindInvalid naming %s", tc.body, err, tc.pointer)
			continue
		}
		if got := jsonPointer(de.Fields[0].Path); got != tc.pointer {
			t.Errorf("check(%q) names %q, want %q (%v)", tc.body, got, tc.pointer, err)
		}
	}
}

// Members the contract does not name are merged into attributes, for small and large batches;
// a clash with a key of attributes names both pointers.
func TestLogsCheckerMergesUnknownMembersIntoAttributes(t *testing.T) {
	c := logsChecker{limits: domain.DefaultLimits()}
	for _, n := range []int{1, decodeOnceMax + 1} {
		body := "[" + strings.Repeat(`{"project_id":"p","message":"m"},`, n-1) +
			`{"project_id":"p","message":"m","region":"eu","n":{"a":[1,2]},"attributes":{"k":true}}]`
		batch, err := c.check(context.Background(), []byte(body))
		if err != nil || len(batch) != n {
			t.Fatalf("%d entries: %d, %v", n, len(batch), err)
		}
		var got map[string]any
		if err := json.Unmarshal(batch[n-1].Attributes, &got); err != nil {
			t.Fatalf("merged attributes %s: %v", batch[n-1].Attributes, err)
		}
		want := map[string]any{"k": true, "region": "eu", "n": map[string]any{"a": []any{1.0, 2.0}}}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%d entries: attributes %s, want %v", n, batch[n-1].Attributes, want)
		}
		if n > 1 && batch[0].Attributes != nil {
			t.Errorf("an entry without extra members got attributes %s", batch[0].Attributes)
		}
	}
	batch, err := c.check(context.Background(), []byte(`[{"project_id":"p","message":"m","region":"eu"}]`))
	if err != nil || string(batch[0].Attributes) != `{"region":"eu"}` {
		t.Errorf("no attributes: %s, %v", batch[0].Attributes, err)
	}
	_, err = c.check(context.Background(), []byte(`[{"project_id":"p","message":"m","region":"eu","attributes":{"region":"us"}}]`))
	var de *domain.Error
	if !errors.As(err, &de) || len(de.Fields) != 2 || jsonPointer(de.Fields[0].Path) != "/0/region" || jsonPointer(de.Fields[1].Path) != "/0/attributes/region" {
		t.Errorf("clash = %v, want /0/region and /0/attributes/region", err)
	}
}

// BenchmarkLogsCheck measures the check of a 1,000-entry batch of typical entries (the whole of
// what the validator does with a POST /logs body) beside scanEntries alone, the share of it that
// reads the body for invalid UTF-8 and the entries' member names.
func BenchmarkLogsCheck(b *testing.B) {
	entry := `{"project_id":"01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2f","message":"payment declined for order 4711 after 3 attempts","level":"error",` +
		`"subject":"checkout","user_id":"u-42","time":1795428000123,"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7",` +
		`"attributes":{"http.method":"GET","http.status_code":502,"retry":true}}`
	body := []byte("[" + strings.Repeat(entry+",", 999) + entry + "]")
	c := logsChecker{limits: domain.DefaultLimits()}
	b.Run("check", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.check(context.Background(), body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("scanEntries", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := scanEntries(context.Background(), body, 1000, 100); err != nil {
				b.Fatal(err)
			}
		}
	})
}
