package storetest

import (
	"fmt"
	"strings"
	"testing"

	"example.com/obsvc/domain"
)

// testAttributesRoundTrip: attributes come back byte for byte as the domain encoded them (every
// JSON value kind, nested objects, keys with dots and of any script, integers past int64 and
// float64, long strings), trace and span ids as stored, and absent fields stay absent.
func testAttributesRoundTrip(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	attrs := []string{
		`{}`,
		`{"a":"x","b":-1.5e300,"c":true,"d":false,"e":null,"f":[1,"2",[3.0],{"g":null}],"h":{"i":{"j":{"k":[]}}}}`,
		`{"big":12345678901234567890,"neg":-98765432109876543210987654321,"exp":1E400,"frac":1.50,"zero":0}`,
		`{"http.method":"GET","service.name":"checkout","ключ.имя":"значение","𝄞.♪":"\u2028 \" \\ \t","<&>":"<&>"}`,
		`{"long":"` + strings.Repeat("é", 30_000) + `"}`,
	}
	trace, span := "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	var want []domain.LogEntry
	for i, a := range attrs {
		e := entry(p, int64(i), "info")
		e.Attributes = []byte(a)
		if i%2 == 0 {
			e.TraceID, e.SpanID = ptr(trace), ptr(span)
		}
		want = append(want, e)
	}
	bare := entry(p, int64(len(attrs)), "info")
	onlyTrace := entry(p, int64(len(attrs)+1), "info")
	onlyTrace.TraceID = ptr(trace)
	want = append(want, bare, onlyTrace)
	mustInsert(t, s, want...)
	got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}})
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !equalEntry(got[i], want[i]) {
			t.Errorf("entry %d =\n %.400s\nwant\n %.400s", i, show(got[i]), show(want[i]))
		}
	}
	if b := got[len(attrs)]; b.Attributes != nil || b.TraceID != nil || b.SpanID != nil {
		t.Errorf("an entry stored without attributes or ids reads back with them: %s", show(b))
	}
}

// testTraceFilter: trace_id matches exactly, combines with every other filter by AND, in both
// orders and across pages, and deletes exactly the trace's entries of the one project.
func testTraceFilter(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	trace := "4bf92f3577b34da6a3ce929d0e0e4736"
	near := "4bf92f3577b34da6a3ce929d0e0e4737"
	var batch []domain.LogEntry
	for i := range 30 {
		e := entry(p, int64(i), []string{"info", "error"}[i%2])
		switch i % 3 {
		case 0:
			e.TraceID = ptr(trace)
		case 1:
			e.TraceID = ptr(near)
		}
		if i%5 == 0 {
			e.UserID = ptr("u")
		}
		batch = append(batch, e)
	}
	foreign := entry(other, 0, "info")
	foreign.TraceID = ptr(trace)
	mustInsert(t, s, append(batch, foreign)...)

	match := func(f domain.LogFilter) []string {
		var out []string
		for _, e := range batch {
			if e.TraceID != nil && *e.TraceID == *f.TraceID && (f.Level == nil || e.Level == *f.Level) &&
				(f.UserID == nil || (e.UserID != nil && *e.UserID == *f.UserID)) &&
				(f.Start == nil || e.Time >= *f.Start) && (f.End == nil || e.Time <= *f.End) {
				out = append(out, e.ID)
			}
		}
		return out
	}
	filters := []domain.LogFilter{
		{ProjectID: p.ID, TraceID: ptr(trace)},
		{ProjectID: p.ID, TraceID: ptr(near), Level: ptr("error")},
		{ProjectID: p.ID, TraceID: ptr(trace), UserID: ptr("u")},
		{ProjectID: p.ID, TraceID: ptr(trace), Start: ptr[int64](5), End: ptr[int64](20)},
		{ProjectID: p.ID, TraceID: ptr("00000000000000000000000000000001")},
	}
	for _, f := range filters {
		want := match(f)
		for _, desc := range []bool{false, true} {
			var got []string
			q := domain.LogQuery{LogFilter: f, Desc: desc, Limit: 2}
			for {
				es, next := page(t, s, q)
				got = append(got, ids(es)...)
				if next == nil {
					break
				}
				q.After = next
			}
			if desc {
				for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
					got[i], got[j] = got[j], got[i]
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("ListLogs(%+v, desc=%v) = %d entries %v, want %d %v", f, desc, len(got), got, len(want), want)
			}
		}
	}
	n, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, TraceID: ptr(trace), Level: ptr("info")})
	if want := len(match(domain.LogFilter{TraceID: ptr(trace), Level: ptr("info")})); err != nil || n != int64(want) {
		t.Fatalf("DeleteLogs(trace, info) = %d, %v; want %d", n, err, want)
	}
	n, err = s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, TraceID: ptr(trace)})
	if want := len(match(domain.LogFilter{TraceID: ptr(trace), Level: ptr("error")})); err != nil || n != int64(want) {
		t.Fatalf("DeleteLogs(trace) = %d, %v; want %d", n, err, want)
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}}); len(got) != 20 {
		t.Errorf("%d entries left, want the 20 of no or another trace", len(got))
	}
	if got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: other.ID, TraceID: ptr(trace)}}); len(got) != 1 {
		t.Errorf("the other project's entry of the trace: %d left, want 1", len(got))
	}
}
