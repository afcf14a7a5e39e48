package sqlstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// Alert counts (domain.AlertCountStore, migration 00015): the queries a project's rules count,
// registered in alert_queries, and their matching entries per second in alert_counts, which
// every batch written adds to in its own transaction (countAlerts) once it holds its project's
// row of tail_seq. A registration holds the same row only while it records the project's newest
// batch (upto): a batch numbered after it reads the registration and counts itself, and the
// entries of the batches up to it are counted afterwards, without holding anything (so that
// ingest never waits for a count of a window), and added once (counted). Every entry is counted
// exactly once.

var _ domain.AlertCountStore = (*Store)(nil)

// The bounds of alert counting.
const (
	// alertQueryIdle is how long a registered query stays unused (no rule counted it) before
	// the next evaluation of another query of its project drops it: until then every batch of
	// the project is matched against it.
	alertQueryIdle = 3_600_000
	// alertQueryTouch is how often an evaluation records that its query is in use, and drops
	// the seconds no window reaches any more.
	alertQueryTouch = 60_000
)

// alertQueryLimits bound what the store parses of a registered query: the service checked the
// text with its own limits when a rule counted it.
func alertQueryLimits() domain.QueryLimits {
	return domain.QueryLimits{MaxChars: 1 << 20, MaxDepth: 1 << 10, MaxTerms: 1 << 16}
}

// queryKey names a query's text in alert_queries: its SHA-256, whatever its length.
func queryKey(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// registered is a row of alert_queries as an evaluation reads it, with its window's count.
type registered struct {
	ID      string
	Floor   int64
	Span    int64
	UsedAt  int64
	Upto    int64
	Counted int64
	N       int64
	// Retention is the project's retention_days, read with the registration.
	Retention sql.NullInt32
}

// CountAlertWindow implements domain.AlertCountStore: the sum of the query's counts over the
// window, registering the query first when it is not, or when the window starts before what is
// kept of it. Once a minute per query it records that the query is in use, drops its seconds
// that no window reaches and drops its project's queries unused for an hour.
func (s *Store) CountAlertWindow(ctx context.Context, f domain.LogFilter, start, end, now int64) (int64, bool, error) {
	text := ""
	if f.Query != nil {
		text = *f.Query
	}
	key := queryKey(text)
	q, found, err := s.readAlertQuery(ctx, f.ProjectID, key, start, end)
	if err != nil {
		return 0, false, err
	}
	retention := q.Retention
	if !found {
		if err := s.r.GetContext(ctx, &retention, s.bind(projectRetention), f.ProjectID); err != nil {
			return 0, false, s.translate("alert counts: project", err)
		}
	}
	if retention.Valid && now-int64(retention.Int32)*86_400_000 > start {
		return 0, false, nil
	}
	if !found || q.Floor > start {
		if err := s.registerAlertQuery(ctx, f.ProjectID, text, key, start, end, now); err != nil {
			return 0, false, err
		}
		if q, found, err = s.readAlertQuery(ctx, f.ProjectID, key, start, end); err != nil {
			return 0, false, err
		}
	}
	if found && q.Counted == 0 {
		if err := s.countAlertBacklog(ctx, f, key, q, now); err != nil {
			return 0, false, err
		}
		if q, found, err = s.readAlertQuery(ctx, f.ProjectID, key, start, end); err != nil {
			return 0, false, err
		}
	}
	if !found || q.Floor > start || q.Counted == 0 {
		// Registered again meanwhile by another evaluator, or dropped by a delete: the next
		// evaluation counts it.
		return 0, false, fmt.Errorf("alert counts: query %s changed while it was counted", key[:12])
	}
	if now-q.UsedAt >= alertQueryTouch || end-start > q.Span {
		if err := s.touchAlertQuery(ctx, f.ProjectID, key, q, end-start, end, now); err != nil {
			return 0, false, err
		}
	}
	return q.N, true, nil
}

// readAlertQuery reads the query's registration and its count of [start, end), with its
// project's retention.
func (s *Store) readAlertQuery(ctx context.Context, projectID, key string, start, end int64) (registered, bool, error) {
	stmt, err := s.listing(ctx, s.bind("SELECT q.id, q.floor, q.span, q.used_at, q.upto, q.counted,"+
		" (SELECT COALESCE(SUM(c.n), 0) FROM alert_counts c WHERE c.project_id = ? AND c.query_id = q.id AND c.second >= ? AND c.second < ?),"+
		" (SELECT p.retention_days FROM projects p WHERE p.id = ?)"+
		" FROM alert_queries q WHERE q.project_id = ? AND q.query_key = ?"))
	if err != nil {
		return registered{}, false, s.translate("alert counts: read", err)
	}
	var q registered
	err = stmt.QueryRowContext(ctx, projectID, start, end, projectID, projectID, key).Scan(&q.ID, &q.Floor, &q.Span, &q.UsedAt, &q.Upto, &q.Counted, &q.N, &q.Retention)
	if errors.Is(err, sql.ErrNoRows) {
		return registered{}, false, nil
	}
	if err != nil {
		return registered{}, false, s.translate("alert counts: read", err)
	}
	return q, true, nil
}

// lockAlertCounts takes the project's row of tail_seq inside tx (making it when the project has
// none yet), as a batch of the project does last before it commits.
func (s *Store) lockAlertCounts(ctx context.Context, tx *sqlx.Tx, projectID string) error {
	_, err := tx.ExecContext(ctx, s.bind("INSERT INTO tail_seq (project_id, seq) VALUES (?, 0) ON CONFLICT (project_id) DO UPDATE SET seq = tail_seq.seq"), projectID)
	return err
}

// registerAlertQuery (re)registers the query from start's second with a new id, holding the
// project's row of tail_seq while it records the project's newest batch (upto); a registration
// another evaluator made meanwhile that reaches back far enough is kept. The entries written so
// far are counted after (countAlertBacklog).
func (s *Store) registerAlertQuery(ctx context.Context, projectID, text, key string, start, end, now int64) error {
	return s.alertTx(ctx, func(tx *sqlx.Tx) error { return s.registerAlertQueryTx(ctx, tx, projectID, text, key, start, end, now) })
}

func (s *Store) registerAlertQueryTx(ctx context.Context, tx *sqlx.Tx, projectID, text, key string, start, end, now int64) (err error) {
	if err = s.lockAlertCounts(ctx, tx, projectID); err != nil {
		return s.translate("alert counts: lock", err)
	}
	var old struct {
		ID    string `db:"id"`
		Floor int64  `db:"floor"`
		Span  int64  `db:"span"`
	}
	switch err = tx.GetContext(ctx, &old, s.bind("SELECT id, floor, span FROM alert_queries WHERE project_id = ? AND query_key = ?"), projectID, key); {
	case errors.Is(err, sql.ErrNoRows):
		err = nil
	case err != nil:
		return s.translate("alert counts: read", err)
	case old.Floor <= start:
		return nil
	default:
		// The registration's row before its counts, as everything that writes both does.
		if _, err = tx.ExecContext(ctx, s.bind("DELETE FROM alert_queries WHERE project_id = ? AND query_key = ?"), projectID, key); err != nil {
			return s.translate("alert counts: drop", err)
		}
		if _, err = tx.ExecContext(ctx, s.bind("DELETE FROM alert_counts WHERE project_id = ? AND query_id = ?"), projectID, old.ID); err != nil {
			return s.translate("alert counts: drop", err)
		}
	}
	var upto int64
	if err = tx.GetContext(ctx, &upto, s.bind("SELECT seq FROM tail_seq WHERE project_id = ?"), projectID); err != nil {
		return s.translate("alert counts: newest batch", err)
	}
	if _, err = tx.ExecContext(ctx, s.bind("INSERT INTO alert_queries (project_id, query_key, id, query, floor, span, used_at, upto, counted)"+
		" VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)"), projectID, key, uuid.Must(uuid.NewV7()).String(), text, domain.SecondOf(start), max(end-start, old.Span), now, upto); err != nil {
		return s.translate("alert counts: register", err)
	}
	return nil
}

// countAlertBacklog counts, per second from q's floor, the entries matching f that batches up
// to q.Upto wrote (and those written before ingest order was kept), which no batch counted for
// q, and adds them to q's counts once: only the evaluator that marks q counted adds them.
func (s *Store) countAlertBacklog(ctx context.Context, f domain.LogFilter, key string, q registered, now int64) error {
	cf := domain.LogFilter{ProjectID: f.ProjectID, Query: f.Query, Parsed: f.Parsed, Start: &q.Floor}
	w, args, err := s.plannedWhere(ctx, cf)
	if err != nil {
		return s.translate("alert counts: plan", err)
	}
	query := "SELECT (time - ?) / 1000, count(*) FROM logs" + w +
		" AND (tail_tx IS NULL OR tail_tx NOT IN (SELECT tx FROM tail_batches WHERE project_id = ? AND seq > ?)) GROUP BY 1"
	rows, err := s.r.QueryContext(ctx, s.bind(query), append(append([]any{q.Floor}, args...), f.ProjectID, q.Upto)...)
	if err != nil {
		return s.translate("alert counts: count", err)
	}
	var counts []alertCount
	for rows.Next() {
		var sec, n int64
		if err = rows.Scan(&sec, &n); err != nil {
			_ = rows.Close()
			return s.translate("alert counts: count", err)
		}
		counts = append(counts, alertCount{q.ID, q.Floor + sec*1000, n})
	}
	if err = errors.Join(rows.Err(), rows.Close()); err != nil {
		return s.translate("alert counts: count", err)
	}
	return s.alertTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, s.bind("UPDATE alert_queries SET counted = ? WHERE project_id = ? AND query_key = ? AND id = ? AND counted = 0"),
			max(now, 1), f.ProjectID, key, q.ID)
		if err != nil {
			return s.translate("alert counts: mark counted", err)
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return cmp.Or(s.translate("alert counts: mark counted", err), errAlertTxUndone) // another evaluator added them, or the query was registered again
		}
		return s.translate("alert counts: write", s.addAlertCounts(ctx, tx, f.ProjectID, counts))
	})
}

// touchAlertQuery records that q is in use at now by a window of span ms ending at end, drops
// its seconds before the widest window's start, and drops the project's queries no rule has
// used for alertQueryIdle with their counts.
func (s *Store) touchAlertQuery(ctx context.Context, projectID, key string, q registered, span, end, now int64) error {
	return s.alertTx(ctx, func(tx *sqlx.Tx) error { return s.touchAlertQueryTx(ctx, tx, projectID, key, q, span, end, now) })
}

func (s *Store) touchAlertQueryTx(ctx context.Context, tx *sqlx.Tx, projectID, key string, q registered, span, end, now int64) (err error) {
	span = max(span, q.Span)
	floor := max(q.Floor, domain.SecondOf(end-span))
	// Holding the project's row of tail_seq, so no batch adds to the seconds or the queries
	// being dropped.
	if err = s.lockAlertCounts(ctx, tx, projectID); err != nil {
		return s.translate("alert counts: lock", err)
	}
	if _, err = tx.ExecContext(ctx, s.bind("UPDATE alert_queries SET used_at = ?, span = ?, floor = ? WHERE project_id = ? AND query_key = ? AND id = ?"),
		now, span, floor, projectID, key, q.ID); err != nil {
		return s.translate("alert counts: touch", err)
	}
	if floor > q.Floor {
		if _, err = tx.ExecContext(ctx, s.bind("DELETE FROM alert_counts WHERE project_id = ? AND query_id = ? AND second < ?"), projectID, q.ID, floor); err != nil {
			return s.translate("alert counts: drop seconds", err)
		}
	}
	var idle []string
	if err = tx.SelectContext(ctx, &idle, s.bind("DELETE FROM alert_queries WHERE project_id = ? AND used_at < ? RETURNING id"), projectID, now-alertQueryIdle); err != nil {
		return s.translate("alert counts: drop idle", err)
	}
	for _, id := range idle {
		if _, err = tx.ExecContext(ctx, s.bind("DELETE FROM alert_counts WHERE project_id = ? AND query_id = ?"), projectID, id); err != nil {
			return s.translate("alert counts: drop idle", err)
		}
	}
	return nil
}

// errAlertTxUndone is what a transaction of alertTx returns to be rolled back quietly.
var errAlertTxUndone = errors.New("alert counts: nothing to write")

// alertTx runs fn in a write transaction and commits it, or rolls it back when fn fails (nothing
// of it stays; a rollback error adds nothing), quietly when fn returns errAlertTxUndone.
func (s *Store) alertTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("alert counts: begin", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		if errors.Is(err, errAlertTxUndone) {
			return nil
		}
		return err
	}
	return s.translate("alert counts: commit", tx.Commit())
}

// alertCount is one row of alert_counts of a project.
type alertCount struct {
	queryID string
	second  int64
	n       int64
}

// addAlertCounts adds counts to the project's rows of alert_counts, in the order of their key,
// so that two transactions adding to the same rows (a batch, and the count of what batches
// wrote before a registration) take their locks in one order and never wait for each other in a
// cycle. Every transaction that drops rows of a registration takes its row of alert_queries
// first: the count of the backlog holds that row from its start.
func (s *Store) addAlertCounts(ctx context.Context, tx *sqlx.Tx, projectID string, counts []alertCount) error {
	slices.SortFunc(counts, func(a, b alertCount) int {
		return cmp.Or(strings.Compare(a.queryID, b.queryID), cmp.Compare(a.second, b.second))
	})
	for chunk := range slices.Chunk(counts, fourTupleRows) {
		args := make([]any, 0, 4*len(chunk))
		for _, c := range chunk {
			args = append(args, projectID, c.queryID, c.second, c.n)
		}
		query := "INSERT INTO alert_counts (project_id, query_id, second, n) VALUES " + fourTuples(len(chunk)) +
			" ON CONFLICT (project_id, query_id, second) DO UPDATE SET n = alert_counts.n + excluded.n"
		if _, err := tx.ExecContext(ctx, s.bind(query), args...); err != nil {
			return err
		}
	}
	return nil
}

// countAlerts adds the batch's entries to the alert counts of each of its projects, inside the
// batch's transaction once it holds the projects' rows of tail_seq.
func (s *Store) countAlerts(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry, projects map[string]uint64) error {
	for p := range projects {
		var regs []struct {
			ID    string `db:"id"`
			Query string `db:"query"`
			Floor int64  `db:"floor"`
		}
		if err := tx.SelectContext(ctx, &regs, s.bind("SELECT id, query, floor FROM alert_queries WHERE project_id = ?"), p); err != nil {
			return err
		}
		if len(regs) == 0 {
			continue
		}
		qs := make([]domain.AlertCountQuery, len(regs))
		for i, r := range regs {
			parsed, err := s.alertQuery(r.Query)
			if err != nil {
				return err
			}
			qs[i] = domain.AlertCountQuery{ProjectID: p, Query: parsed, Floor: r.Floor}
		}
		var counts []alertCount
		for i, secs := range domain.CountAlertMatches(entries, qs) {
			for sec, n := range secs {
				counts = append(counts, alertCount{regs[i].ID, sec, n})
			}
		}
		if err := s.addAlertCounts(ctx, tx, p, counts); err != nil {
			return err
		}
	}
	return nil
}

// alertQuery is a registered query's text parsed, once per text (the cache is dropped whole
// past alertParsedMax texts).
func (s *Store) alertQuery(text string) (domain.Query, error) {
	if q, ok := s.alertParsed.Load(text); ok {
		return q.(domain.Query), nil
	}
	q, err := domain.ParseQuery(text, alertQueryLimits())
	if err != nil {
		return domain.Query{}, fmt.Errorf("alert counts: a registered query does not parse: %w", err)
	}
	if s.alertParsedN.Add(1) > alertParsedMax {
		s.alertParsed.Clear()
		s.alertParsedN.Store(1)
	}
	s.alertParsed.Store(text, q)
	return q, nil
}

// alertParsedMax bounds the parsed queries a store keeps.
const alertParsedMax = 10_000
