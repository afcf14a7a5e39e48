package domain

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func qw(ws ...string) QueryWords     { return QueryWords{Words: ws} }
func qpre(ws ...string) QueryWords   { return QueryWords{Words: ws, Prefix: true} }
func qand(ts ...QueryNode) QueryNode { return QueryAnd{Terms: ts} }
func qor(ts ...QueryNode) QueryNode  { return QueryOr{Terms: ts} }
func qnot(t QueryNode) QueryNode     { return QueryNot{Term: t} }
func qf(name string) QueryField      { return QueryField{Name: name} }
func qa(key string) QueryField       { return QueryField{Name: key, Attribute: true} }
func qeq(f QueryField, v string) QueryEquals {
	return QueryEquals{Field: f, Value: v}
}
func qnum(key, v string, n float64) QueryEquals {
	return QueryEquals{Field: qa(key), Value: v, Number: &n}
}
func qrange(key string, lo, hi *float64, loIn, hiIn bool) QueryRange {
	return QueryRange{Field: qa(key), Min: lo, Max: hi, MinInclusive: loIn, MaxInclusive: hiIn}
}

func TestParseQuery(t *testing.T) {
	l := DefaultLimits().Query
	for _, c := range []struct {
		text string
		want QueryNode
	}{
		{"", nil},
		{" \t\n ", nil},
		{"timeout", qw("timeout")},
		{`"Connection reset"`, qw("connection", "reset")},
		{"foo-bar", qw("foo", "bar")},
		{"Pay*", qpre("pay")},
		{`"pay*"`, qw("pay")},
		{`foo-bar*`, qpre("foo", "bar")},
		{"a b", qand(qw("a"), qw("b"))},
		{"a AND b", qand(qw("a"), qw("b"))},
		{"a and b", qand(qw("a"), qw("and"), qw("b"))},
		{"a OR b c", qor(qw("a"), qand(qw("b"), qw("c")))},
		{"a b OR c", qor(qand(qw("a"), qw("b")), qw("c"))},
		{"(a OR b) c", qand(qor(qw("a"), qw("b")), qw("c"))},
		{"NOT a b", qand(qnot(qw("a")), qw("b"))},
		{"-a -(b OR c)", qand(qnot(qw("a")), qnot(qor(qw("b"), qw("c"))))},
		{"- a", qnot(qw("a"))},
		{"NOT NOT a", qnot(qnot(qw("a")))},
		{"NOT(a)", qnot(qw("a"))},
		{"(a b) (c AND d)", qand(qw("a"), qw("b"), qw("c"), qw("d"))},
		{"a OR (b OR c)", qor(qw("a"), qw("b"), qw("c"))},
		{"((a))", qw("a")},
		{"message:x", qw("x")},
		{`message:"a, b"`, qw("a", "b")},
		{"message:x*", qpre("x")},
		{"message:*", QueryExists{Field: qf(FieldMessage)}},
		{"message:(a OR b)", qor(qw("a"), qw("b"))},
		{"level:ERROR", qeq(qf(FieldLevel), "ERROR")},
		{"level:err*", QueryEquals{Field: qf(FieldLevel), Value: "err", Prefix: true}},
		{`subject:"a b" user_id:U1`, qand(qeq(qf(FieldSubject), "a b"), qeq(qf(FieldUserID), "U1"))},
		{`subject:a\ b\*`, qeq(qf(FieldSubject), "a b*")},
		{"subject:-x", qeq(qf(FieldSubject), "-x")},
		{"trace_id:4BF92F3577B34DA6A3CE929D0E0E4736", qeq(qf(FieldTraceID), "4bf92f3577b34da6a3ce929d0e0e4736")},
		{"span_id:AB*", QueryEquals{Field: qf(FieldSpanID), Value: "ab", Prefix: true}},
		{"span_id:*", QueryExists{Field: qf(FieldSpanID)}},
		{"http.route:/checkout", qeq(qa("http.route"), "/checkout")},
		{"service.name:cart", qeq(qa("service.name"), "cart")},
		{"attributes.level:x", qeq(qa("level"), "x")},
		{"attributes.attributes.x:y", qeq(qa("attributes.x"), "y")},
		{"attributes:y", qeq(qa("attributes"), "y")},
		{`k\:x:v`, qeq(qa("k:x"), "v")},
		{"NOT:x", qeq(qa("NOT"), "x")},
		{"status:500", qnum("status", "500", 500)},
		{"status:5e2", qnum("status", "5e2", 500)},
		{"temp:-5", qnum("temp", "-5", -5)},
		{`status:"500"`, qeq(qa("status"), "500")},
		{"status:50*", QueryEquals{Field: qa("status"), Value: "50", Prefix: true}},
		{"n:1e400", qeq(qa("n"), "1e400")},
		{"n:Inf", qeq(qa("n"), "Inf")},
		{"ok:true", QueryEquals{Field: qa("ok"), Value: "true", Bool: ptr(true)}},
		{"ok:false", QueryEquals{Field: qa("ok"), Value: "false", Bool: ptr(false)}},
		{"ok:TRUE", qeq(qa("ok"), "TRUE")},
		{`ok:"true"`, qeq(qa("ok"), "true")},
		{"x:*", QueryExists{Field: qa("x")}},
		{"s:>500", qrange("s", ptr(500.0), nil, false, false)},
		{"s:>=500", qrange("s", ptr(500.0), nil, true, false)},
		{"s:<500", qrange("s", nil, ptr(500.0), false, false)},
		{"s:<=-0.5", qrange("s", nil, ptr(-0.5), false, true)},
		{"s:[200 TO 299]", qrange("s", ptr(200.0), ptr(299.0), true, true)},
		{"s:{200 TO 299}", qrange("s", ptr(200.0), ptr(299.0), false, false)},
		{"s:[ 200  TO 299 }", qrange("s", ptr(200.0), ptr(299.0), true, false)},
		{"s:[200 TO *]", qrange("s", ptr(200.0), nil, true, true)},
		{"s:{* TO 1e3]", qrange("s", nil, ptr(1000.0), false, true)},
		{"level:(error OR warn) -subject:(a b)", qand(
			qor(qeq(qf(FieldLevel), "error"), qeq(qf(FieldLevel), "warn")),
			qnot(qand(qeq(qf(FieldSubject), "a"), qeq(qf(FieldSubject), "b"))))},
		{"level:(NOT debug) s:(>1 AND (<5 OR *))", qand(qnot(qeq(qf(FieldLevel), "debug")),
			qrange("s", ptr(1.0), nil, false, false), qor(qrange("s", nil, ptr(5.0), false, false), QueryExists{Field: qa("s")}))},
		{`a\:b \(c\)`, qand(qw("a", "b"), qw("c"))},
		{`"say \"hi\" \\o/ \x"`, qw("say", "hi", "o", "x")},
		{`\AND a`, qand(qw("and"), qw("a"))},
		{"Ünïcödé ΣΊΣΥΦΟΣ", qand(qw("ünïcödé"), qw("ςίςυφος"))},
		{`a"b"`, qand(qw("a"), qw("b"))},
	} {
		q, err := ParseQuery(c.text, l)
		if err != nil || !reflect.DeepEqual(q.Root, c.want) {
			t.Errorf("ParseQuery(%q) = %#v, %v; want %#v", c.text, q.Root, err, c.want)
			continue
		}
		again, err := ParseQuery(q.String(), l)
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Errorf("ParseQuery(%q).String() = %q parses to %#v, %v", c.text, q.String(), again.Root, err)
		}
	}
}

func TestQueryString(t *testing.T) {
	for text, want := range map[string]string{
		"a OR b c":                  "a OR b c",
		"(a OR b) (c OR NOT d)":     "(a OR b) (c OR -d)",
		"NOT (a b) NOT (c OR d)":    "-(a b) -(c OR d)",
		`"payment, declined!" pay*`: `"payment declined" pay*`,
		`foo.bar*`:                  `foo-bar*`,
		"level:(error OR warn)":     "level:error OR level:warn",
		`subject:"a b" user_id:\*`:  `subject:a\ b user_id:\*`,
		`attributes.level:x service.name:500 ok:true k:"500" k:\-1`: `attributes.level:"x" service.name:500 ok:true k:"500" k:\-1`,
		"s:>=500 s:[* TO 5} s:<1e21":                                "s:>=500 s:[* TO 5} s:<1e+21",
		`subject:AND subject:OR*`:                                   `subject:\AND subject:\OR*`,
	} {
		q, err := ParseQuery(text, DefaultLimits().Query)
		if err != nil || q.String() != want {
			t.Errorf("ParseQuery(%q).String() = %q, %v; want %q", text, q.String(), err, want)
		}
	}
}

func TestParseQueryErrors(t *testing.T) {
	for _, c := range []struct{ text, msg string }{
		{"a )", `unexpected ")" at 3`},
		{"ééé )", `unexpected ")" at 5`},
		{"(a", "unexpected end of query at 3"},
		{"((a", "unexpected end of query at 4"},
		{"(a]", `unexpected "]" at 3`},
		{"a OR", "unexpected end of query at 5"},
		{"a AND", "unexpected end of query at 6"},
		{"a AND OR b", `unexpected "OR" at 7`},
		{"OR a", `unexpected "OR" at 1`},
		{"NOT", "unexpected end of query at 4"},
		{"-", "unexpected end of query at 2"},
		{":a", `unexpected ":" at 1`},
		{"a:b:c", `unexpected ":" at 4`},
		{"a\\", "unexpected end of query at 3"},
		{"level:", `expected a value after "level:" at 7`},
		{"level: x", `expected a value after "level:" at 7`},
		{"(level:)", `expected a value after "level:" at 8`},
		{`"abc`, "unterminated phrase at 1"},
		{`ab "cd\"`, "unterminated phrase at 4"},
		{"a*b", "a wildcard may only end a word at 2"},
		{"x:*y", "a wildcard may only end a word at 3"},
		{"a**", "a wildcard may only end a word at 2"},
		{"!!!", `"!!!" has no words at 1`},
		{`x ""`, `"\"\"" has no words at 3`},
		{"*", `"*" has no words at 1`},
		{"message:-", `"-" has no words at 9`},
		{`"a" *`, `"*" has no words at 5`},
		{"level:>5", "level compares as text; ranges apply to attribute numbers at 7"},
		{"subject:[1 TO 2]", "subject compares as text; ranges apply to attribute numbers at 9"},
		{"message:{1 TO 2}", "message compares as text; ranges apply to attribute numbers at 9"},
		{"x:>", "expected a finite number at 4"},
		{"x:>abc", "expected a finite number at 4"},
		{"x:>=1e400", "expected a finite number at 5"},
		{"x:<NaN", "expected a finite number at 4"},
		{"x:>*", "expected a finite number at 4"},
		{"x:[a TO 2]", "expected a finite number at 4"},
		{"x:[1 2]", `expected "TO" at 6`},
		{"x:[1 TO 2", `expected "]" or "}" at 10`},
		{"x:[1 TO 2)", `expected "]" or "}" at 10`},
		{"x:=5", `unexpected "=" at 3`},
		{"a\x00b", "a NUL character at 2"},
		{"é\xffb", "invalid UTF-8 at 2"},
	} {
		_, err := ParseQuery(c.text, DefaultLimits().Query)
		var syntax *QuerySyntaxError
		if !errors.As(err, &syntax) || syntax.Msg != c.msg || !strings.HasSuffix(c.msg, " at "+strconv.Itoa(syntax.Pos)) {
			t.Errorf("ParseQuery(%q) = %v; want %q", c.text, err, c.msg)
		}
	}
}

func TestParseQueryLimits(t *testing.T) {
	l := QueryLimits{MaxChars: 10, MaxDepth: 2, MaxTerms: 3}
	for _, c := range []struct{ text, msg string }{
		{"aaaaaaaaaa", ""},
		{"éééééééééé", ""},
		{"aaaaaaaaaaa", "longer than 10 characters at 11"},
		{"((a))", ""},
		{"(((a)))", "nested deeper than 2 at 3"},
		{"--a", ""},
		{"---a", "nested deeper than 2 at 3"},
		{"-(NOT a)", "nested deeper than 2 at 3"},
		{"x:((a))", ""},
		{"x:(-(a))", "nested deeper than 2 at 5"},
		{"a b c", ""},
		{"a b c d", "more than 3 terms at 7"},
		{"x:(a b *)", ""},
		{"x:(a b c d", "more than 3 terms at 10"},
	} {
		_, err := ParseQuery(c.text, l)
		if (err == nil) != (c.msg == "") || err != nil && err.Error() != c.msg {
			t.Errorf("ParseQuery(%q) = %v; want %q", c.text, err, c.msg)
		}
	}
	// Hostile texts at the default limits fail fast, at the limit.
	d := DefaultLimits().Query
	for text, msg := range map[string]string{
		strings.Repeat("(", d.MaxChars):            "nested deeper than 32 at 33",
		strings.Repeat("-", d.MaxChars):            "nested deeper than 32 at 33",
		strings.Repeat("a* ", d.MaxChars/3):        "more than 256 terms at 769",
		"x:(" + strings.Repeat("-(", 20) + "a":     "nested deeper than 32 at 35",
		strings.Repeat("a", d.MaxChars+1):          "longer than 4096 characters at 4097",
		strings.Repeat("a OR ", d.MaxChars/5) + "": "more than 256 terms at 1281",
	} {
		if _, err := ParseQuery(text, d); err == nil || err.Error() != msg {
			t.Errorf("ParseQuery(%.20q...) = %v; want %q", text, err, msg)
		}
	}
}

func TestQueryMatches(t *testing.T) {
	entry := LogEntry{
		Level: LevelError, Message: "Payment, declined! for order_42 at CAFÉ", Subject: ptr("Checkout"), UserID: ptr("u1"),
		TraceID: ptr("4bf92f3577b34da6a3ce929d0e0e4736"),
		Attributes: json.RawMessage(`{"big":1e400,"code":"500","http.route":"/checkout","level":"x","n":null,` +
			`"obj":{"a":1},"ok":true,"okstr":"true","ratio":500.0,"s500":"500.0","status":500}`),
	}
	bare := LogEntry{Level: LevelInfo, Message: "a"}
	for _, c := range []struct {
		e     LogEntry
		query string
		want  bool
	}{
		{entry, "", true},
		{entry, `"payment declined"`, true},
		{entry, `"declined payment"`, false},
		{entry, `"payment, declined!"`, true},
		{entry, "PAYMENT", true},
		{entry, "pay", false},
		{entry, "pay*", true},
		{entry, "payment-decl*", true},
		{entry, `"payment decl*"`, false},
		{entry, "order_42", true},
		{entry, "order", false},
		{entry, "café", true},
		{entry, "message:payment", true},
		{entry, `message:"payment declined"`, true},
		{entry, "message:*", true},
		{entry, "level:error", true},
		{entry, "level:ERR", true},
		{entry, "level:warning", false},
		{entry, "level:er*", true},
		{entry, "level:ER*", false},
		{entry, "subject:Checkout", true},
		{entry, "subject:checkout", false},
		{entry, "subject:Check*", true},
		{entry, "user_id:u1 user_id:*", true},
		{entry, "span_id:*", false},
		{entry, "span_id:b7ad6b7169203331", false},
		{entry, "NOT span_id:b7ad6b7169203331", true},
		{entry, "trace_id:4BF92F3577B34DA6A3CE929D0E0E4736", true},
		{entry, "trace_id:4bf9*", true},
		{entry, "status:500", true},
		{entry, "status:500.0", true},
		{entry, "ratio:500", true},
		{entry, "code:500", true},
		{entry, "s500:500", false},
		{entry, `code:"500"`, true},
		{entry, `status:"500"`, false},
		{entry, "status:50*", false},
		{entry, "code:50*", true},
		{entry, "ok:true", true},
		{entry, "ok:false", false},
		{entry, "NOT ok:false", true},
		{entry, "okstr:true", true},
		{entry, `ok:"true"`, false},
		{entry, "status:>=500", true},
		{entry, "status:>500", false},
		{entry, "status:<=500 status:<501", true},
		{entry, "status:[200 TO 500]", true},
		{entry, "status:[200 TO 500}", false},
		{entry, "status:{500 TO *]", false},
		{entry, "status:[500 TO *]", true},
		{entry, "code:>=0", false},
		{entry, "missing:>0", false},
		{entry, "NOT missing:>0", true},
		{entry, "NOT missing:x", true},
		{entry, "big:*", true},
		{entry, "big:>0", false},
		{entry, "big:1e400", false},
		{entry, "NOT big:>0", true},
		{entry, "n:*", true},
		{entry, "n:null", false},
		{entry, "obj:* -obj:x", true},
		{entry, "attributes.level:x", true},
		{entry, "level:x", false},
		{entry, "http.route:/checkout http.route:/check*", true},
		{entry, "http.route:(/pay OR /checkout) -level:(debug OR info)", true},
		{bare, "a OR b c", true},
		{bare, "(a OR b) c", false},
		{bare, "b c OR a", true},
		{bare, "x:*", false},
		{bare, "NOT x:* NOT x:1 NOT x:[1 TO 2]", true},
		{bare, "subject:* OR user_id:*", false},
	} {
		q, err := ParseQuery(c.query, DefaultLimits().Query)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", c.query, err)
		}
		if got := q.Matches(c.e); got != c.want {
			t.Errorf("%q matches %q: %v, want %v", c.query, c.e.Message, got, c.want)
		}
		// CountAlertMatches agrees, one entry after another (each its own second, the first
		// before the floor), as a batch is counted.
		es := []LogEntry{entry, bare, c.e, bare, entry}
		want := map[int64]int64{}
		for i := range es {
			es[i].Time = int64(i+1) * 1000
			if i > 0 && q.Matches(es[i]) {
				want[es[i].Time]++
			}
		}
		if got := CountAlertMatches(es, []AlertCountQuery{{Query: q, Floor: 2000}})[0]; !maps.Equal(got, want) {
			t.Errorf("%q: CountAlertMatches = %v, want %v", c.query, got, want)
		}
	}
}

// The live tail evaluates every query on every entry: no term decodes attributes it does not use.
func TestQueryMatchesAllocs(t *testing.T) {
	e := LogEntry{Level: LevelError, Message: "payment declined", Attributes: json.RawMessage(`{"a":1}`)}
	for query, most := range map[string]float64{"level:error -subject:*": 0, "payment": 3, `"payment declined" a:1`: 30} {
		q, err := ParseQuery(query, DefaultLimits().Query)
		if err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { q.Matches(e) }); n > most {
			t.Errorf("%q: %v allocations per entry, want at most %v", query, n, most)
		}
	}
}

// The query parameter reaches stores parsed, a syntax error is the parameter's, and a filter
// matches as its query does.
func TestFilterQuery(t *testing.T) {
	l := DefaultLimits()
	_, err := l.validateFilter(LogFilter{ProjectID: testID(), Query: ptr("level:error )")})
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid || !reflect.DeepEqual(e.Fields, []FieldError{{Param: "query", Detail: `unexpected ")" at 13`}}) {
		t.Fatalf("validateFilter of a bad query: %#v", err)
	}
	f, err := l.validateFilter(LogFilter{ProjectID: "p", Query: ptr("level:error -timeout")})
	if err != nil || f.Parsed.Root == nil {
		t.Fatalf("validateFilter: %+v, %v", f, err)
	}
	for msg, want := range map[string]bool{"payment declined": true, "timeout!": false} {
		if got := f.Matches(LogEntry{ProjectID: "p", Level: LevelError, Message: msg}); got != want {
			t.Errorf("filter matches %q: %v, want %v", msg, got, want)
		}
	}
}
