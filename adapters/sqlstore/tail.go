package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/jmoiron/sqlx"

	"example.com/obsvc/domain"
)

// The live tail reads a project's entries in ingest order, (batch, position in the batch).
//
// Each project numbers its own batches (migration 00010): a batch takes the next number of its
// project's row of tail_seq last in its transaction, and tail_batches maps the number to the
// batch's rows, logs.tail_tx (the writing transaction's id on PostgreSQL, migration 00007; a
// tail_clock number on SQLite). The row of tail_seq stays locked until the batch commits, so the
// project's batches commit in the order of their numbers, and a batch rolled back gives its
// number back: every number up to the project's newest committed one is final, no later commit
// can come before it, and no long transaction elsewhere holds a tail back. Nothing the client
// sees of a position counts other projects' writes. Every statement names the project.

// tailSQL is where the tail's SQL differs between the engines, a seam beside engine (store.go)
// with one implementation per engine: tail_sqlite.go, tail_postgres.go.
type tailSQL interface {
	// clock takes, inside the batch's transaction and before its rows are written, the number
	// the rows carry as tail_tx where the store numbers transactions itself; 0 where the
	// database does (the column's default).
	clock(ctx context.Context, tx *sqlx.Tx) (uint64, error)
	// txValue is the value of tail_batches.tx for a batch: the rows' tail_tx, "?" when
	// numberBatch passes clock's number.
	txValue() string
	// skip is the condition that leaves out the batches of a read's Skip (b.seq), with one ?
	// placeholder, and its argument.
	skip(seqs []uint64) (string, any)
}

// tailColumns are the columns of a tail read: an entry and its position, from the batches
// (b) joined to the entries (l, a subquery over logs with the filter's conditions).
const tailColumns = "l.id, l.project_id, l.time, l.level, l.message, l.subject, l.user_id, l.attributes, l.trace_id, l.span_id, b.seq AS tail_seq, l.tail_pos"

// tailEntryColumns are the columns of logs the subquery hands on.
const tailEntryColumns = "id, project_id, time, level, message, subject, user_id, attributes, trace_id, span_id, tail_tx, tail_pos"

type tailRow struct {
	logRow
	TailSeq int64 `db:"tail_seq"`
	TailPos int64 `db:"tail_pos"`
}

func (r *tailRow) entry() domain.TailEntry {
	return domain.TailEntry{LogEntry: r.logRow.entry(), At: domain.TailPosition{Tx: uint64(r.TailSeq), Pos: r.TailPos}}
}

// tailFrom is the FROM and WHERE of a tail read of the entries matching f: the project's batches
// joined to their rows. The project is named for both tables, so the statement stays on one
// shard on Citus.
func tailFrom(e engine, f domain.LogFilter) (string, []any) {
	w, args := where(e, f)
	return " FROM tail_batches b JOIN (SELECT " + tailEntryColumns + " FROM logs" + w + ") l" +
		" ON l.project_id = b.project_id AND l.tail_tx = b.tx WHERE b.project_id = ?", append(args, f.ProjectID)
}

// tailNumber is a batch number as a parameter: the stores hold them as 64-bit signed integers.
func tailNumber(n uint64) int64 { return int64(min(n, math.MaxInt64)) }

// TailHead implements domain.TailStore.
func (s *Store) TailHead(ctx context.Context, projectID string) (domain.TailPosition, error) {
	var one int
	if err := s.r.GetContext(ctx, &one, s.bind("SELECT 1 FROM projects WHERE id = ?"), projectID); err != nil {
		return domain.TailPosition{}, s.translate("tail head: project", err)
	}
	return s.TailHorizon(ctx, projectID)
}

// TailHorizon implements tailhub.Store: after every entry of the project's newest committed
// batch. A project's hub asks it before each read, so the statement is prepared once.
func (s *Store) TailHorizon(ctx context.Context, projectID string) (domain.TailPosition, error) {
	stmt, err := s.listing(ctx, s.bind("SELECT seq FROM tail_seq WHERE project_id = ?"))
	if err != nil {
		return domain.TailPosition{}, s.translate("tail horizon", err)
	}
	var seq int64
	if err := stmt.GetContext(ctx, &seq, projectID); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return domain.TailPosition{}, s.translate("tail horizon", err)
	}
	return domain.TailPosition{Tx: uint64(seq), Pos: math.MaxInt32}, nil
}

// ReadTail implements tailhub.Store. With q.Before the read is bounded by that horizon; the
// batches of q.Skip are left out before their rows are visited. The statements are prepared
// once per filter.
func (s *Store) ReadTail(ctx context.Context, q domain.TailQuery) ([]domain.TailEntry, error) {
	query, args := s.readTailSQL(q)
	return s.readTail(ctx, query, q.Parsed.Root == nil, args)
}

// readTailSQL is ReadTail's statement and its arguments.
func (s *Store) readTailSQL(q domain.TailQuery) (string, []any) {
	f := q.LogFilter
	f.Start, f.End = nil, nil
	from, args := tailFrom(s.eng, f)
	after := tailNumber(q.After.Tx)
	query := "SELECT " + tailColumns + from + " AND b.seq >= ? AND (b.seq > ? OR l.tail_pos > ?)"
	args = append(args, after, after, q.After.Pos)
	if q.Before != (domain.TailPosition{}) {
		before := tailNumber(q.Before.Tx)
		query += " AND b.seq <= ? AND (b.seq < ? OR l.tail_pos < ?)"
		args = append(args, before, before, q.Before.Pos)
	}
	if len(q.Skip) > 0 {
		cond, arg := s.tail.skip(q.Skip)
		query += cond
		args = append(args, arg)
	}
	return query + " ORDER BY b.seq, l.tail_pos LIMIT ?", append(args, q.Limit)
}

// ReplayTail implements domain.TailStore: the newest limit rows at or before upTo, read
// backwards and handed on oldest first.
func (s *Store) ReplayTail(ctx context.Context, f domain.LogFilter, upTo domain.TailPosition, limit int) ([]domain.TailEntry, error) {
	from, args := tailFrom(s.eng, f)
	last := tailNumber(upTo.Tx)
	args = append(args, last, last, upTo.Pos, limit)
	out, err := s.readTail(ctx, "SELECT "+tailColumns+from+" AND b.seq <= ? AND (b.seq < ? OR l.tail_pos <= ?) ORDER BY b.seq DESC, l.tail_pos DESC LIMIT ?", f.Parsed.Root == nil, args)
	slices.Reverse(out)
	return out, err
}

// readTail runs a tail read, its statement prepared and cached when cached (see queryRows).
func (s *Store) readTail(ctx context.Context, query string, cached bool, args []any) ([]domain.TailEntry, error) {
	rows, err := s.queryRows(ctx, s.bind(query), cached, args...)
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
		out = append(out, row.entry())
	}
	return out, s.translate("read tail", rows.Err())
}

// numberBatch gives the batch, inside tx, its number in each of its projects' ingest order, last
// before the commit (see above), and records where its rows are: batch is the rows' tail_tx on
// SQLite (PostgreSQL's is the transaction's own id). The projects are numbered in order, so two
// batches never wait for each other's rows of tail_seq in a cycle.
func (s *Store) numberBatch(ctx context.Context, tx *sqlx.Tx, entries []domain.LogEntry, batch uint64) (map[string]uint64, error) {
	projects := make([]string, 0, 1)
	for _, e := range entries {
		if len(projects) == 0 || projects[len(projects)-1] != e.ProjectID {
			projects = append(projects, e.ProjectID)
		}
	}
	slices.Sort(projects)
	projects = slices.Compact(projects)
	out := make(map[string]uint64, len(projects))
	next := s.bind("INSERT INTO tail_seq (project_id, seq) VALUES (?, 1) ON CONFLICT (project_id) DO UPDATE SET seq = tail_seq.seq + 1 RETURNING seq")
	record := s.bind("INSERT INTO tail_batches (project_id, seq, tx) VALUES (?, ?, " + s.tail.txValue() + ")")
	for _, p := range projects {
		var seq int64
		if err := tx.GetContext(ctx, &seq, next, p); err != nil {
			return nil, err
		}
		args := []any{p, seq}
		if batch != 0 {
			args = append(args, tailNumber(batch))
		}
		if _, err := tx.ExecContext(ctx, record, args...); err != nil {
			return nil, err
		}
		out[p] = uint64(seq)
	}
	return out, nil
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
