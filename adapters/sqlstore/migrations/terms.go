package migrations

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"strconv"
)

// AttributeTerms are the terms of an entry's attributes, whose hashes (TermHashes) PostgreSQL's
// logs.attr_terms holds (migration 00011), its GIN index the start of an attribute equality:
// one term per top-level member
// whose value a QueryEquals can match, "s:KEY=VALUE" for a string, "n:KEY=FLOAT" for a JSON
// number that is a finite float64 (its value as float64, -0 as 0, in the shortest form that
// reads back), "b:KEY=true" or "b:KEY=false" for a boolean, with KEY and a string's VALUE
// quoted by strconv.Quote, so no two members give one term. Objects, arrays, null and numbers
// beyond float64 give none. nil when there is none (the column is then NULL). The store renders
// a condition's candidate terms with the same functions (StringTerm, NumberTerm, BoolTerm).
func AttributeTerms(attrs []byte) []string {
	if len(attrs) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(attrs))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil // the domain stores objects only; anything else has no terms
	}
	var out []string
	for k, v := range obj {
		switch v := v.(type) {
		case string:
			out = append(out, StringTerm(k, v))
		case bool:
			out = append(out, BoolTerm(k, v))
		case json.Number:
			if f, err := strconv.ParseFloat(string(v), 64); err == nil {
				out = append(out, NumberTerm(k, f))
			}
		}
	}
	return out
}

// StringTerm is the term of a string member.
func StringTerm(key, value string) string {
	return "s:" + strconv.Quote(key) + "=" + strconv.Quote(value)
}

// NumberTerm is the term of a number member of value f (finite).
func NumberTerm(key string, f float64) string {
	if f == 0 {
		f = 0 // -0 equals 0
	}
	return "n:" + strconv.Quote(key) + "=" + strconv.FormatFloat(f, 'g', -1, 64)
}

// BoolTerm is the term of a boolean member.
func BoolTerm(key string, b bool) string {
	return "b:" + strconv.Quote(key) + "=" + strconv.FormatBool(b)
}

// TermHashes is what logs.attr_terms holds for terms: each term's 32-bit FNV-1a hash, as an
// int4. A hash takes 4 bytes where the term took its length (164 bytes an entry for four
// typical attributes, against 16 hashed); two terms with one hash only make the index's
// candidates more, never fewer, and the exact test follows. nil for no terms.
func TermHashes(terms []string) []int32 {
	if len(terms) == 0 {
		return nil
	}
	out := make([]int32, len(terms))
	for i, t := range terms {
		h := fnv.New32a()
		_, _ = h.Write([]byte(t)) // a hash.Hash never fails
		out[i] = int32(h.Sum32())
	}
	return out
}
