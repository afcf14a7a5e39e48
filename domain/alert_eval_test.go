package domain

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAlertWindow(t *testing.T) {
	for _, c := range []struct {
		window     int
		now        int64
		start, end int64
	}{
		{60, 120_000, 60_000, 120_000},
		{60, 120_999, 60_000, 120_000},
		{1, 1_001, 0, 1_000},
		{10, -1, -11_000, -1_000},
		{10, -1_000, -11_000, -1_000},
	} {
		start, end := AlertWindow(c.window, c.now)
		if start != c.start || end != c.end {
			t.Errorf("AlertWindow(%d, %d) = [%d, %d), want [%d, %d)", c.window, c.now, start, end, c.start, c.end)
		}
	}
}

func TestAlertConditionHolds(t *testing.T) {
	for _, c := range []struct {
		op    string
		th, n int64
		want  bool
	}{
		{">", 10, 10, false}, {">", 10, 11, true},
		{">=", 10, 10, true}, {">=", 10, 9, false},
		{"<", 1, 0, true}, {"<", 1, 1, false},
		{"<=", 1, 1, true}, {"<=", 1, 2, false},
		{"==", 0, 0, true}, {"==", 0, 1, false},
		{"!=", 0, 1, false},
	} {
		if got := (AlertCondition{Op: c.op, Threshold: c.th}).Holds(c.n); got != c.want {
			t.Errorf("%d %s %d = %v, want %v", c.n, c.op, c.th, got, c.want)
		}
	}
}

// step is one evaluation of a table: its window's end, the count, and the transitions it makes
// as "from>to:notify".
type step struct {
	end   int64
	count int64
	want  []string
}

func runSteps(t *testing.T, r AlertRule, steps []step) AlertStatus {
	t.Helper()
	var st AlertStatus
	seq := int64(0)
	for i, s := range steps {
		var ts []AlertTransition
		st, ts = EvaluateAlert(r, st, s.end, s.count)
		var got []string
		for _, tr := range ts {
			seq++
			if tr.Seq != seq {
				t.Errorf("step %d: transition number %d, want %d (no gap)", i, tr.Seq, seq)
			}
			if tr.Time != s.end || tr.WindowEnd != s.end || tr.WindowStart != s.end-int64(r.WindowSeconds)*1000 || tr.Count != s.count {
				t.Errorf("step %d: transition %+v does not tell its window", i, tr)
			}
			got = append(got, string(tr.From)+">"+string(tr.To)+":"+tr.Notify)
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("step %d (end %d, count %d): transitions %q, want %q", i, s.end, s.count, got, s.want)
		}
		if st.NextEvalAt != s.end+int64(r.IntervalSeconds)*1000 || st.LastEvalAt != s.end || st.LastCount != s.count {
			t.Errorf("step %d: status %+v", i, st)
		}
	}
	return st
}

func TestEvaluateAlert(t *testing.T) {
	rule := func(op string, th int64, forSeconds int) AlertRule {
		return AlertRule{ID: "r", WindowSeconds: 60, IntervalSeconds: 10, ForSeconds: forSeconds, Condition: AlertCondition{Op: op, Threshold: th}}
	}
	t.Run("FiresAtOnceWithoutFor", func(t *testing.T) {
		runSteps(t, rule(">", 10, 0), []step{
			{10_000, 10, nil},
			{20_000, 11, []string{"ok>firing:firing"}},
			{30_000, 50, nil},
			{40_000, 10, []string{"firing>ok:resolved"}},
			{50_000, 10, nil},
		})
	})
	t.Run("EqualsZeroCatchesSilence", func(t *testing.T) {
		runSteps(t, rule("==", 0, 0), []step{
			{10_000, 3, nil},
			{20_000, 0, []string{"ok>firing:firing"}},
			{30_000, 1, []string{"firing>ok:resolved"}},
		})
	})
	t.Run("PendingUntilForHasElapsed", func(t *testing.T) {
		runSteps(t, rule(">=", 5, 20), []step{
			{10_000, 5, []string{"ok>pending:"}},
			{20_000, 6, nil},                               // held 10 s of 20
			{30_000, 9, []string{"pending>firing:firing"}}, // held exactly 20 s
			{40_000, 9, nil},
			{50_000, 4, []string{"firing>ok:resolved"}},
		})
	})
	t.Run("PendingThatStopsHoldingIsNotNotified", func(t *testing.T) {
		st := runSteps(t, rule(">", 0, 30), []step{
			{10_000, 1, []string{"ok>pending:"}},
			{20_000, 0, []string{"pending>ok:"}},
			{30_000, 1, []string{"ok>pending:"}}, // a new run: for counts from here
			{50_000, 1, nil},
			{60_000, 1, []string{"pending>firing:firing"}},
		})
		if st.FiringSince != 60_000 || st.State != AlertFiring {
			t.Errorf("status %+v, want firing since 60000", st)
		}
	})
	t.Run("SilencedFiringIsKeptButNotNotified", func(t *testing.T) {
		r := rule(">", 0, 0)
		r.SilencedUntil = 25_000
		runSteps(t, r, []step{
			{10_000, 1, []string{"ok>firing:"}},
			{20_000, 0, []string{"firing>ok:"}}, // its resolve neither
			{30_000, 1, []string{"ok>firing:firing"}},
			{40_000, 0, []string{"firing>ok:resolved"}},
		})
	})
	t.Run("FiringBeforeASilenceIsResolved", func(t *testing.T) {
		r := rule(">", 0, 0)
		st, _ := EvaluateAlert(r, AlertStatus{}, 10_000, 1)
		r.SilencedUntil = 100_000
		st, ts := EvaluateAlert(r, st, 20_000, 0)
		if len(ts) != 1 || ts[0].Notify != NotifyResolved || ts[0].FiringSince != 10_000 {
			t.Fatalf("transitions %+v, want the resolve of the firing of 10000 notified", ts)
		}
		if st.FiringSince != 0 || st.Notified {
			t.Fatalf("status %+v after a resolve", st)
		}
	})
	t.Run("SilenceEndsAtItsInstant", func(t *testing.T) {
		r := rule(">", 0, 0)
		r.SilencedUntil = 10_000 // not after the window's end: not silenced
		_, ts := EvaluateAlert(r, AlertStatus{}, 10_000, 1)
		if len(ts) != 1 || ts[0].Notify != NotifyFiring {
			t.Fatalf("transitions %+v, want a notified firing", ts)
		}
	})
	t.Run("EachFiringHasItsOwnID", func(t *testing.T) {
		r := rule(">", 0, 0)
		var ids []string
		var st AlertStatus
		for i, n := range []int64{1, 0, 1, 0} {
			var ts []AlertTransition
			st, ts = EvaluateAlert(r, st, int64(i+1)*10_000, n)
			for _, tr := range ts {
				ids = append(ids, NotificationID(r.ID, tr.FiringSince, tr.Notify))
			}
		}
		want := []string{"r/10000/firing", "r/10000/resolved", "r/30000/firing", "r/30000/resolved"}
		if !slices.Equal(ids, want) {
			t.Fatalf("ids %q, want %q", ids, want)
		}
	})
}

// notifierFake refuses the targets whose URL holds "bad", and records deliveries.
type notifierFake struct {
	sent []Notification
	fail bool
}

func (n *notifierFake) CheckTarget(t AlertTarget) error {
	if strings.Contains(t.URL, "bad") {
		return Errorf(KindInvalid, "is not in ALERT_TARGETS")
	}
	return nil
}

func (n *notifierFake) Deliver(_ context.Context, _ AlertTarget, m Notification) (DeliveryResult, error) {
	if n.fail {
		return DeliveryResult{Status: 500}, nil
	}
	n.sent = append(n.sent, m)
	return DeliveryResult{Status: 200, Body: "ok"}, nil
}

func TestValidateAlert(t *testing.T) {
	s := NewService(newFake(), Options{Notifier: &notifierFake{}})
	ptr := func(n int) *int { return &n }
	str := func(v string) *string { return &v }
	for _, c := range []struct {
		name  string
		patch AlertPatch
		want  []string
	}{
		{"good", AlertPatch{Name: str("errors"), Query: str("level:error"), WindowSeconds: ptr(60), IntervalSeconds: ptr(10), ForSeconds: ptr(0),
			Condition: &AlertCondition{Op: ">", Threshold: 0}, Targets: []AlertTarget{{Type: TargetWebhook, URL: "http://x"}}}, nil},
		{"both sources", AlertPatch{SearchID: str(testID()), Query: str("")}, []string{"/query"}},
		{"bad query", AlertPatch{Query: str("level:")}, []string{"/query"}},
		{"window", AlertPatch{WindowSeconds: ptr(0)}, []string{"/window_seconds"}},
		{"window too long", AlertPatch{WindowSeconds: ptr(MaxAlertWindowSeconds + 1)}, []string{"/window_seconds"}},
		{"interval", AlertPatch{IntervalSeconds: ptr(9)}, []string{"/interval_seconds"}},
		{"for", AlertPatch{ForSeconds: ptr(-1)}, []string{"/for_seconds"}},
		{"op", AlertPatch{Condition: &AlertCondition{Op: "!=", Threshold: -1}}, []string{"/condition/op", "/condition/threshold"}},
		{"no targets", AlertPatch{Targets: []AlertTarget{}}, []string{"/targets"}},
		{"refused target", AlertPatch{Targets: []AlertTarget{{URL: "http://ok"}, {URL: "http://bad"}}}, []string{"/targets/1/url"}},
		{"blank name", AlertPatch{Name: str(" x")}, []string{"/name"}},
	} {
		err := s.validateAlert(c.patch)
		var got []string
		var e *Error
		if errors.As(err, &e) {
			if e.Kind != KindInvalid {
				t.Errorf("%s: kind %v", c.name, e.Kind)
			}
			for _, f := range e.Fields {
				got = append(got, "/"+strings.Join(f.Path, "/"))
			}
		} else if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: fields %q, want %q (%v)", c.name, got, c.want, err)
		}
	}
}
