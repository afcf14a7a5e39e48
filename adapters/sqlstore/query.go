package sqlstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"example.com/obsvc/adapters/sqlstore/migrations"
	"example.com/obsvc/domain"
)

// The query language rendered to SQL: one function per node type of domain.Query, each giving a
// condition that is exactly the node's semantics (domain/query.go) and is never NULL, so that NOT
// of it is its complement: a condition on a field the entry does not have is false, and its NOT
// true. Values are always arguments (? placeholders), never part of the text; only the shape of
// the tree and the engine decide the text. Where the engines differ (a message's words, an
// attribute's value, a prefix) the engine renders the leaf (queryWords, queryAttribute,
// hasPrefix on the engine seam, store.go).

// attrTest is what a leaf asks of one attribute's value; the engine renders it over the value
// of the top-level key. The conditions set are ORed (QueryEquals: the string, the number, the
// boolean), but a range stands alone.
type attrTest struct {
	exists  bool     // the key is present, whatever its value (null included)
	str     *string  // a string value equal to it (beginning with it, with prefix)
	prefix  bool     // str is a prefix
	num     *float64 // a number equal to it as float64
	boolean *bool    // that boolean
	// rng: a number within the bounds, as float64.
	rng              bool
	min, max         *float64
	minIncl, maxIncl bool
}

// renderQuery renders n as a condition for a WHERE clause over logs with its arguments in
// textual order.
func renderQuery(e engine, n domain.QueryNode) (string, []any) {
	var args []any
	var b strings.Builder
	renderNode(e, &b, &args, n)
	return b.String(), args
}

func renderNode(e engine, b *strings.Builder, args *[]any, n domain.QueryNode) {
	switch n := n.(type) {
	case domain.QueryAnd:
		renderTerms(e, b, args, n.Terms, " AND ", "1 = 1")
	case domain.QueryOr:
		renderTerms(e, b, args, n.Terms, " OR ", "1 = 0")
	case domain.QueryNot:
		renderNot(e, b, args, n)
	case domain.QueryWords:
		renderWords(e, b, args, n)
	case domain.QueryEquals:
		renderEquals(e, b, args, n)
	case domain.QueryExists:
		renderExists(e, b, args, n)
	case domain.QueryRange:
		renderRange(e, b, args, n)
	default:
		// The domain's tree has no other node type; an unknown one matches nothing rather
		// than everything (a DELETE must never widen).
		b.WriteString("1 = 0")
	}
}

// renderTerms renders AND or OR of terms in parentheses; empty is the operator's identity.
func renderTerms(e engine, b *strings.Builder, args *[]any, terms []domain.QueryNode, op, empty string) {
	if len(terms) == 0 {
		b.WriteString(empty)
		return
	}
	b.WriteByte('(')
	for i, t := range terms {
		if i > 0 {
			b.WriteString(op)
		}
		renderNode(e, b, args, t)
	}
	b.WriteByte(')')
}

// renderNot is NOT of its term, which is never NULL (every leaf is two-valued).
func renderNot(e engine, b *strings.Builder, args *[]any, n domain.QueryNot) {
	b.WriteString("NOT (")
	renderNode(e, b, args, n.Term)
	b.WriteByte(')')
}

// renderWords is the engine's word search of the message (see queryWords).
func renderWords(e engine, b *strings.Builder, args *[]any, n domain.QueryWords) {
	if len(n.Words) == 0 { // the domain never builds it; every message holds no words in a row
		b.WriteString("1 = 1")
		return
	}
	cond, a := e.queryWords(n.Words, n.Prefix)
	b.WriteString(cond)
	*args = append(*args, a...)
}

// fieldColumn is the column of one of the entry's own fields; nullable says whether it may be
// NULL (the entry does not have the field).
func fieldColumn(name string) (column string, nullable bool, ok bool) {
	switch name {
	case domain.FieldLevel:
		return "level", false, true
	case domain.FieldSubject:
		return "subject", true, true
	case domain.FieldUserID:
		return "user_id", true, true
	case domain.FieldTraceID:
		return "trace_id", true, true
	case domain.FieldSpanID:
		return "span_id", true, true
	}
	return "", false, false
}

// renderEquals: a field compared with its column (level by its canonical form, ids in lower
// case), an attribute by the engine. A nullable column is tested for NULL first, so the
// condition is false, never NULL, on an entry without the field.
func renderEquals(e engine, b *strings.Builder, args *[]any, n domain.QueryEquals) {
	if n.Field.Attribute {
		t := attrTest{str: &n.Value, prefix: n.Prefix}
		if !n.Prefix {
			t.num, t.boolean = n.Number, n.Bool
		}
		cond, a := e.queryAttribute(n.Field.Name, t)
		b.WriteString(cond)
		*args = append(*args, a...)
		return
	}
	if n.Field.Name == domain.FieldMessage { // the parser never builds it: message:x is QueryWords
		renderWords(e, b, args, domain.QueryWords{Words: domain.Words(n.Value), Prefix: n.Prefix})
		return
	}
	column, nullable, ok := fieldColumn(n.Field.Name)
	if !ok {
		b.WriteString("1 = 0")
		return
	}
	value := n.Compared()
	cond := column + " = ?"
	if n.Prefix {
		cond = e.hasPrefix(column)
	}
	if nullable {
		cond = column + " IS NOT NULL AND " + cond
	}
	b.WriteString("(" + cond + ")")
	*args = append(*args, value)
}

// renderExists: message and level always; the other fields when not NULL; an attribute when its
// key is present.
func renderExists(e engine, b *strings.Builder, args *[]any, n domain.QueryExists) {
	if n.Field.Attribute {
		cond, a := e.queryAttribute(n.Field.Name, attrTest{exists: true})
		b.WriteString(cond)
		*args = append(*args, a...)
		return
	}
	if n.Field.Name == domain.FieldMessage {
		b.WriteString("1 = 1")
		return
	}
	column, nullable, ok := fieldColumn(n.Field.Name)
	switch {
	case !ok:
		b.WriteString("1 = 0")
	case !nullable:
		b.WriteString("1 = 1")
	default:
		b.WriteString("(" + column + " IS NOT NULL)")
	}
}

// renderRange: attributes only; a range on one of the entry's own fields matches nothing (its
// values are not JSON numbers).
func renderRange(e engine, b *strings.Builder, args *[]any, n domain.QueryRange) {
	if !n.Field.Attribute {
		b.WriteString("1 = 0")
		return
	}
	cond, a := e.queryAttribute(n.Field.Name, attrTest{rng: true, min: n.Min, max: n.Max, minIncl: n.MinInclusive, maxIncl: n.MaxInclusive})
	b.WriteString(cond)
	*args = append(*args, a...)
}

// wordNeedle is what a QueryWords looks for in " "+WordText+" ": " w1 ... wn " (without the
// last space with prefix).
func wordNeedle(words []string, prefix bool) string {
	needle := " " + strings.Join(words, " ")
	if !prefix {
		needle += " "
	}
	return needle
}

// numberTests renders the number conditions of t (an equality or a range) over x, an SQL
// expression of the value as a float (NULL when it is not a finite float64), with ? for each
// bound; cast wraps a placeholder as the engine types it.
func numberTests(t attrTest, x string, cast func(string) string) (string, []any) {
	if t.rng {
		conds := []string{x + " IS NOT NULL"}
		var args []any
		for _, b := range []struct {
			bound     *float64
			op, opEq  string
			inclusive bool
		}{{t.min, " > ", " >= ", t.minIncl}, {t.max, " < ", " <= ", t.maxIncl}} {
			if b.bound != nil {
				op := map[bool]string{false: b.op, true: b.opEq}[b.inclusive]
				conds = append(conds, x+op+cast("?"))
				args = append(args, *b.bound)
			}
		}
		return strings.Join(conds, " AND "), args
	}
	if t.num == nil {
		return "", nil
	}
	return x + " = " + cast("?"), []any{*t.num}
}

// orJoin joins the non-empty conditions with OR, in parentheses; none is false.
func orJoin(conds ...string) string {
	var keep []string
	for _, c := range conds {
		if c != "" {
			keep = append(keep, "("+c+")")
		}
	}
	if len(keep) == 0 {
		return "1 = 0"
	}
	return "(" + strings.Join(keep, " OR ") + ")"
}

// float8Overflow is 2^1024 - 2^970, half an ulp above math.MaxFloat64: a decimal at least this
// large rounds to infinity (ties go to the even 2^1024), which float64 parsing reports as out of range.
const float8Overflow = "179769313486231580793728971405303415079934132710037826936173778980444968292764750946649017977587207096330286416692887910946555547851940402630657488671505820681908902000708383676273854845817711531764475730270069855571366959622842914819860834936475292719074168444365510704342711559699508093042880177904174497792"

// float8Underflow is 2^-1075, half the least subnormal float64: a decimal no larger rounds to
// zero (the tie goes to the even zero).
const float8Underflow = "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000024703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125"

// queryWords on SQLite: when few entries hold the phrase (sqlitePlan), the FTS5 table
// logs_words (migration 00011) answers the whole test. Its tokenizer (ascii, with "_" a token
// character) splits a message's WordText exactly at its spaces, since a word holds only letters,
// digits and "_" and every non-ASCII character is a token character, and folds nothing a folded
// word still has to fold; so its tokens are the message's words, and the phrase "w1 ... wn"
// (with "*", its last token a prefix) is exactly " w1 ... wn " in " "+WordText+" " (without the
// last space with a prefix). rowid ties a row of logs_words to its entry. Otherwise each entry
// read is tested: that substring of obsvc_words(message) (sqliteDriver), the same words, so the
// same answer, at a cost per entry read rather than per entry holding the phrase (the newest
// 100 with a common word read a few hundred entries, not the word's whole list).
func (e sqliteEngine) queryWords(words []string, prefix bool) (string, []any) {
	if phrase := wordsMatch(words, prefix); e.indexed[phrase] {
		return "(logs.rowid IN (SELECT rowid FROM logs_words WHERE logs_words MATCH ?))", []any{phrase}
	}
	return "(instr(" + sqliteWordsFunc + "(logs.message), ?) > 0)", []any{wordNeedle(words, prefix)}
}

// wordsMatch is the FTS5 MATCH expression of a QueryWords: its words as one phrase, "*" after
// it with a prefix.
func wordsMatch(words []string, prefix bool) string {
	phrase := `"` + strings.ReplaceAll(strings.Join(words, " "), `"`, `""`) + `"`
	if prefix {
		phrase += " *"
	}
	return phrase
}

// termsMatch is the FTS5 MATCH expression of an attribute equality's candidate terms
// (equalityTerms) in logs_terms (migration 00012): any of their tokens.
func termsMatch(terms []string) string {
	hashes := migrations.TermHashes(terms)
	tokens := make([]string, len(hashes))
	for i, h := range hashes {
		tokens[i] = migrations.TermToken(h)
	}
	return strings.Join(tokens, " OR ")
}

// hasPrefix on SQLite: instr finds the first occurrence, which is at 1 exactly when the column
// begins with the value (bytes of UTF-8, so characters).
func (sqliteEngine) hasPrefix(column string) string { return "instr(" + column + ", ?) = 1" }

// sqliteFloat is an attribute's value (j, a row of json_each) as a finite float64, else NULL:
// an integer is converted (rounded to nearest, as float64 parsing rounds its digits), a JSON
// number beyond float64's range (1e400) reads as an infinity, which is no finite float.
const sqliteFloat = "(CASE WHEN j.type IN ('integer', 'real') AND abs(CAST(j.value AS REAL)) <= 1.7976931348623157e308 THEN CAST(j.value AS REAL) END)"

// queryAttribute on SQLite opens the attributes with json_each and looks for the top-level
// member whose key is the text given (a path would need the key quoted, and SQLite's paths
// cannot quote every key): any key, with dots, quotes, "$", brackets or any script, is matched
// exactly. EXISTS is never NULL.
//
// An equality that few entries match (sqlitePlan) first finds its candidates in logs_terms
// (migration 00012): an entry matching it holds one of its terms, whose tokens the FTS5 table
// lists; the exact test follows.
func (e sqliteEngine) queryAttribute(key string, t attrTest) (string, []any) {
	q := "EXISTS (SELECT 1 FROM json_each(logs.attributes) j WHERE j.key = ?"
	args := []any{key}
	if !t.exists {
		cond, more, _ := valueTests(t, sqliteAttr)
		q += " AND " + cond
		args = append(args, more...)
	}
	q += ")"
	if terms := equalityTerms(key, t); terms != nil {
		if m := termsMatch(terms); e.indexed[m] {
			return "(logs.rowid IN (SELECT rowid FROM logs_terms WHERE logs_terms MATCH ?) AND " + q + ")", append([]any{m}, args...)
		}
	}
	return q, args
}

// sqliteAttr tests a row of json_each: its type and value.
var sqliteAttr = attrSQL{
	eq:      "j.type = 'text' AND j.value = ?",
	prefix:  "j.type = 'text' AND instr(j.value, ?) = 1",
	boolean: func(b bool) string { return "j.type = '" + strconv.FormatBool(b) + "'" },
	float:   sqliteFloat,
	cast:    func(p string) string { return "CAST(" + p + " AS REAL)" },
}

// queryWords on PostgreSQL: the exact test is a substring of " "+WordText+" " (containsText:
// strpos, or a literal regular expression for a long phrase), WordText being the column words or,
// for an ASCII message, derived from it (migrations.WordsExpr); before it, the whole words (all
// but a prefix's last) with the project's id as an array contained in the entry's
// (migrations.ProjectWordsExpr @> ...), which the GIN index logs_words (migration 00016)
// answers, so a needle reads only the project's entries holding all its words.
func (e postgresEngine) queryWords(words []string, prefix bool) (string, []any) {
	whole := words
	if prefix {
		whole = words[:len(words)-1]
	}
	cond, arg := e.containsText("(' ' || "+migrations.WordsExpr+" || ' ')", wordNeedle(words, prefix))
	if len(whole) == 0 {
		return "(" + cond + ")", []any{arg}
	}
	return "(" + migrations.ProjectWordsExpr + " @> (ARRAY[CAST(CAST(? AS uuid) AS text)] || CAST(? AS text[])) AND " + cond + ")",
		[]any{e.project, pq.Array(whole), arg}
}

// hasPrefix on PostgreSQL: starts_with compares bytes of UTF-8, so characters.
func (postgresEngine) hasPrefix(column string) string {
	return "starts_with(" + column + ", CAST(? AS text))"
}

// pgFloat is an attribute's value (a.v, json) as a float64, else NULL, without ever raising an
// error: CAST(text AS float8) fails on a number that overflows or underflows to zero, and
// CAST(text AS numeric) on one beyond numeric's range (1e131072, or thousands of digits), so the
// number's text is taken apart first (p: its integer digits, fraction digits and exponent; m:
// its significant digits and the decimal exponent of the first of them). Well inside float8's
// range the text is cast as it is (correctly rounded); far outside, it is infinite (NULL, not a
// finite number) or zero; near either edge its first 800 significant digits are compared, as
// numeric, with the exact bounds of rounding to infinity or zero.
const pgFloat = `(CASE WHEN m.sig = '' THEN CAST(0 AS float8)` +
	` WHEN length(p.ed) > 6 AND p.en THEN CAST(0 AS float8)` +
	` WHEN length(p.ed) > 6 THEN NULL` +
	` WHEN m.e BETWEEN -300 AND 300 THEN CAST(n.t AS float8)` +
	` WHEN m.e > 309 THEN NULL` +
	` WHEN m.e < -326 THEN CAST(0 AS float8)` +
	` WHEN CAST('0.' || left(m.sig, 800) || 'e' || (m.e + 1) AS numeric) >= ` + float8Overflow + ` THEN NULL` +
	` WHEN CAST('0.' || left(m.sig, 800) || 'e' || (m.e + 1) AS numeric) <= ` + float8Underflow + ` THEN CAST(0 AS float8)` +
	` ELSE CAST(n.t AS float8) END)`

// pgNumberParts are the lateral subqueries pgFloat reads. The text holds no question mark:
// every ? is a placeholder to sqlx's Rebind, inside a string literal too.
const pgNumberParts = ` CROSS JOIN LATERAL (SELECT CASE WHEN json_typeof(a.v) = 'number' THEN CAST(a.v AS text) END AS t) n` +
	` CROSS JOIN LATERAL (SELECT substring(n.t from '^-{0,1}0*([0-9]*)') AS i, COALESCE(substring(n.t from '\.([0-9]+)'), '') AS f,` +
	` COALESCE(substring(n.t from '[eE][-+]{0,1}0*([0-9]+)$'), '0') AS ed, n.t ~ '[eE]-' AS en) p` +
	` CROSS JOIN LATERAL (SELECT ltrim(p.i || p.f, '0') AS sig,` +
	` CASE WHEN p.i <> '' THEN length(p.i) - 1 ELSE length(ltrim(p.f, '0')) - length(p.f) - 1 END` +
	` + CASE WHEN length(p.ed) > 6 THEN 0 WHEN p.en THEN -CAST(p.ed AS int) ELSE CAST(p.ed AS int) END AS e) m`

// queryAttribute on PostgreSQL reads the top-level member by its key (json's ->, which takes
// the key as text, whatever it holds; SQL NULL when absent, the json null when null) in a
// subquery, tests its json_typeof, and for numbers its value as pgFloat gives it. EXISTS is
// never NULL. attributes stays json: jsonb would refuse numbers beyond numeric's range.
func (e postgresEngine) queryAttribute(key string, t attrTest) (string, []any) {
	cond, more, num := valueTests(t, postgresAttr)
	args := []any{key}
	q := "EXISTS (SELECT 1 FROM (SELECT logs.attributes -> CAST(? AS text) AS v) a"
	if num {
		q += pgNumberParts
	}
	q += " WHERE a.v IS NOT NULL"
	if !t.exists {
		q += " AND " + cond
		args = append(args, more...)
	}
	q += ")"
	if terms := equalityTerms(key, t); terms != nil {
		// An equality's candidates from the GIN index logs_attr_terms: an entry matching it
		// holds one of these terms (migrations.AttributeTerms), whose hashes the index finds
		// beside the project's id (migrations.ProjectTermsExpr), one lookup per hash.
		hashes := migrations.TermHashes(terms)
		lookups := make([]string, len(hashes))
		var targs []any
		for i, h := range hashes {
			lookups[i] = migrations.ProjectTermsExpr + " @> ARRAY[CAST(CAST(? AS uuid) AS text), ?]"
			targs = append(targs, e.project, strconv.Itoa(int(h)))
		}
		q = "(attr_terms IS NOT NULL AND (" + strings.Join(lookups, " OR ") + ") AND " + q + ")"
		args = append(targs, args...)
	}
	return q, args
}

// postgresAttr tests a.v, the member's json: its json_typeof and its text.
var postgresAttr = attrSQL{
	eq:     "json_typeof(a.v) = 'string' AND (a.v #>> '{}') = CAST(? AS text)",
	prefix: "json_typeof(a.v) = 'string' AND starts_with(a.v #>> '{}', CAST(? AS text))",
	boolean: func(b bool) string {
		return "json_typeof(a.v) = 'boolean' AND (a.v #>> '{}') = '" + strconv.FormatBool(b) + "'"
	},
	float: pgFloat,
	cast:  func(p string) string { return "CAST(" + p + " AS float8)" },
}

// attrSQL is how an engine tests an attribute's value: a string equal to (eq) or beginning with
// (prefix) the argument, a boolean, and the value as a finite float (float, NULL otherwise)
// against bounds cast by cast.
type attrSQL struct {
	eq, prefix string
	boolean    func(bool) string
	float      string
	cast       func(string) string
}

// valueTests renders t's tests of an attribute's value, ORed, and their arguments in order;
// num reports whether a number test is among them.
func valueTests(t attrTest, d attrSQL) (cond string, args []any, num bool) {
	var conds []string
	if t.str != nil {
		c := d.eq
		if t.prefix {
			c = d.prefix
		}
		conds = append(conds, c)
		args = append(args, *t.str)
	}
	n, numArgs := numberTests(t, d.float, d.cast)
	conds = append(conds, n)
	args = append(args, numArgs...)
	if t.boolean != nil {
		conds = append(conds, d.boolean(*t.boolean))
	}
	return orJoin(conds...), args, n != ""
}

// equalityTerms are the attr_terms (migration 00011) one of which every entry matching t holds:
// t an equality (no prefix), else nil.
func equalityTerms(key string, t attrTest) []string {
	if t.str == nil || t.prefix || t.exists || t.rng {
		return nil
	}
	terms := []string{migrations.StringTerm(key, *t.str)}
	if t.num != nil {
		terms = append(terms, migrations.NumberTerm(key, *t.num))
	}
	if t.boolean != nil {
		terms = append(terms, migrations.BoolTerm(key, *t.boolean))
	}
	return terms
}

// sqlitePlan is how SQLite reads a query's tree: SQLite's planner cannot know how many entries
// hold a word or an attribute's value, so the store counts, for each words term and attribute
// equality of the tree, the entries listed under its MATCH expression, up to the store's
// IndexedTerms (about 1 ms for 5,000). A term that few read its list (the index answers it); a
// commoner one is tested on each entry read (reading a common word's whole list to find the
// newest 100 cost 0.4 s at 1,000,000 entries). When a term every match must satisfy (the root,
// or a term of a root AND) is that rare, first is true: a listing then reads logs NOT INDEXED,
// by rowid only, that is from the term's entries, each tested against the rest of the filter.
// PostgreSQL's planner has its indexes' statistics: its engine is returned as it is.
func (s *Store) sqlitePlan(ctx context.Context, root domain.QueryNode) (e engine, first bool, err error) {
	if _, ok := s.eng.(sqliteEngine); !ok || root == nil {
		return s.eng, false, nil
	}
	plan := sqliteEngine{indexed: map[string]bool{}}
	probed := map[string]bool{}
	rare := func(table, match string) (bool, error) {
		if done, ok := probed[match]; ok {
			return done, nil
		}
		if len(probed) >= sqliteProbes {
			return false, nil
		}
		var docs int
		err := s.r.GetContext(ctx, &docs, "SELECT count(*) FROM (SELECT 1 FROM "+table+" WHERE "+table+" MATCH ? LIMIT ?)", match, s.indexedTerms+1)
		if err != nil {
			return false, err
		}
		probed[match] = docs <= s.indexedTerms
		if probed[match] {
			plan.indexed[match] = true
		}
		return probed[match], nil
	}
	var walk func(n domain.QueryNode, top bool) error
	walk = func(n domain.QueryNode, top bool) error {
		var ok bool
		var err error
		switch n := n.(type) {
		case domain.QueryAnd:
			for _, t := range n.Terms {
				if err := walk(t, top); err != nil {
					return err
				}
			}
			return nil
		case domain.QueryOr:
			for _, t := range n.Terms {
				if err := walk(t, false); err != nil {
					return err
				}
			}
			return nil
		case domain.QueryNot:
			return walk(n.Term, false)
		case domain.QueryWords:
			if len(n.Words) > 0 {
				ok, err = rare("logs_words", wordsMatch(n.Words, n.Prefix))
			}
		case domain.QueryEquals:
			switch {
			case n.Field.Attribute && !n.Prefix:
				ok, err = rare("logs_terms", termsMatch(equalityTerms(n.Field.Name, attrTest{str: &n.Value, num: n.Number, boolean: n.Bool})))
			case !n.Field.Attribute && n.Field.Name == domain.FieldMessage:
				if words := domain.Words(n.Value); len(words) > 0 {
					ok, err = rare("logs_words", wordsMatch(words, n.Prefix))
				}
			}
		}
		first = first || (top && ok)
		return err
	}
	if err := walk(root, true); err != nil {
		return nil, false, err
	}
	return plan, first, nil
}

// plannedWhere is where(f) rendered by the engine sqlitePlan gives for f's tree.
func (s *Store) plannedWhere(ctx context.Context, f domain.LogFilter) (string, []any, error) {
	eng, _, err := s.sqlitePlan(ctx, f.Parsed.Root)
	if err != nil {
		return "", nil, err
	}
	w, args := where(eng, f)
	return w, args, nil
}

// sqliteProbes bounds the terms sqlitePlan counts for one query; the rest are tested on each
// entry read.
const sqliteProbes = 32
