package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"example.com/obsvc/domain"
)

// projectRow is a projects row; timeValue scans either engine's time column.
type projectRow struct {
	ID        string        `db:"id"`
	Name      string        `db:"name"`
	CreatedAt timeValue     `db:"created_at"`
	UpdatedAt timeValue     `db:"updated_at"`
	Retention sql.NullInt32 `db:"retention_days"`
}

func (r projectRow) domain() domain.Project {
	p := domain.Project{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt.Time, UpdatedAt: r.UpdatedAt.Time}
	if r.Retention.Valid {
		days := int(r.Retention.Int32)
		p.RetentionDays = &days
	}
	return p
}

// retentionArg is a project's retention as a column value: NULL keeps entries forever.
func retentionArg(days *int) any {
	if days == nil {
		return nil
	}
	return int64(*days)
}

// timeValue scans a time stored as Unix microseconds (SQLite) or as a timestamp (PostgreSQL).
type timeValue struct{ time.Time }

func (t *timeValue) Scan(src any) error {
	switch v := src.(type) {
	case int64:
		t.Time = time.UnixMicro(v).UTC()
	case time.Time:
		t.Time = v.UTC()
	default:
		return fmt.Errorf("cannot scan %T into a time", src)
	}
	return nil
}

const projectColumns = "id, name, created_at, updated_at, retention_days"

// CreateProject implements domain.ProjectStore.
func (s *Store) CreateProject(ctx context.Context, p domain.Project) error {
	_, err := s.w.ExecContext(ctx, s.bind("INSERT INTO projects ("+projectColumns+") VALUES (?, ?, ?, ?, ?)"),
		p.ID, p.Name, s.eng.timeArg(p.CreatedAt), s.eng.timeArg(p.UpdatedAt), retentionArg(p.RetentionDays))
	return s.translate("create project", err)
}

// GetProject implements domain.ProjectStore.
func (s *Store) GetProject(ctx context.Context, id string) (domain.Project, error) {
	var row projectRow
	err := s.r.GetContext(ctx, &row, s.bind("SELECT "+projectColumns+" FROM projects WHERE id = ?"), id)
	if err != nil {
		return domain.Project{}, s.translate("get project", err)
	}
	return row.domain(), nil
}

// ListProjects implements domain.ProjectStore.
func (s *Store) ListProjects(ctx context.Context) ([]domain.Project, error) {
	var rows []projectRow
	if err := s.r.SelectContext(ctx, &rows, "SELECT "+projectColumns+" FROM projects ORDER BY created_at, id"); err != nil {
		return nil, s.translate("list projects", err)
	}
	out := make([]domain.Project, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// UpdateProject implements domain.ProjectStore.
func (s *Store) UpdateProject(ctx context.Context, p domain.Project) error {
	const update = "UPDATE projects SET name = ?, updated_at = ?, retention_days = ? WHERE id = ?"
	args := []any{p.Name, s.eng.timeArg(p.UpdatedAt), retentionArg(p.RetentionDays), p.ID}
	lock := s.eng.projectLock(true)
	if lock == "" {
		res, err := s.w.ExecContext(ctx, s.bind(update), args...)
		return s.oneRow("update project", res, err)
	}
	// The change waits for the batches and sweeps in flight on the project, which hold the lock
	// shared, and the ones after it read the new retention.
	tx, err := s.w.BeginTxx(ctx, nil)
	if err != nil {
		return s.translate("update project", err)
	}
	defer func() { _ = tx.Rollback() }() // after Commit, a no-op
	if _, err := tx.ExecContext(ctx, s.bind(lock), p.ID); err != nil {
		return s.translate("update project: lock", err)
	}
	res, err := tx.ExecContext(ctx, s.bind(update), args...)
	if err := s.oneRow("update project", res, err); err != nil {
		return err
	}
	return s.translate("update project", tx.Commit())
}

// DeleteProject implements domain.ProjectStore. The logs go with it (ON DELETE CASCADE).
func (s *Store) DeleteProject(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, s.bind("DELETE FROM projects WHERE id = ?"), id)
	return s.oneRow("delete project", res, err)
}

func (s *Store) oneRow(op string, res sql.Result, err error) error {
	if err != nil {
		return s.translate(op, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.translate(op, err)
	}
	if n == 0 {
		return &domain.Error{Kind: domain.KindNotFound, Msg: "not found"}
	}
	return nil
}
