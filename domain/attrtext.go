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
	if len(attrs) == 0 || string(attrs) == "null" {
		return nil, false, true
	}
	if attrs[0] != '{' {
		return nil, false, false
	}
	i := 1
	if i < len(attrs) && attrs[i] == '}' {
		return nil, false, i+1 == len(attrs)
	}
	for i < len(attrs) {
		if attrs[i] != '"' {
			return nil, false, false
		}
		end, escaped := skipString(attrs, i)
		if end < 0 || end >= len(attrs) || attrs[end] != ':' {
			return nil, false, false
		}
		rawKey := attrs[i+1 : end-1]
		vs := end + 1
		ve := skipValue(attrs, vs)
		if ve < 0 || ve >= len(attrs) {
			return nil, false, false
		}
		if keyIs(attrs[i:end], rawKey, escaped, key) {
			return attrs[vs:ve], true, true
		}
		switch attrs[ve] {
		case ',':
			i = ve + 1
		case '}':
			return nil, false, ve+1 == len(attrs)
		default:
			return nil, false, false
		}
	}
	return nil, false, false
}

// keyIs reports whether the member key quoted (its JSON text) and raw (between the quotes) is
// key: raw itself when it holds no escape, else quoted decoded.
func keyIs(quoted, raw []byte, escaped bool, key string) bool {
	if !escaped {
		return string(raw) == key
	}
	var k string
	return json.Unmarshal(quoted, &k) == nil && k == key
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
