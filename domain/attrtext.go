package domain

import (
	"bytes"
	"encoding/json"
)

// AttributeText finds the top-level member key of attrs, an entry's attributes as stored, and
// returns the JSON text of its value as stored (a number keeps its text, a string its quotes and
// escapes), which is what both stores' member operators answer for it.
//
// It reads the compact form canonicalAttributes writes (no white space between tokens) without
// decoding: a store's facets take one member from each of thousands of entries, and decoding
// each entry's whole object costs several times the scan. ok is false when attrs is not such an
// object at its top level (white space, or a token out of place): the caller then asks the
// store instead. The scan stops at the member it finds, as the text is JSON a store accepted. Empty
// attrs and JSON null hold no member. A key written with escapes is compared decoded.
func AttributeText(attrs []byte, key string) (value []byte, found, ok bool) {
	m := members{b: attrs}
	for m.next() {
		if keyIs(m.key, m.escaped, key) {
			return m.value, true, true
		}
	}
	return nil, false, m.ok
}

// AttributeKeys calls fn with each top-level key of attrs, attributes as stored, decoded (fn must
// not keep the slice). It reads the form AttributeText reads, and ok is false when attrs is not
// in it; fn may have been called for some keys by then.
func AttributeKeys(attrs []byte, fn func(key []byte)) (ok bool) {
	m := members{b: attrs}
	for m.next() {
		if !m.escaped {
			fn(m.key[1 : len(m.key)-1])
			continue
		}
		k, ok := decodedKey(m.key)
		if !ok {
			return false
		}
		fn([]byte(k))
	}
	return m.ok
}

// members walks the top-level members of compact JSON object text b (see AttributeText): each
// call of next moves to the next member, setting key (its JSON text, quotes included), whether
// the key holds an escape, and value (its JSON text). Once next returns false, ok tells the end
// of the object from text out of form. Empty text and null are an object without members.
type members struct {
	b           []byte
	i           int // where the next member starts; 0 before the first
	key, value  []byte
	escaped, ok bool
	started     bool
	closed      bool // the object's closing brace is read
	done        bool
}

func (m *members) next() bool {
	if m.done {
		return false
	}
	b := m.b
	if !m.started {
		m.started = true
		switch {
		case len(b) == 0 || string(b) == "null":
			return m.end(true)
		case b[0] != '{':
			return m.end(false)
		case len(b) > 1 && b[1] == '}':
			return m.end(len(b) == 2)
		}
		m.i = 1
	}
	if m.closed {
		return m.end(true)
	}
	i := m.i
	if i >= len(b) || b[i] != '"' {
		return m.end(false)
	}
	end, escaped := skipString(b, i)
	if end < 0 || end >= len(b) || b[end] != ':' {
		return m.end(false)
	}
	ve := skipValue(b, end+1)
	if ve < 0 || ve >= len(b) {
		return m.end(false)
	}
	switch b[ve] {
	case ',':
		m.i = ve + 1
	case '}':
		if ve+1 != len(b) {
			return m.end(false)
		}
		m.closed = true // the last member: the next call ends the walk
	default:
		return m.end(false)
	}
	m.key, m.escaped, m.value = b[i:end], escaped, b[end+1:ve]
	return true
}

// end stops the walk: ok says whether the text was in form.
func (m *members) end(ok bool) bool {
	m.done, m.ok = true, ok
	return false
}

// keyIs reports whether the member key quoted (its JSON text, quotes included) is key: the text
// between the quotes itself when it holds no escape, else quoted decoded.
func keyIs(quoted []byte, escaped bool, key string) bool {
	if !escaped {
		return string(quoted[1:len(quoted)-1]) == key
	}
	k, ok := decodedKey(quoted)
	return ok && k == key
}

// decodedKey is the key written with escapes as quoted (its JSON text), decoded.
func decodedKey(quoted []byte) (string, bool) {
	var k string
	err := json.Unmarshal(quoted, &k)
	return k, err == nil
}

// skipString returns the index just past the string starting at b[i] (a quote), and whether it
// holds an escape; -1 when it does not end.
func skipString(b []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(b); {
		q := bytes.IndexByte(b[j:], '"')
		if q < 0 {
			return -1, escaped
		}
		q += j
		// The quote ends the string unless an odd number of backslashes escape it.
		bs := 0
		for k := q - 1; k > i && b[k] == '\\'; k-- {
			bs++
		}
		if !escaped && bytes.IndexByte(b[j:q], '\\') >= 0 {
			escaped = true
		}
		if bs%2 == 0 {
			return q + 1, escaped
		}
		j = q + 1
	}
	return -1, escaped
}

// skipValue returns the index just past the compact JSON value starting at b[i]; -1 when there
// is none there or it does not end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, _ := skipString(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter, and not empty.
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']':
			if j == i {
				return -1
			}
			return j
		case ':', '{', '[', '"', ' ', '\t', '\r', '\n':
			return -1
		}
	}
	return -1
}
