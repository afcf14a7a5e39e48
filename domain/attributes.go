package domain

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// TraceIDLen and SpanIDLen are the lengths in hex digits of a trace id (16 bytes) and a span id
// (8 bytes), as W3C Trace Context and OpenTelemetry write them.
const (
	TraceIDLen = 32
	SpanIDLen  = 16
)

// hexIDProblem states the rule of a trace or span id: exactly n hex digits, in either case, not
// all zero (the invalid id of W3C Trace Context). "" when s keeps it.
func hexIDProblem(s string, n int) string {
	if len(s) != n {
		return "must be " + strconv.Itoa(n) + " hexadecimal digits"
	}
	zero := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '0':
		case '1' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
			zero = false
		default:
			return "must be " + strconv.Itoa(n) + " hexadecimal digits"
		}
	}
	if zero {
		return "must not be all zeros"
	}
	return ""
}

// lowerHex is s, a valid trace or span id, as stored: lower case. It returns s itself when it is
// lower case already, so the usual case allocates nothing.
func lowerHex(s *string) *string {
	if s == nil || strings.IndexFunc(*s, func(r rune) bool { return 'A' <= r && r <= 'F' }) < 0 {
		return s
	}
	l := strings.ToLower(*s)
	return &l
}

// canonicalAttributes checks attributes as a client sent them (one JSON value, or nil for none)
// against the limits and returns them in the form stores keep: the object re-encoded compactly
// with its keys sorted (a key sent twice keeps its last value), numbers exactly as sent (their
// text, not a float), strings as valid UTF-8. severityText, when not nil, is added as the
// attribute severity_text unless raw holds that key (see WithSeverityText); it counts toward
// the limits like any attribute. The problem is "" when the result keeps every rule.
func (l Limits) canonicalAttributes(raw []byte, severityText *string) (json.RawMessage, string) {
	obj := map[string]any{}
	if raw != nil {
		// The decoder would quietly replace invalid UTF-8 with U+FFFD; the rule is to refuse it.
		if !utf8.Valid(raw) {
			return nil, "must be valid UTF-8"
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, "must be a JSON object"
		}
		if _, err := dec.Token(); err != io.EOF {
			return nil, "must be a JSON object"
		}
		var ok bool
		if obj, ok = v.(map[string]any); !ok {
			return nil, "must be a JSON object"
		}
	}
	if severityText != nil {
		if _, ok := obj[SeverityTextAttribute]; !ok {
			obj[SeverityTextAttribute] = *severityText
		}
	}
	if len(obj) > l.MaxAttributes {
		return nil, "must hold at most " + strconv.Itoa(l.MaxAttributes) + " keys"
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if d := checkChars(k, 1, l.MaxAttributeKeyChars); d != "" {
			if d == "must not be empty" {
				return nil, "keys must not be empty"
			}
			return nil, "key " + quoteKey(k) + " " + d
		}
		if d := l.attributeValueProblem(obj[k], 1); d != "" {
			return nil, "key " + quoteKey(k) + ": " + d
		}
	}
	out, err := encodeAttributes(obj)
	if err != nil { // cannot happen: every value came from the decoder
		return nil, "must be a JSON object"
	}
	if len(out) > l.MaxAttributesBytes {
		return nil, "must be at most " + strconv.Itoa(l.MaxAttributesBytes) + " bytes encoded"
	}
	return out, ""
}

// attributeValueProblem checks a decoded value at the given nesting depth (1 is a value of the
// object itself): strings and keys hold no NUL (the decoder made them valid UTF-8), and nesting
// stays within MaxAttributesDepth.
func (l Limits) attributeValueProblem(v any, depth int) string {
	switch v := v.(type) {
	case string:
		return checkText(v)
	case []any:
		if depth >= l.MaxAttributesDepth {
			return "must be nested at most " + strconv.Itoa(l.MaxAttributesDepth) + " levels deep"
		}
		for _, x := range v {
			if d := l.attributeValueProblem(x, depth+1); d != "" {
				return d
			}
		}
	case map[string]any:
		if depth >= l.MaxAttributesDepth {
			return "must be nested at most " + strconv.Itoa(l.MaxAttributesDepth) + " levels deep"
		}
		for k, x := range v {
			if d := checkText(k); d != "" {
				return "a key " + d
			}
			if d := l.attributeValueProblem(x, depth+1); d != "" {
				return d
			}
		}
	}
	return ""
}

// quoteKey quotes a key for a problem's detail, shortened: the detail of a 10 KiB key need not
// repeat it.
func quoteKey(k string) string {
	if utf8.RuneCountInString(k) > 64 {
		r := []rune(k)
		return strconv.Quote(string(r[:64])) + "…"
	}
	return strconv.Quote(k)
}
