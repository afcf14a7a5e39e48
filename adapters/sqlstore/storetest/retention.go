package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"example.com/obsvc/domain"
)

// runRetention is the retention part of the contract.
func runRetention(t *testing.T, open Open, o *options) {
	t.Run("RetentionOnEveryProjectOperation", func(t *testing.T) { t.Parallel(); testRetentionRoundTrip(t, open(t)) })
	t.Run("ListLogsHidesExpiredEntries", func(t *testing.T) { t.Parallel(); testListHidesExpired(t, open(t)) })
	t.Run("SweepLogsDeletesOnlyExpiredInBoundedBatches", func(t *testing.T) { t.Parallel(); testSweepLogs(t, open(t)) })
	t.Run("CreateLogsRefusesExpiredEntries", func(t *testing.T) { t.Parallel(); testCreateLogsRefusesExpired(t, open(t)) })
	const waits = "RetentionChangeWaitsForBatchInFlight"
	why, without := o.without[waits]
	delete(o.without, waits)
	t.Run(waits, func(t *testing.T) {
		if without {
			t.Skip("left out of the contract for this store: " + why)
		}
		t.Parallel()
		testRetentionChangeWaits(t, open(t))
	})
}

const day = int64(24 * time.Hour / time.Millisecond)

// now is the moment of the retention cases, in Unix ms.
var now = base.UnixMilli()

func retention(p domain.Project) string {
	if p.RetentionDays == nil {
		return "forever"
	}
	return fmt.Sprint(*p.RetentionDays)
}

func projectWith(t *testing.T, s domain.Store, days *int) domain.Project {
	t.Helper()
	p := domain.Project{ID: newID(), Name: "r", CreatedAt: base, UpdatedAt: base, RetentionDays: days}
	if err := s.CreateProject(ctx(t), p); err != nil {
		t.Fatalf("CreateProject: %v", err)
	}
	return p
}

func testRetentionRoundTrip(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(30))
	q := projectWith(t, s, nil)
	check := func(when string, want map[string]string) {
		t.Helper()
		for id, w := range want {
			got, err := s.GetProject(ctx(t), id)
			if err != nil || retention(got) != w {
				t.Fatalf("%s: GetProject retention = %s, %v; want %s", when, retention(got), err, w)
			}
		}
		all, err := s.ListProjects(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range all {
			if retention(got) != want[got.ID] {
				t.Fatalf("%s: ListProjects retention of %s = %s, want %s", when, got.ID, retention(got), want[got.ID])
			}
		}
	}
	check("created", map[string]string{p.ID: "30", q.ID: "forever"})
	p.RetentionDays, q.RetentionDays = nil, ptr(domain.MaxRetentionDays)
	p.UpdatedAt, q.UpdatedAt = base.Add(time.Second), base.Add(time.Second)
	for _, x := range []domain.Project{p, q} {
		if err := s.UpdateProject(ctx(t), x); err != nil {
			t.Fatalf("UpdateProject: %v", err)
		}
	}
	check("updated", map[string]string{p.ID: "forever", q.ID: "3650"})
}

func listAt(t *testing.T, s domain.Store, p domain.Project, at int64, desc bool) []int64 {
	t.Helper()
	got, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Now: at, Desc: desc})
	var times []int64
	for _, e := range got {
		times = append(times, e.Time)
	}
	return times
}

func testListHidesExpired(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(1))
	other := projectWith(t, s, nil)
	cut := now - day // kept: the bound is inclusive
	mustInsert(t, s, entry(p, cut-2*day, "info"), entry(p, cut-1, "info"), entry(p, cut, "info"), entry(p, now, "info"),
		entry(other, cut-2*day, "info"))
	if got, want := listAt(t, s, p, now, false), []int64{cut, now}; !slices.Equal(got, want) {
		t.Fatalf("listing at now = %v, want %v (older entries expired)", got, want)
	}
	if got, want := listAt(t, s, p, now, true), []int64{now, cut}; !slices.Equal(got, want) {
		t.Fatalf("listing newest first = %v, want %v", got, want)
	}
	if got := listAt(t, s, other, now, false); len(got) != 1 {
		t.Fatalf("a project kept forever lists %v, want its one old entry", got)
	}
	// A page that ends at the retention: the next page is empty, not the expired entries.
	first, next := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Now: now, Desc: true, Limit: 1})
	if len(first) != 1 || next == nil {
		t.Fatalf("first page %v, next %v; want one entry and a cursor", ids(first), next)
	}
	rest, _ := page(t, s, domain.LogQuery{LogFilter: domain.LogFilter{ProjectID: p.ID}, Now: now, Desc: true, Limit: 5, After: next})
	if len(rest) != 1 || rest[0].Time != cut {
		t.Fatalf("second page %v, want only the entry at the cutoff", ids(rest))
	}
	// Lengthening the retention brings back what was not deleted yet: it was hidden, not gone.
	p.RetentionDays, p.UpdatedAt = nil, base.Add(time.Second)
	if err := s.UpdateProject(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	if got := listAt(t, s, p, now, false); len(got) != 4 {
		t.Fatalf("after keeping forever the listing has %v, want all 4", got)
	}
	// Shortening it hides them at once, and DELETE still removes hidden entries.
	p.RetentionDays, p.UpdatedAt = ptr(1), base.Add(2*time.Second)
	if err := s.UpdateProject(ctx(t), p); err != nil {
		t.Fatal(err)
	}
	if got := listAt(t, s, p, now, false); len(got) != 2 {
		t.Fatalf("after shortening the listing has %v, want 2", got)
	}
	n, err := s.DeleteLogs(ctx(t), domain.LogFilter{ProjectID: p.ID})
	if err != nil || n != 4 {
		t.Fatalf("DeleteLogs = %d, %v; want 4 (expired entries too)", n, err)
	}
}

func testSweepLogs(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(1))
	forever := projectWith(t, s, nil)
	cut := now - day
	var expired []domain.LogEntry
	for i := range 5 {
		expired = append(expired, entry(p, cut-1-int64(i), "info"))
	}
	mustInsert(t, s, expired...)
	mustInsert(t, s, entry(p, cut, "info"), entry(p, now, "info"), entry(forever, 1, "info"))
	var got []int64
	for {
		n, err := s.SweepLogs(ctx(t), p.ID, now, 2)
		if err != nil {
			t.Fatalf("SweepLogs: %v", err)
		}
		got = append(got, n)
		if n < 2 {
			break
		}
	}
	if want := []int64{2, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("sweeps deleted %v, want %v (bounded by the limit)", got, want)
	}
	if left := listAt(t, s, p, 0, false); !slices.Equal(left, []int64{cut, now}) {
		t.Fatalf("after the sweep the project holds %v, want %v", left, []int64{cut, now})
	}
	if n, err := s.SweepLogs(ctx(t), forever.ID, now, 2); err != nil || n != 0 {
		t.Fatalf("SweepLogs of a project kept forever = %d, %v; want 0", n, err)
	}
	if left := listAt(t, s, forever, now, false); len(left) != 1 {
		t.Fatalf("a project kept forever holds %v after a sweep, want its entry", left)
	}
	if n, err := s.SweepLogs(ctx(t), newID(), now, 2); err != nil || n != 0 {
		t.Fatalf("SweepLogs of no project = %d, %v; want 0", n, err)
	}
}

func testCreateLogsRefusesExpired(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(7))
	q := projectWith(t, s, nil)
	// The store reports what it found, in the transaction of the write.
	var seen domain.Retentions
	_, err := s.CreateLogs(ctx(t), []domain.LogEntry{entry(p, 1, "info"), entry(q, 1, "info")}, domain.LogWrite{Admit: func(r domain.Retentions) error {
		seen = r
		return domain.Errorf(domain.KindExpired, "no")
	}})
	wantKind(t, err, domain.KindExpired)
	if len(seen) != 1 || seen[p.ID] != 7 {
		t.Fatalf("admit saw %v, want only %s: 7", seen, p.ID)
	}
	if got := listAt(t, s, q, 0, false); len(got) != 0 {
		t.Fatalf("a refused batch stored %v", got)
	}
	// Through the service: the entry is named by its pointer, and nothing is stored.
	svc := service(s)
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	in := []domain.LogInput{{ProjectID: q.ID, Message: ptr("kept forever"), Time: ptr[int64](1)}, {ProjectID: p.ID, Message: ptr("expired"), Time: &old}}
	_, err = svc.CreateLogs(asAdmin(t), in, "")
	wantKind(t, err, domain.KindExpired)
	if f := err.(*domain.Error).Fields; len(f) != 1 || !slices.Equal(f[0].Path, []string{"1", "time"}) {
		t.Fatalf("fields %+v, want /1/time only", f)
	}
	if got := listAt(t, s, q, 0, false); len(got) != 0 {
		t.Fatalf("a refused batch stored %v", got)
	}
}

// testRetentionChangeWaits closes the gap between admitting a batch and committing it: a
// retention change made while a batch's transaction is open must wait for that transaction, or
// the batch could commit an entry the new retention has already expired. The change is started
// from inside admit (the batch's transaction, after the store read the retention) and must not
// return before the batch commits; afterwards both are stored.
func testRetentionChangeWaits(t *testing.T, s domain.Store) {
	p := projectWith(t, s, ptr(30))
	shorter := p
	shorter.RetentionDays = ptr(1)
	updated := make(chan error, 1)
	var early error
	_, err := s.CreateLogs(ctx(t), []domain.LogEntry{entry(p, now-2*day, "info")}, domain.LogWrite{Admit: func(r domain.Retentions) error {
		if r[p.ID] != 30 {
			return fmt.Errorf("admit saw %v, want %s: 30", r, p.ID)
		}
		go func() { updated <- s.UpdateProject(context.WithoutCancel(ctx(t)), shorter) }()
		// Give a store that does not make the change wait every chance to finish it now.
		select {
		case err := <-updated:
			early = fmt.Errorf("the retention change returned (%v) while the batch was still open", err)
		case <-time.After(300 * time.Millisecond):
		}
		return nil
	}})
	if err != nil {
		t.Fatalf("CreateLogs: %v", err)
	}
	if early != nil {
		t.Fatal(early)
	}
	select {
	case err := <-updated:
		if err != nil {
			t.Fatalf("UpdateProject after the batch: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retention change never finished after the batch committed")
	}
	got, err := s.GetProject(ctx(t), p.ID)
	if err != nil || retention(got) != "1" {
		t.Fatalf("after both, the project has retention %s (%v), want 1", retention(got), err)
	}
}
