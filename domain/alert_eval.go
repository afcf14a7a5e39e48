package domain

import "strconv"

// AlertStatus is what a rule's evaluations keep between them: its state, since when, and what
// the last evaluation saw. Times are Unix ms.
type AlertStatus struct {
	State AlertState
	// PendingSince is the end of the window of the first evaluation of the current run of
	// evaluations whose condition held (0 when the last one's did not).
	PendingSince int64
	// FiringSince is the end of the window of the evaluation that made the rule fire (0 unless
	// firing): with the rule's id it names the firing.
	FiringSince int64
	// Notified says the current firing was notified (it began outside a silence): its resolve
	// is notified too, and only then.
	Notified bool
	// LastEvalAt is the end of the last evaluated window (0: never evaluated); LastCount its
	// count.
	LastEvalAt int64
	LastCount  int64
	// NextEvalAt is when the rule is due for its next evaluation.
	NextEvalAt int64
	// Transitions is how many transitions the history holds: the next one is number
	// Transitions+1, so a gap in the history shows.
	Transitions int64
	// Version advances with every write of the rule (a patch, an evaluation): an evaluation is
	// stored only over the version it read.
	Version int64
}

// AlertTransition is one change of a rule's state, as its history keeps it.
type AlertTransition struct {
	// Seq numbers the rule's transitions from 1, without gaps.
	Seq  int64
	Time int64
	From AlertState
	To   AlertState
	// Count is the count of the window [WindowStart, WindowEnd) that made the change.
	Count       int64
	WindowStart int64
	WindowEnd   int64
	// Notify is what the change is notified as: "firing", "resolved", or "" (not notified: a
	// change to or from pending, or one during a silence).
	Notify string
	// FiringSince is the start of the firing a notified change belongs to.
	FiringSince int64
}

// The states of a notification.
const (
	NotifyFiring   = "firing"
	NotifyResolved = "resolved"
)

// AlertWindow is the window an evaluation at now counts: [end - window, end), end being now
// rounded down to a whole second (Unix ms). Rounding makes windows whole seconds, so two
// evaluations of one rule never count overlapping partial milliseconds differently.
func AlertWindow(windowSeconds int, now int64) (start, end int64) {
	end = SecondOf(now)
	return end - int64(windowSeconds)*1000, end
}

// Holds reports whether count meets the condition.
func (c AlertCondition) Holds(count int64) bool {
	switch c.Op {
	case ">":
		return count > c.Threshold
	case ">=":
		return count >= c.Threshold
	case "<":
		return count < c.Threshold
	case "<=":
		return count <= c.Threshold
	case "==":
		return count == c.Threshold
	}
	return false
}

// EvaluateAlert is one evaluation of rule r, whose status is st, over the window ending at end
// in which count entries match: the status that follows and the transitions it makes, in order.
// It is pure: the same rule, status, end and count always give the same answer.
//
//   - The condition holds: ok becomes pending (PendingSince = end), or firing at once when
//     for_seconds is 0 (one transition ok → firing); pending becomes firing once the condition
//     has held for for_seconds (end - PendingSince >= for_seconds); firing stays firing.
//   - It does not: pending becomes ok (not notified), firing becomes ok (resolved).
//   - While the rule is silenced (end < SilencedUntil), transitions are made and kept all the
//     same, but a firing that begins is not notified, nor is its resolve; a firing notified
//     before the silence is resolved with a notification.
func EvaluateAlert(r AlertRule, st AlertStatus, end, count int64) (AlertStatus, []AlertTransition) {
	start := end - int64(r.WindowSeconds)*1000
	next := st
	if next.State == "" {
		next.State = AlertOK
	}
	next.LastEvalAt, next.LastCount = end, count
	next.NextEvalAt = end + int64(r.IntervalSeconds)*1000
	silenced := r.SilencedUntil > end
	var out []AlertTransition
	move := func(to AlertState, notify string) {
		t := AlertTransition{Seq: next.Transitions + 1, Time: end, From: next.State, To: to, Count: count, WindowStart: start, WindowEnd: end}
		next.Transitions++
		switch notify {
		case NotifyFiring:
			next.FiringSince = end
			next.Notified = !silenced
			if next.Notified {
				t.Notify, t.FiringSince = NotifyFiring, end
			}
		case NotifyResolved:
			if next.Notified {
				t.Notify, t.FiringSince = NotifyResolved, next.FiringSince
			}
			next.FiringSince, next.Notified = 0, false
		}
		next.State = to
		out = append(out, t)
	}
	holds := r.Condition.Holds(count)
	switch {
	case holds && next.State == AlertOK:
		next.PendingSince = end
		if r.ForSeconds == 0 {
			move(AlertFiring, NotifyFiring)
		} else {
			move(AlertPending, "")
		}
	case holds && next.State == AlertPending:
		if end-next.PendingSince >= int64(r.ForSeconds)*1000 {
			move(AlertFiring, NotifyFiring)
		}
	case !holds && next.State == AlertPending:
		next.PendingSince = 0
		move(AlertOK, "")
	case !holds && next.State == AlertFiring:
		next.PendingSince = 0
		move(AlertOK, NotifyResolved)
	}
	return next, out
}

// NotificationID names one notification of a rule: the rule, the start of the firing (Unix
// ms) and its state, so that every delivery of one firing's message, by whichever instance,
// carries the same id and a receiver can deduplicate on it.
func NotificationID(alertID string, firingSince int64, state string) string {
	return alertID + "/" + strconv.FormatInt(firingSince, 10) + "/" + state
}
