package domain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Retention bounds: a project keeps its entries for 1 to 3650 days, or forever (nil).
const (
	MinRetentionDays = 1
	MaxRetentionDays = 3650
)

// dayMillis is one retention day in the unit of LogEntry.Time.
const dayMillis = 24 * 60 * 60 * 1000

// Retentions is what a store found of the projects a batch names: each project's retention in
// days; a project that keeps its entries forever is absent.
type Retentions map[string]int

// AdmitFunc is how the service decides, inside the transaction of a write, whether a batch may be
// stored given the retention of its projects; its error aborts the write unchanged.
type AdmitFunc func(Retentions) error

// Optional is a value a merge patch (RFC 7396) may name: Set says it was named, and then Value is
// the new value, nil for null.
type Optional[T any] struct {
	Set   bool
	Value *T
}

// ProjectPatch is a merge patch of a project: only what it names changes.
type ProjectPatch struct {
	// Name, when not nil, is the new name (a name cannot be null).
	Name *string
	// RetentionDays, when set, is the new retention; a nil value keeps entries forever.
	RetentionDays Optional[int]
}

// ErrSweepBusy is a store's answer when another instance holds the sweep: this one skips its turn.
var ErrSweepBusy = &Error{Kind: KindConflict, Msg: "another instance is sweeping"}

// checkRetention reports a problem with a retention in days; "" when it keeps the rules.
func checkRetention(days *int) string {
	if days == nil || (*days >= MinRetentionDays && *days <= MaxRetentionDays) {
		return ""
	}
	return "must be between " + strconv.Itoa(MinRetentionDays) + " and " + strconv.Itoa(MaxRetentionDays) + " days, or null to keep entries forever"
}

// cutoff is the oldest Time a project with this retention still keeps at now (Unix ms).
func cutoff(now int64, days int) int64 { return now - int64(days)*dayMillis }

// admitFunc is the retention rule of a batch: an entry already older than its project's
// retention is KindExpired, naming each such entry (up to MaxFieldErrors). It runs in the
// store's transaction, with the retention the store read there.
func (s *Service) admitFunc(entries []LogEntry, now int64) AdmitFunc {
	return func(r Retentions) error {
		if len(r) == 0 {
			return nil
		}
		bad := fieldErrors{max: s.limits.MaxFieldErrors}
		for i, e := range entries {
			if days, ok := r[e.ProjectID]; ok && e.Time < cutoff(now, days) {
				bad.add(i, "time", "is older than the project's retention of "+strconv.Itoa(days)+" days")
			}
		}
		return bad.err(KindExpired, "entries older than their project's retention")
	}
}

// PatchProject applies a merge patch to a project: a name or retention it names changes, what it
// does not name stays. KindInvalid for values breaking the rules, KindNotFound for no project.
func (s *Service) PatchProject(ctx context.Context, id string, patch ProjectPatch) (Project, error) {
	if err := authorize(ctx, ""); err != nil {
		return Project{}, err
	}
	var fields []FieldError
	if patch.Name != nil {
		if err := s.limits.validateProject(ProjectInput{Name: *patch.Name}); err != nil {
			fields = append(fields, err.(*Error).Fields...)
		}
	}
	if patch.RetentionDays.Set {
		if d := checkRetention(patch.RetentionDays.Value); d != "" {
			fields = append(fields, FieldError{Path: []string{"retention_days"}, Detail: d})
		}
	}
	if len(fields) > 0 {
		return Project{}, &Error{Kind: KindInvalid, Msg: "invalid project", Fields: fields}
	}
	p, err := s.project(ctx, id)
	if err != nil {
		return Project{}, err
	}
	if patch.Name != nil {
		p.Name = *patch.Name
	}
	if patch.RetentionDays.Set {
		p.RetentionDays = patch.RetentionDays.Value
	}
	return s.saveProject(ctx, p)
}

// SweepResult is what one retention sweep did.
type SweepResult struct {
	// Deleted is how many expired entries it deleted.
	Deleted int64
	// Busy says another instance was sweeping, so this one left the work to it.
	Busy bool
}

// SweepPace is how hard a retention sweep works: at most Batch entries per transaction, and,
// while ingest competes for the store, at most Duty of its wall time spent in them. After a
// transaction during which a batch of entries was being written, the sweep rests for the time
// the transaction took times (1-Duty)/Duty. That time includes queueing for the store's writer,
// so on a store with one writer (SQLite) the writes that queued behind a sweep transaction go
// first, and the busier ingest is, the longer the sweep rests. With no write competing the
// sweep does not rest: an idle service deletes what expired as fast as the store can. Duty 1
// never rests.
//
// Only a backlog is paced: entries that expired more than Lag ago (after a retention was
// shortened, or a sweep fell behind). What expired within Lag, the steady share of each
// interval's sweep, is deleted without rest, as fast as it expires, so that a sweep that rests
// can never fall further behind than the backlog it started with, however busy ingest is.
type SweepPace struct {
	Batch int
	Duty  float64
	Lag   time.Duration
}

// pause is how long the sweep rests after a transaction that took took.
func (p SweepPace) pause(took time.Duration) time.Duration {
	if p.Duty >= 1 || took <= 0 {
		return 0
	}
	return time.Duration(float64(took) * (1 - p.Duty) / p.Duty)
}

// writeActivity counts the batches of entries this service writes: how many began and how many
// are being written now. The sweep reads it to learn whether ingest competed with a transaction.
type writeActivity struct {
	started atomic.Int64
	active  atomic.Int64
}

// begin records a write that starts; the returned func records its end.
func (w *writeActivity) begin() func() {
	w.started.Add(1)
	w.active.Add(1)
	return func() { w.active.Add(-1) }
}

// SweepRetention deletes the entries older than their project's retention, project by project,
// in transactions paced by pace; progress, when not nil, is told what each committed
// transaction deleted, so a long sweep is visible while it runs. It stops early when ctx ends
// or another instance is sweeping (Busy). A project that fails is skipped and reported in the
// joined error; what was deleted before stays deleted.
func (s *Service) SweepRetention(ctx context.Context, pace SweepPace, progress func(deleted int64)) (SweepResult, error) {
	if pace.Batch <= 0 {
		return SweepResult{}, fmt.Errorf("sweep retention: batch must be positive, got %d", pace.Batch)
	}
	if !(pace.Duty > 0 && pace.Duty <= 1) {
		return SweepResult{}, fmt.Errorf("sweep retention: duty must be in (0, 1], got %v", pace.Duty)
	}
	ps, err := s.store.ListProjects(ctx)
	if err != nil {
		return SweepResult{}, fmt.Errorf("sweep retention: list projects: %w", err)
	}
	var res SweepResult
	var errs []error
	// rest is the pause owed by the last transaction, taken before the next one (not after the
	// last of a sweep, which would only delay the report).
	var rest time.Duration
	// Each project is swept twice: first the backlog, up to now - Lag, paced; then the rest,
	// up to now, without rest. Sweeping as of an earlier moment deletes only what had expired
	// by then.
	type phase struct {
		lag   time.Duration
		paced bool
	}
	phases := []phase{{pace.Lag, true}, {0, false}}
	if pace.Lag <= 0 {
		phases = phases[:1]
	}
	for _, p := range ps {
		if p.RetentionDays == nil {
			continue
		}
		for _, ph := range phases {
			err := s.sweepProject(ctx, p.ID, pace, ph.lag, ph.paced, &rest, &res, progress)
			if errors.Is(err, ErrSweepBusy) {
				res.Busy = true
				return res, errors.Join(errs...)
			}
			if err != nil && ctx.Err() != nil {
				// Stopped (a shutdown), not failed: what was committed stays, the rest is the
				// next sweep's.
				return res, errors.Join(append(errs, ctx.Err())...)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("sweep retention of project %s: %w", p.ID, err))
				break
			}
		}
	}
	return res, errors.Join(errs...)
}

// sweepProject deletes the project's entries that had expired lag ago, in transactions of
// pace.Batch, until fewer are left; when paced it rests after a transaction that ingest
// competed with. rest carries the pause owed from one call to the next.
func (s *Service) sweepProject(ctx context.Context, projectID string, pace SweepPace, lag time.Duration, paced bool, rest *time.Duration, res *SweepResult, progress func(int64)) error {
	if !paced {
		*rest = 0 // what expires as it goes does not wait for the backlog's rest
	}
	for {
		if err := sleep(ctx, *rest); err != nil {
			return err
		}
		// Wall time on the monotonic clock, not s.now: the pause shares out real time.
		start, before := time.Now(), s.writes.started.Load()
		n, err := s.store.SweepLogs(ctx, projectID, s.now().Add(-lag).UnixMilli(), pace.Batch)
		*rest = 0
		if paced && (s.writes.active.Load() > 0 || s.writes.started.Load() != before) {
			*rest = pace.pause(time.Since(start))
		}
		res.Deleted += n
		if n > 0 && progress != nil {
			progress(n)
		}
		if err != nil || n < int64(pace.Batch) {
			return err
		}
	}
}

// sleep waits d, or less when ctx ends first (then its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
