package sqlstore

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"

	"example.com/obsvc/domain"
)

// The live tail reads a project's entries in ingest order, (tail_tx, tail_pos) (migration 00007).
//
// On PostgreSQL tail_tx is the id of the writing transaction (pg_current_xact_id(), the column's
// default) and tail_pos the entry's position in its batch. Transaction ids are taken in one
// order and commit in another, so a reader cannot simply resume after the largest id it saw: a
// smaller one may still be running. A read therefore only returns rows whose transaction is
// older than the xmin of the statement's own snapshot (pg_snapshot_xmin(pg_current_snapshot())):
// every transaction below xmin has ended, and every transaction that starts later gets a larger
// id, so no row can ever appear before a position already handed on. The price is that a long
// transaction anywhere in the database holds the tail back until it ends. Nothing is taken
// from a shared counter on the insert path, and every statement names the project.
//
// On SQLite one connection writes, so the batch number each write takes from tail_clock inside
// its transaction is commit order, and every committed row is final.

// tailColumns are the columns of a tail read: an entry and its position (the transaction id as
// text, since xid8 has no driver type, under another name: ORDER BY tail_tx would otherwise
// sort by the text).
const tailColumns = "id, project_id, time, level, message, subject, user_id, attributes, trace_id, span_id, CAST(tail_tx AS TEXT) AS tail_tx_text, tail_pos"

// tailColumnNames are the names of tailColumns' results.
var tailColumnNames = []string{"id", "project_id", "time", "level", "message", "subject", "user_id", "attributes", "trace_id", "span_id", "tail_tx_text", "tail_pos"}

type tailRow struct {
	logRow
	TailTx  string `db:"tail_tx_text"`
	TailPos int64  `db:"tail_pos"`
}

func (r *tailRow) entry() (domain.TailEntry, error) {
	tx, err := strconv.ParseUint(r.TailTx, 10, 64)
	if err != nil {
		return domain.TailEntry{}, err
	}
	return domain.TailEntry{LogEntry: r.logRow.entry(), At: domain.TailPosition{Tx: tx, Pos: r.TailPos}}, nil
}

// TailHead implements domain.TailStore.
func (s *Store) TailHead(ctx context.Context, projectID string) (domain.TailPosition, error) {
	var one int
	if err := s.r.GetContext(ctx, &one, s.bind("SELECT 1 FROM projects WHERE id = ?"), projectID); err != nil {
		return domain.TailPosition{}, s.translate("tail head: project", err)
	}
	return s.TailHorizon(ctx)
}

// TailHorizon implements domain.TailStore. A project's hub asks it before each read, so the
// statement is prepared once.
func (s *Store) TailHorizon(ctx context.Context) (domain.TailPosition, error) {
	stmt, err := s.listing(ctx, s.eng.tailHeadQuery())
	if err != nil {
		return domain.TailPosition{}, s.translate("tail horizon", err)
	}
	var text string
	if err := stmt.GetContext(ctx, &text); err != nil {
		return domain.TailPosition{}, s.translate("tail horizon", err)
	}
	tx, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return domain.TailPosition{}, s.translate("tail horizon", err)
	}
	return s.eng.tailHead(tx), nil
}

// ReadTail implements domain.TailStore. With q.Before the read is bounded by that horizon instead
// of its own snapshot's, and leaves out q.Skip (see the engines' tailBounded); the statements
// are prepared once per filter.
func (s *Store) ReadTail(ctx context.Context, q domain.TailQuery) ([]domain.TailEntry, error) {
	f := q.LogFilter
	f.Start, f.End = nil, nil
	w, args := where(s.eng, f)
	if q.Before != (domain.TailPosition{}) {
		query, args, ok := s.eng.tailBounded(w, args, q)
		if !ok {
			return nil, nil // nothing lies between After and Before but skipped batches
		}
		return s.readTail(ctx, query, args)
	}
	w += " AND (tail_tx, tail_pos) > (" + s.eng.tailTxParam() + ", ?)" + s.eng.tailFinal()
	args = append(args, s.eng.tailTxArg(q.After.Tx), q.After.Pos, q.Limit)
	return s.readTail(ctx, "SELECT "+tailColumns+" FROM logs"+w+" ORDER BY tail_tx, tail_pos LIMIT ?", args)
}

// ReplayTail implements domain.TailStore: the newest limit rows at or before upTo, read
// backwards through the index and handed on oldest first.
func (s *Store) ReplayTail(ctx context.Context, f domain.LogFilter, upTo domain.TailPosition, limit int) ([]domain.TailEntry, error) {
	w, args := where(s.eng, f)
	w += " AND (tail_tx, tail_pos) <= (" + s.eng.tailTxParam() + ", ?)" + s.eng.tailFinal()
	args = append(args, s.eng.tailTxArg(upTo.Tx), upTo.Pos, limit)
	out, err := s.readTail(ctx, "SELECT "+tailColumns+" FROM logs"+w+" ORDER BY tail_tx DESC, tail_pos DESC LIMIT ?", args)
	slices.Reverse(out)
	return out, err
}

func (s *Store) readTail(ctx context.Context, query string, args []any) ([]domain.TailEntry, error) {
	stmt, err := s.listing(ctx, s.bind(query))
	if err != nil {
		return nil, s.translate("read tail", err)
	}
	rows, err := stmt.QueryxContext(ctx, args...)
	if err != nil {
		return nil, s.translate("read tail", err)
	}
	defer rows.Close()
	var out []domain.TailEntry
	for rows.Next() {
		var row tailRow
		if err := rows.StructScan(&row); err != nil {
			return nil, s.translate("read tail", err)
		}
		e, err := row.entry()
		if err != nil {
			return nil, s.translate("read tail", err)
		}
		out = append(out, e)
	}
	return out, s.translate("read tail", rows.Err())
}

// PostgreSQL: positions are transaction ids (xid8).

func (postgresEngine) tailTxParam() string     { return "CAST(? AS xid8)" }
func (postgresEngine) tailTxArg(tx uint64) any { return strconv.FormatUint(tx, 10) }
func (postgresEngine) tailFinal() string {
	return " AND tail_tx < pg_snapshot_xmin(pg_current_snapshot())"
}

// tailBounded reads the gaps between the skipped batches, each an index range scan of its own
// (a LATERAL subquery per gap, the gaps as arrays), so that the rows of a skipped batch (the
// hub's instance wrote them, and it skips them because it holds them) are never visited: a
// filter leaving them out would fetch each from the heap only to drop it. Every gap names the
// project, so the statement stays on one shard.
func (postgresEngine) tailBounded(w string, args []any, q domain.TailQuery) (string, []any, bool) {
	var loTx, hiTx []uint64
	var loPos, hiPos []int64
	gap := func(lo, hi domain.TailPosition) {
		if q.Before.Before(hi) {
			hi = q.Before // a batch skipped past the bound does not widen the read
		}
		if lo.Before(hi) {
			loTx, loPos, hiTx, hiPos = append(loTx, lo.Tx), append(loPos, lo.Pos), append(hiTx, hi.Tx), append(hiPos, hi.Pos)
		}
	}
	lo := q.After
	for _, tx := range q.Skip {
		gap(lo, domain.TailPosition{Tx: tx, Pos: -1})
		if past := (domain.TailPosition{Tx: tx, Pos: math.MaxInt32}); lo.Before(past) {
			lo = past
		}
	}
	gap(lo, q.Before)
	if len(loTx) == 0 {
		return "", nil, false
	}
	outer := make([]string, len(tailColumnNames))
	for i, c := range tailColumnNames {
		outer[i] = "l." + c
	}
	query := "SELECT " + strings.Join(outer, ", ") +
		" FROM unnest(CAST(? AS xid8[]), CAST(? AS integer[]), CAST(? AS xid8[]), CAST(? AS integer[])) WITH ORDINALITY AS g(lo_tx, lo_pos, hi_tx, hi_pos, n)" +
		" CROSS JOIN LATERAL (SELECT " + tailColumns + ", tail_tx AS tx FROM logs" + w +
		" AND (tail_tx, tail_pos) > (g.lo_tx, g.lo_pos) AND (tail_tx, tail_pos) < (g.hi_tx, g.hi_pos)" +
		" ORDER BY tail_tx, tail_pos LIMIT ?) AS l ORDER BY g.n, l.tx, l.tail_pos LIMIT ?"
	all := append([]any{"{" + joinDecimal(loTx) + "}", "{" + joinDecimal(loPos) + "}", "{" + joinDecimal(hiTx) + "}", "{" + joinDecimal(hiPos) + "}"}, args...)
	return query, append(all, q.Limit, q.Limit), true
}
func (postgresEngine) tailHeadQuery() string {
	return "SELECT CAST(pg_snapshot_xmin(pg_current_snapshot()) AS TEXT)"
}

// tailHead: every transaction from xmin on may still commit; start before all of them.
func (postgresEngine) tailHead(xmin uint64) domain.TailPosition {
	return domain.TailPosition{Tx: xmin, Pos: -1}
}

// SQLite: positions are tail_clock's batch numbers, below 2^63.

func (sqliteEngine) tailTxParam() string     { return "?" }
func (sqliteEngine) tailTxArg(tx uint64) any { return int64(min(tx, math.MaxInt64)) }
func (sqliteEngine) tailFinal() string       { return "" }

// tailBounded: one range, the skipped batches left out by a filter (one JSON array parameter).
// SQLite reads its own pages in process, so visiting a skipped row costs little.
func (sqliteEngine) tailBounded(w string, args []any, q domain.TailQuery) (string, []any, bool) {
	w += " AND (tail_tx, tail_pos) > (?, ?) AND (tail_tx, tail_pos) < (?, ?) AND tail_tx NOT IN (SELECT value FROM json_each(?))"
	args = append(args, sqliteEngine{}.tailTxArg(q.After.Tx), q.After.Pos, sqliteEngine{}.tailTxArg(q.Before.Tx), q.Before.Pos, "["+joinDecimal(q.Skip)+"]", q.Limit)
	return "SELECT " + tailColumns + " FROM logs" + w + " ORDER BY tail_tx, tail_pos LIMIT ?", args, true
}
func (sqliteEngine) tailHeadQuery() string {
	return "SELECT CAST(tx AS TEXT) FROM tail_clock WHERE id = 1"
}

// tailHead: after every entry of the last batch committed.
func (sqliteEngine) tailHead(last uint64) domain.TailPosition {
	return domain.TailPosition{Tx: last, Pos: math.MaxInt32}
}

// joinDecimal renders ns in decimal, separated by commas: the transaction ids (uint64) and
// batch positions (int64) of a tail read, as the text of an array parameter. It appends digits
// with strconv rather than fmt, which would box every number.
func joinDecimal[T int64 | uint64](ns []T) string {
	b := make([]byte, 0, 12*len(ns))
	for i, n := range ns {
		if i > 0 {
			b = append(b, ',')
		}
		if n < 0 {
			// uint64(-n) is n's magnitude, math.MinInt64's too (its negation wraps to itself).
			b = strconv.AppendUint(append(b, '-'), uint64(-n), 10)
		} else {
			b = strconv.AppendUint(b, uint64(n), 10)
		}
	}
	return string(b)
}
