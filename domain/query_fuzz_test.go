package domain

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"unicode/utf8"
)

// FuzzParseQuery: ParseQuery never panics; every error is a *QuerySyntaxError positioned within
// the text (or just past it); every query it accepts comes back equal from its own String.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		`a OR b c`, `-level:error http.route:(/checkout OR "/pay ment") status:>=500`,
		`x:[200 TO *} y:{-1 TO 1e3] z:<=0.5 "payment, declined!" pay*`, `NOT NOT (a AND b) OR c\:d`,
		`attributes.level:500 k:"500" k:true span_id:ABC* message:* service.name:*`, `((a`, `"abc\"`,
	} {
		f.Add(s)
	}
	l := DefaultLimits().Query
	f.Fuzz(func(t *testing.T, text string) {
		q, err := ParseQuery(text, l)
		if err != nil {
			var syntax *QuerySyntaxError
			if !errors.As(err, &syntax) || syntax.Pos < 1 || syntax.Pos > utf8.RuneCountInString(text)+1 {
				t.Fatalf("ParseQuery(%q): %#v", text, err)
			}
			return
		}
		// The canonical text may be longer than the original (fields written out).
		again, err := ParseQuery(q.String(), QueryLimits{MaxChars: math.MaxInt, MaxDepth: l.MaxDepth, MaxTerms: l.MaxTerms})
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("ParseQuery(%q) = %#v\nString: %q\nparsed again: %#v, %v", text, q, q.String(), again, err)
		}
	})
}
