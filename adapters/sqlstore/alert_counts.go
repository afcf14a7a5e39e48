package sqlstore

import (
	"context"
	"database/sql"

	"example.com/obsvc/domain"
)

// Alert counts (domain.AlertCountStore): where a project's ingest order stands, and a query's
// entries counted per second in the same snapshot. The new entries themselves are read as the
// live tail reads them (ReadTail).

var _ domain.AlertCountStore = (*Store)(nil)

// AlertFeedHead implements domain.AlertCountStore in one statement: the project's retention,
// its newest committed batch and its count of filtered deletes. KindNotFound if the project
// does not exist.
func (s *Store) AlertFeedHead(ctx context.Context, projectID string) (domain.AlertFeed, error) {
	stmt, err := s.listing(ctx, s.bind("SELECT p.retention_days, COALESCE(t.seq, 0), COALESCE(t.deletes, 0) FROM projects p"+
		" LEFT JOIN tail_seq t ON t.project_id = p.id WHERE p.id = ?"))
	if err != nil {
		return domain.AlertFeed{}, s.translate("alert feed head", err)
	}
	var retention sql.NullInt32
	var seq, deletes int64
	if err := stmt.QueryRowContext(ctx, projectID).Scan(&retention, &seq, &deletes); err != nil {
		return domain.AlertFeed{}, s.translate("alert feed head", err)
	}
	out := domain.AlertFeed{Batch: uint64(seq), Deletes: deletes}
	if retention.Valid {
		days := int(retention.Int32)
		out.Retention = &days
	}
	return out, nil
}

// CountAlertSeconds implements domain.AlertCountStore in one statement, its own snapshot on both
// engines: a row of second -1 holding the newest committed batch and the count of deletes (none
// before the project's first write), then the counts per second from from, a whole second.
func (s *Store) CountAlertSeconds(ctx context.Context, f domain.LogFilter, from int64) (domain.AlertFeed, []domain.SecondCount, error) {
	f.Start, f.End = &from, nil
	w, args, err := s.plannedWhere(ctx, f)
	if err != nil {
		return domain.AlertFeed{}, nil, s.translate("alert counts: plan", err)
	}
	query := "SELECT -1 AS s, seq AS n, deletes AS d FROM tail_seq WHERE project_id = ?" +
		" UNION ALL SELECT (time - ?) / 1000, count(*), 0 FROM logs" + w + " GROUP BY 1"
	args = append([]any{f.ProjectID, from}, args...)
	rows, err := s.r.QueryContext(ctx, s.bind(query), args...)
	if err != nil {
		return domain.AlertFeed{}, nil, s.translate("alert counts", err)
	}
	defer rows.Close()
	var at domain.AlertFeed
	var out []domain.SecondCount
	for rows.Next() {
		var sec, n, d int64
		if err := rows.Scan(&sec, &n, &d); err != nil {
			return domain.AlertFeed{}, nil, s.translate("alert counts", err)
		}
		if sec < 0 {
			at = domain.AlertFeed{Batch: uint64(n), Deletes: d}
			continue
		}
		out = append(out, domain.SecondCount{Second: from + sec*1000, N: n})
	}
	if err := rows.Err(); err != nil {
		return domain.AlertFeed{}, nil, s.translate("alert counts", err)
	}
	return at, out, nil
}
