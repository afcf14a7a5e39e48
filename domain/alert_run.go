package domain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The pace of the evaluator and of the outbox's sender.
const (
	// DueAlertsBatch is how many due rules one EvaluateDue takes at most.
	DueAlertsBatch = 500
	// OutboxBatch is how many undelivered notifications one DeliverOutbox reads at most.
	OutboxBatch = 1000
	// OutboxClaim is how long a sender holds a notification it is delivering: if it dies
	// mid-delivery, another sends it again after that (at least once).
	OutboxClaim = 30 * time.Second
	// OutboxKeep is how long a delivered notification stays in the outbox.
	OutboxKeep = 24 * time.Hour
	// OutboxMaxBackoff bounds the wait between two attempts of one notification: 1 s after the
	// first failure, doubling.
	OutboxMaxBackoff = time.Minute
)

// AlertLease is how long an evaluator holds a rule it evaluated at now, interval seconds apart:
// one and a half intervals, so that its next evaluation renews it in time, and another
// instance takes over within two intervals when it dies.
func AlertLease(now int64, intervalSeconds int) int64 {
	return now + int64(intervalSeconds)*1500
}

// EvaluateReport is what one EvaluateDue did.
type EvaluateReport struct {
	// Evaluated counts the rules evaluated and stored, Failed those whose evaluation failed
	// (each tried again when next due), Skipped those another instance holds.
	Evaluated, Failed, Skipped int
	// Durations are the evaluations' durations, one per rule evaluated or failed.
	Durations []time.Duration
	// Errs are the failures, for the log.
	Errs []error
}

// EvaluateDue evaluates every rule due at now whose lease holder takes (see AlertLease): each
// counts its window, and its new status, its transitions and their notifications (one per
// target, but none while silenced) are written in one transaction, so that a notification is
// never lost nor made twice for one transition, whatever instance dies when.
//
// The rules are evaluated a project at a time, so that what they share costs the store once:
// one taking of the leases holder does not hold yet (all of them after a pause, or when an
// instance takes over), one read of the project's due rules, one count of each query and
// window they share (all are evaluated at now), and one write of the statuses of those whose
// state did not change (most of them, most of the time); a rule whose state changes is written
// alone, with its history and notifications.
func (s *Service) EvaluateDue(ctx context.Context, holder string, now time.Time) (EvaluateReport, error) {
	var rep EvaluateReport
	ms := now.UnixMilli()
	due, err := s.store.DueAlertRules(ctx, ms, DueAlertsBatch)
	if err != nil {
		return rep, fmt.Errorf("due alert rules: %w", err)
	}
	// The due rules by project, in the order the list first names each project.
	var projects []string
	refs := map[string][]AlertRef{}
	for _, ref := range due {
		if _, ok := refs[ref.ProjectID]; !ok {
			projects = append(projects, ref.ProjectID)
		}
		refs[ref.ProjectID] = append(refs[ref.ProjectID], ref)
	}
	for _, p := range projects {
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		held := s.heldAlertRules(ctx, p, refs[p], holder, ms, &rep)
		if len(held) == 0 {
			continue
		}
		if err := s.evaluateProject(ctx, p, held, holder, ms, &rep); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// heldAlertRules returns the ids of the project's due rules refs that holder holds at now, in
// their order, taking in one call the leases it does not hold: a lease the list shows holder
// holding at now stays its own until it expires (another instance takes only an expired one),
// and the evaluation renews it as it saves, with no statement of its own. It counts in rep the
// rules another instance holds, and those it could not ask for when the call fails.
func (s *Service) heldAlertRules(ctx context.Context, projectID string, refs []AlertRef, holder string, now int64, rep *EvaluateReport) []string {
	own := func(ref AlertRef) bool { return ref.LeaseHolder == holder && ref.LeaseUntil >= now }
	var claims []AlertLeaseClaim
	for _, ref := range refs {
		if !own(ref) {
			claims = append(claims, AlertLeaseClaim{RuleID: ref.ID, Until: AlertLease(now, ref.IntervalSeconds)})
		}
	}
	taken := map[string]bool{}
	failed := false
	if len(claims) > 0 {
		ids, err := s.store.AcquireAlertLeases(ctx, projectID, holder, now, claims)
		if err != nil {
			rep.Failed += len(claims)
			rep.Errs = append(rep.Errs, fmt.Errorf("leases of %d alert rules of project %s: %w", len(claims), projectID, err))
			failed = true // none taken, and none counted as another's
		}
		for _, id := range ids {
			taken[id] = true
		}
	}
	var held []string
	for _, ref := range refs {
		switch {
		case own(ref) || taken[ref.ID]:
			held = append(held, ref.ID)
		case !failed:
			rep.Skipped++
		}
	}
	return held
}

// alertWindowKey names what a rule's evaluation counts: its query's text over its window.
type alertWindowKey struct {
	query      string
	start, end int64
}

// evaluateProject evaluates the project's rules ids at now (Unix ms), renewing holder's lease
// of each as it saves, and adds what it did to rep. Each rule's duration is its own work and
// its share of the statements it shares with the others. It returns ctx's error when ctx ends.
func (s *Service) evaluateProject(ctx context.Context, projectID string, ids []string, holder string, now int64, rep *EvaluateReport) error {
	began := time.Now()
	rules, err := s.store.GetAlertRules(ctx, projectID, ids)
	if err != nil {
		took := time.Since(began) / time.Duration(len(ids))
		for range ids {
			rep.Durations = append(rep.Durations, took)
		}
		rep.Failed += len(ids)
		rep.Errs = append(rep.Errs, fmt.Errorf("read %d alert rules of project %s: %w", len(ids), projectID, err))
		return nil
	}
	rep.Skipped += len(ids) - len(rules) // deleted since they were listed
	if len(rules) == 0 {
		return nil
	}
	read := time.Since(began) / time.Duration(len(rules))
	counts := map[alertWindowKey]int64{}
	queries := map[string]string{} // saved search id → its query's text
	var batch []AlertEvaluation
	var batchTook []time.Duration
	for _, r := range rules {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		start := time.Now()
		ev, err := s.evaluate(ctx, r, holder, now, counts, queries)
		switch {
		case err == nil && ev == nil:
			rep.Evaluated++ // evaluated since it was listed
		case err == nil && len(ev.Transitions) == 0:
			batch = append(batch, *ev)
			batchTook = append(batchTook, read+time.Since(start))
			continue
		case err == nil:
			err = s.store.SaveAlertEvaluation(ctx, *ev)
			if err != nil {
				err = fmt.Errorf("save alert evaluation: %w", err)
			}
			rep.tally(r.ID, err)
		default:
			rep.tally(r.ID, err)
		}
		rep.Durations = append(rep.Durations, read+time.Since(start))
	}
	if len(batch) == 0 {
		return nil
	}
	start := time.Now()
	saved, err := s.store.SaveAlertStatuses(ctx, projectID, batch)
	share := time.Since(start) / time.Duration(len(batch))
	for _, d := range batchTook {
		rep.Durations = append(rep.Durations, d+share)
	}
	if err != nil {
		rep.Failed += len(batch)
		rep.Errs = append(rep.Errs, fmt.Errorf("save the statuses of %d alert rules of project %s: %w", len(batch), projectID, err))
		return nil
	}
	rep.Evaluated += len(saved)
	rep.Skipped += len(batch) - len(saved) // patched or evaluated elsewhere meanwhile: due again
	return nil
}

// tally counts the end of rule id's evaluation.
func (rep *EvaluateReport) tally(id string, err error) {
	switch {
	case errors.Is(err, ErrAlertChanged), KindOf(err) == KindNotFound:
		rep.Skipped++ // patched, evaluated elsewhere or deleted meanwhile: due again or gone
	case err != nil:
		rep.Failed++
		rep.Errs = append(rep.Errs, fmt.Errorf("alert rule %s: %w", id, err))
	default:
		rep.Evaluated++
	}
}

// evaluate evaluates rule r at now (Unix ms) and returns what to store, renewing holder's
// lease of it; nil when it was evaluated since it was listed. counts holds the counts of the
// windows evaluated so far at now, queries the texts of the saved searches read so far: a
// window another rule of the round counted is not counted again.
func (s *Service) evaluate(ctx context.Context, r AlertRule, holder string, now int64, counts map[alertWindowKey]int64,
	queries map[string]string) (*AlertEvaluation, error) {
	if r.Status.NextEvalAt > now {
		return nil, nil
	}
	lease := AlertLease(now, r.IntervalSeconds)
	start, end := AlertWindow(r.WindowSeconds, now)
	f, err := s.alertFilter(ctx, r, start, end, queries)
	if KindOf(err) == KindInvalid {
		// The rule cannot be evaluated until it is patched (its saved search is gone): it is
		// due again after its interval, not at once, and its status stays.
		st := r.Status
		st.NextEvalAt = end + int64(r.IntervalSeconds)*1000
		if serr := s.store.SaveAlertEvaluation(ctx, AlertEvaluation{ProjectID: r.ProjectID, RuleID: r.ID, Version: r.Status.Version, Status: st,
			Holder: holder, LeaseUntil: lease}); serr != nil {
			return nil, errors.Join(err, serr)
		}
	}
	if err != nil {
		return nil, err
	}
	key := alertWindowKey{*f.Query, start, end}
	count, ok := counts[key]
	if !ok {
		if count, err = s.alertCount(ctx, f, start, end, now); err != nil {
			return nil, err
		}
		counts[key] = count
	}
	st, ts := EvaluateAlert(r, r.Status, end, count)
	ev := &AlertEvaluation{ProjectID: r.ProjectID, RuleID: r.ID, Version: r.Status.Version, Status: st, Transitions: ts, Holder: holder, LeaseUntil: lease}
	var entries []LogEntry
	listed := false
	for _, t := range ts {
		if t.Notify == "" {
			continue
		}
		if !listed {
			if entries, err = s.sampleEntries(ctx, f, now); err != nil {
				return nil, err
			}
			listed = true
		}
		n := Notification{ID: NotificationID(r.ID, t.FiringSince, t.Notify), AlertID: r.ID, Name: r.Name, ProjectID: r.ProjectID,
			State: t.Notify, Count: t.Count, WindowStart: t.WindowStart, WindowEnd: t.WindowEnd, FiringStart: t.FiringSince,
			Query: *f.Query, Entries: entries}
		for i, target := range r.Targets {
			id := s.newID()
			if !validID(id) {
				return nil, errNoIDs
			}
			ev.Outbox = append(ev.Outbox, OutboxItem{ID: id, ProjectID: r.ProjectID, RuleID: r.ID, Seq: t.Seq, Target: i, To: target,
				Notification: n, NextAttemptAt: now})
		}
	}
	return ev, nil
}

// alertFilter is the filter of rule r's window [start, end): its query parsed, time bounds
// inclusive as a LogFilter's are. queries holds the texts of the saved searches read so far.
func (s *Service) alertFilter(ctx context.Context, r AlertRule, start, end int64, queries map[string]string) (LogFilter, error) {
	text, ok := queries[r.SearchID]
	if !ok || r.SearchID == "" {
		var err error
		if text, err = s.alertQuery(ctx, r); err != nil {
			return LogFilter{}, err
		}
		if r.SearchID != "" {
			queries[r.SearchID] = text
		}
	}
	last := end - 1
	f, err := s.limits.validateFilter(LogFilter{ProjectID: r.ProjectID, Query: &text, Start: &start, End: &last})
	if err != nil {
		return LogFilter{}, fmt.Errorf("the rule's query: %w", err)
	}
	return f, nil
}

// alertCount counts the window [start, end) of a rule whose filter is f: from the counts the
// store keeps (AlertCountStore) when it keeps them, else through countWindow.
func (s *Service) alertCount(ctx context.Context, f LogFilter, start, end, now int64) (int64, error) {
	if s.alertStore != nil {
		cf := LogFilter{ProjectID: f.ProjectID, Query: f.Query, Parsed: f.Parsed}
		n, ok, err := s.alertStore.CountAlertWindow(ctx, cf, start, end, now)
		if err != nil {
			return 0, fmt.Errorf("count the window: %w", err)
		}
		if ok {
			return n, nil
		}
	}
	return s.countWindow(ctx, f, now)
}

// countWindow counts the entries matching f, through the stats path every count of the
// service takes: one bucket spanning f's time bounds.
func (s *Service) countWindow(ctx context.Context, f LogFilter, now int64) (int64, error) {
	q := StatsQuery{LogFilter: f, Step: *f.End - *f.Start + 1, By: ByNone, Now: now}
	counts, err := s.store.LogStats(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("count the window: %w", err)
	}
	return denseStats(q, counts).Total, nil
}

// sampleEntries reads the newest MaxNotificationEntries entries matching f.
func (s *Service) sampleEntries(ctx context.Context, f LogFilter, now int64) ([]LogEntry, error) {
	var out []LogEntry
	err := s.store.ListLogs(ctx, LogQuery{LogFilter: f, Desc: true, Limit: MaxNotificationEntries, Now: now}, func(p Page) error {
		for e, err := range p.Entries {
			if err != nil {
				return err
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sample entries: %w", err)
	}
	return out, nil
}

// DeliverReport is what one DeliverOutbox did.
type DeliverReport struct {
	// Sent and Failed count deliveries; Pending is how many undelivered notifications were
	// read (at most OutboxBatch), before this round's deliveries.
	Sent, Failed, Pending int
	Errs                  []error
}

// DeliverOutbox sends the undelivered notifications that are due, the first of each rule and
// target only, so that each target hears of a rule's transitions in their order: a failed
// delivery holds those that follow it until it succeeds, retried with a backoff doubling from
// 1 s to OutboxMaxBackoff. A sender claims each notification before sending it (OutboxClaim),
// so that two instances do not send it at once; one that dies mid-delivery leaves it to be sent
// again: at least once.
func (s *Service) DeliverOutbox(ctx context.Context) (DeliverReport, error) {
	var rep DeliverReport
	if s.notifier == nil {
		return rep, nil
	}
	items, err := s.store.PendingOutbox(ctx, OutboxBatch)
	if err != nil {
		return rep, fmt.Errorf("pending notifications: %w", err)
	}
	rep.Pending = len(items)
	type key struct {
		project, rule string
		target        int
	}
	seen := map[key]bool{}
	for _, it := range items {
		k := key{it.ProjectID, it.RuleID, it.Target}
		if seen[k] {
			continue
		}
		seen[k] = true
		now := s.now()
		if it.NextAttemptAt > now.UnixMilli() {
			continue
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		ok, err := s.store.ClaimOutbox(ctx, it, now.Add(OutboxClaim).UnixMilli())
		if err != nil {
			rep.Failed++
			rep.Errs = append(rep.Errs, fmt.Errorf("claim notification %s: %w", it.Notification.ID, err))
			continue
		}
		if !ok {
			continue
		}
		res, err := s.notifier.Deliver(ctx, it.To, it.Notification)
		problem := deliveryProblem(res, err)
		wait := min(time.Second<<min(it.Attempts, 16), OutboxMaxBackoff)
		if problem == "" {
			rep.Sent++
		} else {
			rep.Failed++
			rep.Errs = append(rep.Errs, fmt.Errorf("deliver notification %s to target %d: %s", it.Notification.ID, it.Target, problem))
		}
		at := s.now()
		if problem != "" {
			at = at.Add(wait)
		}
		if err := s.store.FinishOutbox(context.WithoutCancel(ctx), it.ProjectID, it.ID, problem == "", at.UnixMilli(), problem); err != nil {
			rep.Errs = append(rep.Errs, fmt.Errorf("record delivery of %s: %w", it.Notification.ID, err))
		}
	}
	return rep, nil
}

// SweepOutbox deletes the notifications delivered more than OutboxKeep ago and says how many.
func (s *Service) SweepOutbox(ctx context.Context) (int64, error) {
	n, err := s.store.SweepOutbox(ctx, s.now().Add(-OutboxKeep).UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("sweep delivered notifications: %w", err)
	}
	return n, nil
}
