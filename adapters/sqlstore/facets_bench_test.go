package sqlstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/adapters/sqlstore/storetest"
	"example.com/obsvc/domain"
)

// BenchmarkFacets: the facets of a high-cardinality attribute (a pod name of 50,000 values), and
// the fields, of one project's day of 3,333 entries with five attributes each (the outside
// harness's corpus at 1,000,000 entries), each counted in the service (ours, the default)
// beside the store's grouping (the baseline: the statements used before), asked in turn on the
// same store.
func BenchmarkFacets(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) { benchFacets(b, storetest.OpenSQLite(b)) })
	b.Run("postgres", func(b *testing.B) { benchFacets(b, storetest.OpenPostgres(b, pg.NewDatabase(b))) })
}

func benchFacets(b *testing.B, s *sqlstore.Store) {
	const day, n = int64(86_400_000), 3_333
	ctx := b.Context()
	now := time.Now().UTC()
	p := uuid.Must(uuid.NewV7()).String()
	if err := s.CreateProject(ctx, domain.Project{ID: p, Name: "p", CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	start := now.UnixMilli()/day*day - day
	batch := make([]domain.LogEntry, n)
	for i := range batch {
		attrs := fmt.Sprintf(`{"http.response.status_code":%d,"http.route":"/api/v1/orders/{id}","k8s.pod.name":"checkout-7d9f-%05d","service.name":"checkout","session.id":"s-%04d"}`,
			[]int{200, 201, 404, 500}[i%4], (i*7919)%50_000, i%1000)
		batch[i] = domain.LogEntry{ID: uuid.Must(uuid.NewV7()).String(), ProjectID: p, Time: start + int64(i)*day/n, Level: "info",
			Message: fmt.Sprintf("GET /api/v1/orders/%d completed in %d ms request_id=%016x", i, i%900, i*2654435761), Attributes: []byte(attrs)}
	}
	if _, err := s.CreateLogs(ctx, batch, domain.LogWrite{}); err != nil {
		b.Fatal(err)
	}
	end := start + day - 1
	q := domain.FacetsQuery{LogFilter: domain.LogFilter{ProjectID: p, Start: &start, End: &end}, Fields: []string{"k8s.pod.name"},
		Targets: []domain.QueryField{domain.ResolveField("k8s.pod.name")}, Limit: 10, Now: now.UnixMilli()}
	facets := func(memory int64) func() error {
		return func() error {
			sqlstore.SetFacetsMemory(s, memory)
			got, err := s.Facets(ctx, q)
			if err == nil && (len(got) != 1 || len(got[0].Values) != 10 || got[0].Missing != 0) {
				err = fmt.Errorf("facets %+v", got)
			}
			return err
		}
	}
	fields := func(memory int64) func() error {
		return func() error {
			sqlstore.SetFacetsMemory(s, memory)
			got, err := s.Fields(ctx, domain.FieldsQuery{LogFilter: q.LogFilter, Limit: domain.MaxFieldKeys, Now: q.Now})
			if err == nil && (len(got) != 5 || got[0].Count != n) {
				err = fmt.Errorf("fields %+v", got)
			}
			return err
		}
	}
	asks := []struct {
		name string
		f    func() error
		t    time.Duration
	}{{"facets-counted", facets(16 << 20), 0}, {"facets-grouped", facets(0), 0}, {"fields-counted", fields(16 << 20), 0}, {"fields-grouped", fields(0), 0}}
	for b.Loop() {
		for i := range asks {
			began := time.Now()
			if err := asks[i].f(); err != nil {
				b.Fatal(err)
			}
			asks[i].t += time.Since(began)
		}
	}
	for _, a := range asks {
		b.ReportMetric(float64(a.t.Microseconds())/float64(b.N)/1000, a.name+"-ms/op")
	}
	b.ReportMetric(float64(asks[0].t)/float64(asks[1].t), "facets-ratio")
	b.ReportMetric(float64(asks[2].t)/float64(asks[3].t), "fields-ratio")
}
