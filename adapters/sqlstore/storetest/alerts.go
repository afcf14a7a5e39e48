package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// runAlerts is the contract of domain.AlertStore, and the exactness of evaluation over a real
// store's count.
func runAlerts(t *testing.T, open Open) {
	t.Run("AlertRulesRoundTrip", func(t *testing.T) { t.Parallel(); testAlertRulesRoundTrip(t, open(t)) })
	t.Run("AlertRulesAreBoundedPerProject", func(t *testing.T) { t.Parallel(); testAlertBound(t, open(t)) })
	t.Run("AlertLeaseHasOneHolder", func(t *testing.T) { t.Parallel(); testAlertLease(t, open(t)) })
	t.Run("AlertLeasesTakenTogether", func(t *testing.T) { t.Parallel(); testAlertLeasesTogether(t, open(t)) })
	t.Run("AlertStatusesSavedTogether", func(t *testing.T) { t.Parallel(); testAlertStatusesTogether(t, open(t)) })
	t.Run("AlertEvaluationIsAllOrNothing", func(t *testing.T) { t.Parallel(); testAlertEvaluationAtomic(t, open(t)) })
	t.Run("AlertOutboxOrderAndClaims", func(t *testing.T) { t.Parallel(); testAlertOutbox(t, open(t)) })
	t.Run("AlertEvaluationIsExact", func(t *testing.T) { t.Parallel(); testAlertEvaluationExact(t, open(t)) })
	t.Run("AlertCountsMatchTheStore", func(t *testing.T) { t.Parallel(); testAlertCountsMatchTheStore(t, open(t)) })
	t.Run("AlertCountsUnderConcurrency", func(t *testing.T) { t.Parallel(); testAlertCountsUnderConcurrency(t, open(t)) })
	t.Run("AlertOfADeletedSearch", func(t *testing.T) { t.Parallel(); testAlertOfADeletedSearch(t, open(t)) })
}

func newAlert(p domain.Project, name string, at time.Time) domain.AlertRule {
	return domain.AlertRule{ID: newID(), ProjectID: p.ID, Name: name, Query: "level:error", WindowSeconds: 60, IntervalSeconds: 10,
		Condition: domain.AlertCondition{Op: ">", Threshold: 3},
		Targets:   []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "https://hooks.example/a"}, {Type: domain.TargetSlack, URL: "https://hooks.slack.example/T/B/secret", BearerToken: "tok"}},
		CreatedAt: at, UpdatedAt: at, Status: domain.AlertStatus{State: domain.AlertOK, NextEvalAt: at.UnixMilli(), Version: 1}}
}

func mustAlert(t *testing.T, s domain.Store, r domain.AlertRule) domain.AlertRule {
	t.Helper()
	if err := s.CreateAlertRule(ctx(t), r, domain.DefaultMaxAlerts); err != nil {
		t.Fatalf("CreateAlertRule(%q): %v", r.Name, err)
	}
	return r
}

func sameAlert(a, b domain.AlertRule) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func testAlertRulesRoundTrip(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	at := base.Add(123456 * time.Microsecond)
	b := mustAlert(t, s, newAlert(p, "b", at))
	a := newAlert(p, "a", at)
	a.Query, a.SearchID = "", newID()
	a.SilencedUntil = 42
	a = mustAlert(t, s, a)
	mustAlert(t, s, newAlert(other, "a", at))

	for _, project := range []string{p.ID, ""} {
		got, err := s.GetAlertRule(ctx(t), project, b.ID)
		if err != nil || !sameAlert(got, b) {
			t.Fatalf("GetAlertRule(%q) = %+v, %v; want %+v", project, got, err, b)
		}
	}
	if _, err := s.GetAlertRule(ctx(t), other.ID, b.ID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("GetAlertRule of another project: %v, want not found", err)
	}
	list, err := s.ListAlertRules(ctx(t), p.ID)
	if err != nil || len(list) != 2 || !sameAlert(list[0], a) || !sameAlert(list[1], b) {
		t.Fatalf("ListAlertRules = %+v, %v; want a, b", list, err)
	}
	b.Name, b.Query, b.WindowSeconds, b.IntervalSeconds, b.ForSeconds = "b2", "", 30, 20, 40
	b.Condition, b.Targets, b.SilencedUntil = domain.AlertCondition{Op: "==", Threshold: 0}, b.Targets[:1], 99
	b.UpdatedAt, b.Status.NextEvalAt = at.Add(time.Second), 12345
	if err := s.UpdateAlertRule(ctx(t), b); err != nil {
		t.Fatalf("UpdateAlertRule: %v", err)
	}
	b.Status.Version++
	if got, err := s.GetAlertRule(ctx(t), p.ID, b.ID); err != nil || !sameAlert(got, b) {
		t.Fatalf("after update %+v, %v; want %+v", got, err, b)
	}
	if err := s.UpdateAlertRule(ctx(t), newAlert(p, "none", at)); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("UpdateAlertRule of no rule: %v", err)
	}
	if err := s.CreateAlertRule(ctx(t), newAlert(domain.Project{ID: newID()}, "x", at), 10); domain.KindOf(err) != domain.KindUnknownProject {
		t.Fatalf("CreateAlertRule of no project: %v", err)
	}
	saveTransition(t, s, a, 0)
	if err := s.DeleteAlertRule(ctx(t), p.ID, a.ID); err != nil {
		t.Fatalf("DeleteAlertRule: %v", err)
	}
	if h, err := s.AlertHistory(ctx(t), p.ID, a.ID, 10); err != nil || len(h) != 0 {
		t.Fatalf("history of a deleted rule: %+v, %v", h, err)
	}
	if out, err := s.PendingOutbox(ctx(t), 100); err != nil || len(out) != 0 {
		t.Fatalf("outbox of a deleted rule: %+v, %v", out, err)
	}
	if err := s.DeleteAlertRule(ctx(t), p.ID, a.ID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("DeleteAlertRule again: %v", err)
	}
	// A rule, its history and its outbox go with the project.
	saveTransition(t, s, b, 0)
	if err := s.DeleteProject(ctx(t), p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetAlertRule(ctx(t), "", b.ID); domain.KindOf(err) != domain.KindNotFound {
		t.Fatalf("a rule outlived its project: %v", err)
	}
	if out, err := s.PendingOutbox(ctx(t), 100); err != nil || len(out) != 0 {
		t.Fatalf("outbox outlived its project: %+v, %v", out, err)
	}
}

// saveTransition stores one evaluation of r making one notified transition, over version.
func saveTransition(t *testing.T, s domain.Store, r domain.AlertRule, at int64) domain.AlertEvaluation {
	t.Helper()
	cur, err := s.GetAlertRule(ctx(t), r.ProjectID, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	st := cur.Status
	to := domain.AlertFiring
	notify := domain.NotifyFiring
	if st.State == domain.AlertFiring {
		to, notify = domain.AlertOK, domain.NotifyResolved
	}
	tr := domain.AlertTransition{Seq: st.Transitions + 1, Time: at, From: st.State, To: to, Count: 7, WindowStart: at - 60_000, WindowEnd: at, Notify: notify, FiringSince: at}
	next := st
	next.State, next.Transitions, next.LastEvalAt = to, tr.Seq, at
	ev := domain.AlertEvaluation{ProjectID: r.ProjectID, RuleID: r.ID, Version: st.Version, Status: next, Transitions: []domain.AlertTransition{tr}}
	for i, target := range cur.Targets {
		ev.Outbox = append(ev.Outbox, domain.OutboxItem{ID: newID(), ProjectID: r.ProjectID, RuleID: r.ID, Seq: tr.Seq, Target: i, To: target,
			Notification: domain.Notification{ID: domain.NotificationID(r.ID, at, notify), AlertID: r.ID, State: notify, Count: 7,
				Entries: []domain.LogEntry{{ID: newID(), ProjectID: r.ProjectID, Time: at - 1, Level: "error", Message: "boom", Attributes: []byte(`{"a":1}`)}}},
			NextAttemptAt: at})
	}
	if err := s.SaveAlertEvaluation(ctx(t), ev); err != nil {
		t.Fatalf("SaveAlertEvaluation: %v", err)
	}
	return ev
}

func testAlertBound(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = s.CreateAlertRule(ctx(t), newAlert(p, fmt.Sprint(i), base), 3) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, domain.ErrTooManyAlerts):
			t.Fatalf("CreateAlertRule: %v", err)
		}
	}
	if list, _ := s.ListAlertRules(ctx(t), p.ID); created != 3 || len(list) != 3 {
		t.Fatalf("created %d, listed %d; want 3 (the bound)", created, len(list))
	}
}

func testAlertLease(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	r := mustAlert(t, s, newAlert(p, "r", base))
	take := func(holder string, now, until int64, want bool) {
		t.Helper()
		got, err := s.AcquireAlertLeases(ctx(t), p.ID, holder, now, []domain.AlertLeaseClaim{{RuleID: r.ID, Until: until}})
		if err != nil || slices.Equal(got, []string{r.ID}) != want || len(got) > 1 {
			t.Fatalf("AcquireAlertLeases(%s, now %d) = %v, %v; want taken %v", holder, now, got, err, want)
		}
	}
	take("a", 1000, 16000, true)
	take("b", 2000, 17000, false)
	take("a", 11000, 26000, true) // renewed
	take("b", 25999, 40000, false)
	take("b", 26001, 41000, true) // a's lease ran out
	take("a", 27000, 42000, false)
	// The lease goes with its rule: a rule made again with its id is anyone's.
	if err := s.DeleteAlertRule(ctx(t), p.ID, r.ID); err != nil {
		t.Fatal(err)
	}
	mustAlert(t, s, r)
	take("a", 28000, 43000, true)

	// The due list says who holds each rule until when, and an evaluation renews its holder's
	// lease, and only its holder's, whether it changes the rule's state or not.
	leased := func(holder string, until int64) {
		t.Helper()
		due, err := s.DueAlertRules(ctx(t), 1<<50, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range due {
			if ref.ID == r.ID && (ref.LeaseHolder != holder || ref.LeaseUntil != until) {
				t.Fatalf("due: lease %q until %d, want %q until %d", ref.LeaseHolder, ref.LeaseUntil, holder, until)
			}
			if ref.ID == r.ID {
				return
			}
		}
		t.Fatalf("due: rule %s not listed in %+v", r.ID, due)
	}
	save := func(holder string, until int64, transition bool) {
		t.Helper()
		cur, err := s.GetAlertRule(ctx(t), p.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		ev := domain.AlertEvaluation{ProjectID: p.ID, RuleID: r.ID, Version: cur.Status.Version, Status: cur.Status, Holder: holder, LeaseUntil: until}
		ev.Status.LastEvalAt++
		if transition {
			tr := domain.AlertTransition{Seq: cur.Status.Transitions + 1, Time: 30_000, From: cur.Status.State, To: domain.AlertPending, Count: 1, WindowStart: 0, WindowEnd: 30_000}
			ev.Status.State, ev.Status.Transitions = tr.To, tr.Seq
			ev.Transitions = []domain.AlertTransition{tr}
		}
		// An evaluation with no transition is saved with others of its round.
		if transition {
			if err := s.SaveAlertEvaluation(ctx(t), ev); err != nil {
				t.Fatalf("SaveAlertEvaluation(%s): %v", holder, err)
			}
		} else if saved, err := s.SaveAlertStatuses(ctx(t), p.ID, []domain.AlertEvaluation{ev}); err != nil || !slices.Equal(saved, []string{r.ID}) {
			t.Fatalf("SaveAlertStatuses(%s) = %v, %v; want [%s]", holder, saved, err, r.ID)
		}
		if got, err := s.GetAlertRule(ctx(t), p.ID, r.ID); err != nil || got.Status.LastEvalAt != ev.Status.LastEvalAt || got.Status.Version != cur.Status.Version+1 {
			t.Fatalf("SaveAlertEvaluation(%s) did not save the status: %+v, %v", holder, got.Status, err)
		}
	}
	leased("a", 43000)
	save("b", 99_000, false)
	leased("a", 43000)
	save("a", 60_000, false)
	leased("a", 60_000)
	take("b", 59_999, 70_000, false)
	save("a", 80_000, true)
	leased("a", 80_000)
	save("", 0, false)
	leased("a", 80_000)
	take("b", 80_001, 95_000, true)
	leased("b", 95_000)
}

// testAlertLeasesTogether: one call takes the leases of several of a project's rules, each by
// the rule of one lease (expired or its own: taken, with its own end; another's that lasts:
// left), and returns the rules it took.
func testAlertLeasesTogether(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	var rules []domain.AlertRule
	for i := range 5 {
		rules = append(rules, mustAlert(t, s, newAlert(p, fmt.Sprint("r", i), base)))
	}
	take := func(holder string, now int64, claims []domain.AlertLeaseClaim, want ...string) {
		t.Helper()
		got, err := s.AcquireAlertLeases(ctx(t), p.ID, holder, now, claims)
		slices.Sort(got)
		slices.Sort(want)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("AcquireAlertLeases(%s, now %d) = %v, %v; want %v", holder, now, got, err, want)
		}
	}
	claim := func(until int64, rs ...domain.AlertRule) []domain.AlertLeaseClaim {
		var cs []domain.AlertLeaseClaim
		for i, r := range rs {
			cs = append(cs, domain.AlertLeaseClaim{RuleID: r.ID, Until: until + int64(i)})
		}
		return cs
	}
	// r0 a's until 16000, r1 b's until 16001, r2 b's until 5000; r3 and r4 have no lease.
	take("a", 1000, claim(16000, rules[0]), rules[0].ID)
	take("b", 1000, claim(16001, rules[1]), rules[1].ID)
	take("b", 1000, claim(5000, rules[2]), rules[2].ID)
	take("a", 10_000, claim(30_000, rules...), rules[0].ID, rules[2].ID, rules[3].ID, rules[4].ID)
	want := map[string]domain.AlertRef{
		rules[0].ID: {LeaseHolder: "a", LeaseUntil: 30_000},
		rules[1].ID: {LeaseHolder: "b", LeaseUntil: 16_001},
		rules[2].ID: {LeaseHolder: "a", LeaseUntil: 30_002},
		rules[3].ID: {LeaseHolder: "a", LeaseUntil: 30_003},
		rules[4].ID: {LeaseHolder: "a", LeaseUntil: 30_004},
	}
	due, err := s.DueAlertRules(ctx(t), 1<<50, 100)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, ref := range due {
		if w, ok := want[ref.ID]; ok {
			seen++
			if ref.LeaseHolder != w.LeaseHolder || ref.LeaseUntil != w.LeaseUntil {
				t.Fatalf("rule %s: lease %q until %d, want %q until %d", ref.ID, ref.LeaseHolder, ref.LeaseUntil, w.LeaseHolder, w.LeaseUntil)
			}
		}
	}
	if seen != len(want) {
		t.Fatalf("due lists %d of the %d rules", seen, len(want))
	}
	// Nothing claimed, nothing taken; b renews its own and takes none of a's while they last,
	// then the one that has run out (30,000 < 30,001), not the one that has not: a lease holds
	// through its last millisecond.
	take("b", 20_000, nil)
	take("b", 20_000, claim(40_000, rules[1], rules[0], rules[2]), rules[1].ID)
	take("b", 30_001, claim(40_000, rules[0], rules[2]), rules[0].ID)
	take("b", 30_002, claim(40_000, rules[2]))
}

// testAlertStatusesTogether: a round's rules of one project are read together, and the statuses
// of those whose state did not change are written together, each over the version it read,
// each renewing its holder's lease and no other's.
func testAlertStatusesTogether(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	other := mustProject(t, s, "other", base)
	var rules []domain.AlertRule
	for i := range 4 {
		rules = append(rules, mustAlert(t, s, newAlert(p, fmt.Sprint("r", i), base)))
	}
	theirs := mustAlert(t, s, newAlert(other, "theirs", base))
	ids := []string{rules[0].ID, rules[1].ID, rules[2].ID, rules[3].ID, theirs.ID, newID()}
	got, err := s.GetAlertRules(ctx(t), p.ID, ids)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b domain.AlertRule) int { return strings.Compare(a.Name, b.Name) })
	if len(got) != 4 {
		t.Fatalf("GetAlertRules = %d rules; want the project's 4 (not another project's, nor an unknown id)", len(got))
	}
	for i := range got {
		if !sameAlert(got[i], rules[i]) {
			t.Fatalf("GetAlertRules[%d] = %+v\nwant %+v", i, got[i], rules[i])
		}
	}
	if got, err := s.GetAlertRules(ctx(t), p.ID, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetAlertRules(no ids) = %v, %v", got, err)
	}

	for i, holder := range []string{"a", "a", "b"} {
		if got, err := s.AcquireAlertLeases(ctx(t), p.ID, holder, 1000, []domain.AlertLeaseClaim{{RuleID: rules[i].ID, Until: 16000}}); err != nil || len(got) != 1 {
			t.Fatalf("AcquireAlertLeases: %v, %v", got, err)
		}
	}
	// rules[2] is b's; rules[3] was patched after it was read (version 2); rules[1] is saved
	// with no holder.
	patched := rules[3]
	patched.Name = "patched"
	if err := s.UpdateAlertRule(ctx(t), patched); err != nil {
		t.Fatal(err)
	}
	var evs []domain.AlertEvaluation
	for i, r := range rules {
		st := r.Status
		st.LastEvalAt, st.LastCount, st.NextEvalAt, st.State, st.PendingSince = 30_000+int64(i), 7+int64(i), 40_000+int64(i), domain.AlertPending, 20_000
		ev := domain.AlertEvaluation{ProjectID: p.ID, RuleID: r.ID, Version: r.Status.Version, Status: st, Holder: "a", LeaseUntil: 50_000 + int64(i)}
		if i == 1 {
			ev.Holder, ev.LeaseUntil = "", 0
		}
		evs = append(evs, ev)
	}
	saved, err := s.SaveAlertStatuses(ctx(t), p.ID, evs)
	slices.Sort(saved)
	want := []string{rules[0].ID, rules[1].ID, rules[2].ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(saved, want) {
		t.Fatalf("SaveAlertStatuses = %v, %v; want %v (not the patched rule)", saved, err, want)
	}
	for i, r := range rules {
		got, err := s.GetAlertRule(ctx(t), p.ID, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		wantSt := evs[i].Status
		wantSt.Version = r.Status.Version + 1
		if i == 3 {
			wantSt = r.Status
			wantSt.Version, wantSt.NextEvalAt = r.Status.Version+1, patched.Status.NextEvalAt
		}
		if got.Status != wantSt {
			t.Fatalf("rule %d: status %+v\nwant %+v", i, got.Status, wantSt)
		}
	}
	due, err := s.DueAlertRules(ctx(t), 1<<50, 100)
	if err != nil {
		t.Fatal(err)
	}
	leases := map[string]string{}
	for _, ref := range due {
		leases[ref.ID] = fmt.Sprintf("%s %d", ref.LeaseHolder, ref.LeaseUntil)
	}
	// a's lease renewed (rules[0]); no renewal without a holder (rules[1]); b's lease kept
	// (rules[2]); rules[3], written by nobody, had no lease and has none.
	for i, want := range []string{"a 50000", "a 16000", "b 16000", " 0"} {
		if leases[rules[i].ID] != want {
			t.Fatalf("rule %d: lease %q, want %q", i, leases[rules[i].ID], want)
		}
	}
	// Another project's evaluation, or one with a transition, is not a status of this call.
	if _, err := s.SaveAlertStatuses(ctx(t), p.ID, []domain.AlertEvaluation{{ProjectID: other.ID, RuleID: theirs.ID, Version: 1, Status: theirs.Status}}); err == nil {
		t.Fatal("SaveAlertStatuses took another project's rule")
	}
	if got, err := s.GetAlertRule(ctx(t), other.ID, theirs.ID); err != nil || got.Status != theirs.Status {
		t.Fatalf("another project's rule changed: %+v, %v", got.Status, err)
	}
}

func testAlertEvaluationAtomic(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	r := mustAlert(t, s, newAlert(p, "r", base))
	ev := saveTransition(t, s, r, 10_000)
	// The same evaluation again, over the version it read: refused, nothing written.
	ev.Transitions[0].Seq = 99
	for i := range ev.Outbox {
		ev.Outbox[i].ID = newID()
	}
	if err := s.SaveAlertEvaluation(ctx(t), ev); !errors.Is(err, domain.ErrAlertChanged) {
		t.Fatalf("a stale evaluation: %v, want ErrAlertChanged", err)
	}
	h, err := s.AlertHistory(ctx(t), p.ID, r.ID, 10)
	if err != nil || len(h) != 1 || h[0].Seq != 1 {
		t.Fatalf("history %+v, %v; want one transition", h, err)
	}
	out, err := s.PendingOutbox(ctx(t), 100)
	if err != nil || len(out) != 2 {
		t.Fatalf("outbox %+v, %v; want two notifications", out, err)
	}
	// A patch advances the version: an evaluation that read the rule before it is stale too.
	saveTransition(t, s, r, 20_000)
	got, _ := s.GetAlertRule(ctx(t), p.ID, r.ID)
	if got.Status.State != domain.AlertOK || got.Status.Transitions != 2 || got.Status.Version != 3 {
		t.Fatalf("status %+v after two evaluations", got.Status)
	}
	if h, _ := s.AlertHistory(ctx(t), p.ID, r.ID, 10); len(h) != 2 || h[0].Seq != 2 || h[0].To != domain.AlertOK || h[1].To != domain.AlertFiring ||
		h[0].Count != 7 || h[0].WindowStart != -40_000 || h[0].WindowEnd != 20_000 {
		t.Fatalf("history %+v, want newest first", h)
	}
}

func testAlertOutbox(t *testing.T, s domain.Store) {
	p := mustProject(t, s, "p", base)
	r := mustAlert(t, s, newAlert(p, "r", base))
	first := saveTransition(t, s, r, 10_000)
	saveTransition(t, s, r, 20_000)
	out, err := s.PendingOutbox(ctx(t), 100)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, it := range out {
		order = append(order, fmt.Sprintf("%d/%d", it.Target, it.Seq))
	}
	if want := []string{"0/1", "0/2", "1/1", "1/2"}; !slices.Equal(order, want) {
		t.Fatalf("pending %q, want %q (by target, then transition)", order, want)
	}
	it := out[2]
	if it.To != r.Targets[1] || it.Notification.ID != first.Outbox[1].Notification.ID || len(it.Notification.Entries) != 1 ||
		string(it.Notification.Entries[0].Attributes) != `{"a":1}` {
		t.Fatalf("item %+v does not round-trip", it)
	}
	ok, err := s.ClaimOutbox(ctx(t), it, 50_000)
	if err != nil || !ok {
		t.Fatalf("ClaimOutbox = %v, %v", ok, err)
	}
	if ok, _ := s.ClaimOutbox(ctx(t), it, 60_000); ok {
		t.Fatal("a second claim over the same attempt was taken")
	}
	if err := s.FinishOutbox(ctx(t), p.ID, it.ID, false, 70_000, "the receiver answered 500"); err != nil {
		t.Fatal(err)
	}
	out, _ = s.PendingOutbox(ctx(t), 100)
	if out[2].ID != it.ID || out[2].Attempts != 1 || out[2].NextAttemptAt != 70_000 || out[2].LastError != "the receiver answered 500" {
		t.Fatalf("after a failed attempt %+v", out[2])
	}
	if err := s.FinishOutbox(ctx(t), p.ID, it.ID, true, 71_000, ""); err != nil {
		t.Fatal(err)
	}
	if out, _ = s.PendingOutbox(ctx(t), 100); len(out) != 3 || slices.ContainsFunc(out, func(o domain.OutboxItem) bool { return o.ID == it.ID }) {
		t.Fatalf("a delivered notification is still pending: %+v", out)
	}
	if ok, _ := s.ClaimOutbox(ctx(t), it, 80_000); ok {
		t.Fatal("a delivered notification was claimed")
	}
	// The sweep deletes what was delivered before its bound, and nothing pending.
	if n, err := s.SweepOutbox(ctx(t), 71_000); err != nil || n != 0 {
		t.Fatalf("SweepOutbox before the delivery = %d, %v; want 0", n, err)
	}
	if n, err := s.SweepOutbox(ctx(t), 71_001); err != nil || n != 1 {
		t.Fatalf("SweepOutbox = %d, %v; want 1", n, err)
	}
	if out, _ = s.PendingOutbox(ctx(t), 100); len(out) != 3 {
		t.Fatalf("the sweep took pending notifications: %d left", len(out))
	}
}

// recorder is a Notifier that takes every target and keeps what it is sent.
type recorder struct {
	mu   sync.Mutex
	sent []domain.Notification
}

func (r *recorder) CheckTarget(domain.AlertTarget) error { return nil }

func (r *recorder) Deliver(_ context.Context, _ domain.AlertTarget, n domain.Notification) (domain.DeliveryResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, n)
	return domain.DeliveryResult{Status: 200}, nil
}

// testAlertEvaluationExact drives a rule through a real store's counts: entries at the edges
// of windows, a late entry, `== 0`, for_seconds and a silence, each evaluation at a fixed time.
func testAlertEvaluationExact(t *testing.T, s domain.Store) {
	now := base
	rec := &recorder{}
	svc := domain.NewService(s, domain.Options{NewID: newID, Notifier: rec, Now: func() time.Time { return now }})
	admin := asAdmin(t)
	p, err := svc.CreateProject(admin, domain.ProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := base.UnixMilli() // a whole second
	at := func(ms int64) domain.LogEntry {
		e := entry(p, ms, "error")
		return e
	}
	create := func(name, op string, th int64, forSeconds int, query string) domain.AlertRule {
		t.Helper()
		r, err := svc.CreateAlert(admin, domain.AlertInput{ProjectID: p.ID, Name: name, Query: &query, WindowSeconds: 60, IntervalSeconds: 10,
			ForSeconds: forSeconds, Condition: domain.AlertCondition{Op: op, Threshold: th}, Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "https://x.example"}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	above := create("above", ">=", 2, 0, "level:error")
	silence := create("silence", "==", 0, 0, "")
	held := create("held", ">=", 1, 20, "level:error")

	steps := []struct {
		at     int64 // evaluation time, ms after t0 (+ 500: a fraction the window drops)
		insert []int64
		states [3]domain.AlertState // above, silence, held
		counts [3]int64
	}{
		// Window [t0-60s, t0): nothing yet.
		{0, nil, [3]domain.AlertState{"ok", "firing", "ok"}, [3]int64{0, 0, 0}},
		// An entry exactly at the end of the next window (t0+10s) is not in it; one exactly at
		// its start (t0-50s) is.
		{10_000, []int64{-50_000, 10_000}, [3]domain.AlertState{"ok", "ok", "pending"}, [3]int64{1, 1, 1}},
		// The entry at t0+10s is in the window [t0-40s, t0+20s); the one at t0-50s has left it.
		// A late entry at t0+5s (sent now, its window evaluated before) is counted now.
		{20_000, []int64{5_000}, [3]domain.AlertState{"firing", "ok", "pending"}, [3]int64{2, 2, 2}},
		// held has held 20 s: it fires.
		{30_000, nil, [3]domain.AlertState{"firing", "ok", "firing"}, [3]int64{2, 2, 2}},
		// Every entry has left the window [t0+10s, t0+70s) but the one at t0+10s.
		{70_000, nil, [3]domain.AlertState{"ok", "ok", "firing"}, [3]int64{1, 1, 1}},
		{80_000, nil, [3]domain.AlertState{"ok", "firing", "ok"}, [3]int64{0, 0, 0}},
	}
	for i, st := range steps {
		var es []domain.LogEntry
		for _, ms := range st.insert {
			es = append(es, at(t0+ms))
		}
		if len(es) > 0 {
			mustInsert(t, s, es...)
		}
		now = time.UnixMilli(t0 + st.at + 500)
		rep, err := svc.EvaluateDue(ctx(t), "me", now)
		if err != nil || rep.Evaluated != 3 {
			t.Fatalf("step %d: EvaluateDue = %+v, %v; want 3 rules evaluated", i, rep, err)
		}
		for j, r := range []domain.AlertRule{above, silence, held} {
			got, err := svc.GetAlert(admin, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.State != st.states[j] || got.Status.LastCount != st.counts[j] || got.Status.LastEvalAt != t0+st.at {
				t.Errorf("step %d: %s is %s with count %d at %d; want %s with %d at %d", i, r.Name, got.Status.State, got.Status.LastCount,
					got.Status.LastEvalAt, st.states[j], st.counts[j], t0+st.at)
			}
		}
		// Due again only after its interval.
		if rep, _ := svc.EvaluateDue(ctx(t), "me", now.Add(time.Second)); rep.Evaluated != 0 {
			t.Fatalf("step %d: %d rules evaluated again before their interval", i, rep.Evaluated)
		}
	}
	h, err := svc.AlertHistory(admin, held.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range slices.Backward(h) {
		got = append(got, fmt.Sprintf("%d %s>%s %d [%d,%d)", tr.Seq, tr.From, tr.To, tr.Count, tr.WindowStart-t0, tr.WindowEnd-t0))
	}
	want := []string{"1 ok>pending 1 [-50000,10000)", "2 pending>firing 2 [-30000,30000)", "3 firing>ok 0 [20000,80000)"}
	if !slices.Equal(got, want) {
		t.Fatalf("history of held %q, want %q", got, want)
	}

	// A silence: the rule still changes state, with history, but nothing is queued.
	until := t0 + 200_000
	if _, err := svc.PatchAlert(admin, above.ID, domain.AlertPatch{SilencedUntil: &until}); err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, at(t0+85_000), at(t0+86_000))
	now = time.UnixMilli(t0 + 90_500)
	if _, err := svc.EvaluateDue(ctx(t), "me", now); err != nil {
		t.Fatal(err)
	}
	if got, _ := svc.GetAlert(admin, above.ID); got.Status.State != domain.AlertFiring {
		t.Fatalf("a silenced rule is %s, want firing", got.Status.State)
	}
	// One notification per rule and target a round, in order: as many rounds as it takes.
	for range 10 {
		rep, err := svc.DeliverOutbox(ctx(t))
		if err != nil || rep.Failed > 0 {
			t.Fatalf("DeliverOutbox = %+v, %v", rep, err)
		}
	}
	var ids []string
	for _, n := range rec.sent {
		ids = append(ids, fmt.Sprintf("%s %s %d", n.AlertID, n.State, n.FiringStart-t0))
	}
	wantIDs := []string{
		above.ID + " firing 20000", above.ID + " resolved 20000",
		held.ID + " firing 30000", held.ID + " resolved 30000",
		silence.ID + " firing 0", silence.ID + " resolved 0", silence.ID + " firing 80000", silence.ID + " resolved 80000",
	}
	slices.Sort(ids)
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("notified %q, want %q (nothing of the silenced firing)", ids, wantIDs)
	}
	for _, n := range rec.sent {
		if n.AlertID == above.ID && n.State == domain.NotifyFiring && (len(n.Entries) != 2 || n.Count != 2 || n.Query != "level:error") {
			t.Fatalf("the firing of above carries %+v, want its two entries", n)
		}
	}
}

// testAlertOfADeletedSearch: a rule counting a saved search follows its query; once the search
// is deleted, each evaluation fails, the rule keeping its state and coming due again only after
// its interval.
func testAlertOfADeletedSearch(t *testing.T, s domain.Store) {
	now := base
	svc := domain.NewService(s, domain.Options{NewID: newID, Notifier: &recorder{}, Now: func() time.Time { return now }})
	admin := asAdmin(t)
	p, err := svc.CreateProject(admin, domain.ProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	sr, err := svc.CreateSearch(admin, domain.SearchInput{ProjectID: p.ID, Name: "errors", Query: "level:error", RangeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	other := "x"
	if _, err := svc.CreateAlert(admin, domain.AlertInput{ProjectID: p.ID, Name: "r", SearchID: &sr.ID, Query: &other, WindowSeconds: 60, IntervalSeconds: 10,
		Condition: domain.AlertCondition{Op: ">", Threshold: 0}, Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "https://x.example"}}}); domain.KindOf(err) != domain.KindInvalid {
		t.Fatalf("a rule with both search_id and query: %v, want invalid", err)
	}
	r, err := svc.CreateAlert(admin, domain.AlertInput{ProjectID: p.ID, Name: "r", SearchID: &sr.ID, WindowSeconds: 60, IntervalSeconds: 10,
		Condition: domain.AlertCondition{Op: ">", Threshold: 0}, Targets: []domain.AlertTarget{{Type: domain.TargetWebhook, URL: "https://x.example"}}})
	if err != nil {
		t.Fatal(err)
	}
	mustInsert(t, s, entry(p, base.UnixMilli()-1000, "error"), entry(p, base.UnixMilli()-2000, "info"))
	now = base.Add(500 * time.Millisecond)
	if rep, err := svc.EvaluateDue(ctx(t), "me", now); err != nil || rep.Evaluated != 1 {
		t.Fatalf("EvaluateDue = %+v, %v", rep, err)
	}
	if got, _ := svc.GetAlert(admin, r.ID); got.Status.State != domain.AlertFiring || got.Status.LastCount != 1 {
		t.Fatalf("status %+v, want firing on the search's one error", got.Status)
	}
	if err := svc.DeleteSearch(admin, sr.ID); err != nil {
		t.Fatal(err)
	}
	now = base.Add(10500 * time.Millisecond)
	if rep, err := svc.EvaluateDue(ctx(t), "me", now); err != nil || rep.Failed != 1 {
		t.Fatalf("EvaluateDue without the search = %+v, %v; want one failure", rep, err)
	}
	if rep, _ := svc.EvaluateDue(ctx(t), "me", now.Add(time.Second)); rep.Failed+rep.Evaluated != 0 {
		t.Fatalf("evaluated again at once: %+v", rep)
	}
	got, _ := svc.GetAlert(admin, r.ID)
	if got.Status.State != domain.AlertFiring || got.Status.NextEvalAt != base.UnixMilli()+20_000 || got.Status.Transitions != 1 {
		t.Fatalf("status %+v after a failed evaluation", got.Status)
	}
}
