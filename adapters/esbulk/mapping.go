package esbulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"example.com/obsvc/domain"
)

// action is an action line: {"index":{"_index":"..."}} and the like.
type action struct {
	name  string
	index string
}

var actionNames = []string{"index", "create", "delete", "update"}

// parseAction reads an action line: an object of one member named index, create, delete or
// update, whose value is an object (its _index, if any, a string; its other metadata ignored).
func parseAction(text []byte) (action, error) {
	if !utf8.Valid(text) {
		return action{}, errors.New("not valid UTF-8")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(text, &m); err != nil || m == nil {
		return action{}, errors.New("expected a JSON object such as {\"index\":{}}")
	}
	if len(m) != 1 {
		return action{}, fmt.Errorf("expected one action, found %d members", len(m))
	}
	for name, v := range m {
		if !slices.Contains(actionNames, name) {
			return action{}, fmt.Errorf("expected [create], [delete], [index] or [update] but found [%s]", clip(name))
		}
		var meta map[string]json.RawMessage
		if err := json.Unmarshal(v, &meta); err != nil || meta == nil {
			return action{}, fmt.Errorf("the metadata of [%s] must be an object", name)
		}
		a := action{name: name}
		if raw, ok := meta["_index"]; ok {
			if err := json.Unmarshal(raw, &a.index); err != nil {
				return action{}, errors.New("_index must be a string")
			}
		}
		return a, nil
	}
	panic("unreachable")
}

// looksLikeAction says whether a line where a document is due is an action instead: an object
// of one member named as an action whose value is an object. A document of that very shape is
// taken for an action, and the action before it answered as missing its document.
func looksLikeAction(text []byte) bool {
	// Nearly every line read here is a document: its first member's name, when it is written
	// plainly, rules it out without decoding the line (an object of one member is named by its
	// first, and one of more members is no action).
	if key, plain := firstKey(text); plain && !slices.Contains(actionNames, key) {
		return false
	}
	var m map[string]json.RawMessage
	if len(text) > 4096 || json.Unmarshal(text, &m) != nil || len(m) != 1 {
		return false
	}
	for name, v := range m {
		var meta map[string]json.RawMessage
		return slices.Contains(actionNames, name) && json.Unmarshal(v, &meta) == nil && meta != nil
	}
	return false
}

// firstKey is the name of the first member of the JSON object text, and whether it is written
// plainly (no escapes) so that its bytes are the name; plain is false when text does not start
// as an object with a member, or the name holds an escape.
func firstKey(text []byte) (key string, plain bool) {
	t := bytes.TrimLeft(text, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return "", false
	}
	t = bytes.TrimLeft(t[1:], " \t\r\n")
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(t[1:], '"')
	if end < 0 || bytes.IndexByte(t[1:1+end], '\\') >= 0 {
		return "", false
	}
	return string(t[1 : 1+end]), true
}

// clip quotes a client's text by its first 40 bytes at most, as every answer does.
func clip(s string) string {
	if len(s) > 40 {
		return strings.ToValidUTF8(s[:40], "") + "…"
	}
	return s
}

// The document fields an entry's own fields are read from, in order of preference; each is
// read in its dotted form, from nested objects ({"log":{"level":"x"}}) or a dotted key
// ({"log.level":"x"}) alike. A field read into the entry is not kept among its attributes.
var (
	timeFields    = []string{"@timestamp", "timestamp", "time"}
	messageFields = []string{"message", "msg", "log"}
	levelFields   = []string{"level", "log.level", "severity"}
	// The subject is the service that wrote the entry, else the host it ran on: an
	// application's logs carry service.name, a syslog daemon's host.name only.
	subjectFields = []string{"service.name", "host.name"}
	userFields    = []string{"user.id"}
	traceFields   = []string{"trace.id", "trace_id"}
	spanFields    = []string{"span.id", "span_id"}
)

// toInput maps a document to an entry (see the README's "Elasticsearch bulk mapping"), or says
// why it cannot: not a JSON object of valid UTF-8, no message, a time that is no time. The
// rest of an entry's rules (sizes, levels, attributes) the domain applies.
//
// Every field not read into the entry is kept as an attribute, nested objects flattened to
// dotted keys ({"http":{"status":500}} is the attribute "http.status"), so that a query names
// it as it is written in the document's own conventions (http.status:500); arrays are kept as
// they are.
func toInput(doc []byte, limits domain.Limits) (domain.LogInput, string) {
	if !utf8.Valid(doc) {
		return domain.LogInput{}, "the document is not valid UTF-8"
	}
	if loneSurrogate(doc) {
		// encoding/json would store U+FFFD in its place: nothing is altered unsaid.
		return domain.LogInput{}, "the document holds an escaped lone surrogate (\\uD800 to \\uDFFF unpaired), which is no character"
	}
	// Each member is kept as its JSON text: only the few read into the entry are decoded, and
	// the rest go on as text to the domain, which decodes the attributes once, as it does any
	// entry's (decoding every value here to encode it again took as long as the rest of the
	// mapping).
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return domain.LogInput{}, notAnObject(doc, err)
	}
	if obj == nil {
		return domain.LogInput{}, "the document is not a JSON object: null"
	}
	flat := make(map[string]json.RawMessage, len(obj))
	if err := flatten("", obj, flat); err != nil {
		return domain.LogInput{}, "the document is not a JSON object: " + err.Error()
	}

	var in domain.LogInput
	msg, ok := takeString(flat, messageFields)
	if !ok {
		return domain.LogInput{}, "the document has no message: a string in message, msg or log is required"
	}
	in.Message = &msg
	if name, v, ok := take(flat, timeFields); ok {
		t, problem := parseTime(v)
		if problem != "" {
			return domain.LogInput{}, name + " " + problem
		}
		in.Time = &t
	}
	if s, ok := takeString(flat, levelFields); ok {
		in.Level = &s
	}
	if s, ok := takeString(flat, subjectFields); ok {
		in.Subject = &s
	}
	if s, ok := takeString(flat, userFields); ok {
		in.UserID = &s
	}
	// An id that is not one (not hex of the right length) stays an attribute, as sent.
	if s, ok := takeID(flat, traceFields, domain.TraceIDLen, limits); ok {
		in.TraceID = &s
	}
	if s, ok := takeID(flat, spanFields, domain.SpanIDLen, limits); ok {
		in.SpanID = &s
	}
	if len(flat) > 0 {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(flat); err != nil {
			return domain.LogInput{}, "the document's fields cannot be kept: " + err.Error()
		}
		in.Attributes = bytes.TrimSuffix(b.Bytes(), []byte("\n"))
	}
	return in, ""
}

// loneSurrogate reports a \u escape of a UTF-16 surrogate that is not half of a pair. Outside
// strings JSON holds no backslash, so the escapes are read wherever they are.
func loneSurrogate(doc []byte) bool {
	surrogate := func(i int) (rune, bool) { // the \uXXXX at i, if it is one
		if i+6 > len(doc) || doc[i] != '\\' || doc[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(doc[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	for i := 0; i < len(doc); i++ {
		if doc[i] != '\\' {
			continue
		}
		r, ok := surrogate(i)
		if !ok {
			i++ // an escape of one character: \\, \", \n ...
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := surrogate(i + 6); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return true
		default:
			i += 5
		}
	}
	return false
}

// flatten puts every member of obj into out under its dotted path below prefix; an empty
// object is kept as one.
func flatten(prefix string, obj map[string]json.RawMessage, out map[string]json.RawMessage) error {
	// In key order, so that a key both nested and dotted ({"a":{"b":1},"a.b":2}) resolves the
	// same way every time: the later key in that order wins.
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if v := obj[k]; len(v) > 0 && v[0] == '{' {
			var child map[string]json.RawMessage
			if err := json.Unmarshal(v, &child); err != nil {
				return err
			}
			if len(child) > 0 {
				if err := flatten(key, child, out); err != nil {
					return err
				}
				continue
			}
		}
		out[key] = obj[k]
	}
	return nil
}

// notAnObject says why doc, which json.Unmarshal refused with err, is no document.
func notAnObject(doc []byte, err error) string {
	// A line of two values is named as such (the decoder reads the first and finds more).
	dec := json.NewDecoder(bytes.NewReader(doc))
	var first json.RawMessage
	if dec.Decode(&first) == nil && len(first) > 0 && first[0] == '{' {
		if _, more := dec.Token(); !errors.Is(more, io.EOF) {
			return "the document line holds more than one JSON value"
		}
	}
	return "the document is not a JSON object: " + err.Error()
}

// rawString is v as a string when it is a JSON string.
func rawString(v json.RawMessage) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		// No escapes: its bytes are the string (the document was checked as valid UTF-8).
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// take removes and returns the first of names present in flat.
func take(flat map[string]json.RawMessage, names []string) (string, json.RawMessage, bool) {
	for _, n := range names {
		if v, ok := flat[n]; ok {
			delete(flat, n)
			return n, v, true
		}
	}
	return "", nil, false
}

// takeString removes and returns the first of names whose value is a string; a name of
// another type stays an attribute.
func takeString(flat map[string]json.RawMessage, names []string) (string, bool) {
	for _, n := range names {
		if s, ok := rawString(flat[n]); ok {
			delete(flat, n)
			return s, true
		}
	}
	return "", false
}

func takeID(flat map[string]json.RawMessage, names []string, n int, limits domain.Limits) (string, bool) {
	field := "trace_id"
	if n == domain.SpanIDLen {
		field = "span_id"
	}
	for _, name := range names {
		if s, ok := rawString(flat[name]); ok && limits.EntryFieldProblem(field, s) == "" {
			delete(flat, name)
			return s, true
		}
	}
	return "", false
}

// parseTime reads a time as Elasticsearch's default date format does: RFC 3339 (with or
// without a zone: none is UTC), or epoch milliseconds as a number or a string of digits.
func parseTime(v json.RawMessage) (int64, string) {
	if t, ok := rawString(v); ok {
		if t != "" && strings.Trim(t, "0123456789-") == "" && !strings.Contains(t[1:], "-") {
			return epochMillis(t)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02"} {
			if p, err := time.Parse(layout, t); err == nil {
				return p.UnixMilli(), ""
			}
		}
		return 0, "is not a time: send RFC 3339 (2026-01-02T15:04:05.000Z) or epoch milliseconds"
	}
	if len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return epochMillis(string(v))
	}
	return 0, "is not a time: send RFC 3339 text or epoch milliseconds"
}

func epochMillis(s string) (int64, string) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, ""
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/2 || f < math.MinInt64/2 {
		return 0, "is not a time in epoch milliseconds"
	}
	return int64(f), ""
}
