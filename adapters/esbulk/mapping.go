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

	"github.com/go-json-experiment/json/jsontext"

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
	return decodesAsAction(text)
}

// decodesAsAction is looksLikeAction without its shortcut: the line decoded, an object of one
// member named as an action whose value is an object.
func decodesAsAction(text []byte) bool {
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
func (m *mapper) toInput(doc []byte) (domain.LogInput, string) {
	// Each member is kept as its JSON text, a slice of doc: only the few read into the entry
	// are decoded, and the rest go on as text to the domain, which decodes the attributes once,
	// as it does any entry's.
	flat, ok := m.flatten(doc)
	if !ok {
		return domain.LogInput{}, notADocument(doc)
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
	if s, ok := takeID(flat, traceFields, domain.TraceIDLen, m.limits); ok {
		in.TraceID = &s
	}
	if s, ok := takeID(flat, spanFields, domain.SpanIDLen, m.limits); ok {
		in.SpanID = &s
	}
	if len(flat) > 0 {
		in.Attributes = encodeFlat(flat)
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

// mapper maps the documents of one request to entries (toInput), one after the other,
// reusing its decoder and scratch space from one document to the next.
type mapper struct {
	limits domain.Limits
	dec    jsontext.Decoder
	// levels[d] holds the members read so far of the object being read at depth d.
	levels [][]member
}

func newMapper(limits domain.Limits) *mapper { return &mapper{limits: limits} }

// member is one member of a document's object: its value's text when that is not an object
// with members, else those members (see readObject).
type member struct {
	name    string
	raw     []byte
	members []member
}

// flatten reads doc, one JSON object of valid UTF-8, in one pass into its members by dotted
// path ({"http":{"status":500}} is "http.status"), each value the slice of doc that holds it;
// an empty object is kept as one. ok is false when doc is not one JSON object (the caller then
// says why).
//
// Its rules are those of decoding into maps and walking them: within an object a name sent
// twice keeps its last value, and a path both nested and dotted ({"a":{"b":1},"a.b":2})
// resolves the same way every time, the later name in sorted order winning. Reading the
// document once, as slices, is what keeps the bulk API's mapping beside POST /logs' decoding
// in cost: decoding each nested object into a map, once per level, took a third of the
// handler's own time.
func (m *mapper) flatten(doc []byte) (flat map[string]json.RawMessage, ok bool) {
	m.dec.Reset(bytes.NewBuffer(doc), jsontext.AllowDuplicateNames(true))
	if tok, err := m.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, false
	}
	members, err := m.readObject(doc, 0)
	if err != nil {
		return nil, false
	}
	if _, err := m.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, false // more than one value
	}
	flat = make(map[string]json.RawMessage, len(members))
	flattenMembers("", members, flat)
	return flat, true
}

// readObject reads the members of an object at depth whose '{' the decoder has read, through
// its '}', and returns them sorted by name, the last of a name sent twice only. The top
// level's members are in m's scratch space, valid until the next document; those of nested
// objects are their own.
func (m *mapper) readObject(doc []byte, depth int) ([]member, error) {
	if depth == len(m.levels) {
		// Grown by the members it meets: a chain of 10,000 single-member objects costs one
		// member a level, not a preallocated run.
		m.levels = append(m.levels, nil)
	}
	ms := m.levels[depth][:0]
	defer func() { m.levels[depth] = ms[:0] }()
	for {
		tok, err := m.dec.ReadToken()
		if err != nil {
			return nil, err
		}
		if tok.Kind() == '}' {
			break
		}
		mb := member{name: tok.String()}
		if m.dec.PeekKind() == '{' {
			if _, err := m.dec.ReadToken(); err != nil {
				return nil, err
			}
			start := m.dec.InputOffset() - 1
			kids, err := m.readObject(doc, depth+1)
			if err != nil {
				return nil, err
			}
			if len(kids) == 0 {
				mb.raw = doc[start:m.dec.InputOffset()]
			} else {
				mb.members = slices.Clone(kids)
			}
		} else {
			v, err := m.dec.ReadValue()
			if err != nil {
				return nil, err
			}
			end := m.dec.InputOffset()
			mb.raw = doc[end-int64(len(v)) : end]
		}
		ms = append(ms, mb)
	}
	// Stable, so that of the members of one name the last sent is the last of its run.
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.name, b.name) })
	out := ms[:0]
	for i, mb := range ms {
		if i+1 < len(ms) && ms[i+1].name == mb.name {
			continue
		}
		out = append(out, mb)
	}
	ms = out
	return out, nil
}

// flattenMembers puts every member of ms into out under its dotted path below prefix, in the
// members' order, so that a later path overwrites an equal earlier one.
func flattenMembers(prefix string, ms []member, out map[string]json.RawMessage) {
	for _, m := range ms {
		key := m.name
		if prefix != "" {
			key = prefix + "." + m.name
		}
		if m.members != nil {
			flattenMembers(key, m.members, out)
			continue
		}
		out[key] = m.raw
	}
}

// encodeFlat writes flat as one JSON object, its keys sorted and its values as sent (the
// domain makes it canonical, as it does any entry's attributes).
func encodeFlat(flat map[string]json.RawMessage) json.RawMessage {
	b := []byte{'{'}
	for i, k := range slices.Sorted(maps.Keys(flat)) {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, k) // k is valid UTF-8: it was read from a valid document
		b = append(b, ':')
		b = append(b, flat[k]...)
	}
	return append(b, '}')
}

// notADocument says why doc, which flatten refused, is no document. flatten reads with
// jsontext, which refuses invalid UTF-8 and escaped lone surrogates as any other error; the
// checks are made again here, in order, to name the problem.
func notADocument(doc []byte) string {
	if !utf8.Valid(doc) {
		return "the document is not valid UTF-8"
	}
	if loneSurrogate(doc) {
		// encoding/json would store U+FFFD in its place: nothing is altered unsaid.
		return "the document holds an escaped lone surrogate (\\uD800 to \\uDFFF unpaired), which is no character"
	}
	// encoding/json, which reads documents as the rest of the service does, says why in the
	// words every answer uses.
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(doc, &obj); err != nil {
		return notAnObject(doc, err)
	}
	if obj == nil {
		return "the document is not a JSON object: null"
	}
	// Cannot happen: jsontext and encoding/json accept the same objects of valid UTF-8
	// (FuzzFlatten holds them to it); refused rather than read another way.
	return "the document is not a JSON object"
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
