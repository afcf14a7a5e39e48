package migrations

import (
	"slices"
	"testing"
)

// TestAttributeTerms: one term per top-level string, finite number (as float64, -0 as 0) and
// boolean; nothing for objects, arrays, null and numbers beyond float64; keys and strings quoted,
// so a key holding "=" or quotes cannot pass for another member.
func TestAttributeTerms(t *testing.T) {
	got := AttributeTerms([]byte(`{"a=b":"c","big":1E400,"f":false,"n":500.0,"nested":{"x":1},"arr":[1],"null":null,"tiny":1e-400,"z":-0,"q\"":"=\""}`))
	slices.Sort(got)
	want := []string{`b:"f"=false`, `n:"n"=500`, `n:"tiny"=0`, `n:"z"=0`, `s:"a=b"="c"`, `s:"q\""="=\""`}
	if !slices.Equal(got, want) {
		t.Errorf("AttributeTerms = %q, want %q", got, want)
	}
	if NumberTerm("n", 500) != `n:"n"=500` || StringTerm("a", "b=") == StringTerm("a=", "b") {
		t.Error("terms of a query differ from the stored ones, or two members share one")
	}
	if AttributeTerms(nil) != nil || TermHashes(nil) != nil || AttributeTerms([]byte(`{"o":{}}`)) != nil {
		t.Error("no terms must be nil (a NULL column)")
	}
	if h := TermHashes(want); len(h) != len(want) || h[0] == h[1] {
		t.Errorf("TermHashes = %v", h)
	}
}
