package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// logsChecker checks POST /logs bodies in place of kin-openapi, whose generic validation of a
// batch costs time and answer size in proportion to the number of bad entries: a 2 MB body of
// empty objects took minutes and answered 100 MB. Its cost is bounded by the body limit and the
// batch limit, and its answer by MaxFieldErrors.
type logsChecker struct {
	limits domain.Limits
}

// checkEvery is how many entries the detailed pass checks between looks at the request's context.
const checkEvery = 256

// check checks body, a POST /logs body that is at most the body limit, and decodes a batch of at
// most decodeOnceMax entries: the batch it returns is the one the handler stores, so it is parsed
// once (for a larger batch it returns nil, and the generated decoder decodes it). In three steps:
//
//  1. it counts the top-level array elements with a byte scan and refuses a batch over
//     MaxBatchEntries (KindTooLarge) before any per-entry work;
//  2. it decodes the body once into entries whose fields note their JSON type beside their
//     value: a body that is not JSON gets its answer here (its pointer is the whole body), a
//     batch of well-shaped entries is returned (lengths and other rules are the domain's);
//  3. for a body with entries of the wrong shape, it names each offending pointer in body order
//     (`/3/time` "must be an integer", `/0/message` "is required", `/2` "must be an object"),
//     with the rules of well-typed fields beside them so that one answer lists every problem of
//     an entry, up to MaxFieldErrors, and says how many more there were.
//
// It checks ctx between entries and answers KindUnavailable once the request's time is up.
func (c logsChecker) check(ctx context.Context, body []byte) (rest.CreateLogsJSONRequestBody, error) {
	n, isArray := countElements(body)
	if isArray && n > c.limits.MaxBatchEntries {
		return nil, domain.Errorf(domain.KindTooLarge, "a batch holds at most %d entries, this one has %d", c.limits.MaxBatchEntries, n)
	}
	if err := ctx.Err(); err != nil {
		return nil, outOfTime(err)
	}
	scan, err := scanEntries(ctx, body, n, c.limits.MaxFieldErrors)
	if err != nil {
		return nil, err
	}
	if len(scan.problems) > 0 || scan.dropped > 0 {
		return nil, c.describe(ctx, body, scan)
	}
	if isArray && n <= decodeOnceMax {
		// Sized from the count: the decoder fills it in place instead of doubling it.
		entries := make([]entryValues, 0, n)
		err := json.Unmarshal(body, &entries)
		if err == nil && allWellShaped(entries) {
			batch := make(rest.CreateLogsJSONRequestBody, len(entries))
			for i := range entries {
				entries[i].input(&batch[i])
			}
			if scan.extras != nil {
				if err := mergeExtras(batch, scan.extras, c.limits.MaxFieldErrors); err != nil {
					return nil, err
				}
			}
			return batch, nil
		}
		if se := (*json.SyntaxError)(nil); errors.As(err, &se) {
			return nil, bodyError([]string{}, fmt.Sprintf("the body is not valid JSON: %v (at byte %d)", se, se.Offset))
		}
		return nil, c.describe(ctx, body, scan)
	}
	var entries []entryProbe
	err = json.Unmarshal(body, &entries)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, bodyError([]string{}, fmt.Sprintf("the body is not valid JSON: %v (at byte %d)", se, se.Offset))
	}
	if err == nil && entries != nil && allProbesWellShaped(entries) {
		if scan.extras == nil {
			return nil, nil // a large batch: the generated decoder decodes it (see decodeOnceMax)
		}
		// Members to merge into attributes: decoded here, as the generated decoder would, so
		// that the merged batch is the one stored. (Only such batches pay its memory here.)
		var batch rest.CreateLogsJSONRequestBody
		if err := json.Unmarshal(body, &batch); err != nil {
			return nil, bodyError([]string{}, "the body is not valid JSON: "+err.Error())
		}
		if err := mergeExtras(batch, scan.extras, c.limits.MaxFieldErrors); err != nil {
			return nil, err
		}
		return batch, nil
	}
	return nil, c.describe(ctx, body, scan)
}

// decodeOnceMax is the largest batch check decodes for the handler. Decoding keeps each field's
// type beside its value, about twice the memory of the generated type while it runs: measured
// with 16 concurrent 10,000-entry batches that pushed the service's RSS past 150 MiB. Larger
// batches are only probed for their shape here, and decoded by the generated code as before
// (their parse is paid twice; their memory stays where it was).
const decodeOnceMax = 2_000

func allProbesWellShaped(entries []entryProbe) bool {
	for i := range entries {
		if !entries[i].wellShaped() {
			return false
		}
	}
	return true
}

// entryProbe decodes an entry's fields only far enough to know their JSON types: the shape
// check of a batch larger than decodeOnceMax.
type entryProbe struct {
	ProjectID stringProbe `json:"project_id"`
	Message   stringProbe `json:"message"`
	Level     stringProbe `json:"level"`
	Subject   stringProbe `json:"subject"`
	UserID    stringProbe `json:"user_id"`
	Time      int64Value  `json:"time"`
	TraceID   stringProbe `json:"trace_id"`
	SpanID    stringProbe `json:"span_id"`
	// Attributes' rules are the domain's; the probe only sees that they are an object.
	Attributes objectProbe `json:"attributes"`
}

// wellShaped is entryValues.wellShaped for a probe.
func (e *entryProbe) wellShaped() bool {
	return e.ProjectID.kind == rightType && e.Message.kind == rightType &&
		e.Level.kind != wrongType && e.Subject.kind != wrongType && e.UserID.kind != wrongType &&
		(e.Time.kind == absent || e.Time.kind == rightType) &&
		e.TraceID.kind != wrongType && e.SpanID.kind != wrongType && e.Attributes.kind != wrongType
}

// stringProbe notes whether a field is a JSON string. It never fails, so that one decode sees
// every field of every entry.
type stringProbe struct{ kind jsonKind }

func (p *stringProbe) UnmarshalJSON(b []byte) error {
	p.kind = wrongType
	if len(b) > 0 && b[0] == '"' {
		p.kind = rightType
	}
	return nil
}

// objectProbe notes whether a field is a JSON object (null is the wrong type, as for strings).
type objectProbe struct{ kind jsonKind }

func (p *objectProbe) UnmarshalJSON(b []byte) error {
	p.kind = wrongType
	if len(b) > 0 && b[0] == '{' {
		p.kind = rightType
	}
	return nil
}

func allWellShaped(entries []entryValues) bool {
	for i := range entries {
		if !entries[i].wellShaped() {
			return false
		}
	}
	return true
}

// describe lists what is wrong with each entry of a body that is valid JSON but not a batch of
// well-shaped entries: for each entry, the problems of its names the scan found, then those of
// its fields.
func (c logsChecker) describe(ctx context.Context, body []byte, scan *entryScan) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return &domain.Error{Kind: domain.KindInvalid, Msg: "invalid log entries",
			Fields: []domain.FieldError{{Path: []string{}, Detail: "must be an array of entries"}}}
	}
	bad := fieldErrors{max: c.limits.MaxFieldErrors}
	named := scan.problems
	for i, r := range raw {
		if i%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				return outOfTime(err)
			}
		}
		for len(named) > 0 && named[0].entry == i {
			bad.add(named[0].field)
			named = named[1:]
		}
		index := strconv.Itoa(i)
		if r[0] != '{' {
			bad.add(domain.FieldError{Path: []string{index}, Detail: "must be an object"})
			continue
		}
		var e entryValues
		if err := json.Unmarshal(r, &e); err != nil { // cannot happen: r is a JSON object and no field fails
			bad.add(domain.FieldError{Path: []string{index}, Detail: "must be an object"})
			continue
		}
		for _, f := range c.entryProblems(&e) {
			bad.add(domain.FieldError{Path: []string{index, f.field}, Detail: f.detail})
		}
	}
	bad.dropped += scan.dropped
	if e := bad.err("invalid log entries"); e != nil {
		return e
	}
	// Every entry is well-shaped after all (an empty array, say): the domain has the last word.
	return nil
}

type fieldProblem struct{ field, detail string }

// entryProblems lists the problems of one entry in the order of the contract's fields: the type
// of each field, and for fields of the right type the rules the domain applies to them.
func (c logsChecker) entryProblems(e *entryValues) []fieldProblem {
	var out []fieldProblem
	add := func(field, detail string) {
		if detail != "" {
			out = append(out, fieldProblem{field, detail})
		}
	}
	l := c.limits
	add("project_id", e.ProjectID.problem(true, func(s string) string {
		if s == "" {
			return "is required"
		}
		return ""
	}))
	for _, f := range []struct {
		name     string
		v        stringValue
		required bool
	}{{"message", e.Message, true}, {"level", e.Level, false}, {"subject", e.Subject, false}, {"user_id", e.UserID, false},
		{"trace_id", e.TraceID, false}, {"span_id", e.SpanID, false}} {
		add(f.name, f.v.problem(f.required, func(s string) string { return l.EntryFieldProblem(f.name, s) }))
	}
	add("time", e.Time.problem())
	add("attributes", e.Attributes.problem(func(raw []byte) string { return l.EntryFieldProblem("attributes", string(raw)) }))
	return out
}

// countElements counts the elements of body's top-level array in one scan of its bytes, without
// decoding them; isArray is false when body is not an array. It assumes well-formed JSON: on
// malformed input the count is only an estimate, and the decoder reports the syntax error.
func countElements(body []byte) (n int, isArray bool) {
	i := 0
	for i < len(body) && isSpace(body[i]) {
		i++
	}
	if i == len(body) || body[i] != '[' {
		return 0, false
	}
	depth, inString, empty := 0, false, true
	for ; i < len(body); i++ {
		b := body[i]
		if inString {
			// Jump to the quote that ends the string: the one preceded by an even number of
			// backslashes. (Most of a batch is string content; IndexByte scans it fast.)
			for {
				q := bytes.IndexByte(body[i:], '"')
				if q < 0 {
					return n + 1, true // unterminated: malformed, the decoder says so
				}
				i += q
				bs := 0
				for j := i - 1; j >= 0 && body[j] == '\\'; j-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
				i++
			}
			inString = false
			continue
		}
		switch b {
		case '"':
			inString = true
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				if empty {
					return 0, true
				}
				return n + 1, true
			}
		case ',':
			if depth == 1 {
				n++
			}
		}
		if depth >= 1 && !isSpace(b) && !(depth == 1 && (b == '[' || b == ',')) {
			empty = false
		}
	}
	if empty {
		return 0, true
	}
	return n + 1, true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// jsonKind is what the decode saw of one field.
type jsonKind uint8

const (
	absent     jsonKind = iota // the field was not sent
	rightType                  // the field has the declared JSON type (and, for integers, fits int64)
	wrongType                  // another JSON type, null included, or a number that is not an integer
	outOfRange                 // an integer outside int64
)

// entryValues is an entry as sent: each field's JSON type beside its value. A field of the
// wrong type does not fail the decode, so that one decode sees every field of every entry.
type entryValues struct {
	ProjectID stringValue `json:"project_id"`
	Message   stringValue `json:"message"`
	Level     stringValue `json:"level"`
	Subject   stringValue `json:"subject"`
	UserID    stringValue `json:"user_id"`
	Time      int64Value  `json:"time"`
	TraceID   stringValue `json:"trace_id"`
	SpanID    stringValue `json:"span_id"`
	// Attributes keeps the object's JSON text for the domain's rules.
	Attributes objectValue `json:"attributes"`
}

// wellShaped reports an entry whose fields all have their declared JSON types (null is the wrong
// type of every field) and whose required fields are present.
func (e *entryValues) wellShaped() bool {
	return e.ProjectID.kind == rightType && e.Message.kind == rightType &&
		e.Level.kind != wrongType && e.Subject.kind != wrongType && e.UserID.kind != wrongType &&
		(e.Time.kind == absent || e.Time.kind == rightType) &&
		e.TraceID.kind != wrongType && e.SpanID.kind != wrongType && e.Attributes.kind != wrongType
}

// input fills in the generated type of a well-shaped entry, as the generated decoder would have
// (absent optional fields nil). Nothing in it points into e: the decoded entries are garbage once
// the batch is made, and only the batch stays in memory while it is stored (16 concurrent
// 10,000-entry batches must stay under 150 MiB of RSS).
func (e *entryValues) input(in *rest.LogEntryInput) {
	in.ProjectId, in.Message = e.ProjectID.s, e.Message.s
	in.Level, in.Subject, in.UserId = e.Level.ptr(), e.Subject.ptr(), e.UserID.ptr()
	in.TraceId, in.SpanId = e.TraceID.ptr(), e.SpanID.ptr()
	if e.Time.kind == rightType {
		in.Time = &e.Time.v
	}
	if e.Attributes.kind == rightType {
		in.Attributes = e.Attributes.raw
	}
}

// stringValue notes whether a field is a JSON string, and keeps the string. It never fails.
type stringValue struct {
	kind jsonKind
	s    string
}

func (v *stringValue) UnmarshalJSON(b []byte) error {
	v.kind, v.s = wrongType, ""
	if len(b) < 2 || b[0] != '"' {
		return nil
	}
	// The decoder has checked b is a JSON string. Without escapes and in valid UTF-8 its text is
	// the string itself; otherwise encoding/json unquotes it (and replaces invalid UTF-8 as it
	// always does).
	if inner := b[1 : len(b)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		v.kind, v.s = rightType, string(inner)
		return nil
	}
	if json.Unmarshal(b, &v.s) == nil {
		v.kind = rightType
	}
	return nil
}

// ptr is the string as an optional field of its own (not a pointer into v): nil when absent.
// ptr points at the value itself, not a copy: a batch decoded by check keeps its entryValues
// for as long as the request, and one small allocation per optional field and entry was a
// share of the ingest path's allocations.
func (v *stringValue) ptr() *string {
	if v.kind != rightType {
		return nil
	}
	return &v.s
}

// problem describes the field, or is "" when it is fine; rule checks a string of the right type.
func (v *stringValue) problem(required bool, rule func(string) string) string {
	switch v.kind {
	case absent:
		if required {
			return "is required"
		}
		return ""
	case wrongType:
		return "must be a string"
	}
	return rule(v.s)
}

// objectValue notes whether a field is a JSON object (null is the wrong type, as for strings),
// and keeps the object's JSON text.
type objectValue struct {
	kind jsonKind
	raw  []byte
}

func (v *objectValue) UnmarshalJSON(b []byte) error {
	v.kind, v.raw = wrongType, nil
	if len(b) > 0 && b[0] == '{' {
		v.kind, v.raw = rightType, bytes.Clone(b) // b is the decoder's, not ours to keep
	}
	return nil
}

// problem describes the field, or is "" when it is absent or fine by rule.
func (v *objectValue) problem(rule func([]byte) string) string {
	switch v.kind {
	case absent:
		return ""
	case wrongType:
		return "must be an object"
	}
	return rule(v.raw)
}

// int64Value notes whether a field is a JSON integer that fits int64, and keeps it.
type int64Value struct {
	kind jsonKind
	v    int64
}

func (p *int64Value) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(string(b), 10, 64)
	switch {
	case err == nil:
		p.kind, p.v = rightType, v
	case errors.Is(err, strconv.ErrRange):
		p.kind = outOfRange
	default:
		p.kind = wrongType
	}
	return nil
}

func (p *int64Value) problem() string {
	switch p.kind {
	case wrongType:
		return "must be an integer"
	case outOfRange:
		return fmt.Sprintf("must be between %d and %d", int64(-1<<63), int64(1<<63-1))
	}
	return ""
}

// fieldErrors collects problems up to a cap and counts the rest, so that an answer's size does
// not grow with the input's.
type fieldErrors struct {
	max     int
	list    []domain.FieldError
	dropped int
}

func (fe *fieldErrors) add(f domain.FieldError) {
	if len(fe.list) >= fe.max {
		fe.dropped++
		return
	}
	fe.list = append(fe.list, f)
}

// err is a KindInvalid error listing the problems, or nil when there are none.
func (fe *fieldErrors) err(msg string) *domain.Error {
	if len(fe.list) == 0 && fe.dropped == 0 {
		return nil
	}
	if fe.dropped > 0 {
		msg += " (" + strconv.Itoa(fe.dropped) + " more problems not listed)"
	}
	return &domain.Error{Kind: domain.KindInvalid, Msg: msg, Fields: fe.list}
}

// outOfTime is the answer to a request whose time ran out while it was being checked.
func outOfTime(err error) error {
	return &domain.Error{Kind: domain.KindUnavailable, Msg: "the request ran out of time", Err: err}
}

func bodyError(path []string, detail string) error {
	return &domain.Error{Kind: domain.KindInvalid, Msg: "the body is not valid JSON", Fields: []domain.FieldError{{Path: path, Detail: detail}}}
}
