package domain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// AlertRule is a project's alert rule: what it counts (a saved search's query, or its own),
// over which window, how often, the condition and how long it must hold, where it tells, and
// its status. Times in Unix ms but CreatedAt and UpdatedAt.
type AlertRule struct {
	ID        string
	ProjectID string
	Name      string
	// SearchID names a saved search of the project whose query the rule counts; "" when the
	// rule has a Query of its own (empty: every entry).
	SearchID string
	Query    string
	// WindowSeconds is the counting window, IntervalSeconds how often the rule is evaluated,
	// ForSeconds how long the condition must hold before the rule fires.
	WindowSeconds   int
	IntervalSeconds int
	ForSeconds      int
	Condition       AlertCondition
	Targets         []AlertTarget
	// SilencedUntil, when after an evaluation's window end, silences it (see EvaluateAlert);
	// 0: not silenced.
	SilencedUntil int64
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Status        AlertStatus
}

// AlertInput is what a client sets when it creates a rule: exactly one of SearchID and Query.
type AlertInput struct {
	ProjectID       string
	Name            string
	SearchID        *string
	Query           *string
	WindowSeconds   int
	IntervalSeconds int
	ForSeconds      int
	Condition       AlertCondition
	Targets         []AlertTarget
	SilencedUntil   int64
}

// AlertPatch is a merge patch of a rule: only what it names changes. Naming SearchID or Query
// (not both) replaces the rule's source, the other being cleared; Targets replaces every target
// (their secrets are never returned, so a client sends them again).
type AlertPatch struct {
	Name            *string
	SearchID        *string
	Query           *string
	WindowSeconds   *int
	IntervalSeconds *int
	ForSeconds      *int
	Condition       *AlertCondition
	Targets         []AlertTarget
	SilencedUntil   *int64
}

// The rules of an alert rule (the API contract states them).
const (
	MaxAlertNameChars      = 200
	MaxAlertWindowSeconds  = 7 * 24 * 60 * 60
	MinAlertInterval       = 10
	MaxAlertInterval       = 24 * 60 * 60
	MaxAlertForSeconds     = 7 * 24 * 60 * 60
	MaxAlertTargets        = 10
	MaxAlertURLBytes       = 2048
	MaxAlertTokenBytes     = 4096
	DefaultMaxAlerts       = 100
	MaxAlertHistory        = 1000
	MaxNotificationEntries = 10
)

// AlertRef names one rule of one project, and how often it is evaluated.
type AlertRef struct {
	ProjectID       string
	ID              string
	IntervalSeconds int
	// LeaseHolder holds the rule's lease until LeaseUntil (Unix ms); "" when no evaluator ever
	// held it.
	LeaseHolder string
	LeaseUntil  int64
}

// OutboxItem is one notification to one target, kept until delivered: written with the
// transition it tells of, delivered in Seq order per rule and target.
type OutboxItem struct {
	ID        string
	ProjectID string
	RuleID    string
	// Seq is the transition's (AlertTransition.Seq).
	Seq          int64
	Target       int
	To           AlertTarget
	Notification Notification
	Attempts     int
	// NextAttemptAt is when it may be sent (again), Unix ms; a sender claims an item by moving
	// it forward.
	NextAttemptAt int64
	LastError     string
}

// AlertEvaluation is what one evaluation writes, all in one transaction: the rule's new status
// (over Version, which it read), the transitions, the notifications.
type AlertEvaluation struct {
	ProjectID   string
	RuleID      string
	Version     int64
	Status      AlertStatus
	Transitions []AlertTransition
	Outbox      []OutboxItem
	// Holder, when not "", renews its lease of the rule to LeaseUntil with the evaluation (no
	// lease changes when another holds it), so that its next evaluation need not acquire it.
	Holder     string
	LeaseUntil int64
}

// AlertLeaseClaim asks for the lease of one of a project's rules until Until (Unix ms).
type AlertLeaseClaim struct {
	RuleID string
	Until  int64
}

// AlertStore persists alert rules, their history, their notifications' outbox and their
// evaluators' leases. Every call but DueAlertRules, PendingOutbox and GetAlertRule with no
// project names the rule's project.
type AlertStore interface {
	// CreateAlertRule stores r (its Status as given) unless the project holds max rules
	// (ErrTooManyAlerts); KindUnknownProject if the project does not exist.
	CreateAlertRule(ctx context.Context, r AlertRule, max int) error
	// GetAlertRule returns the rule of the project (any project when projectID is "");
	// KindNotFound if there is none.
	GetAlertRule(ctx context.Context, projectID, id string) (AlertRule, error)
	// GetAlertRules returns those of the project's rules whose id is one of ids, in no set
	// order: one read for a round of evaluations (a rule deleted meanwhile is left out).
	GetAlertRules(ctx context.Context, projectID string, ids []string) ([]AlertRule, error)
	// ListAlertRules returns the project's rules by name, then id.
	ListAlertRules(ctx context.Context, projectID string) ([]AlertRule, error)
	// UpdateAlertRule replaces what a client sets of r (not its status but NextEvalAt) and
	// advances its version; KindNotFound if there is none.
	UpdateAlertRule(ctx context.Context, r AlertRule) error
	// DeleteAlertRule removes the rule with its history and outbox; KindNotFound if none.
	DeleteAlertRule(ctx context.Context, projectID, id string) error
	// AlertHistory returns the rule's last limit transitions, newest first.
	AlertHistory(ctx context.Context, projectID, id string, limit int) ([]AlertTransition, error)
	// DueAlertRules lists at most limit rules, of every project, whose next evaluation is at
	// or before now, the most overdue first, each with its lease.
	DueAlertRules(ctx context.Context, now int64, limit int) ([]AlertRef, error)
	// AcquireAlertLeases makes holder the evaluator of each of the project's rules claimed (each
	// once) until its claim's Until, unless another holder's lease of the rule has not run out
	// at now (a lease holds through its last millisecond), with one statement for up to
	// DueAlertsBatch claims. It returns the ids of the claimed rules holder
	// now holds. After an error some may be taken: unused, such a lease expires as a dead
	// holder's does.
	AcquireAlertLeases(ctx context.Context, projectID, holder string, now int64, claims []AlertLeaseClaim) ([]string, error)
	// SaveAlertEvaluation writes e in one transaction: ErrAlertChanged, writing nothing of the
	// rule, when its version is no longer e.Version (a patch, or another evaluator, came
	// first). The lease renewal (e.Holder) may be written either way.
	SaveAlertEvaluation(ctx context.Context, e AlertEvaluation) error
	// SaveAlertStatuses writes the statuses of es, evaluations of the project's rules with no
	// transition nor notification, in one statement or transaction: each over the version it
	// read, renewing its holder's lease as SaveAlertEvaluation does. It returns the ids of the
	// rules it wrote; a rule at another version (or gone) is left alone and not among them.
	SaveAlertStatuses(ctx context.Context, projectID string, es []AlertEvaluation) ([]string, error)
	// PendingOutbox lists at most limit undelivered items of every project, by project, rule,
	// target and Seq.
	PendingOutbox(ctx context.Context, limit int) ([]OutboxItem, error)
	// ClaimOutbox moves the item's NextAttemptAt from its value in it to until and counts an
	// attempt, false when it has changed (another sender claimed it) or it was delivered.
	ClaimOutbox(ctx context.Context, it OutboxItem, until int64) (bool, error)
	// FinishOutbox records an attempt's end: delivered at at, or to be retried at at, having
	// failed with lastError.
	FinishOutbox(ctx context.Context, projectID, id string, delivered bool, at int64, lastError string) error
	// SweepOutbox deletes the notifications of every project delivered before before (Unix ms)
	// and says how many.
	SweepOutbox(ctx context.Context, before int64) (int64, error)
}

// ErrTooManyAlerts is a store's answer to a rule that would take its project past the most rules
// it may hold; the service says the number.
var ErrTooManyAlerts = &Error{Kind: KindConflict, Msg: "the project holds the most alert rules it may"}

// ErrAlertChanged is a store's answer to an evaluation of a rule changed since it was read.
var ErrAlertChanged = &Error{Kind: KindConflict, Msg: "the alert rule changed during its evaluation"}

func alertNotFound(id string) error {
	return Errorf(KindNotFound, "no alert rule with id %s", Brief(id))
}

func unknownAlertProject() error {
	return &Error{Kind: KindUnknownProject, Msg: "unknown project",
		Fields: []FieldError{{Path: []string{"project_id"}, Detail: "no project with this id"}}}
}

// maxAlerts is how many rules a project may hold under l.
func (l Limits) maxAlerts() int { return cmp.Or(max(l.MaxAlertsPerProject, 0), DefaultMaxAlerts) }

// validOps are the comparisons a condition may make.
var validOps = []string{">", ">=", "<", "<=", "=="}

// validateAlert checks every member a patch names (for a new rule, every member), then the
// targets with the Notifier.
func (s *Service) validateAlert(p AlertPatch) error {
	var fields []FieldError
	add := func(detail string, path ...string) {
		fields = append(fields, FieldError{Path: path, Detail: detail})
	}
	if p.Name != nil {
		if d := checkSearchName(*p.Name); d != "" {
			add(d, "name")
		}
	}
	if p.SearchID != nil && p.Query != nil {
		add("must not be given with search_id: a rule counts a saved search's query or its own", "query")
	}
	if p.Query != nil {
		d, err := s.limits.checkSearchQuery(*p.Query)
		if err != nil {
			return err
		}
		if d != "" {
			add(d, "query")
		}
	}
	bounded := func(v *int, lo, hi int, name string) {
		if v != nil && (*v < lo || *v > hi) {
			add("must be from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi), name)
		}
	}
	bounded(p.WindowSeconds, 1, MaxAlertWindowSeconds, "window_seconds")
	bounded(p.IntervalSeconds, MinAlertInterval, MaxAlertInterval, "interval_seconds")
	bounded(p.ForSeconds, 0, MaxAlertForSeconds, "for_seconds")
	if c := p.Condition; c != nil {
		if !slices.Contains(validOps, c.Op) {
			add("must be one of >, >=, <, <=, ==", "condition", "op")
		}
		if c.Threshold < 0 {
			add("must not be negative", "condition", "threshold")
		}
	}
	if p.SilencedUntil != nil && *p.SilencedUntil < 0 {
		add("must not be negative", "silenced_until")
	}
	if p.Targets != nil {
		if len(p.Targets) < 1 || len(p.Targets) > MaxAlertTargets {
			add("must hold 1 to "+strconv.Itoa(MaxAlertTargets)+" targets", "targets")
		}
		for i, t := range p.Targets {
			if i >= MaxAlertTargets {
				break
			}
			f, err := s.checkTarget(i, t)
			if err != nil {
				return err
			}
			fields = append(fields, f...)
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Msg: "invalid alert rule", Fields: fields}
}

// checkTarget asks the Notifier whether target i may be used, and phrases its answer as the
// problems of the members of /targets/i.
func (s *Service) checkTarget(i int, t AlertTarget) ([]FieldError, error) {
	at := []string{"targets", strconv.Itoa(i)}
	var fields []FieldError
	if len(t.URL) > MaxAlertURLBytes {
		fields = append(fields, FieldError{Path: append(at, "url"), Detail: "must be at most " + strconv.Itoa(MaxAlertURLBytes) + " bytes"})
	}
	if len(t.BearerToken) > MaxAlertTokenBytes {
		fields = append(fields, FieldError{Path: append(slices.Clip(at), "bearer_token"), Detail: "must be at most " + strconv.Itoa(MaxAlertTokenBytes) + " bytes"})
	}
	if len(fields) > 0 {
		return fields, nil
	}
	if s.notifier == nil {
		return []FieldError{{Path: append(at, "url"), Detail: "cannot be used: this service sends no notifications"}}, nil
	}
	err := s.notifier.CheckTarget(t)
	if err == nil {
		return nil, nil
	}
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindInvalid {
		return nil, fmt.Errorf("check alert target: %w", err)
	}
	if len(e.Fields) == 0 {
		return []FieldError{{Path: append(at, "url"), Detail: e.Msg}}, nil
	}
	for _, f := range e.Fields {
		path := f.Path
		if len(path) == 0 {
			path = []string{cmp.Or(f.Param, "url")}
		}
		fields = append(fields, FieldError{Path: append(slices.Clip(at), path...), Detail: f.Detail})
	}
	return fields, nil
}

// checkAlertSearch says whether id names a saved search of the project.
func (s *Service) checkAlertSearch(ctx context.Context, projectID, id string) error {
	bad := &Error{Kind: KindInvalid, Msg: "invalid alert rule", Fields: []FieldError{{Path: []string{"search_id"}, Detail: "names no saved search of the project"}}}
	if !validID(id) {
		return bad
	}
	sr, err := s.store.GetSearch(ctx, id)
	switch {
	case KindOf(err) == KindNotFound:
		return bad
	case err != nil:
		return fmt.Errorf("get saved search: %w", err)
	case sr.ProjectID != projectID:
		return bad
	}
	return nil
}

// storeAlertError phrases a store's answer about a rule for the client.
func (s *Service) storeAlertError(op string, err error, id string) error {
	switch {
	case errors.Is(err, ErrTooManyAlerts):
		return &Error{Kind: KindConflict, Msg: fmt.Sprintf("the project holds %d alert rules, the most it may; delete one first", s.limits.maxAlerts())}
	case KindOf(err) == KindNotFound:
		return alertNotFound(id)
	case KindOf(err) == KindUnknownProject:
		return unknownAlertProject()
	}
	return fmt.Errorf("%s: %w", op, err)
}

// CreateAlert creates a rule of in.ProjectID, in state ok, first evaluated at once. A project
// key may create rules of its own project only (KindForbidden otherwise); KindInvalid for
// values breaking the rules (a target the Notifier refuses names /targets/i/url), a project
// that does not exist KindUnknownProject, one at its most rules KindConflict.
func (s *Service) CreateAlert(ctx context.Context, in AlertInput) (AlertRule, error) {
	if err := authorize(ctx, in.ProjectID); err != nil {
		return AlertRule{}, err
	}
	cond := in.Condition
	p := AlertPatch{Name: &in.Name, SearchID: in.SearchID, Query: in.Query, WindowSeconds: &in.WindowSeconds,
		IntervalSeconds: &in.IntervalSeconds, ForSeconds: &in.ForSeconds, Condition: &cond, Targets: in.Targets, SilencedUntil: &in.SilencedUntil}
	if p.Targets == nil {
		p.Targets = []AlertTarget{}
	}
	err := s.validateAlert(p)
	if in.SearchID == nil && in.Query == nil {
		err = joinInvalid(err, FieldError{Path: []string{"query"}, Detail: "or search_id is required"})
	}
	if err != nil {
		return AlertRule{}, err
	}
	if !validID(in.ProjectID) {
		return AlertRule{}, unknownAlertProject()
	}
	if in.SearchID != nil {
		if err := s.checkAlertSearch(ctx, in.ProjectID, *in.SearchID); err != nil {
			return AlertRule{}, err
		}
	}
	now := storeTime(s.now())
	r := AlertRule{ID: s.newID(), ProjectID: in.ProjectID, Name: in.Name, WindowSeconds: in.WindowSeconds, IntervalSeconds: in.IntervalSeconds,
		ForSeconds: in.ForSeconds, Condition: in.Condition, Targets: slices.Clone(in.Targets), SilencedUntil: in.SilencedUntil,
		CreatedAt: now, UpdatedAt: now, Status: AlertStatus{State: AlertOK, NextEvalAt: now.UnixMilli(), Version: 1}}
	if in.SearchID != nil {
		r.SearchID = *in.SearchID
	} else {
		r.Query = *in.Query
	}
	if !validID(r.ID) {
		return AlertRule{}, errNoIDs
	}
	if err := s.store.CreateAlertRule(ctx, r, s.limits.maxAlerts()); err != nil {
		return AlertRule{}, s.storeAlertError("create alert rule", err, r.ID)
	}
	return r, nil
}

// joinInvalid adds f to err, a KindInvalid *Error or nil.
func joinInvalid(err error, f FieldError) error {
	var e *Error
	if errors.As(err, &e) && e.Kind == KindInvalid {
		e.Fields = append(e.Fields, f)
		return e
	}
	if err != nil {
		return err
	}
	return &Error{Kind: KindInvalid, Msg: "invalid alert rule", Fields: []FieldError{f}}
}

// ListAlerts returns the rules of a project, by name. A project key may list its own
// project's only (KindForbidden otherwise); KindNotFound if the project does not exist.
func (s *Service) ListAlerts(ctx context.Context, projectID string) ([]AlertRule, error) {
	if err := authorize(ctx, projectID); err != nil {
		return nil, err
	}
	if _, err := s.project(ctx, projectID); err != nil {
		return nil, err
	}
	out, err := s.store.ListAlertRules(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list alert rules: %w", err)
	}
	return out, nil
}

// alert reads the rule with id as the principal of ctx may see it: a project key its own
// project's only (another's is KindNotFound, as an id naming nothing is).
func (s *Service) alert(ctx context.Context, id string) (AlertRule, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return AlertRule{}, Errorf(KindUnauthenticated, "authentication required")
	}
	if !validID(id) {
		return AlertRule{}, alertNotFound(id)
	}
	project := ""
	if !p.Admin {
		project = p.ProjectID
	}
	r, err := s.store.GetAlertRule(ctx, project, id)
	if err != nil {
		return AlertRule{}, s.storeAlertError("get alert rule", err, id)
	}
	if authorize(ctx, r.ProjectID) != nil {
		return AlertRule{}, alertNotFound(id)
	}
	return r, nil
}

// GetAlert returns one rule; KindNotFound as for a saved search.
func (s *Service) GetAlert(ctx context.Context, id string) (AlertRule, error) {
	return s.alert(ctx, id)
}

// PatchAlert applies a merge patch to a rule. The status stays, but a changed interval
// reschedules the next evaluation; KindInvalid, KindNotFound as CreateAlert and GetAlert.
func (s *Service) PatchAlert(ctx context.Context, id string, patch AlertPatch) (AlertRule, error) {
	if err := authenticated(ctx); err != nil {
		return AlertRule{}, err
	}
	if err := s.validateAlert(patch); err != nil {
		return AlertRule{}, err
	}
	r, err := s.alert(ctx, id)
	if err != nil {
		return AlertRule{}, err
	}
	if patch.SearchID != nil {
		if err := s.checkAlertSearch(ctx, r.ProjectID, *patch.SearchID); err != nil {
			return AlertRule{}, err
		}
		r.SearchID, r.Query = *patch.SearchID, ""
	}
	if patch.Query != nil {
		r.SearchID, r.Query = "", *patch.Query
	}
	set := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if patch.Name != nil {
		r.Name = *patch.Name
	}
	set(&r.WindowSeconds, patch.WindowSeconds)
	set(&r.ForSeconds, patch.ForSeconds)
	if patch.IntervalSeconds != nil && *patch.IntervalSeconds != r.IntervalSeconds {
		r.IntervalSeconds = *patch.IntervalSeconds
		if r.Status.LastEvalAt > 0 {
			r.Status.NextEvalAt = r.Status.LastEvalAt + int64(r.IntervalSeconds)*1000
		}
	}
	if patch.Condition != nil {
		r.Condition = *patch.Condition
	}
	if patch.Targets != nil {
		r.Targets = slices.Clone(patch.Targets)
	}
	if patch.SilencedUntil != nil {
		r.SilencedUntil = *patch.SilencedUntil
	}
	now := storeTime(s.now())
	if !now.After(r.UpdatedAt) {
		now = r.UpdatedAt.Add(time.Microsecond)
	}
	r.UpdatedAt = now
	if err := s.store.UpdateAlertRule(ctx, r); err != nil {
		return AlertRule{}, s.storeAlertError("update alert rule", err, id)
	}
	r.Status.Version++
	return r, nil
}

// DeleteAlert deletes a rule with its history and its undelivered notifications.
func (s *Service) DeleteAlert(ctx context.Context, id string) error {
	r, err := s.alert(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteAlertRule(ctx, r.ProjectID, r.ID); err != nil {
		return s.storeAlertError("delete alert rule", err, id)
	}
	return nil
}

// AlertHistory returns a rule's last MaxAlertHistory transitions, newest first.
func (s *Service) AlertHistory(ctx context.Context, id string) ([]AlertTransition, error) {
	r, err := s.alert(ctx, id)
	if err != nil {
		return nil, err
	}
	h, err := s.store.AlertHistory(ctx, r.ProjectID, r.ID, MaxAlertHistory)
	if err != nil {
		return nil, fmt.Errorf("alert history: %w", err)
	}
	return h, nil
}

// AlertTestResult is one target's answer to a sample notification.
type AlertTestResult struct {
	Target int
	Type   string
	Result DeliveryResult
	// Error says why the delivery failed ("" when the receiver answered 2xx).
	Error string
}

// TestAlert sends a sample notification (Sample set, state firing, no entries) to each of the
// rule's targets, one after the other, and reports each answer. It changes nothing stored.
func (s *Service) TestAlert(ctx context.Context, id string) ([]AlertTestResult, error) {
	r, err := s.alert(ctx, id)
	if err != nil {
		return nil, err
	}
	if s.notifier == nil {
		return nil, Errorf(KindUnavailable, "this service sends no notifications")
	}
	now := s.now().UnixMilli()
	start, end := AlertWindow(r.WindowSeconds, now)
	query, err := s.alertQuery(ctx, r)
	if err != nil {
		return nil, err
	}
	n := Notification{ID: NotificationID(r.ID, end, "test"), AlertID: r.ID, Name: r.Name, ProjectID: r.ProjectID, State: NotifyFiring,
		Count: r.Status.LastCount, WindowStart: start, WindowEnd: end, FiringStart: end, Query: query, Sample: true}
	out := make([]AlertTestResult, len(r.Targets))
	for i, t := range r.Targets {
		res, err := s.notifier.Deliver(ctx, t, n)
		out[i] = AlertTestResult{Target: i, Type: t.Type, Result: res, Error: deliveryProblem(res, err)}
	}
	return out, nil
}

// deliveryProblem says why a delivery failed; "" when it did not.
func deliveryProblem(res DeliveryResult, err error) string {
	switch {
	case err != nil:
		var e *Error
		if errors.As(err, &e) {
			return e.Msg
		}
		return "the receiver could not be reached"
	case res.Status < 200 || res.Status > 299:
		return "the receiver answered " + strconv.Itoa(res.Status)
	}
	return ""
}

// alertQuery is the text of the query rule r counts: its own, or its saved search's.
func (s *Service) alertQuery(ctx context.Context, r AlertRule) (string, error) {
	if r.SearchID == "" {
		return r.Query, nil
	}
	sr, err := s.store.GetSearch(ctx, r.SearchID)
	if err != nil || sr.ProjectID != r.ProjectID {
		if err == nil || KindOf(err) == KindNotFound {
			return "", Errorf(KindInvalid, "the rule's saved search %s no longer exists", Brief(r.SearchID))
		}
		return "", fmt.Errorf("get the rule's saved search: %w", err)
	}
	return sr.Query, nil
}
