package sqlstore

import (
	"context"
	"math"
	"slices"
	"strconv"

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
// of its own snapshot's, and leaves out q.Skip; the statements are prepared once per filter
// (the batches to skip are one parameter).
func (s *Store) ReadTail(ctx context.Context, q domain.TailQuery) ([]domain.TailEntry, error) {
	f := q.LogFilter
	f.Start, f.End = nil, nil
	w, args := where(f)
	w += " AND (tail_tx, tail_pos) > (" + s.eng.tailTxParam() + ", ?)"
	args = append(args, s.eng.tailTxArg(q.After.Tx), q.After.Pos)
	if q.Before == (domain.TailPosition{}) {
		w += s.eng.tailFinal()
	} else {
		w += " AND (tail_tx, tail_pos) < (" + s.eng.tailTxParam() + ", ?) AND " + s.eng.tailSkip()
		args = append(args, s.eng.tailTxArg(q.Before.Tx), q.Before.Pos, s.eng.tailSkipArg(q.Skip))
	}
	args = append(args, q.Limit)
	return s.readTail(ctx, "SELECT "+tailColumns+" FROM logs"+w+" ORDER BY tail_tx, tail_pos LIMIT ?", args)
}

// ReplayTail implements domain.TailStore: the newest limit rows at or before upTo, read
// backwards through the index and handed on oldest first.
func (s *Store) ReplayTail(ctx context.Context, f domain.LogFilter, upTo domain.TailPosition, limit int) ([]domain.TailEntry, error) {
	w, args := where(f)
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
func (postgresEngine) tailSkip() string { return "tail_tx <> ALL (CAST(? AS xid8[]))" }
func (postgresEngine) tailSkipArg(txs []uint64) any {
	return "{" + joinUints(txs) + "}" // an array literal
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
func (sqliteEngine) tailSkip() string {
	return "tail_tx NOT IN (SELECT value FROM json_each(?))"
}
func (sqliteEngine) tailSkipArg(txs []uint64) any {
	return "[" + joinUints(txs) + "]" // a JSON array
}
func (sqliteEngine) tailHeadQuery() string {
	return "SELECT CAST(tx AS TEXT) FROM tail_clock WHERE id = 1"
}

// tailHead: after every entry of the last batch committed.
func (sqliteEngine) tailHead(last uint64) domain.TailPosition {
	return domain.TailPosition{Tx: last, Pos: math.MaxInt32}
}

// joinUints renders txs in decimal, separated by commas.
func joinUints(txs []uint64) string {
	b := make([]byte, 0, 12*len(txs))
	for i, tx := range txs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, tx, 10)
	}
	return string(b)
}
