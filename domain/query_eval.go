package domain

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Matches reports whether e matches q by the semantics written on each node type: the Go twin
// of every store's rendering of q. It decodes e's attributes only when a term asks for one, and
// splits the message into words at most once.
func (q Query) Matches(e LogEntry) bool {
	if q.Root == nil {
		return true
	}
	m := entryMatch{e: e}
	return m.match(q.Root)
}

// entryMatch evaluates the nodes of one query on one entry, keeping what it has worked out.
// One entryMatch may be reset for the next entry (next), keeping the room its words took.
type entryMatch struct {
	e              LogEntry // a copy: a pointer would make the entry escape through words
	words          []byte   // " " + WordText(message) + " ", once split
	split, decoded bool
	attrs          map[string]any
}

// next makes m the evaluation of e, reusing the room of m's words.
func (m *entryMatch) next(e *LogEntry) {
	*m = entryMatch{e: *e, words: m.words[:0]}
}

func (m *entryMatch) match(n QueryNode) bool {
	switch n := n.(type) {
	case QueryAnd:
		for _, t := range n.Terms {
			if !m.match(t) {
				return false
			}
		}
		return true
	case QueryOr:
		for _, t := range n.Terms {
			if m.match(t) {
				return true
			}
		}
		return false
	case QueryNot:
		return !m.match(n.Term)
	case QueryWords:
		if !m.split {
			m.words, m.split = appendPaddedWordText(m.words, m.e.Message), true
		}
		return hasWords(m.words, n.Words, n.Prefix)
	case QueryEquals:
		if n.Field.Attribute {
			v, ok := m.attr(n.Field.Name)
			return ok && attrEquals(v, n)
		}
		return m.equals(n.Field.Name, n.Compared(), n.Prefix)
	case comparedEquals:
		return m.equals(n.Field.Name, n.Value, n.Prefix)
	case QueryExists:
		if n.Field.Attribute {
			_, ok := m.attr(n.Field.Name)
			return ok
		}
		_, ok := m.field(n.Field.Name)
		return ok
	case QueryRange:
		if !n.Field.Attribute {
			return false
		}
		v, _ := m.attr(n.Field.Name)
		x, ok := number(v)
		return ok && (n.Min == nil || x > *n.Min || n.MinInclusive && x == *n.Min) &&
			(n.Max == nil || x < *n.Max || n.MaxInclusive && x == *n.Max)
	}
	return false
}

// equals says whether the entry's field name equals value (with prefix: begins with it), value
// as the field's values compare (QueryEquals.Compared).
func (m *entryMatch) equals(name, value string, prefix bool) bool {
	s, ok := m.field(name)
	return ok && (s == value || prefix && strings.HasPrefix(s, value))
}

// comparedEquals is a QueryEquals on an entry's own field whose Value is Compared already:
// what compared does for a query matched against many entries, so that each term's value is
// worked out once, not once per entry. It never leaves the domain.
type comparedEquals struct{ QueryEquals }

// compared returns n with every QueryEquals on an entry's own field made a comparedEquals.
func compared(n QueryNode) QueryNode {
	each := func(ts []QueryNode) []QueryNode {
		out := make([]QueryNode, len(ts))
		for i, t := range ts {
			out[i] = compared(t)
		}
		return out
	}
	switch n := n.(type) {
	case QueryAnd:
		return QueryAnd{Terms: each(n.Terms)}
	case QueryOr:
		return QueryOr{Terms: each(n.Terms)}
	case QueryNot:
		return QueryNot{Term: compared(n.Term)}
	case QueryEquals:
		if !n.Field.Attribute {
			n.Value = n.Compared()
			return comparedEquals{n}
		}
	}
	return n
}

// hasWords says whether text (" a b c ") holds " w1 ... wn " (without the final space when
// prefix). A short needle is built on the stack.
func hasWords(text []byte, words []string, prefix bool) bool {
	var buf [64]byte
	needle := append(buf[:0], ' ')
	for i, w := range words {
		if needle = append(needle, w...); i < len(words)-1 || !prefix {
			needle = append(needle, ' ')
		}
	}
	return bytes.Contains(text, needle)
}

// field is the entry's field name, and whether the entry has it.
func (m *entryMatch) field(name string) (string, bool) {
	var s *string
	switch name {
	case FieldMessage:
		return m.e.Message, true
	case FieldLevel:
		return m.e.Level, true
	case FieldSubject:
		s = m.e.Subject
	case FieldUserID:
		s = m.e.UserID
	case FieldTraceID:
		s = m.e.TraceID
	case FieldSpanID:
		s = m.e.SpanID
	}
	if s == nil {
		return "", false
	}
	return *s, true
}

// attr is the entry's attribute key, and whether the entry has it; the attributes are decoded
// on the first call.
func (m *entryMatch) attr(key string) (any, bool) {
	if !m.decoded {
		m.decoded = true
		dec := json.NewDecoder(bytes.NewReader(m.e.Attributes))
		dec.UseNumber()
		var attrs map[string]any
		if dec.Decode(&attrs) == nil {
			m.attrs = attrs
		}
	}
	v, ok := m.attrs[key]
	return v, ok
}

// attrEquals applies QueryEquals q to an attribute's value v.
func attrEquals(v any, q QueryEquals) bool {
	switch v := v.(type) {
	case string:
		return v == q.Value || q.Prefix && strings.HasPrefix(v, q.Value)
	case json.Number:
		x, ok := number(v)
		return ok && q.Number != nil && !q.Prefix && x == *q.Number
	case bool:
		return q.Bool != nil && !q.Prefix && v == *q.Bool
	}
	return false
}

// number is v as a float64 when it is a JSON number that parses to a finite one.
func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseFloat(string(n), 64)
	return x, err == nil
}
