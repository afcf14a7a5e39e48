package e2e

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/app/server"
	"example.com/obsvc/app/server/servetest"
	"example.com/obsvc/domain"
)

// TestSearchDifferential asks GET /logs (every page) and GET /logs/stats a few hundred random
// filter combinations over the same seeded entries on SQLite, on PostgreSQL and of a plain Go
// reference, and requires the three to agree: the same entries in the same pages (byte for byte
// between the stores), the same dense counts. Between rounds a random DELETE /logs removes the
// same entries everywhere, so the rollup is checked after deletes too. The seed is fixed (set
// SEARCH_DIFF_SEED to try another) and printed with every failure. Under -short only SQLite and
// the reference are compared.
func TestSearchDifferential(t *testing.T) {
	seed := uint64(20261123)
	if s, err := strconv.ParseUint(os.Getenv("SEARCH_DIFF_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: rerun with SEARCH_DIFF_SEED=%d go test -run '^TestSearchDifferential$' ./app/e2e", seed, seed)
		}
	})
	r := rand.New(rand.NewPCG(seed, 14))
	const (
		project = "0193a000-0000-7000-8000-00000000d1ff"
		other   = "0193a000-0000-7000-8000-00000000d200"
		t0      = int64(1_795_392_000_000) // a whole hour
		span    = 6 * 3600_000
	)
	held := diffCorpus(r, project, 1200, t0, span)
	noise := diffCorpus(r, other, 150, t0, span)

	openers := []namedStore{{"sqlite", openSQLiteStore}}
	if testing.Short() {
		t.Log("-short: SQLite against the reference only; make test adds PostgreSQL")
	} else {
		openers = append(openers, namedStore{"postgres", openPostgresStore})
	}
	var targets []diffTarget
	for _, o := range openers {
		st := o.open(t)
		for _, id := range []string{project, other} {
			at := time.UnixMilli(t0).UTC()
			if err := st.CreateProject(t.Context(), domain.Project{ID: id, Name: "diff", CreatedAt: at, UpdatedAt: at}); err != nil {
				t.Fatalf("%s: create project: %v", o.name, err)
			}
		}
		for _, batch := range [][]domain.LogEntry{held[:700], noise, held[700:]} {
			if _, err := st.CreateLogs(t.Context(), batch, domain.LogWrite{}); err != nil {
				t.Fatalf("%s: seed: %v", o.name, err)
			}
		}
		_, srv := servetest.Serve(t, server.DefaultConfig(), st, nil)
		targets = append(targets, diffTarget{name: o.name, url: srv.URL})
	}
	client := &http.Client{}

	const rounds = 3
	perRound := 80
	if underRace() {
		// -race makes the server about ten times slower here and adds nothing to a comparison of
		// answers: a tenth of the questions keeps make race from paying minutes for it.
		perRound = 8
		t.Log("-race: 24 questions instead of 240")
	}
	for round := range rounds {
		for i := range perRound {
			f, order, limit := diffFilter(r, project, t0, span)
			want := diffReference(held, f, order == "desc")
			limit = max(limit, (len(want)+24)/25) // at most 25 pages a question
			query := diffQuery(f)
			if order != "" {
				query.Set("order", order)
			}
			if limit > 0 {
				query.Set("limit", strconv.Itoa(limit))
			}
			where := fmt.Sprintf("seed %d round %d question %d: GET /logs?%s", seed, round, i, query.Encode())
			var first [][]byte
			for k, tg := range targets {
				pages := diffPages(t, client, tg.url, query)
				checkDiffPages(t, where+" on "+tg.name, pages, want, cmp.Or(limit, 1000))
				if k == 0 {
					first = pages
				} else if !slices.EqualFunc(pages, first, bytes.Equal) {
					t.Fatalf("%s: %s and %s answer different bytes", where, targets[0].name, tg.name)
				}
			}

			sq := diffStats(r, f, t0, span)
			sv := diffQuery(sq.LogFilter)
			sv.Set("step", strconv.FormatInt(sq.Step, 10))
			if sq.By != "" {
				sv.Set("by", sq.By)
			}
			where = fmt.Sprintf("seed %d round %d question %d: GET /logs/stats?%s", seed, round, i, sv.Encode())
			wantStats := diffReferenceStats(held, sq)
			var firstBody []byte
			for k, tg := range targets {
				body := diffGet(t, client, tg.url+"/logs/stats?"+sv.Encode(), nil)
				var got diffStatsAnswer
				if err := json.Unmarshal(body, &got); err != nil {
					t.Fatalf("%s on %s: %v in %s", where, tg.name, err, body)
				}
				if g, w := got.String(), wantStats.String(); g != w {
					t.Fatalf("%s on %s:\n got %s\nwant %s", where, tg.name, g, w)
				}
				if k == 0 {
					firstBody = body
				} else if !bytes.Equal(body, firstBody) {
					t.Fatalf("%s: %s answers %s, %s %s", where, targets[0].name, firstBody, tg.name, body)
				}
			}
		}
		if round == rounds-1 {
			break
		}
		// A delete by a random filter (never the whole project): the same count everywhere, and
		// the reference loses what it matches.
		var f domain.LogFilter
		for f.Q == nil && f.Subject == nil && f.UserID == nil && f.TraceID == nil && len(f.Levels) == 0 {
			f, _, _ = diffFilter(r, project, t0, span)
		}
		kept := slices.DeleteFunc(slices.Clone(held), func(e domain.LogEntry) bool { return diffMatches(e, f) })
		q := diffQuery(f).Encode()
		for _, tg := range targets {
			body := diffDo(t, client, http.MethodDelete, tg.url+"/logs?"+q)
			var got struct{ Deleted int }
			if err := json.Unmarshal(body, &got); err != nil || got.Deleted != len(held)-len(kept) {
				t.Fatalf("seed %d round %d: DELETE /logs?%s on %s = %s, want %d deleted", seed, round, q, tg.name, body, len(held)-len(kept))
			}
		}
		held = kept
	}
}

type diffTarget struct{ name, url string }

// underRace says the test binary was built with -race.
func underRace() bool {
	bi, ok := debug.ReadBuildInfo()
	return ok && slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "-race" && s.Value == "true" })
}

// diffCorpus makes n entries of project over [t0, t0+span): messages mixing case, accents,
// LIKE metacharacters, backslashes and characters whose folding is not ASCII's; a quarter on a
// whole minute and some sharing their millisecond, so that pages break between equal times.
func diffCorpus(r *rand.Rand, project string, n int, t0, span int64) []domain.LogEntry {
	words := []string{"Payment", "payment", "DÉCLINÉ", "décliné", "100%", "a_b", `C:\x`, "Straße", "STRASSE", "ΣΊΣΥΦΟΣ",
		"σίσυφος", "Kelvin \u212a", "ok", "naïve", "ÅNGSTRÖM", "timeout 🙂", "50% off", "x\\_y"}
	levels := []string{"debug", "info", "info", "warn", "error", "fatal"}
	subjects := []string{"checkout", "Checkout", "auth", "paiement-é"}
	users := []string{"u1", "u2", "ü3"}
	traces := []string{"4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b700f067aa0ba902b7"}
	out := make([]domain.LogEntry, n)
	for i := range out {
		tm := t0 + r.Int64N(span)
		switch r.IntN(8) {
		case 0, 1:
			tm = tm / 60_000 * 60_000
		case 2:
			if i > 0 {
				tm = out[r.IntN(i)].Time
			}
		}
		var msg []string
		for range 1 + r.IntN(3) {
			msg = append(msg, words[r.IntN(len(words))])
		}
		e := domain.LogEntry{
			// A UUIDv7 of the entry's time with random low bits: ties in time order by these.
			ID: fmt.Sprintf("%08x-%04x-7%03x-%04x-%012x", uint64(tm)>>16, uint64(tm)&0xffff, r.IntN(0x1000),
				0x8000|r.IntN(0x4000), r.Int64N(1<<48)),
			ProjectID: project, Time: tm, Level: levels[r.IntN(len(levels))], Message: strings.Join(msg, " "),
		}
		if r.IntN(4) > 0 {
			e.Subject = ptr(subjects[r.IntN(len(subjects))])
		}
		if r.IntN(2) == 0 {
			e.UserID = ptr(users[r.IntN(len(users))])
		}
		if r.IntN(3) == 0 {
			e.TraceID = ptr(traces[r.IntN(len(traces))])
		}
		out[i] = e
	}
	return out
}

// diffFilter draws a listing: a filter over diffCorpus's pools, an order ("" for the default)
// and a limit (0 for the default).
func diffFilter(r *rand.Rand, project string, t0, span int64) (domain.LogFilter, string, int) {
	f := domain.LogFilter{ProjectID: project}
	pick := func(vs ...string) *string { return ptr(vs[r.IntN(len(vs))]) }
	if r.IntN(3) == 0 {
		f.Q = pick("payment", "PAYMENT", "é", "É", "déclin", "%", "_", `\`, "0%", "a_", `:\`, `\_`, "%_", "a%b", "strasse",
			"straße", "σίσυφος", "ΣΊΣ", "kelvin k", "\u212a", "k", "Ö", "🙂", "NAÏVE", "zzz", "100% d", " ")
	}
	if r.IntN(4) == 0 {
		f.Subject = pick("checkout", "Checkout", "auth", "paiement-é", "PAIEMENT-É", "none")
	}
	if r.IntN(5) == 0 {
		f.UserID = pick("u1", "u2", "ü3", "Ü3")
	}
	if r.IntN(6) == 0 {
		f.TraceID = pick("4bf92f3577b34da6a3ce929d0e0e4736", "00F067AA0BA902B700F067AA0BA902B7", "0123456789abcdef0123456789abcdef")
	}
	levels := []string{"debug", "info", "warn", "error", "fatal", "trace"}
	for range []int{0, 0, 0, 1, 1, 2, 3}[r.IntN(7)] {
		f.Levels = append(f.Levels, levels[r.IntN(len(levels))])
	}
	if r.IntN(3) == 0 {
		f.Start = ptr(t0 - 60_000 + r.Int64N(span+60_000))
	}
	if r.IntN(3) == 0 {
		f.End = ptr(t0 + r.Int64N(span+60_000))
		if f.Start != nil && *f.End < *f.Start {
			f.Start, f.End = f.End, f.Start
		}
	}
	order := []string{"", "asc", "desc"}[r.IntN(3)]
	limit := 0
	switch r.IntN(4) {
	case 1:
		limit = 1 + r.IntN(10)
	case 2:
		limit = 1 + r.IntN(300)
	case 3:
		limit = []int{1, 100, 1000, 10_000}[r.IntN(4)]
	}
	return f, order, limit
}

// diffStats draws a stats question of f: a range on and off whole minutes, overlapping the data
// or not, whole-minute steps and others, every grouping (and none given). Half of them keep only
// project, time and levels, as the rollup can answer.
func diffStats(r *rand.Rand, f domain.LogFilter, t0, span int64) domain.StatsQuery {
	if r.IntN(2) == 0 {
		f = domain.LogFilter{ProjectID: f.ProjectID, Levels: f.Levels}
	}
	start := t0 - 3600_000 + r.Int64N(span+3600_000)
	if r.IntN(2) == 0 {
		start = start / 60_000 * 60_000
	}
	end := start + r.Int64N(span)
	step := []int64{60_000, 300_000, 3600_000, 61_000, 1000 * (1 + r.Int64N(600)), 60_000 * (1 + r.Int64N(90))}[r.IntN(6)]
	if (end-start)/step >= domain.MaxStatsBuckets {
		step = (end-start)/(domain.MaxStatsBuckets-1) + 1
	}
	f.Start, f.End = &start, &end
	return domain.StatsQuery{LogFilter: f, Step: step, By: []string{"", domain.ByLevel, domain.BySubject, domain.ByNone}[r.IntN(4)]}
}

// diffQuery is f as GET /logs parameters.
func diffQuery(f domain.LogFilter) url.Values {
	v := url.Values{"project_id": {f.ProjectID}}
	set := func(k string, p *string) {
		if p != nil {
			v.Set(k, *p)
		}
	}
	set("q", f.Q)
	set("subject", f.Subject)
	set("user_id", f.UserID)
	set("trace_id", f.TraceID)
	for _, l := range f.Levels {
		v.Add("log_level", l)
	}
	if f.Start != nil {
		v.Set("start_time", strconv.FormatInt(*f.Start, 10))
	}
	if f.End != nil {
		v.Set("end_time", strconv.FormatInt(*f.End, 10))
	}
	return v
}

// diffMatches is storetest.Matches with the trace id of f in lower case, as the service matches
// it.
func diffMatches(e domain.LogEntry, f domain.LogFilter) bool {
	if f.TraceID != nil {
		f.TraceID = ptr(strings.ToLower(*f.TraceID))
	}
	return storetest.Matches(e, f)
}

// diffReference is what a listing of f must yield, in order.
func diffReference(held []domain.LogEntry, f domain.LogFilter, desc bool) []domain.LogEntry {
	var out []domain.LogEntry
	for _, e := range held {
		if diffMatches(e, f) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b domain.LogEntry) int {
		return cmp.Or(cmp.Compare(a.Time, b.Time), strings.Compare(a.ID, b.ID))
	})
	if desc {
		slices.Reverse(out)
	}
	return out
}

// diffStatsAnswer is a GET /logs/stats answer.
type diffStatsAnswer struct {
	Step    int64   `json:"step"`
	Buckets []int64 `json:"buckets"`
	Series  []struct {
		Value  *string `json:"value"`
		Counts []int64 `json:"counts"`
		Total  int64   `json:"total"`
	} `json:"series"`
	Total int64 `json:"total"`
}

func (a diffStatsAnswer) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step=%d buckets=%v total=%d", a.Step, a.Buckets, a.Total)
	for _, s := range a.Series {
		v := "null"
		if s.Value != nil {
			v = strconv.Quote(*s.Value)
		}
		fmt.Fprintf(&b, " [%s total=%d %v]", v, s.Total, s.Counts)
	}
	return b.String()
}

// diffReferenceStats is the dense answer to q over held, by the contract: buckets from start,
// series ordered by value with null first, one series always for by=none.
func diffReferenceStats(held []domain.LogEntry, q domain.StatsQuery) diffStatsAnswer {
	n := int((*q.End-*q.Start)/q.Step) + 1
	a := diffStatsAnswer{Step: q.Step, Buckets: make([]int64, n)}
	for i := range a.Buckets {
		a.Buckets[i] = *q.Start + int64(i)*q.Step
	}
	type key struct {
		null  bool
		value string
	}
	counts := map[key][]int64{}
	if q.By == domain.ByNone {
		counts[key{null: true}] = make([]int64, n)
	}
	for _, e := range diffReference(held, q.LogFilter, false) {
		k := key{null: true}
		switch q.By {
		case "", domain.ByLevel:
			k = key{value: e.Level}
		case domain.BySubject:
			if e.Subject != nil {
				k = key{value: *e.Subject}
			}
		}
		if counts[k] == nil {
			counts[k] = make([]int64, n)
		}
		counts[k][(e.Time-*q.Start)/q.Step]++
		a.Total++
	}
	keys := slices.Collect(maps.Keys(counts))
	slices.SortFunc(keys, func(x, y key) int {
		if x.null != y.null {
			if x.null {
				return -1
			}
			return 1
		}
		return strings.Compare(x.value, y.value)
	})
	for _, k := range keys {
		s := struct {
			Value  *string `json:"value"`
			Counts []int64 `json:"counts"`
			Total  int64   `json:"total"`
		}{Counts: counts[k]}
		if !k.null {
			s.Value = ptr(k.value)
		}
		for _, c := range s.Counts {
			s.Total += c
		}
		a.Series = append(a.Series, s)
	}
	return a
}

// diffPages follows the Link headers of GET /logs?query from the first page to the last and
// returns every page's body.
func diffPages(t *testing.T, client *http.Client, base string, query url.Values) [][]byte {
	t.Helper()
	var pages [][]byte
	next := base + "/logs?" + query.Encode()
	for next != "" {
		if len(pages) > 100 {
			t.Fatalf("GET /logs?%s: more than 100 pages", query.Encode())
		}
		var h http.Header
		pages = append(pages, diffGet(t, client, next, &h))
		next = ""
		if l := h.Get("Link"); l != "" {
			next = base + l[strings.Index(l, "<")+1:strings.Index(l, ">")]
		}
	}
	return pages
}

func diffGet(t *testing.T, client *http.Client, u string, h *http.Header) []byte {
	t.Helper()
	resp, err := client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d %s (%v)", u, resp.StatusCode, body, err)
	}
	if h != nil {
		*h = resp.Header
	}
	return body
}

func diffDo(t *testing.T, client *http.Client, method, u string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := roundTrip(t, client, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s = %d %s", method, u, resp.StatusCode, body)
	}
	return body
}

// checkDiffPages compares the pages of one listing with the reference: full pages of limit but
// the last, the reference's entries in its order, every field as seeded.
func checkDiffPages(t *testing.T, where string, pages [][]byte, want []domain.LogEntry, limit int) {
	t.Helper()
	var got []domain.LogEntry
	for i, p := range pages {
		var page []struct {
			ID        string  `json:"id"`
			ProjectID string  `json:"project_id"`
			Time      int64   `json:"time"`
			Level     string  `json:"level"`
			Message   string  `json:"message"`
			Subject   *string `json:"subject"`
			UserID    *string `json:"user_id"`
			TraceID   *string `json:"trace_id"`
		}
		if err := json.Unmarshal(p, &page); err != nil {
			t.Fatalf("%s: page %d: %v", where, i, err)
		}
		if i < len(pages)-1 && len(page) != limit || i == len(pages)-1 && len(page) > limit || len(page) == 0 && i > 0 {
			t.Fatalf("%s: page %d of %d holds %d entries (limit %d)", where, i, len(pages), len(page), limit)
		}
		for _, e := range page {
			got = append(got, domain.LogEntry{ID: e.ID, ProjectID: e.ProjectID, Time: e.Time, Level: e.Level, Message: e.Message,
				Subject: e.Subject, UserID: e.UserID, TraceID: e.TraceID})
		}
	}
	same := func(a, b domain.LogEntry) bool {
		eq := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
		return a.ID == b.ID && a.ProjectID == b.ProjectID && a.Time == b.Time && a.Level == b.Level && a.Message == b.Message &&
			eq(a.Subject, b.Subject) && eq(a.UserID, b.UserID) && eq(a.TraceID, b.TraceID)
	}
	if !slices.EqualFunc(got, want, same) {
		ids := func(es []domain.LogEntry) []string {
			out := make([]string, 0, len(es))
			for _, e := range es {
				out = append(out, fmt.Sprintf("%d/%s", e.Time, e.ID[len(e.ID)-4:]))
			}
			return out
		}
		t.Fatalf("%s: %d entries in %d pages, want %d:\n got %v\nwant %v", where, len(got), len(pages), len(want), ids(got), ids(want))
	}
}
