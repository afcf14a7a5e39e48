package sqlstore_test

import (
	"database/sql"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestSavedSearchesListBytewiseInAnyLocale opens the PostgreSQL store on a database whose
// default collation is ICU's en-US, where "a" sorts before "B": saved searches still list by
// name bytewise ("B" first), as on SQLite, and names differing in case are two names.
func TestSavedSearchesListBytewiseInAnyLocale(t *testing.T) {
	base := pg.NewDatabase(t)
	admin, err := sql.Open("postgres", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := fmt.Sprintf("icu_%x", uuid.Must(uuid.NewV7()).ID())
	if _, err := admin.ExecContext(t.Context(), "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"); err != nil {
		t.Skipf("!!! no ICU collation to test with: %v", err)
	}
	t.Cleanup(func() { _, _ = admin.ExecContext(t.Context(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	s, err := sqlstore.OpenPostgres(t.Context(), u.String(), sqlstore.DefaultPostgresOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var before bool
	if err := sqlstore.ReadDB(s).GetContext(t.Context(), &before, "SELECT 'a'::text < 'B'::text"); err != nil || !before {
		t.Fatalf("the database's collation puts a before B: %v, %v; want true", before, err)
	}
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	p := domain.Project{ID: uuid.Must(uuid.NewV7()).String(), Name: "p", CreatedAt: now, UpdatedAt: now}
	if err := s.CreateProject(ctx, p); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "B", "b", "Ä"} {
		sr := domain.Search{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p.ID, Name: n, RangeSeconds: 60, CreatedAt: now, UpdatedAt: now}
		if err := s.CreateSearch(ctx, sr, domain.DefaultMaxSearches); err != nil {
			t.Fatalf("save %q: %v", n, err)
		}
	}
	list, err := s.ListSearches(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sr := range list {
		names = append(names, sr.Name)
	}
	if want := []string{"B", "a", "b", "Ä"}; !slices.Equal(names, want) {
		t.Fatalf("listed %q, want bytewise %q", names, want)
	}
}
