package domain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

func days(n int) Optional[int] { return Optional[int]{Set: true, Value: &n} }

var forever = Optional[int]{Set: true}

func showDays(d *int) string {
	if d == nil {
		return "forever"
	}
	return fmt.Sprint(*d)
}

func TestRetentionRules(t *testing.T) {
	s := NewService(newFake(), opts(Options{}))
	cases := []struct {
		in Optional[int]
		ok bool
	}{
		{days(1), true},
		{days(3650), true},
		{days(30), true},
		{forever, true},
		{Optional[int]{}, true},
		{days(0), false},
		{days(-1), false},
		{days(3651), false},
	}
	for _, c := range cases {
		_, err := s.CreateProject(admin(t), ProjectInput{Name: "p", RetentionDays: c.in})
		if (err == nil) != c.ok {
			t.Errorf("create with retention %s: err = %v, want ok=%v", showDays(c.in.Value), err, c.ok)
		}
		if err != nil && (KindOf(err) != KindInvalid || err.(*Error).Fields[0].Path[0] != "retention_days") {
			t.Errorf("retention %s: error %v is not KindInvalid on /retention_days", showDays(c.in.Value), err)
		}
	}
}

func TestRetentionDefaultAndReplacement(t *testing.T) {
	f := newFake()
	l := DefaultLimits()
	l.DefaultRetentionDays = 7
	s := NewService(f, opts(Options{Limits: l}))
	cases := []struct {
		name string
		in   Optional[int]
		want string
	}{
		{"absent takes the default", Optional[int]{}, "7"},
		{"null keeps forever", forever, "forever"},
		{"a value", days(90), "90"},
	}
	for _, c := range cases {
		p, err := s.CreateProject(admin(t), ProjectInput{Name: "p", RetentionDays: c.in})
		if err != nil || showDays(p.RetentionDays) != c.want || showDays(f.projects[p.ID].RetentionDays) != c.want {
			t.Errorf("%s: created %v (stored %v), %v; want %s", c.name, showDays(p.RetentionDays), showDays(f.projects[p.ID].RetentionDays), err, c.want)
		}
	}
	// PUT replaces: a replacement without a retention keeps entries forever.
	p, _ := s.CreateProject(admin(t), ProjectInput{Name: "p", RetentionDays: days(3)})
	got, err := s.UpdateProject(admin(t), p.ID, ProjectInput{Name: "q"})
	if err != nil || got.RetentionDays != nil || got.Name != "q" {
		t.Fatalf("replace without retention = %+v, %v; want name q, forever", got, err)
	}
}

func TestPatchProjectMergeSemantics(t *testing.T) {
	f := newFake()
	s := NewService(f, opts(Options{}))
	name := func(n string) *string { return &n }
	cases := []struct {
		name      string
		start     Optional[int]
		patch     ProjectPatch
		wantName  string
		wantDays  string
		wantError string // the pointer of a KindInvalid field, "" for none
	}{
		{"empty patch changes nothing", days(30), ProjectPatch{}, "p", "30", ""},
		{"absent retention stays", days(30), ProjectPatch{Name: name("renamed")}, "renamed", "30", ""},
		{"null keeps forever", days(30), ProjectPatch{RetentionDays: forever}, "p", "forever", ""},
		{"a value sets it", forever, ProjectPatch{RetentionDays: days(5)}, "p", "5", ""},
		{"0 is refused", days(30), ProjectPatch{RetentionDays: days(0)}, "p", "30", "retention_days"},
		{"3651 is refused", days(30), ProjectPatch{RetentionDays: days(3651)}, "p", "30", "retention_days"},
		{"a blank name is refused", days(30), ProjectPatch{Name: name(" ")}, "p", "30", "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := s.CreateProject(admin(t), ProjectInput{Name: "p", RetentionDays: c.start})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.PatchProject(admin(t), p.ID, c.patch)
			if c.wantError != "" {
				var de *Error
				if !errors.As(err, &de) || de.Kind != KindInvalid || de.Fields[0].Path[0] != c.wantError {
					t.Fatalf("PatchProject = %v, want KindInvalid on /%s", err, c.wantError)
				}
				got = f.projects[p.ID]
			} else if err != nil {
				t.Fatalf("PatchProject: %v", err)
			} else if !got.UpdatedAt.After(p.UpdatedAt) {
				t.Errorf("UpdatedAt %v did not advance past %v", got.UpdatedAt, p.UpdatedAt)
			}
			stored := f.projects[p.ID]
			if got.Name != c.wantName || showDays(got.RetentionDays) != c.wantDays || stored.Name != c.wantName || showDays(stored.RetentionDays) != c.wantDays {
				t.Fatalf("after patch %q/%s (stored %q/%s), want %q/%s", got.Name, showDays(got.RetentionDays), stored.Name, showDays(stored.RetentionDays), c.wantName, c.wantDays)
			}
		})
	}
	if _, err := s.PatchProject(admin(t), testID(), ProjectPatch{}); KindOf(err) != KindNotFound {
		t.Fatalf("patch of no project = %v, want KindNotFound", err)
	}
}

func TestExpiredEntriesAreRefused(t *testing.T) {
	f := newFake()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	l := DefaultLimits()
	l.MaxFieldErrors = 2
	s := NewService(f, opts(Options{Limits: l, Now: func() time.Time { return now }}))
	short, _ := s.CreateProject(admin(t), ProjectInput{Name: "short", RetentionDays: days(1)})
	kept, _ := s.CreateProject(admin(t), ProjectInput{Name: "kept"})
	ms := now.UnixMilli()
	old := ms - dayMillis - 1
	edge := ms - dayMillis // exactly at the cutoff: still kept
	in := []LogInput{
		{ProjectID: short.ID, Message: ptr("fresh"), Time: &edge},
		{ProjectID: kept.ID, Message: ptr("old, kept forever"), Time: ptr[int64](0)},
		{ProjectID: short.ID, Message: ptr("expired"), Time: &old},
		{ProjectID: short.ID, Message: ptr("expired"), Time: ptr[int64](0)},
		{ProjectID: short.ID, Message: ptr("expired"), Time: ptr[int64](1)},
	}
	_, err := s.CreateLogs(admin(t), in, "")
	var de *Error
	if !errors.As(err, &de) || de.Kind != KindExpired {
		t.Fatalf("CreateLogs = %v, want KindExpired", err)
	}
	var got []string
	for _, fe := range de.Fields {
		got = append(got, "/"+fe.Path[0]+"/"+fe.Path[1])
	}
	if want := []string{"/2/time", "/3/time"}; !slices.Equal(got, want) || de.Msg != "entries older than their project's retention (1 more problems not listed)" {
		t.Fatalf("fields %v, msg %q; want %v, capped at 2 with one more", got, de.Msg, want)
	}
	if len(f.inserted) != 0 {
		t.Fatalf("%d entries stored, want none", len(f.inserted))
	}
	if _, err := s.CreateLogs(admin(t), in[:2], ""); err != nil {
		t.Fatalf("a batch within retention: %v", err)
	}
}

// sweepStore answers SweepLogs from a script, to test how the service walks projects.
type sweepStore struct {
	*fakeStore
	list  []Project
	calls []string
	left  map[string]int64
	fail  map[string]bool
	busy  bool
}

func (f *sweepStore) ListProjects(context.Context) ([]Project, error) { return f.list, nil }

func (f *sweepStore) SweepLogs(_ context.Context, id string, _ int64, limit int) (int64, error) {
	f.calls = append(f.calls, id)
	if f.busy {
		return 0, ErrSweepBusy
	}
	if f.fail[id] {
		return 0, errors.New("disk on fire")
	}
	n := min(f.left[id], int64(limit))
	f.left[id] -= n
	return n, nil
}

func TestSweepRetentionWalksProjectsInBoundedBatches(t *testing.T) {
	a, b, c, d := testID(), testID(), testID(), testID()
	seven := 7
	st := &sweepStore{
		fakeStore: newFake(),
		list:      []Project{{ID: a, RetentionDays: &seven}, {ID: b}, {ID: c, RetentionDays: &seven}, {ID: d, RetentionDays: &seven}},
		left:      map[string]int64{a: 25, c: 10, d: 3},
		fail:      map[string]bool{c: true},
	}
	s := NewService(st, opts(Options{}))
	var progress []int64
	res, err := s.SweepRetention(t.Context(), SweepPace{Batch: 10, Duty: 1}, func(n int64) { progress = append(progress, n) })
	if err == nil || res.Deleted != 28 || res.Busy {
		t.Fatalf("SweepRetention = %+v, %v; want 28 deleted and the failure of one project", res, err)
	}
	// Progress is told each transaction that deleted something, as it commits.
	if want := []int64{10, 10, 5, 3}; !slices.Equal(progress, want) {
		t.Fatalf("progress %v, want %v", progress, want)
	}
	// a in batches of 10 until a short one; b keeps forever; c fails once and is left for the
	// next sweep; d still swept.
	if want := []string{a, a, a, c, d}; !slices.Equal(st.calls, want) {
		t.Fatalf("calls %v, want %v", st.calls, want)
	}
	st.busy, st.calls = true, nil
	if res, err := s.SweepRetention(t.Context(), SweepPace{Batch: 10, Duty: 1}, nil); err != nil || !res.Busy || len(st.calls) != 1 {
		t.Fatalf("a busy sweep = %+v, %v after %d calls; want Busy after one", res, err, len(st.calls))
	}
}

func TestSweepPaceRestsInProportionToDuty(t *testing.T) {
	for _, c := range []struct {
		duty float64
		took time.Duration
		want time.Duration
	}{
		{1, time.Second, 0},
		{0.5, 40 * time.Millisecond, 40 * time.Millisecond},
		{0.25, 40 * time.Millisecond, 120 * time.Millisecond},
		{0.5, 0, 0},
	} {
		if got := (SweepPace{Batch: 1, Duty: c.duty}).pause(c.took); got != c.want {
			t.Errorf("duty %v after %v: rest %v, want %v", c.duty, c.took, got, c.want)
		}
	}
}

// slowSweepStore takes a while per SweepLogs, so that the sweep owes a rest after each when
// ingest competes; during, when set, runs inside each SweepLogs.
type slowSweepStore struct {
	*sweepStore
	took   time.Duration
	during func()
}

func (f *slowSweepStore) SweepLogs(ctx context.Context, id string, now int64, limit int) (int64, error) {
	time.Sleep(f.took)
	if f.during != nil {
		f.during()
	}
	return f.sweepStore.SweepLogs(ctx, id, now, limit)
}

func TestSweepRetentionRestsOnlyWhileIngestCompetes(t *testing.T) {
	a := testID()
	seven := 7
	st := &slowSweepStore{took: 20 * time.Millisecond, sweepStore: &sweepStore{
		fakeStore: newFake(), list: []Project{{ID: a, RetentionDays: &seven}}, left: map[string]int64{a: 30}}}
	s := NewService(st, opts(Options{}))

	// No write competes: no rest, even at a duty that would rest 20 s after each transaction.
	// A rest would outlast the deadline and end the sweep with it.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if res, err := s.SweepRetention(ctx, SweepPace{Batch: 10, Duty: 0.001}, nil); err != nil || res.Deleted != 30 {
		t.Fatalf("an uncontended sweep = %+v, %v; want 30 deleted without resting", res, err)
	}

	// A batch being written the whole time: duty 0.25, so each 20 ms transaction is followed by
	// at least 60 ms of rest, except the last.
	st.left[a] = 30
	done := s.writes.begin()
	start := time.Now()
	res, err := s.SweepRetention(t.Context(), SweepPace{Batch: 10, Duty: 0.25}, nil)
	took := time.Since(start)
	done()
	if err != nil || res.Deleted != 30 {
		t.Fatalf("SweepRetention = %+v, %v; want 30 deleted", res, err)
	}
	// 4 transactions (10, 10, 10, then 0 that ends it) and 3 rests.
	if least := 4*20*time.Millisecond + 3*60*time.Millisecond; took < least {
		t.Fatalf("the sweep took %v, want at least %v with its rests", took, least)
	}

	// A write that began and ended inside a transaction competed too: the rest follows, and
	// ends with ctx, so the sweep stops and says why.
	st.left[a] = 30
	st.during = func() { s.writes.begin()() }
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res, err = s.SweepRetention(ctx, SweepPace{Batch: 10, Duty: 0.01}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || res.Deleted != 10 {
		t.Fatalf("a sweep whose ctx ends in its rest = %+v, %v; want 10 deleted and the deadline", res, err)
	}
	if _, err := s.SweepRetention(t.Context(), SweepPace{Batch: 10, Duty: 0}, nil); err == nil {
		t.Fatal("duty 0 accepted")
	}
}

// TestSweepRetentionStopsWhenCancelled: a store call that fails because the sweep's context
// ended (a shutdown) stops the sweep with the context's error; it is not a failure of the
// project, and the projects after it are left to the next sweep.
func TestSweepRetentionStopsWhenCancelled(t *testing.T) {
	a, b := testID(), testID()
	seven := 7
	st := &slowSweepStore{sweepStore: &sweepStore{fakeStore: newFake(),
		list: []Project{{ID: a, RetentionDays: &seven}, {ID: b, RetentionDays: &seven}},
		left: map[string]int64{a: 30, b: 30}, fail: map[string]bool{a: true}}}
	s := NewService(st, opts(Options{}))
	ctx, cancel := context.WithCancel(t.Context())
	st.during = cancel
	res, err := s.SweepRetention(ctx, SweepPace{Batch: 10, Duty: 1}, nil)
	if !errors.Is(err, context.Canceled) || res.Deleted != 0 {
		t.Fatalf("a cancelled sweep = %+v, %v; want nothing deleted and context.Canceled", res, err)
	}
	if len(st.calls) != 1 {
		t.Fatalf("the sweep went on after its context ended: calls %v", st.calls)
	}
}

// lagSweepStore holds entries of one project with their times, deletes by the moment it is
// given (as the real stores do), and takes a while per call.
type lagSweepStore struct {
	*fakeStore
	list  []Project
	times []int64
	nows  []int64
	took  time.Duration
}

func (f *lagSweepStore) ListProjects(context.Context) ([]Project, error) { return f.list, nil }

func (f *lagSweepStore) SweepLogs(_ context.Context, _ string, now int64, limit int) (int64, error) {
	time.Sleep(f.took)
	f.nows = append(f.nows, now)
	cut := cutoff(now, *f.list[0].RetentionDays)
	var n int64
	kept := f.times[:0]
	for _, t := range f.times {
		if t < cut && n < int64(limit) {
			n++
			continue
		}
		kept = append(kept, t)
	}
	f.times = kept
	return n, nil
}

// TestSweepRetentionPacesOnlyTheBacklog: entries that expired more than Lag ago are the
// backlog, swept first and paced while ingest competes; those that expired since are swept
// after, without rest, so steady expiry keeps up however busy ingest is.
func TestSweepRetentionPacesOnlyTheBacklog(t *testing.T) {
	seven := 7
	now := time.Now()
	lag := 3 * time.Minute
	cut := cutoff(now.UnixMilli(), seven)
	st := &lagSweepStore{fakeStore: newFake(), list: []Project{{ID: testID(), RetentionDays: &seven}}, took: 10 * time.Millisecond}
	for i := range 20 {
		st.times = append(st.times, cut-int64(time.Hour/time.Millisecond)-int64(i))   // backlog
		st.times = append(st.times, cut-int64(time.Minute/time.Millisecond)-int64(i)) // steady
	}
	st.times = append(st.times, cut+1) // still kept
	s := NewService(st, opts(Options{Now: func() time.Time { return now }}))
	done := s.writes.begin() // ingest competes throughout
	defer done()

	// The backlog: 20 entries in batches of 10, resting 10 ms x 3 after each of the first two.
	start := time.Now()
	res, err := s.SweepRetention(t.Context(), SweepPace{Batch: 10, Duty: 0.25, Lag: lag}, nil)
	took := time.Since(start)
	if err != nil || res.Deleted != 40 || len(st.times) != 1 {
		t.Fatalf("SweepRetention = %+v, %v, %d left; want 40 deleted and the one inside the retention kept", res, err, len(st.times))
	}
	backlog := now.Add(-lag).UnixMilli()
	want := []int64{backlog, backlog, backlog, now.UnixMilli(), now.UnixMilli(), now.UnixMilli()}
	if fmt.Sprint(st.nows) != fmt.Sprint(want) {
		t.Fatalf("swept as of %v, want %v (the backlog first, then what expired since)", st.nows, want)
	}
	if least := 6*10*time.Millisecond + 2*30*time.Millisecond; took < least {
		t.Fatalf("the sweep took %v, want at least %v with the backlog's rests", took, least)
	}

	// Steady expiry alone is never paced: at a duty that would rest 10 s after each
	// transaction, a rest would outlast the deadline.
	for i := range 25 {
		st.times = append(st.times, cut-int64(time.Minute/time.Millisecond)-int64(i))
	}
	st.nows = nil
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if res, err := s.SweepRetention(ctx, SweepPace{Batch: 10, Duty: 0.001, Lag: lag}, nil); err != nil || res.Deleted != 25 {
		t.Fatalf("steady expiry = %+v, %v; want 25 deleted without resting", res, err)
	}
}
