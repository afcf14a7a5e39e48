package domain

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ParseQuery parses text by the grammar of the query language (see Query) within l. An empty
// or all-space text is the zero Query. A text outside the grammar or the limits is a
// *QuerySyntaxError.
//
// Beyond the grammar: the keywords AND, OR and NOT are upper case only; a word may hold a
// backslash escape (`a\:b`), a phrase `\"` and `\\` (a backslash before any character means
// that character); "*" may only end an unquoted word; a field is the entry's own (message,
// level, subject, user_id, trace_id, span_id) or else an attribute key ("attributes." always
// begins one); right after "field:" a "-" is part of the value (temp:-5), and ">", ">=", "<",
// "<=", "[", "{" begin comparisons and ranges (attributes only; "*" is an open bound).
func ParseQuery(text string, l QueryLimits) (Query, error) {
	p := parser{l: l}
	if n := utf8.RuneCountInString(text); n > l.MaxChars {
		p.fail(l.MaxChars, fmt.Sprintf("longer than %d characters", l.MaxChars))
		return Query{}, p.err
	}
	i := 0
	for j, r := range text {
		if r == 0 {
			p.fail(i, "a NUL character")
		} else if r == utf8.RuneError && !strings.HasPrefix(text[j:], "\uFFFD") {
			p.fail(i, "invalid UTF-8")
		}
		i++
	}
	if p.err != nil {
		return Query{}, p.err
	}
	if strings.TrimSpace(text) == "" {
		return Query{}, nil
	}
	p.src = []rune(text)
	root := p.or(nil)
	if p.space(); p.pos < len(p.src) {
		p.unexpected()
	}
	if p.err != nil {
		return Query{}, p.err
	}
	return Query{Root: root}, nil
}

// parser is a recursive-descent parser over a query's runes. The first error sticks: once err
// is set, later ones are ignored, the loops and nesting stop, and ParseQuery answers it.
type parser struct {
	src          []rune
	pos          int
	l            QueryLimits
	depth, terms int
	err          *QuerySyntaxError
}

// fail records the error msg at rune index i (position i+1), unless an error came first.
func (p *parser) fail(i int, msg string) {
	if p.err == nil {
		p.err = &QuerySyntaxError{Pos: i + 1, Msg: msg + " at " + strconv.Itoa(i+1)}
	}
}

func (p *parser) unexpected() {
	if p.err != nil {
		return
	}
	if p.pos >= len(p.src) {
		p.fail(p.pos, "unexpected end of query")
	} else {
		p.fail(p.pos, fmt.Sprintf("unexpected %q", string(p.src[p.pos])))
	}
}

func (p *parser) space() {
	for p.pos < len(p.src) && unicode.IsSpace(p.src[p.pos]) {
		p.pos++
	}
}

func (p *parser) at(r rune) bool { return p.pos < len(p.src) && p.src[p.pos] == r }

// delim says whether r ends an unquoted word.
func delim(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(`():"[]{}`, r) }

// keyword says whether the keyword kw (AND, OR, NOT) is next, after any space, and takes it when
// take is set. A keyword is the bare upper-case word: not escaped, not a field name.
func (p *parser) keyword(kw string, take bool) bool {
	p.space()
	end := p.pos + len(kw)
	if end > len(p.src) || string(p.src[p.pos:end]) != kw || end < len(p.src) && (!delim(p.src[end]) || p.src[end] == ':') {
		return false
	}
	if take {
		p.pos = end
	}
	return true
}

// enter goes one level deeper into parentheses or NOT, the construct being at rune index i,
// and says whether parsing goes on.
func (p *parser) enter(i int) bool {
	if p.depth++; p.depth > p.l.MaxDepth {
		p.fail(i, fmt.Sprintf("nested deeper than %d", p.l.MaxDepth))
	}
	return p.err == nil
}

// leaf counts one more leaf of the tree, the one at rune index i.
func (p *parser) leaf(i int) {
	if p.terms++; p.terms > p.l.MaxTerms {
		p.fail(i, fmt.Sprintf("more than %d terms", p.l.MaxTerms))
	}
}

// or parses an OR of ANDs. f is the field of an enclosing field:(...) group, nil outside one.
func (p *parser) or(f *QueryField) QueryNode {
	terms := []QueryNode{p.and(f)}
	for p.err == nil && p.keyword("OR", true) {
		terms = append(terms, p.and(f))
	}
	return join(terms, false)
}

func (p *parser) and(f *QueryField) QueryNode {
	terms := []QueryNode{p.unary(f)}
	for p.err == nil {
		if p.space(); p.pos == len(p.src) || p.at(')') || p.keyword("OR", false) {
			break
		}
		p.keyword("AND", true)
		terms = append(terms, p.unary(f))
	}
	return join(terms, true)
}

func (p *parser) unary(f *QueryField) QueryNode {
	p.space()
	i := p.pos
	if !p.keyword("NOT", true) {
		if !p.at('-') {
			return p.primary(f)
		}
		p.pos++
	}
	if !p.enter(i) {
		return nil
	}
	n := QueryNot{Term: p.unary(f)}
	p.depth--
	return n
}

func (p *parser) primary(f *QueryField) QueryNode {
	if p.at('(') {
		return p.group(f)
	}
	for _, kw := range [...]string{"AND", "OR"} {
		if p.keyword(kw, false) {
			p.fail(p.pos, fmt.Sprintf("unexpected %q", kw))
			return nil
		}
	}
	return p.term(f)
}

// group parses a parenthesized OR.
func (p *parser) group(f *QueryField) QueryNode {
	if !p.enter(p.pos) {
		return nil
	}
	p.pos++
	n := p.or(f)
	if p.space(); !p.at(')') {
		p.unexpected()
	}
	p.pos++
	p.depth--
	return n
}

// term parses a word, a phrase or field:value; within a field (f not nil), a value of f.
func (p *parser) term(f *QueryField) QueryNode {
	i := p.pos
	if p.pos == len(p.src) {
		p.unexpected()
		return nil
	}
	switch r := p.src[p.pos]; {
	case r == '"':
		return p.value(f, i, p.phrase(), true, false)
	case f != nil && r == '*' && (p.pos+1 == len(p.src) || delim(p.src[p.pos+1])):
		p.pos++
		p.leaf(i)
		return QueryExists{Field: *f}
	case f != nil && strings.ContainsRune("<>[{", r):
		if f.Attribute {
			return p.compare(*f)
		}
		p.fail(i, f.Name+" compares as text; ranges apply to attribute numbers")
		return nil
	case delim(r) || f != nil && r == '=':
		p.unexpected()
		return nil
	}
	text, star := p.word()
	if f != nil || star || !p.at(':') {
		return p.value(f, i, text, false, star)
	}
	field := queryField(text)
	if p.pos++; p.pos == len(p.src) || unicode.IsSpace(p.src[p.pos]) || p.at(')') {
		p.fail(p.pos, fmt.Sprintf("expected a value after %q", string(p.src[i:p.pos])))
		return nil
	}
	if p.at('(') {
		return p.group(&field)
	}
	return p.term(&field)
}

// queryField is the field a term names.
func queryField(name string) QueryField {
	switch name {
	case FieldMessage, FieldLevel, FieldSubject, FieldUserID, FieldTraceID, FieldSpanID:
		return QueryField{Name: name}
	}
	return QueryField{Name: strings.TrimPrefix(name, "attributes."), Attribute: true}
}

// word scans an unquoted word, escapes resolved; star reports a final wildcard.
func (p *parser) word() (text string, star bool) {
	var b strings.Builder
	for ; p.pos < len(p.src) && !delim(p.src[p.pos]); p.pos++ {
		switch r := p.src[p.pos]; r {
		case '\\':
			if p.pos++; p.pos == len(p.src) {
				p.unexpected()
				return "", false
			}
		case '*':
			if p.pos++; p.pos < len(p.src) && !delim(p.src[p.pos]) {
				p.fail(p.pos-1, "a wildcard may only end a word")
			}
			return b.String(), true
		}
		b.WriteRune(p.src[p.pos])
	}
	return b.String(), false
}

// phrase scans a quoted phrase, escapes resolved.
func (p *parser) phrase() string {
	i := p.pos
	var b strings.Builder
	for p.pos++; p.pos < len(p.src); p.pos++ {
		switch p.src[p.pos] {
		case '"':
			p.pos++
			return b.String()
		case '\\':
			if p.pos+1 < len(p.src) {
				p.pos++
			}
		}
		b.WriteRune(p.src[p.pos])
	}
	p.fail(i, "unterminated phrase")
	return ""
}

// value is the leaf for a word or phrase at rune index i: words of the message outside a field
// and in message:, else f's condition.
func (p *parser) value(f *QueryField, i int, text string, quoted, star bool) QueryNode {
	p.leaf(i)
	if f == nil || *f == (QueryField{Name: FieldMessage}) {
		words := Words(text)
		if len(words) == 0 {
			p.fail(i, fmt.Sprintf("%q has no words", string(p.src[i:p.pos])))
		}
		return QueryWords{Words: words, Prefix: star}
	}
	q := QueryEquals{Field: *f, Value: text, Prefix: star}
	switch {
	case !f.Attribute && (f.Name == FieldTraceID || f.Name == FieldSpanID):
		q.Value = strings.ToLower(text)
	case f.Attribute && !quoted && !star:
		q.Number = finite(text)
		if b := text == "true"; b || text == "false" {
			q.Bool = &b
		}
	}
	return q
}

// compare parses >N, >=N, <N, <=N or a range [a TO b] (either bracket of [] and {}) on attribute f.
func (p *parser) compare(f QueryField) QueryNode {
	p.leaf(p.pos)
	q := QueryRange{Field: f}
	switch open := p.src[p.pos]; open {
	case '>', '<':
		p.pos++
		incl := p.at('=')
		if incl {
			p.pos++
		}
		n := p.number(false)
		if open == '>' {
			q.Min, q.MinInclusive = n, incl
		} else {
			q.Max, q.MaxInclusive = n, incl
		}
	default:
		q.MinInclusive = open == '['
		p.pos++
		p.space()
		q.Min = p.number(true)
		if p.space(); p.pos+2 > len(p.src) || string(p.src[p.pos:p.pos+2]) != "TO" {
			p.fail(p.pos, `expected "TO"`)
			return nil
		}
		p.pos += 2
		p.space()
		q.Max = p.number(true)
		if p.space(); !p.at(']') && !p.at('}') {
			p.fail(p.pos, `expected "]" or "}"`)
		}
		q.MaxInclusive = p.at(']')
		p.pos++
	}
	return q
}

// number scans a bound: a finite number, or with open "*" for none (nil).
func (p *parser) number(open bool) *float64 {
	i := p.pos
	for p.pos < len(p.src) && !delim(p.src[p.pos]) {
		p.pos++
	}
	text := string(p.src[i:p.pos])
	if open && text == "*" {
		return nil
	}
	n := finite(text)
	if n == nil {
		p.fail(i, "expected a finite number")
	}
	return n
}

// finite is text as a float64 when it is a finite number, else nil.
func finite(text string) *float64 {
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return nil
	}
	return &n
}

// join is terms ANDed (and) or ORed, an AND inside an AND (an OR inside an OR) joining it; one
// term is itself.
func join(terms []QueryNode, and bool) QueryNode {
	if len(terms) == 1 {
		return terms[0]
	}
	var flat []QueryNode
	for _, t := range terms {
		switch t := t.(type) {
		case QueryAnd:
			if and {
				flat = append(flat, t.Terms...)
				continue
			}
		case QueryOr:
			if !and {
				flat = append(flat, t.Terms...)
				continue
			}
		}
		flat = append(flat, t)
	}
	if and {
		return QueryAnd{Terms: flat}
	}
	return QueryOr{Terms: flat}
}

// String is the canonical text of q: ParseQuery of it gives q again (for any q ParseQuery
// gives). Fields are written out, values escaped or quoted, parentheses only where precedence
// needs them.
func (q Query) String() string {
	var b strings.Builder
	if q.Root != nil {
		writeNode(&b, q.Root, 0)
	}
	return b.String()
}

// writeNode writes n where its context binds as tight as an OR (0), an AND (1) or a NOT (2).
func writeNode(b *strings.Builder, n QueryNode, ctx int) {
	switch n := n.(type) {
	case QueryOr:
		writeTerms(b, n.Terms, " OR ", 0, ctx > 0)
	case QueryAnd:
		writeTerms(b, n.Terms, " ", 1, ctx > 1)
	case QueryNot:
		b.WriteByte('-')
		writeNode(b, n.Term, 2)
	case QueryWords:
		if len(n.Words) > 1 && !n.Prefix {
			b.WriteString(quote(strings.Join(n.Words, " ")))
		} else {
			b.WriteString(strings.Join(n.Words, "-") + pick(n.Prefix, "*", ""))
		}
	case QueryEquals:
		writeField(b, n.Field)
		if n.Prefix || n.Number != nil || n.Bool != nil || !n.Field.Attribute && n.Value != "" {
			b.WriteString(escape(n.Value) + pick(n.Prefix, "*", ""))
		} else {
			b.WriteString(quote(n.Value))
		}
	case QueryExists:
		writeField(b, n.Field)
		b.WriteByte('*')
	case QueryRange:
		writeField(b, n.Field)
		switch {
		case n.Min != nil && n.Max == nil && !n.MaxInclusive:
			b.WriteString(">" + pick(n.MinInclusive, "=", "") + bound(n.Min))
		case n.Max != nil && n.Min == nil && !n.MinInclusive:
			b.WriteString("<" + pick(n.MaxInclusive, "=", "") + bound(n.Max))
		default:
			b.WriteString(pick(n.MinInclusive, "[", "{") + bound(n.Min) + " TO " + bound(n.Max) + pick(n.MaxInclusive, "]", "}"))
		}
	}
}

func writeTerms(b *strings.Builder, terms []QueryNode, sep string, ctx int, paren bool) {
	if paren {
		b.WriteByte('(')
	}
	for i, t := range terms {
		if i > 0 {
			b.WriteString(sep)
		}
		writeNode(b, t, ctx)
	}
	if paren {
		b.WriteByte(')')
	}
}

func writeField(b *strings.Builder, f QueryField) {
	name := f.Name
	if f.Attribute && (!queryField(name).Attribute || name == "" || strings.HasPrefix(name, "attributes.")) {
		name = "attributes." + name
	}
	b.WriteString(escape(name) + ":")
}

func pick(c bool, yes, no string) string {
	if c {
		return yes
	}
	return no
}

func bound(n *float64) string {
	if n == nil {
		return "*"
	}
	return strconv.FormatFloat(*n, 'g', -1, 64)
}

// escape writes s as an unquoted word: a backslash before each syntax character, and before a
// keyword.
func escape(s string) string {
	var b strings.Builder
	if s == "AND" || s == "OR" || s == "NOT" {
		b.WriteByte('\\')
	}
	for i, r := range s {
		if delim(r) || strings.ContainsRune(`\*`, r) || i == 0 && strings.ContainsRune("-<>=", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
