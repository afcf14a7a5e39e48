//go:build citus

package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestCitusFacetsAreRouted runs the facets and fields statements on a Citus coordinator, with
// every filter, entry fields and attributes, and EXPLAINs each: one task, a router query.
func TestCitusFacetsAreRouted(t *testing.T) {
	ctx := t.Context()
	rec := sqlstore.NewRecorder()
	s := openRecorded(t, rec)
	p := uuid.Must(uuid.NewV7()).String()
	now := time.Now().UTC()
	if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now, RetentionDays: ptr(3)}); err != nil {
		t.Fatal(err)
	}
	batch := make([]domain.LogEntry, 50)
	for i := range batch {
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: int64(i) * 1000, Level: []string{"info", "warn"}[i%2],
			Message: "Message " + fmt.Sprint(i), Subject: ptr("s"), Attributes: []byte(fmt.Sprintf(`{"route":"/r%d","status":%d}`, i%4, 200+i%3))}
	}
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
		t.Fatal(err)
	}
	start, end := ptr[int64](0), ptr[int64](90_000)
	filters := []domain.LogFilter{
		{ProjectID: p, Start: start, End: end},
		{ProjectID: p, Start: start, End: end, Q: ptr("message"), UserID: ptr("u"), Subject: ptr("s"), Levels: []string{"info", "warn"}, TraceID: ptr(traceID(1))},
	}
	targets := []domain.QueryField{{Name: "level"}, {Name: "subject"}, {Name: "route", Attribute: true}, {Name: "status", Attribute: true}}
	for _, f := range filters {
		facets, err := s.Facets(ctx, domain.FacetsQuery{LogFilter: f, Fields: []string{"level", "subject", "route", "status"}, Targets: targets, Limit: 2, Now: 150_000})
		if err != nil {
			t.Fatalf("facets: %v", err)
		}
		if f.Q == nil && (len(facets) != 4 || facets[2].Values[0].Count+facets[2].Values[1].Count+facets[2].Other != 50) {
			t.Errorf("facets = %+v", facets)
		}
		keys, err := s.Fields(ctx, domain.FieldsQuery{LogFilter: f, Limit: 1000, Now: 150_000})
		if err != nil {
			t.Fatalf("fields: %v", err)
		}
		if f.Q == nil && (len(keys) != 2 || keys[0] != (domain.FieldCount{Field: "route", Count: 50})) {
			t.Errorf("fields = %+v", keys)
		}
	}
	t.Run("EveryStatementIsRouted", func(t *testing.T) { checkRouted(t, rec) })
}
