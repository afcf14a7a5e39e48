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
		"[{\"project_id\":\"p\",\"message\":\"bad utf-8 \xff\xfe and a lone \xed\xa0\x80 surrogate\"}]",
		`[{"project_id":"p","message":"é ünïcode 😀","unknown":{"x":1},"Message":"case-insensitive key, last wins"}]`,
		`[{"project_id":"p","message":"first","message":"second"},{"project_id":"q","message":"m","time":0,"attributes":{}}]`,
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
