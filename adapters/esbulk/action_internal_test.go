package esbulk

import (
	"testing"
)

// looksLikeAction's shortcut (a plainly written first member name that is no action's) must
// answer as decoding the line does, whatever the line.
func TestLooksLikeActionAnswersAsDecoding(t *testing.T) {
	for _, line := range []string{
		`{"create":{"_index":"p"}}`, `{"index":{}}`, ` { "delete" : {} } `, `{"update":{"_id":"1"}}`,
		`{"message":"x"}`, `{"message":"x","index":{}}`, `{"index":{},"message":"x"}`,
		`{"\u0069ndex":{}}`, `{"ind\"ex":{}}`, `{"index":1}`, `{"index":null}`, `{"Index":{}}`,
		`{}`, `[]`, `"index"`, `{"index":{}`, `{"index`, `{`, ``, `{"a":1,"a":2}`, `{"index":{},"index":{}}`,
		`{"@timestamp":"2026-11-27T00:00:00Z","log":{"level":"info"},"message":"GET /"}`,
	} {
		if got, want := looksLikeAction([]byte(line)), decodesAsAction([]byte(line)); got != want {
			t.Errorf("looksLikeAction(%s) = %v, decoding says %v", line, got, want)
		}
	}
}

func FuzzLooksLikeAction(f *testing.F) {
	for _, s := range []string{`{"index":{}}`, `{"message":"x"}`, `{"\u0069ndex":{}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if got, want := looksLikeAction([]byte(line)), decodesAsAction([]byte(line)); got != want {
			t.Fatalf("looksLikeAction(%q) = %v, decoding says %v", line, got, want)
		}
	})
}
