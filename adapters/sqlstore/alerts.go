package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"example.com/obsvc/domain"
)

var _ domain.AlertStore = (*Store)(nil)

// alertRow is an alert_rules row; timeValue scans either engine's time column.
type alertRow struct {
	ProjectID       string         `db:"project_id"`
	ID              string         `db:"id"`
	Name            string         `db:"name"`
	SearchID        sql.NullString `db:"search_id"`
	Query           string         `db:"query"`
	WindowSeconds   int            `db:"window_seconds"`
	IntervalSeconds int            `db:"interval_seconds"`
	ForSeconds      int            `db:"for_seconds"`
	Op              string         `db:"op"`
	Threshold       int64          `db:"threshold"`
	Targets         string         `db:"targets"`
	SilencedUntil   int64          `db:"silenced_until"`
	CreatedAt       timeValue      `db:"created_at"`
	UpdatedAt       timeValue      `db:"updated_at"`
	State           string         `db:"state"`
	PendingSince    int64          `db:"pending_since"`
	FiringSince     int64          `db:"firing_since"`
	Notified        bool           `db:"notified"`
	LastEvalAt      int64          `db:"last_eval_at"`
	LastCount       int64          `db:"last_count"`
	NextEvalAt      int64          `db:"next_eval_at"`
	Transitions     int64          `db:"transitions"`
	Version         int64          `db:"version"`
}

const alertColumns = "project_id, id, name, search_id, query, window_seconds, interval_seconds, for_seconds, op, threshold, targets, silenced_until, " +
	"created_at, updated_at, state, pending_since, firing_since, notified, last_eval_at, last_count, next_eval_at, transitions, version"

// targetJSON is how a target is stored (secrets included: the table is the service's own).
type targetJSON struct {
	Type        string `json:"type"`
	URL         string `json:"url"`
	BearerToken string `json:"bearer_token,omitempty"`
}

func encodeTargets(ts []domain.AlertTarget) (string, error) {
	out := make([]targetJSON, len(ts))
	for i, t := range ts {
		out[i] = targetJSON(t)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func (r alertRow) domain() (domain.AlertRule, error) {
	var ts []targetJSON
	if err := json.Unmarshal([]byte(r.Targets), &ts); err != nil {
		return domain.AlertRule{}, fmt.Errorf("alert rule %s: targets: %w", r.ID, err)
	}
	targets := make([]domain.AlertTarget, len(ts))
	for i, t := range ts {
		targets[i] = domain.AlertTarget(t)
	}
	return domain.AlertRule{ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, SearchID: r.SearchID.String, Query: r.Query,
		WindowSeconds: r.WindowSeconds, IntervalSeconds: r.IntervalSeconds, ForSeconds: r.ForSeconds,
		Condition: domain.AlertCondition{Op: r.Op, Threshold: r.Threshold}, Targets: targets, SilencedUntil: r.SilencedUntil,
		CreatedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time,
		Status: domain.AlertStatus{State: domain.AlertState(r.State), PendingSince: r.PendingSince, FiringSince: r.FiringSince, Notified: r.Notified,
			LastEvalAt: r.LastEvalAt, LastCount: r.LastCount, NextEvalAt: r.NextEvalAt, Transitions: r.Transitions, Version: r.Version}}, nil
}

func nullID(id string) any {
	if id == "" {
		return nil
	}
	return id
}

// CreateAlertRule implements domain.AlertStore: under the project's lock of creates, the count
// of its rules, then the insert, in one transaction.
func (s *Store) CreateAlertRule(ctx context.Context, r domain.AlertRule, limit int) error {
	targets, err := encodeTargets(r.Targets)
	if err != nil {
		return fmt.Errorf("create alert rule: %w", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("create alert rule", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if lock := s.eng.searchLock(); lock != "" {
		if _, err := tx.ExecContext(ctx, s.bind(lock), r.ProjectID); err != nil {
			return s.translate("create alert rule: lock", err)
		}
	}
	var n int
	if err := tx.GetContext(ctx, &n, s.bind("SELECT count(*) FROM alert_rules WHERE project_id = ?"), r.ProjectID); err != nil {
		return s.translate("create alert rule: count", err)
	}
	if n >= limit {
		return domain.ErrTooManyAlerts
	}
	st := r.Status
	_, err = tx.ExecContext(ctx, s.bind("INSERT INTO alert_rules ("+alertColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
		r.ProjectID, r.ID, r.Name, nullID(r.SearchID), r.Query, r.WindowSeconds, r.IntervalSeconds, r.ForSeconds, r.Condition.Op, r.Condition.Threshold,
		targets, r.SilencedUntil, s.eng.timeArg(r.CreatedAt), s.eng.timeArg(r.UpdatedAt),
		string(st.State), st.PendingSince, st.FiringSince, st.Notified, st.LastEvalAt, st.LastCount, st.NextEvalAt, st.Transitions, st.Version)
	if err != nil {
		return s.translate("create alert rule", err)
	}
	return s.translate("create alert rule", tx.Commit())
}

// GetAlertRule implements domain.AlertStore. Without a project it reads by id alone: on Citus
// that asks every shard (an admin's read).
func (s *Store) GetAlertRule(ctx context.Context, projectID, id string) (domain.AlertRule, error) {
	var row alertRow
	var err error
	if projectID == "" {
		err = s.r.GetContext(ctx, &row, s.bind("SELECT "+alertColumns+" FROM alert_rules WHERE id = ?"), id)
	} else {
		err = s.r.GetContext(ctx, &row, s.bind("SELECT "+alertColumns+" FROM alert_rules WHERE project_id = ? AND id = ?"), projectID, id)
	}
	if err != nil {
		return domain.AlertRule{}, s.translate("get alert rule", err)
	}
	return row.domain()
}

// GetAlertRules implements domain.AlertStore: one statement, one shard on Citus.
func (s *Store) GetAlertRules(ctx context.Context, projectID string, ids []string) ([]domain.AlertRule, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	q, args, err := sqlx.In("SELECT "+alertColumns+" FROM alert_rules WHERE project_id = ? AND id IN (?)", projectID, ids)
	if err != nil {
		return nil, fmt.Errorf("get alert rules: %w", err)
	}
	var rows []alertRow
	if err := s.r.SelectContext(ctx, &rows, s.bind(q), args...); err != nil {
		return nil, s.translate("get alert rules", err)
	}
	return alertRules(rows)
}

// alertRules converts rows to rules.
func alertRules(rows []alertRow) ([]domain.AlertRule, error) {
	out := make([]domain.AlertRule, len(rows))
	for i, r := range rows {
		var err error
		if out[i], err = r.domain(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ListAlertRules implements domain.AlertStore.
func (s *Store) ListAlertRules(ctx context.Context, projectID string) ([]domain.AlertRule, error) {
	var rows []alertRow
	if err := s.r.SelectContext(ctx, &rows, s.bind("SELECT "+alertColumns+" FROM alert_rules WHERE project_id = ? ORDER BY name, id"), projectID); err != nil {
		return nil, s.translate("list alert rules", err)
	}
	return alertRules(rows)
}

// UpdateAlertRule implements domain.AlertStore.
func (s *Store) UpdateAlertRule(ctx context.Context, r domain.AlertRule) error {
	targets, err := encodeTargets(r.Targets)
	if err != nil {
		return fmt.Errorf("update alert rule: %w", err)
	}
	res, err := s.w.ExecContext(ctx, s.bind("UPDATE alert_rules SET name = ?, search_id = ?, query = ?, window_seconds = ?, interval_seconds = ?, for_seconds = ?, "+
		"op = ?, threshold = ?, targets = ?, silenced_until = ?, updated_at = ?, next_eval_at = ?, version = version + 1 WHERE project_id = ? AND id = ?"),
		r.Name, nullID(r.SearchID), r.Query, r.WindowSeconds, r.IntervalSeconds, r.ForSeconds, r.Condition.Op, r.Condition.Threshold, targets,
		r.SilencedUntil, s.eng.timeArg(r.UpdatedAt), r.Status.NextEvalAt, r.ProjectID, r.ID)
	return s.oneRow("update alert rule", res, err)
}

// DeleteAlertRule implements domain.AlertStore: the rule, then its history, outbox and lease,
// in one transaction.
func (s *Store) DeleteAlertRule(ctx context.Context, projectID, id string) error {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("delete alert rule", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	res, err := tx.ExecContext(ctx, s.bind("DELETE FROM alert_rules WHERE project_id = ? AND id = ?"), projectID, id)
	if err := s.oneRow("delete alert rule", res, err); err != nil {
		return err
	}
	for _, table := range []string{"alert_history", "alert_outbox", "alert_leases"} {
		if _, err := tx.ExecContext(ctx, s.bind("DELETE FROM "+table+" WHERE project_id = ? AND rule_id = ?"), projectID, id); err != nil {
			return s.translate("delete alert rule: "+table, err)
		}
	}
	return s.translate("delete alert rule", tx.Commit())
}

type historyRow struct {
	Seq         int64  `db:"seq"`
	Time        int64  `db:"time"`
	From        string `db:"from_state"`
	To          string `db:"to_state"`
	Count       int64  `db:"count"`
	WindowStart int64  `db:"window_start"`
	WindowEnd   int64  `db:"window_end"`
}

// AlertHistory implements domain.AlertStore.
func (s *Store) AlertHistory(ctx context.Context, projectID, id string, limit int) ([]domain.AlertTransition, error) {
	var rows []historyRow
	if err := s.r.SelectContext(ctx, &rows, s.bind("SELECT seq, time, from_state, to_state, count, window_start, window_end FROM alert_history "+
		"WHERE project_id = ? AND rule_id = ? ORDER BY seq DESC LIMIT ?"), projectID, id, limit); err != nil {
		return nil, s.translate("alert history", err)
	}
	out := make([]domain.AlertTransition, len(rows))
	for i, r := range rows {
		out[i] = domain.AlertTransition{Seq: r.Seq, Time: r.Time, From: domain.AlertState(r.From), To: domain.AlertState(r.To), Count: r.Count,
			WindowStart: r.WindowStart, WindowEnd: r.WindowEnd}
	}
	return out, nil
}

// DueAlertRules implements domain.AlertStore: the evaluator's scan across every project (on
// Citus, every shard, by the index on next_eval_at), each rule with its lease (a join on the
// project, so each shard joins its own rows).
func (s *Store) DueAlertRules(ctx context.Context, now int64, limit int) ([]domain.AlertRef, error) {
	var rows []struct {
		ProjectID string         `db:"project_id"`
		ID        string         `db:"id"`
		Interval  int            `db:"interval_seconds"`
		Holder    sql.NullString `db:"holder"`
		Until     sql.NullInt64  `db:"expires_at"`
	}
	if err := s.r.SelectContext(ctx, &rows, s.bind("SELECT r.project_id, r.id, r.interval_seconds, l.holder, l.expires_at FROM alert_rules r "+
		"LEFT JOIN alert_leases l ON l.project_id = r.project_id AND l.rule_id = r.id WHERE r.next_eval_at <= ? ORDER BY r.next_eval_at LIMIT ?"), now, limit); err != nil {
		return nil, s.translate("due alert rules", err)
	}
	out := make([]domain.AlertRef, len(rows))
	for i, r := range rows {
		out[i] = domain.AlertRef{ProjectID: r.ProjectID, ID: r.ID, IntervalSeconds: r.Interval, LeaseHolder: r.Holder.String, LeaseUntil: r.Until.Int64}
	}
	return out, nil
}

// AcquireAlertLeases implements domain.AlertStore with one upsert of every claim (of each
// fourTupleRows; domain.DueAlertsBatch is 500), returning the rules whose lease it wrote: a
// lease that has expired, or that holder holds, is taken (renewed); another's is left alone and
// not returned. All rows name the project: on Citus, one shard. The lease of a rule deleted
// meanwhile is harmless: the evaluation finds no rule.
func (s *Store) AcquireAlertLeases(ctx context.Context, projectID, holder string, now int64, claims []domain.AlertLeaseClaim) ([]string, error) {
	var taken []string
	for chunk := range slices.Chunk(claims, fourTupleRows) {
		args := make([]any, 0, 4*len(chunk)+1)
		for _, c := range chunk {
			args = append(args, projectID, c.RuleID, holder, c.Until)
		}
		query := "INSERT INTO alert_leases (project_id, rule_id, holder, expires_at) VALUES " + fourTuples(len(chunk)) +
			" ON CONFLICT (project_id, rule_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at" +
			" WHERE alert_leases.expires_at < ? OR alert_leases.holder = excluded.holder RETURNING rule_id"
		var ids []string
		if err := s.w.SelectContext(ctx, &ids, s.bind(query), append(args, now)...); err != nil {
			return nil, s.translate("acquire alert leases", err)
		}
		taken = append(taken, ids...)
	}
	return taken, nil
}

// saveStatus is the statement that writes an evaluated rule's status over the version read.
const saveStatus = "UPDATE alert_rules SET state = ?, pending_since = ?, firing_since = ?, notified = ?, last_eval_at = ?, last_count = ?, " +
	"next_eval_at = ?, transitions = ?, version = version + 1 WHERE project_id = ? AND id = ? AND version = ?"

// renewLease is the statement that renews a holder's lease, and only its own.
const renewLease = "UPDATE alert_leases SET expires_at = ? WHERE project_id = ? AND rule_id = ? AND holder = ?"

// SaveAlertEvaluation implements domain.AlertStore: the rule's status over the version read,
// its transitions and their notifications, in one transaction (one shard on Citus), with the
// lease renewed.
func (s *Store) SaveAlertEvaluation(ctx context.Context, e domain.AlertEvaluation) error {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("save alert evaluation", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if err := s.saveStatusTx(ctx, tx, e); err != nil {
		return err
	}
	for _, t := range e.Transitions {
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO alert_history (project_id, rule_id, seq, time, from_state, to_state, count, window_start, window_end) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"), e.ProjectID, e.RuleID, t.Seq, t.Time, string(t.From), string(t.To), t.Count, t.WindowStart, t.WindowEnd); err != nil {
			return s.translate("save alert evaluation: history", err)
		}
	}
	for _, it := range e.Outbox {
		target, err := json.Marshal(targetJSON(it.To))
		if err != nil {
			return fmt.Errorf("save alert evaluation: %w", err)
		}
		n, err := json.Marshal(it.Notification)
		if err != nil {
			return fmt.Errorf("save alert evaluation: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO alert_outbox (project_id, id, rule_id, seq, target, target_json, notification, attempts, next_attempt_at, last_error) "+
			"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"), it.ProjectID, it.ID, it.RuleID, it.Seq, it.Target, string(target), string(n), it.Attempts, it.NextAttemptAt, it.LastError); err != nil {
			return s.translate("save alert evaluation: outbox", err)
		}
	}
	return s.translate("save alert evaluation", tx.Commit())
}

// saveStatuses is saveStatus and renewLease for many rules of one project on PostgreSQL, one
// statement: the rows as arrays (unnest), the leases renewed by a CTE of the status update.
// Every table named is filtered on the project: one shard on Citus.
const saveStatuses = "WITH v AS (SELECT * FROM unnest(CAST(? AS uuid[]), CAST(? AS bigint[]), CAST(? AS text[]), CAST(? AS bigint[]), " +
	"CAST(? AS bigint[]), CAST(? AS boolean[]), CAST(? AS bigint[]), CAST(? AS bigint[]), CAST(? AS bigint[]), CAST(? AS bigint[]), " +
	"CAST(? AS text[]), CAST(? AS bigint[])) AS v (id, version, state, pending_since, firing_since, notified, last_eval_at, last_count, " +
	"next_eval_at, transitions, holder, lease_until)), " +
	"renewed AS (UPDATE alert_leases l SET expires_at = v.lease_until FROM v WHERE l.project_id = ? AND l.rule_id = v.id AND l.holder = v.holder) " +
	"UPDATE alert_rules r SET state = v.state, pending_since = v.pending_since, firing_since = v.firing_since, notified = v.notified, " +
	"last_eval_at = v.last_eval_at, last_count = v.last_count, next_eval_at = v.next_eval_at, transitions = v.transitions, version = r.version + 1 " +
	"FROM v WHERE r.project_id = ? AND r.id = v.id AND r.version = v.version RETURNING r.id"

// SaveAlertStatuses implements domain.AlertStore: on PostgreSQL one statement (saveStatuses);
// on SQLite, whose statements cost no round trip, one transaction of saveStatus and renewLease
// per rule. Either way one commit for the lot.
func (s *Store) SaveAlertStatuses(ctx context.Context, projectID string, es []domain.AlertEvaluation) ([]string, error) {
	for _, e := range es {
		if e.ProjectID != projectID || len(e.Transitions) > 0 || len(e.Outbox) > 0 {
			return nil, fmt.Errorf("save alert statuses: rule %s is of another project or has transitions", e.RuleID)
		}
	}
	if len(es) == 0 {
		return nil, nil
	}
	if _, pg := s.eng.(postgresEngine); pg {
		n := len(es)
		ids, states, holders := make([]string, n), make([]string, n), make([]string, n)
		versions, pending, firing, lastEval, lastCount, next, transitions, until := make([]int64, n), make([]int64, n), make([]int64, n),
			make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		notified := make([]bool, n)
		for i, e := range es {
			st := e.Status
			ids[i], versions[i], states[i], pending[i], firing[i], notified[i] = e.RuleID, e.Version, string(st.State), st.PendingSince, st.FiringSince, st.Notified
			lastEval[i], lastCount[i], next[i], transitions[i], holders[i], until[i] = st.LastEvalAt, st.LastCount, st.NextEvalAt, st.Transitions, e.Holder, e.LeaseUntil
		}
		var saved []string
		err := s.w.SelectContext(ctx, &saved, s.bind(saveStatuses), pq.Array(ids), pq.Array(versions), pq.Array(states), pq.Array(pending),
			pq.Array(firing), pq.Array(notified), pq.Array(lastEval), pq.Array(lastCount), pq.Array(next), pq.Array(transitions),
			pq.Array(holders), pq.Array(until), projectID, projectID)
		return saved, s.translate("save alert statuses", err)
	}
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return nil, s.translate("save alert statuses", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	var saved []string
	for _, e := range es {
		switch err := s.saveStatusTx(ctx, tx, e); {
		case errors.Is(err, domain.ErrAlertChanged):
		case err != nil:
			return nil, err
		default:
			saved = append(saved, e.RuleID)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, s.translate("save alert statuses", err)
	}
	return saved, nil
}

// saveStatusTx writes e's status inside tx over the version it read (ErrAlertChanged, writing
// nothing of the rule, when that has changed) and renews its holder's lease either way.
func (s *Store) saveStatusTx(ctx context.Context, tx *sqlx.Tx, e domain.AlertEvaluation) error {
	st := e.Status
	res, err := tx.ExecContext(ctx, s.bind(saveStatus), string(st.State), st.PendingSince, st.FiringSince, st.Notified, st.LastEvalAt, st.LastCount,
		st.NextEvalAt, st.Transitions, e.ProjectID, e.RuleID, e.Version)
	saved := s.savedStatus(res, err)
	if saved != nil && !errors.Is(saved, domain.ErrAlertChanged) {
		return saved
	}
	if e.Holder != "" {
		if _, err := tx.ExecContext(ctx, s.bind(renewLease), e.LeaseUntil, e.ProjectID, e.RuleID, e.Holder); err != nil {
			return s.translate("save alert evaluation: lease", err)
		}
	}
	return saved
}

// savedStatus is the answer of saveStatus: ErrAlertChanged when it found the rule at another
// version.
func (s *Store) savedStatus(res sql.Result, err error) error {
	if err != nil {
		return s.translate("save alert evaluation: status", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.translate("save alert evaluation: status", err)
	} else if n != 1 {
		return domain.ErrAlertChanged
	}
	return nil
}

type outboxRow struct {
	ProjectID     string `db:"project_id"`
	ID            string `db:"id"`
	RuleID        string `db:"rule_id"`
	Seq           int64  `db:"seq"`
	Target        int    `db:"target"`
	TargetJSON    string `db:"target_json"`
	Notification  string `db:"notification"`
	Attempts      int    `db:"attempts"`
	NextAttemptAt int64  `db:"next_attempt_at"`
	LastError     string `db:"last_error"`
}

// PendingOutbox implements domain.AlertStore: the sender's scan across every project (on
// Citus, every shard, by the partial index of undelivered rows).
func (s *Store) PendingOutbox(ctx context.Context, limit int) ([]domain.OutboxItem, error) {
	var rows []outboxRow
	if err := s.r.SelectContext(ctx, &rows, s.bind("SELECT project_id, id, rule_id, seq, target, target_json, notification, attempts, next_attempt_at, last_error "+
		"FROM alert_outbox WHERE delivered_at IS NULL ORDER BY project_id, rule_id, target, seq LIMIT ?"), limit); err != nil {
		return nil, s.translate("pending notifications", err)
	}
	out := make([]domain.OutboxItem, len(rows))
	for i, r := range rows {
		var t targetJSON
		if err := json.Unmarshal([]byte(r.TargetJSON), &t); err != nil {
			return nil, fmt.Errorf("notification %s: target: %w", r.ID, err)
		}
		it := domain.OutboxItem{ID: r.ID, ProjectID: r.ProjectID, RuleID: r.RuleID, Seq: r.Seq, Target: r.Target, To: domain.AlertTarget(t),
			Attempts: r.Attempts, NextAttemptAt: r.NextAttemptAt, LastError: r.LastError}
		if err := json.Unmarshal([]byte(r.Notification), &it.Notification); err != nil {
			return nil, fmt.Errorf("notification %s: %w", r.ID, err)
		}
		out[i] = it
	}
	return out, nil
}

// ClaimOutbox implements domain.AlertStore: a compare-and-set of next_attempt_at.
func (s *Store) ClaimOutbox(ctx context.Context, it domain.OutboxItem, until int64) (bool, error) {
	res, err := s.w.ExecContext(ctx, s.bind("UPDATE alert_outbox SET next_attempt_at = ?, attempts = attempts + 1 "+
		"WHERE project_id = ? AND id = ? AND next_attempt_at = ? AND delivered_at IS NULL"), until, it.ProjectID, it.ID, it.NextAttemptAt)
	if err != nil {
		return false, s.translate("claim notification", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, s.translate("claim notification", err)
	}
	return n == 1, nil
}

// FinishOutbox implements domain.AlertStore.
func (s *Store) FinishOutbox(ctx context.Context, projectID, id string, delivered bool, at int64, lastError string) error {
	var err error
	if delivered {
		_, err = s.w.ExecContext(ctx, s.bind("UPDATE alert_outbox SET delivered_at = ?, last_error = '' WHERE project_id = ? AND id = ?"), at, projectID, id)
	} else {
		_, err = s.w.ExecContext(ctx, s.bind("UPDATE alert_outbox SET next_attempt_at = ?, last_error = ? WHERE project_id = ? AND id = ?"), at, lastError, projectID, id)
	}
	return s.translate("finish notification", err)
}

// SweepOutbox implements domain.AlertStore: a sweep across every project (on Citus, every
// shard), as the idempotency records' is.
func (s *Store) SweepOutbox(ctx context.Context, before int64) (int64, error) {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM alert_outbox WHERE delivered_at IS NOT NULL AND delivered_at < ?"), before)
	if err != nil {
		return 0, s.translate("sweep delivered notifications", err)
	}
	n, err := res.RowsAffected()
	return n, s.translate("sweep delivered notifications", err)
}
