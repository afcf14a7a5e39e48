package sqlstore

import (
	"context"

	"example.com/obsvc/domain"
)

// searchRow is a searches row; timeValue scans either engine's time column.
type searchRow struct {
	ID           string    `db:"id"`
	ProjectID    string    `db:"project_id"`
	Name         string    `db:"name"`
	Query        string    `db:"query"`
	RangeSeconds int       `db:"range_seconds"`
	CreatedAt    timeValue `db:"created_at"`
	UpdatedAt    timeValue `db:"updated_at"`
}

func (r searchRow) domain() domain.Search {
	return domain.Search{ID: r.ID, ProjectID: r.ProjectID, Name: r.Name, Query: r.Query, RangeSeconds: r.RangeSeconds,
		CreatedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time}
}

const searchColumns = "id, project_id, name, query, range_seconds, created_at, updated_at"

// searchError translates err, a name taken in the project becoming domain.ErrSearchNameTaken.
func (s *Store) searchError(op string, err error) error {
	if err != nil && s.eng.classify(err) == errUnique {
		return domain.ErrSearchNameTaken
	}
	return s.translate(op, err)
}

// CreateSearch implements domain.SearchStore: under the project's search lock, the count of its
// searches, then the insert, in one transaction.
func (s *Store) CreateSearch(ctx context.Context, sr domain.Search, limit int) error {
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("create saved search", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if lock := s.eng.searchLock(); lock != "" {
		if _, err := tx.ExecContext(ctx, s.bind(lock), sr.ProjectID); err != nil {
			return s.translate("create saved search: lock", err)
		}
	}
	var n int
	if err := tx.GetContext(ctx, &n, s.bind("SELECT count(*) FROM searches WHERE project_id = ?"), sr.ProjectID); err != nil {
		return s.translate("create saved search: count", err)
	}
	if n >= limit {
		return domain.ErrTooManySearches
	}
	_, err = tx.ExecContext(ctx, s.bind("INSERT INTO searches ("+searchColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)"),
		sr.ID, sr.ProjectID, sr.Name, sr.Query, sr.RangeSeconds, s.eng.timeArg(sr.CreatedAt), s.eng.timeArg(sr.UpdatedAt))
	if err != nil {
		return s.searchError("create saved search", err)
	}
	return s.translate("create saved search", tx.Commit())
}

// GetSearch implements domain.SearchStore.
func (s *Store) GetSearch(ctx context.Context, id string) (domain.Search, error) {
	var row searchRow
	if err := s.r.GetContext(ctx, &row, s.bind("SELECT "+searchColumns+" FROM searches WHERE id = ?"), id); err != nil {
		return domain.Search{}, s.translate("get saved search", err)
	}
	return row.domain(), nil
}

// ListSearches implements domain.SearchStore.
func (s *Store) ListSearches(ctx context.Context, projectID string) ([]domain.Search, error) {
	var rows []searchRow
	if err := s.r.SelectContext(ctx, &rows, s.bind("SELECT "+searchColumns+" FROM searches WHERE project_id = ? ORDER BY name, id"), projectID); err != nil {
		return nil, s.translate("list saved searches", err)
	}
	out := make([]domain.Search, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// UpdateSearch implements domain.SearchStore.
func (s *Store) UpdateSearch(ctx context.Context, sr domain.Search) error {
	res, err := s.w.ExecContext(ctx, s.bind("UPDATE searches SET name = ?, query = ?, range_seconds = ?, updated_at = ? WHERE id = ? AND project_id = ?"),
		sr.Name, sr.Query, sr.RangeSeconds, s.eng.timeArg(sr.UpdatedAt), sr.ID, sr.ProjectID)
	if err != nil {
		return s.searchError("update saved search", err)
	}
	return s.oneRow("update saved search", res, nil)
}

// DeleteSearch implements domain.SearchStore.
func (s *Store) DeleteSearch(ctx context.Context, projectID, id string) error {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM searches WHERE id = ? AND project_id = ?"), id, projectID)
	return s.oneRow("delete saved search", res, err)
}
