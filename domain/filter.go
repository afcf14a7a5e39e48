package domain

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LogFilter selects a project's entries; every non-nil field must match (AND). Start and End are
// inclusive bounds on Time.
type LogFilter struct {
	ProjectID string
	UserID    *string
	// Level and Levels together match entries whose level is any of them; one value behaves as
	// Level alone always did. The service moves Level into Levels before a store sees the filter.
	// Both compare as stored levels do: by CanonicalLevel ("WARNING" matches "warn").
	Level  *string
	Levels []string
	// Subject matches the subject exactly.
	Subject *string
	// Q matches entries whose message holds it as a literal substring under Unicode simple case
	// folding; stores compare FoldCase(Q) with FoldCase(message).
	Q *string
	// TraceID matches the entries of one trace; upper-case hex digits match too.
	TraceID *string
	// Query is the text of the query parameter, as sent; Parsed is it parsed, set by the
	// service before a store sees the filter (the zero Query when no query was sent). Stores
	// render Parsed.
	Query  *string
	Parsed Query
	Start  *int64
	End    *int64
}

// The fixed bounds of the search parameters (the API contract states them).
const (
	// MaxQueryChars is the longest q in characters.
	MaxQueryChars = 256
	// MaxLevelFilters is how many times log_level may repeat: it bounds the shapes of the
	// statements stores prepare.
	MaxLevelFilters = 16
)

// Matches reports whether e matches f as every store's filter matches it: the project, every
// filter given (ANDed; Level and Levels together as one set), time bounds inclusive, q a literal
// substring of the message under simple case folding. f is a filter as the service hands it
// to a store (a trace id in lower case).
func (f LogFilter) Matches(e LogEntry) bool {
	eq := func(want, got *string) bool { return want == nil || (got != nil && *got == *want) }
	if e.ProjectID != f.ProjectID || !eq(f.UserID, e.UserID) || !eq(f.Subject, e.Subject) || !eq(f.TraceID, e.TraceID) {
		return false
	}
	if (f.Level != nil || len(f.Levels) > 0) && (f.Level == nil || *f.Level != e.Level) && !slices.Contains(f.Levels, e.Level) {
		return false
	}
	if (f.Start != nil && e.Time < *f.Start) || (f.End != nil && e.Time > *f.End) {
		return false
	}
	return (f.Q == nil || strings.Contains(FoldCase(e.Message), FoldCase(*f.Q))) && f.Parsed.Matches(e)
}

// validateFilter checks a filter by the rules of the fields it matches: a user_id, log_level or
// trace_id that no entry could hold is KindInvalid on its parameter, not an empty answer, and
// every string reaching a store is one both stores can keep. All problems are named at once. It
// returns the filter as stores match it (a trace id in lower case).
func (l Limits) validateFilter(f LogFilter) (LogFilter, error) {
	var fields []FieldError
	if f.UserID != nil {
		if d := checkBytes(*f.UserID, l.MaxUserIDBytes); d != "" {
			fields = append(fields, FieldError{Param: "user_id", Detail: d})
		}
	}
	if f.Level != nil {
		f.Levels = append([]string{*f.Level}, f.Levels...)
		f.Level = nil
	}
	if len(f.Levels) > MaxLevelFilters {
		fields = append(fields, FieldError{Param: "log_level", Detail: "may be given at most " + strconv.Itoa(MaxLevelFilters) + " times"})
	} else {
		for _, lv := range f.Levels {
			if d := checkChars(lv, 1, l.MaxLevelChars); d != "" {
				fields = append(fields, FieldError{Param: "log_level", Detail: d})
				break
			}
		}
	}
	if f.Subject != nil {
		if d := checkBytes(*f.Subject, l.MaxSubjectBytes); d != "" {
			fields = append(fields, FieldError{Param: "subject", Detail: d})
		}
	}
	if f.Q != nil {
		if d := checkChars(*f.Q, 1, MaxQueryChars); d != "" {
			fields = append(fields, FieldError{Param: "q", Detail: d})
		}
	}
	if f.Query != nil {
		q, err := ParseQuery(*f.Query, l.Query)
		var syntax *QuerySyntaxError
		switch {
		case errors.As(err, &syntax):
			fields = append(fields, FieldError{Param: "query", Detail: syntax.Msg})
		case err != nil:
			return f, err
		default:
			f.Parsed = q
		}
	}
	if f.TraceID != nil {
		if d := hexIDProblem(*f.TraceID, TraceIDLen); d != "" {
			fields = append(fields, FieldError{Param: "trace_id", Detail: d})
		}
	}
	if f.Start != nil && f.End != nil && *f.Start > *f.End {
		fields = append(fields, FieldError{Param: "start_time", Detail: "must not be after end_time"})
	}
	if len(fields) > 0 {
		return f, &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: fields}
	}
	f.TraceID = lowerHex(f.TraceID)
	if len(f.Levels) > 0 {
		levels := make([]string, len(f.Levels))
		for i, lv := range f.Levels {
			levels[i] = CanonicalLevel(lv)
		}
		f.Levels = dedupe(levels)
	}
	return f, nil
}

// dedupe sorts levels and drops repeats.
func dedupe(levels []string) []string {
	if len(levels) < 2 {
		return levels
	}
	out := slices.Clone(levels)
	slices.Sort(out)
	return slices.Compact(out)
}

// FoldCase maps s to its form under Unicode simple case folding: two strings are equal under
// simple folding exactly when their FoldCase forms are equal, and since it maps rune by rune, a
// string contains another under folding exactly when their forms do. Each rune becomes one
// fixed member of its folding orbit (the least lower-case one, else the least): "É" and "é"
// become "é", "K" (Kelvin sign) becomes "k", and "ß" stays "ß" (full folding to "ss" is not
// simple folding). It is computed here, not by a database, so both stores agree whatever their
// locale or Unicode version.
func FoldCase(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if foldRune(r) != r {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for _, r := range s[i:] {
		b.WriteRune(foldRune(r))
	}
	return b.String()
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	least, leastLower := r, rune(-1)
	if unicode.IsLower(r) {
		leastLower = r
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
		if unicode.IsLower(f) && (leastLower < 0 || f < leastLower) {
			leastLower = f
		}
	}
	if leastLower >= 0 {
		return leastLower
	}
	return least
}
