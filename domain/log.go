package domain

import (
	"encoding/json"
	"iter"
	"strconv"
	"strings"
	"unicode/utf8"
)

// DefaultLevel is the level of an entry sent without one.
const DefaultLevel = "info"

// LogEntry is a stored log entry. Subject, UserID, Attributes, TraceID and SpanID are nil when
// the client did not send them.
type LogEntry struct {
	ID        string
	ProjectID string
	// Time is Unix time in milliseconds.
	Time    int64
	Level   string
	Message string
	Subject *string
	UserID  *string
	// Attributes is a JSON object in canonical form: compact, keys sorted, numbers as sent.
	Attributes json.RawMessage
	// TraceID (32) and SpanID (16) are lower-case hex digits, never all zero.
	TraceID *string
	SpanID  *string
}

// LogInput is one entry as a client sends it; nil means "not sent".
type LogInput struct {
	ProjectID string
	Message   *string
	Level     *string
	Time      *int64
	Subject   *string
	UserID    *string
	// Attributes is one JSON value as sent (it must be an object); nil when not sent.
	Attributes json.RawMessage
	// TraceID and SpanID are hex digits in either case; they are stored lower case.
	TraceID *string
	SpanID  *string
	// SeverityText is the text the sender wrote its level in when Level was not taken from it
	// (OTLP derives Level from severity_number when it has one); nil when Level, if sent, is
	// that text. The entry keeps it as the attribute severity_text when it differs from the
	// stored level beyond case (KeepsSeverityText).
	SeverityText *string
}

// LogQuery is one page of a listing: the filter, the order, the page size and where to start.
type LogQuery struct {
	LogFilter
	Desc  bool
	Limit int
	// After, when not nil, starts the page right after that position (exclusive).
	After *Cursor
	// Now is the time of the listing (Unix ms): entries older than the project's retention at
	// Now are gone. The service sets it.
	Now int64
}

// Page is one page of a listing as a store streams it. Next, when not nil, is the position after
// which the following page starts; it is known before the first entry is read so that a transport
// can announce it ahead of the body. Entries yields the page's entries in order and may be ranged
// over once, only inside the callback that received the Page.
type Page struct {
	Next    *Cursor
	Entries iter.Seq2[LogEntry, error]
}

// PageFunc consumes one page. Its error is returned by ListLogs unchanged.
type PageFunc func(Page) error

// fieldErrors collects per-field problems up to a cap, counting the rest.
type fieldErrors struct {
	max     int
	list    []FieldError
	dropped int
}

func (fe *fieldErrors) add(index int, field, detail string) {
	if len(fe.list) >= fe.max {
		fe.dropped++
		return
	}
	fe.list = append(fe.list, FieldError{Path: []string{strconv.Itoa(index), field}, Detail: detail})
}

func (fe *fieldErrors) err(kind Kind, msg string) error {
	if len(fe.list) == 0 {
		return nil
	}
	if fe.dropped > 0 {
		msg += " (" + strconv.Itoa(fe.dropped) + " more problems not listed)"
	}
	return &Error{Kind: kind, Msg: msg, Fields: fe.list}
}

// noNUL is the rule for every stored string: PostgreSQL text cannot hold U+0000, and both stores
// must accept exactly the same input.
const noNUL = "must not contain the NUL character (U+0000)"

// checkText reports a problem with a string that either store must keep or compare as it is:
// PostgreSQL text holds only valid UTF-8 without NUL (SQLite would take anything), and both
// stores must answer the same input the same way. "" when s is fine.
func checkText(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return noNUL
	}
	return ""
}

// checkChars reports a problem with a string bounded to [min, max] characters.
func checkChars(s string, min, max int) string {
	if d := checkText(s); d != "" {
		return d
	}
	n := utf8.RuneCountInString(s)
	if n < min {
		return "must not be empty"
	}
	if n > max {
		return "must be at most " + strconv.Itoa(max) + " characters"
	}
	return ""
}

// checkBytes reports a problem with a possibly empty string bounded to max bytes of UTF-8: the
// bound of a string an index holds, whose entries are limited in bytes, not characters.
func checkBytes(s string, max int) string {
	if d := checkText(s); d != "" {
		return d
	}
	if len(s) > max {
		return "must be at most " + strconv.Itoa(max) + " bytes of UTF-8"
	}
	return ""
}

// EntryFieldProblem states the rule of one field of a log entry as sent ("message", "level",
// "subject", "user_id", "trace_id", "span_id", or "attributes" with value the field's JSON text):
// "" when value keeps it, else what is wrong, in the words a client is shown. It is the one
// statement of those rules: the service applies it to every batch, and a transport may use it
// to name problems early.
func (l Limits) EntryFieldProblem(field, value string) string {
	switch field {
	case "attributes":
		_, d := l.canonicalAttributes([]byte(value), nil)
		return d
	case "trace_id":
		return hexIDProblem(value, TraceIDLen)
	case "span_id":
		return hexIDProblem(value, SpanIDLen)
	case "message":
		if len(value) > l.MaxMessageBytes {
			return "must be at most " + strconv.Itoa(l.MaxMessageBytes) + " bytes"
		}
		return checkText(value)
	case "level":
		return checkChars(value, 1, l.MaxLevelChars)
	case "subject":
		return checkBytes(value, l.MaxSubjectBytes)
	case "user_id":
		return checkBytes(value, l.MaxUserIDBytes)
	}
	return checkText(value)
}

// buildEntry validates one entry, telling bad each problem (field, detail), and turns it into an
// entry with an id, the default level and the time now when it has none.
func (s *Service) buildEntry(e LogInput, now int64, bad func(field, detail string)) LogEntry {
	l := s.limits
	if e.ProjectID == "" {
		bad("project_id", "is required")
	}
	if e.Message == nil {
		bad("message", "is required")
	} else if d := l.EntryFieldProblem("message", *e.Message); d != "" {
		bad("message", d)
	}
	level := DefaultLevel
	sent := e.SeverityText // the level's text as the sender wrote it
	if e.Level != nil {
		if d := l.EntryFieldProblem("level", *e.Level); d != "" {
			bad("level", d)
		}
		level = CanonicalLevel(*e.Level)
		if sent == nil {
			sent = e.Level
		}
	}
	var severityText *string
	if sent != nil && KeepsSeverityText(*sent, level) {
		severityText = sent
	}
	for _, f := range [...]struct {
		name  string
		value *string
	}{{"subject", e.Subject}, {"user_id", e.UserID}, {"trace_id", e.TraceID}, {"span_id", e.SpanID}} {
		if f.value != nil {
			if d := l.EntryFieldProblem(f.name, *f.value); d != "" {
				bad(f.name, d)
			}
		}
	}
	var attrs json.RawMessage
	if e.Attributes != nil || severityText != nil {
		var d string
		if attrs, d = l.canonicalAttributes(e.Attributes, severityText); d != "" {
			bad("attributes", d)
		}
	}
	t := now
	if e.Time != nil {
		t = *e.Time
	}
	var msg string
	if e.Message != nil {
		msg = *e.Message
	}
	return LogEntry{ID: s.newID(), ProjectID: e.ProjectID, Time: t, Level: level, Message: msg, Subject: e.Subject, UserID: e.UserID,
		Attributes: attrs, TraceID: lowerHex(e.TraceID), SpanID: lowerHex(e.SpanID)}
}

// buildEntries validates a batch and turns it into entries with ids, default levels and times.
// It checks every entry so that one answer names every problem (up to MaxFieldErrors).
func (s *Service) buildEntries(in []LogInput) ([]LogEntry, error) {
	l := s.limits
	if len(in) == 0 {
		return nil, &Error{Kind: KindInvalid, Msg: "a batch holds at least one entry", Fields: []FieldError{{Path: []string{}, Detail: "must not be empty"}}}
	}
	if len(in) > l.MaxBatchEntries {
		return nil, Errorf(KindTooLarge, "a batch holds at most %d entries, this one has %d", l.MaxBatchEntries, len(in))
	}
	now := s.now().UnixMilli()
	out := make([]LogEntry, len(in))
	bad := fieldErrors{max: l.MaxFieldErrors}
	for i, e := range in {
		out[i] = s.buildEntry(e, now, func(field, detail string) { bad.add(i, field, detail) })
	}
	if err := bad.err(KindInvalid, "invalid log entries"); err != nil {
		return nil, err
	}
	return out, nil
}
