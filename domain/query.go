package domain

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The query language: the value of the query parameter of GET /logs, DELETE /logs,
// GET /logs/stats, GET /logs/tail, GET /logs/facets and GET /logs/fields. ParseQuery turns its
// text into a Query, a tree of the node types below; Query.Matches is the one Go evaluator (the
// live tail's), and each store renders the same tree to SQL. The two must agree exactly: the
// semantics written on each node type are the contract both implement.
//
// Grammar (precedence from loosest: OR, then AND (also implicit between terms), then NOT and a
// leading "-"):
//
//	query   = or
//	or      = and { "OR" and }
//	and     = unary { ["AND"] unary }
//	unary   = ("NOT" | "-") unary | primary
//	primary = "(" or ")" | field ":" value | field ":" "(" values ")" | words
//	values  = value-or   (the same OR/AND/NOT grammar over values, each applied to field)
//	value   = word | word "*" | phrase | "*" | (">"|">="|"<"|"<=") number
//	        | ("[" | "{") bound "TO" bound ("]" | "}")    ([ ] inclusive, { } exclusive)
//	bound   = number | "*"                                 (* leaves that side open)
//	phrase  = '"' { char | '\"' | '\\' } '"'
//
// Keywords are upper case only; a backslash escapes any character in a word. A "-" right after
// "field:" belongs to the value (temp:-5 is the number -5); elsewhere a leading "-" is NOT.
//
// Words of a message are defined once, by Words: the maximal runs of letters, numbers and "_",
// each folded by FoldCase.

// Query is a parsed query: a tree of conditions on one entry. The zero Query (Root nil) matches
// every entry.
type Query struct {
	Root QueryNode
}

// QueryNode is one node of a Query's tree: QueryAnd, QueryOr, QueryNot, QueryWords,
// QueryEquals, QueryExists or QueryRange.
type QueryNode interface{ queryNode() }

// QueryAnd matches an entry that every term matches.
type QueryAnd struct{ Terms []QueryNode }

// QueryOr matches an entry that any term matches.
type QueryOr struct{ Terms []QueryNode }

// QueryNot matches an entry that Term does not match. A condition on something the entry does
// not have is false, so its QueryNot is true.
type QueryNot struct{ Term QueryNode }

// The entry's own fields a term may name; any other name is an attribute key. The prefix
// "attributes." always names an attribute (attributes.level is the attribute "level").
const (
	FieldMessage = "message"
	FieldLevel   = "level"
	FieldSubject = "subject"
	FieldUserID  = "user_id"
	FieldTraceID = "trace_id"
	FieldSpanID  = "span_id"
)

// QueryField is what a term looks at: one of the entry's fields (Attribute false, Name one of the
// Field constants) or the top-level attribute with key Name (Attribute true).
type QueryField struct {
	Name      string
	Attribute bool
}

// QueryWords matches an entry whose message, as Words splits it, holds Words in a row: with
// Prefix, the last of them need only begin the message's word in its place. Words are folded
// (FoldCase) and hold at least one word. A bare term, a phrase and message:... all parse to it:
// "payment declined" matches "payment, declined!". Equivalently, with W the message's words each
// followed by one space and preceded by one (" a b c "), it matches when W contains " w1 w2 ... wn "
// (without the final space when Prefix).
type QueryWords struct {
	Words  []string
	Prefix bool
}

// QueryEquals matches an entry whose field equals Value (with Prefix: begins with Value):
//   - level: the entry's level equals CanonicalLevel(Value) (with Prefix: begins with Value
//     as written);
//   - subject, user_id: the string, exactly (case and all);
//   - trace_id, span_id: the id, Value taken in lower case;
//   - an attribute: a string value equal to Value (with Prefix: beginning with it); or, when
//     Value is a number (Number set, Prefix false), a JSON number equal to it as 64-bit
//     floating point (so :500 matches 500, 500.0 and "500"); or, when Value is true or false
//     (Bool set, Prefix false), that boolean (and the string "true" or "false"). Objects,
//     arrays and null equal nothing.
//
// message never parses to QueryEquals (see QueryWords).
type QueryEquals struct {
	Field  QueryField
	Value  string
	Prefix bool
	// Number is Value as a float64 when it is a finite number and Prefix is false.
	Number *float64
	// Bool is Value as a boolean when it is true or false and Prefix is false.
	Bool *bool
}

// Compared is the value an entry's own field (not an attribute) is compared with for n, by the
// Go evaluator and by every store: a trace or span id in lower case, a level (unless a prefix)
// canonical, the rest as written.
func (n QueryEquals) Compared() string {
	switch {
	case n.Field.Name == FieldTraceID || n.Field.Name == FieldSpanID:
		return strings.ToLower(n.Value)
	case n.Field.Name == FieldLevel && !n.Prefix:
		return CanonicalLevel(n.Value)
	}
	return n.Value
}

// QueryExists matches an entry that has the field: subject, user_id, trace_id and span_id when
// not null; message and level always; an attribute when its key is present (whatever its value,
// null included).
type QueryExists struct{ Field QueryField }

// QueryRange matches an entry whose attribute is a JSON number within the bounds, compared as
// 64-bit floating point: greater than Min (or equal, with MinInclusive) when Min is set, less
// than Max (or equal, with MaxInclusive) when Max is set. Ranges compare numbers only: a string
// attribute, or an entry without the attribute, never matches. Only attributes have ranges.
type QueryRange struct {
	Field        QueryField
	Min, Max     *float64
	MinInclusive bool
	MaxInclusive bool
}

func (QueryAnd) queryNode()    {}
func (QueryOr) queryNode()     {}
func (QueryNot) queryNode()    {}
func (QueryWords) queryNode()  {}
func (QueryEquals) queryNode() {}
func (QueryExists) queryNode() {}
func (QueryRange) queryNode()  {}

// QueryLimits bound a query's text and tree (configuration; DefaultLimits states the contract's).
type QueryLimits struct {
	// MaxChars is the longest query text in characters.
	MaxChars int
	// MaxDepth is how deeply parentheses and NOT may nest.
	MaxDepth int
	// MaxTerms is the most terms (leaves of the tree: words, phrases, field conditions) one
	// query may hold.
	MaxTerms int
}

// QuerySyntaxError is ParseQuery's answer to a text outside the grammar or the limits: Pos is
// the 1-based character position where the problem is found, Msg says it
// (`unexpected ")" at 17`).
type QuerySyntaxError struct {
	Pos int
	Msg string
}

func (e *QuerySyntaxError) Error() string { return e.Msg }

// Words splits s into its words as the query language sees them: the maximal runs of letters
// (unicode.IsLetter), numbers (unicode.IsNumber) and "_", each folded by FoldCase. A request id
// such as 739a4b5df5876246 is one word; "payment, declined!" is two.
func Words(s string) []string {
	var words []string
	for w := range strings.FieldsFuncSeq(FoldCase(s), notWordRune) {
		words = append(words, w)
	}
	return words
}

// WordText is s's words (Words) joined by single spaces: the form in which a store keeps a
// message's words, so that a QueryWords is a substring test on " "+WordText+" ".
func WordText(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.Join(strings.FieldsFunc(FoldCase(s), notWordRune), " ")
		}
	}
	return asciiWordText(s)
}

// asciiWordText is WordText of an ASCII s in one pass. It leaves s as it is when s is its own
// word text.
func asciiWordText(s string) string {
	same := true
	for i := 0; i < len(s) && same; i++ {
		c := s[i]
		word := c == '_' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
		space := c == ' ' && i > 0 && i < len(s)-1 && s[i+1] != ' '
		same = word || space
	}
	if same {
		return s
	}
	return string(appendASCIIWords(make([]byte, 0, len(s)), s))
}

// appendASCIIWords appends the words of an ASCII s to dst, one space between them: for ASCII,
// letters and numbers are [A-Za-z0-9] and folding lowers A-Z, so the words are copied lowered.
// The words take at most len(s) bytes: dst grows once, and they are written in place.
func appendASCIIWords(dst []byte, s string) []byte {
	first := len(dst)
	dst = slices.Grow(dst, len(s))
	b := dst[:first+len(s)]
	j, gap := first, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '_':
		case 'A' <= c && c <= 'Z':
			c += 'a' - 'A'
		default:
			gap = true
			continue
		}
		if gap && j > first {
			b[j] = ' '
			j++
		}
		gap = false
		b[j] = c
		j++
	}
	return b[:j]
}

// appendPaddedWordText appends " " + WordText(s) + " " to dst: the text a QueryWords is looked
// for in.
func appendPaddedWordText(dst []byte, s string) []byte {
	dst = append(dst, ' ')
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(append(dst, WordText(s)...), ' ')
		}
	}
	return append(appendASCIIWords(dst, s), ' ')
}

func notWordRune(r rune) bool {
	return r != '_' && !unicode.IsLetter(r) && !unicode.IsNumber(r)
}
