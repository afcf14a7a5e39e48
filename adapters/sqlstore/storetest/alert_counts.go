package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// testAlertCountsMatchTheStore drives rules whose counts the service keeps from the entries
// committed since each evaluation (domain.AlertCountStore) through random ingest, late and
// future entries, filtered deletes, a window that grows and a second instance's service taking
// rules over, and checks every evaluation's count against the store's own count of the window
// at that moment (LogStats over the rule's filter): the same number, every time.
func testAlertCountsMatchTheStore(t *testing.T, s domain.Store) {
	if _, ok := s.(domain.AlertCountStore); !ok {
		t.Fatal("the store does not keep alert counts (domain.AlertCountStore)")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 15))
	now := base
	clock := func() time.Time { return now }
	svcA := domain.NewService(s, domain.Options{NewID: newID, Now: clock, Notifier: &recorder{}})
	svcB := domain.NewService(s, domain.Options{NewID: newID, Now: clock, Notifier: &recorder{}})
	admin := asAdmin(t)
	days := 1
	kept, err := svcA.CreateProject(admin, domain.ProjectInput{Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	short, err := svcA.CreateProject(admin, domain.ProjectInput{Name: "short", RetentionDays: domain.Optional[int]{Set: true, Value: &days}})
	if err != nil {
		t.Fatal(err)
	}
	queries := []string{"", "level:error", "level:warn OR level:error", "-level:debug", "timeout", `"payment declined"`, "pay*",
		"svc:cart", "status:>=500", "timeout AND -svc:cart", "grüße"}
	messages := []string{"timeout talking to db", "Payment, declined! card 4", "payment accepted", "paying now", "GRÜSSE aus Köln",
		"orders shipped", "timeout; payment declined"}
	attrs := []string{"", `{"svc":"cart"}`, `{"status":500,"svc":"pay"}`, `{"status":"503"}`, `{"status":200}`}
	levels := []string{"debug", "info", "warn", "error"}

	type rule struct {
		domain.AlertRule
		svc *domain.Service
	}
	var rules []rule
	for i := range queries {
		for j, p := range []domain.Project{kept, short} {
			window := 10 * (1 + r.IntN(30))
			if j == 1 && i%3 == 0 {
				window = 2 * 86400 // past the retention: counted in SQL, checked all the same
			}
			a, err := svcA.CreateAlert(admin, domain.AlertInput{ProjectID: p.ID, Name: fmt.Sprint(p.Name, " ", i), Query: &queries[i],
				WindowSeconds: window, IntervalSeconds: 10, Condition: domain.AlertCondition{Op: ">", Threshold: 5},
				Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "https://hooks.example/a"}}})
			if err != nil {
				t.Fatal(err)
			}
			rules = append(rules, rule{a, svcA})
		}
	}
	insertFrom := func(r *rand.Rand, p domain.Project, n int) {
		es := make([]domain.LogEntry, n)
		for i := range es {
			// Most entries lie in the last minutes; some are late (up to an hour, or past the
			// retention of "short") and some ahead of now.
			off := int64(r.IntN(300_000)) - 280_000
			switch r.IntN(10) {
			case 0:
				off = -int64(r.IntN(3_600_000))
			case 1:
				off = -int64(86_400_000 + r.IntN(86_400_000))
			}
			e := entry(p, now.UnixMilli()+off, levels[r.IntN(len(levels))])
			e.Message = messages[r.IntN(len(messages))]
			if a := attrs[r.IntN(len(attrs))]; a != "" {
				e.Attributes = json.RawMessage(a)
			}
			es[i] = e
		}
		if _, err := s.CreateLogs(ctx(t), es, domain.LogWrite{}); err != nil {
			t.Errorf("CreateLogs: %v", err)
		}
	}
	insert := func(p domain.Project, n int) { insertFrom(r, p, n) }
	for range 3 {
		insert(kept, 200)
		insert(short, 200)
	}
	// 40 rounds; 15 under the race detector, where SQLite's driver runs about ten times slower.
	rounds := 40
	if raceDetector {
		rounds = 15
	}
	evaluated := 0
	for step := range rounds {
		now = now.Add(time.Duration(10_000+r.IntN(3_000)) * time.Millisecond)
		for range 1 + r.IntN(3) {
			insert([]domain.Project{kept, short}[r.IntN(2)], 1+r.IntN(60))
		}
		// Every fifth round, entries keep coming while the rules are evaluated, after a filtered
		// delete has dropped a project's counts: its queries are registered again, each counting
		// the entries written so far while batches commit. That round's counts are not checked
		// (the store's would be taken later), but an entry an evaluation missed or counted twice
		// stays in the counts the next rounds check.
		busy := step%5 == 2
		act := r.IntN(8)
		if busy {
			act = 0
		}
		switch act {
		case 0: // a filtered delete: the project's counts start over
			p := []domain.Project{kept, short}[r.IntN(2)]
			lvl := levels[r.IntN(len(levels))]
			lo, hi := now.UnixMilli()-int64(r.IntN(200_000)), now.UnixMilli()
			if _, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, Levels: []string{lvl}, Start: &lo, End: &hi}); err != nil {
				t.Fatal(err)
			}
		case 1: // a window grows past what is kept of its query
			i := r.IntN(len(rules))
			w := rules[i].WindowSeconds + 60
			a, err := svcA.PatchAlert(admin, rules[i].ID, domain.AlertPatch{WindowSeconds: &w})
			if err != nil {
				t.Fatal(err)
			}
			rules[i].AlertRule = a
		}
		// Now and then the first instance stops for longer than its leases: another instance
		// takes its rules over, its counts starting from the store's, until its own leases
		// lapse and the first instance, catching up from where it stood, takes them back.
		svc, holder := svcA, "a"
		if step%7 == 3 || step%7 == 4 {
			svc, holder = svcB, "b"
		}
		if step%7 == 3 || step%7 == 5 {
			now = now.Add(20 * time.Second)
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		if busy {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					insertFrom(rand.New(rand.NewPCG(seed, uint64(step*1000+i))), []domain.Project{kept, short}[i%2], 20)
				}
			})
		}
		_, err := svc.EvaluateDue(ctx(t), holder, now)
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if busy {
			continue
		}
		for _, ru := range rules {
			got, err := svcA.GetAlert(admin, ru.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.LastEvalAt != secondFloor(now.UnixMilli()) {
				continue // not due: held by the other instance
			}
			evaluated++
			start, end := domain.AlertWindow(got.WindowSeconds, now.UnixMilli())
			if want := WindowCount(t, s, got.ProjectID, got.Query, start, end, now.UnixMilli()); got.Status.LastCount != want {
				t.Errorf("step %d: rule %q (query %q, window %d s) counted %d; the store counts %d", step, got.Name, got.Query,
					got.WindowSeconds, got.Status.LastCount, want)
			}
		}
	}
	if evaluated < rounds*3/4*len(rules)/2 {
		t.Fatalf("only %d evaluations were checked", evaluated)
	}
}

func secondFloor(ms int64) int64 { return ms - ms%1000 }

// testAlertCountsUnderConcurrency has four evaluators count three queries at once, over windows
// that grow (each growth a new registration), while two writers add batches and filtered
// deletes drop the project's counts; once all have stopped, each query's count equals the
// store's: no entry was counted twice by two evaluators finishing one registration, nor lost
// between a registration and a batch.
func testAlertCountsUnderConcurrency(t *testing.T, s domain.Store) {
	st, ok := s.(domain.AlertCountStore)
	if !ok {
		t.Fatal("the store does not keep alert counts (domain.AlertCountStore)")
	}
	p := mustProject(t, s, "p", base)
	now := base.UnixMilli()
	levels := []string{"debug", "info", "warn", "error"}
	write := func(seed uint64, n int) {
		r := rand.New(rand.NewPCG(seed, 3))
		es := make([]domain.LogEntry, n)
		for i := range es {
			es[i] = entry(p, now-int64(r.IntN(600_000)), levels[r.IntN(4)])
			es[i].Message = []string{"timeout", "payment declined", "ok"}[r.IntN(3)]
		}
		if _, err := s.CreateLogs(ctx(t), es, domain.LogWrite{}); err != nil {
			t.Errorf("CreateLogs: %v", err)
		}
	}
	write(1, 2000)
	texts := []string{"timeout", "level:error OR level:warn", `-"payment declined"`}
	filter := func(text string) domain.LogFilter {
		parsed, err := domain.ParseQuery(text, domain.DefaultLimits().Query)
		if err != nil {
			t.Fatal(err)
		}
		return domain.LogFilter{ProjectID: p.ID, Query: &text, Parsed: parsed}
	}
	iterations := 30 // each evaluator's counts; 10 under the race detector
	if raceDetector {
		iterations = 10
	}
	stop := make(chan struct{})
	var writers, evaluators sync.WaitGroup
	for w := range 2 {
		writers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				write(uint64(100+w*1000+i), 50)
				if w == 0 && i%15 == 14 {
					lvl := levels[i%4]
					if _, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID, Levels: []string{lvl}}); err != nil {
						t.Errorf("DeleteLogs: %v", err)
					}
				}
			}
		})
	}
	for e := range 4 {
		evaluators.Go(func() {
			for i := range iterations {
				text := texts[(e+i)%len(texts)]
				window := int64(60_000 * (1 + i/3)) // growing: registered again and again
				if _, _, err := st.CountAlertWindow(ctx(t), filter(text), now-window, now, now); err != nil && !errors.Is(err, context.Canceled) {
					// A query registered again by another evaluator while this one counted
					// is an error of that one evaluation, not a wrong count.
					t.Logf("evaluator %d: %v", e, err)
				}
			}
		})
	}
	evaluators.Wait()
	close(stop)
	writers.Wait()
	for _, text := range texts {
		start, end := now-600_000, now+1000
		got, ok, err := st.CountAlertWindow(ctx(t), filter(text), start, end, now)
		if err != nil || !ok {
			t.Fatalf("CountAlertWindow(%q) = %d, %v, %v", text, got, ok, err)
		}
		if want := WindowCount(t, s, p.ID, text, start, end, now); got != want {
			t.Errorf("%q counted %d; the store counts %d", text, got, want)
		}
	}
}

// WindowCount is the store's own count, through the stats path, of the project's entries that
// match text with a time in [start, end) and within the project's retention at now: what an
// alert count must equal.
func WindowCount(t *testing.T, s domain.Store, projectID, text string, start, end, now int64) int64 {
	t.Helper()
	parsed, err := domain.ParseQuery(text, domain.DefaultLimits().Query)
	if err != nil {
		t.Fatal(err)
	}
	last := end - 1
	f := domain.LogFilter{ProjectID: projectID, Query: &text, Parsed: parsed, Start: &start, End: &last}
	counts, err := s.LogStats(t.Context(), domain.StatsQuery{LogFilter: f, Step: end - start, By: domain.ByNone, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, c := range counts {
		if c.Bucket >= 0 {
			n += c.N
		}
	}
	return n
}
