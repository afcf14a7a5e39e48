package domain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
)

func ptr[T any](v T) *T { return &v }

// admin is a context acting for an admin, as transports make in an open deployment.
func admin(t *testing.T) context.Context { return WithPrincipal(t.Context(), Principal{Admin: true}) }

func testID() string { return uuid.Must(uuid.NewV7()).String() }

// opts are Options with the id source the composition root would supply.
func opts(o Options) Options {
	if o.NewID == nil {
		o.NewID = testID
	}
	return o
}

// fakeStore is a pure in-memory stand-in for the domain's unit tests only; the real stores are
// tested against real databases.
type fakeStore struct {
	Store
	projects map[string]Project
	inserted []LogEntry
	records  map[string]IdempotencyRecord
	// block, when set, holds CreateLogs until it is closed (to keep a request in flight).
	block   chan struct{}
	entered chan struct{}
	// missing, when set, is what CreateLogs answers: the projects it did not find.
	missing []string
	// reads counts the calls that read or delete entries: a rejected filter must reach none.
	reads int
}

func newFake() *fakeStore { return &fakeStore{projects: map[string]Project{}} }

func (f *fakeStore) CreateProject(_ context.Context, p Project) error {
	f.projects[p.ID] = p
	return nil
}

func (f *fakeStore) GetProject(_ context.Context, id string) (Project, error) {
	p, ok := f.projects[id]
	if !ok {
		return Project{}, Errorf(KindNotFound, "not found")
	}
	return p, nil
}

func (f *fakeStore) UpdateProject(_ context.Context, p Project) error {
	f.projects[p.ID] = p
	return nil
}

func (f *fakeStore) DeleteProject(_ context.Context, id string) error {
	delete(f.projects, id)
	return nil
}

func (f *fakeStore) ListProjects(context.Context) ([]Project, error) { return nil, nil }

func (f *fakeStore) ListLogs(_ context.Context, _ LogQuery, fn PageFunc) error {
	f.reads++
	return fn(Page{Entries: func(func(LogEntry, error) bool) {}})
}

func (f *fakeStore) DeleteLogs(context.Context, LogFilter) (int64, error) { f.reads++; return 0, nil }

func (f *fakeStore) CreateLogs(_ context.Context, es []LogEntry, w LogWrite) (Written, error) {
	rec, admit := w.Record, w.Admit
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.block != nil {
		<-f.block
	}
	if f.missing != nil {
		return Written{}, &MissingProjectsError{IDs: f.missing}
	}
	if admit != nil {
		r := Retentions{}
		for _, e := range es {
			if p, ok := f.projects[e.ProjectID]; ok && p.RetentionDays != nil {
				r[p.ID] = *p.RetentionDays
			}
		}
		if err := admit(r); err != nil {
			return Written{}, err
		}
	}
	if rec != nil {
		if f.records == nil {
			f.records = map[string]IdempotencyRecord{}
		}
		if prior, ok := f.records[rec.Scope+"/"+rec.Key]; ok {
			return Written{Prior: &prior}, nil
		}
		f.records[rec.Scope+"/"+rec.Key] = *rec
	}
	f.inserted = append(f.inserted, es...)
	return Written{}, nil
}

func TestProjectNameRules(t *testing.T) {
	s := NewService(newFake(), opts(Options{}))
	cases := []struct {
		name string
		ok   bool
	}{
		{"a", true},
		{strings.Repeat("n", 256), true},
		{strings.Repeat("ü", 256), true},
		{" padded ", true},
		{"", false},
		{"   ", false},
		{"\t\n", false},
		{strings.Repeat("n", 257), false},
		{"bad \xff utf-8", false},
		{"nul\x00inside", false},
	}
	for _, c := range cases {
		_, err := s.CreateProject(admin(t), ProjectInput{Name: c.name})
		if (err == nil) != c.ok {
			t.Errorf("name %q: err = %v, want ok=%v", c.name, err, c.ok)
		}
		if err != nil && (KindOf(err) != KindInvalid || err.(*Error).Fields[0].Path[0] != "name") {
			t.Errorf("name %q: error %v is not KindInvalid on /name", c.name, err)
		}
	}
}

func TestUpdatedAtAlwaysAdvances(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 999, time.UTC) // sub-microsecond part is dropped
	s := NewService(newFake(), opts(Options{Now: func() time.Time { return now }}))
	p, err := s.CreateProject(admin(t), ProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if p.CreatedAt.Nanosecond()%1000 != 0 {
		t.Fatalf("created_at %v keeps more than microseconds", p.CreatedAt)
	}
	prev := p.UpdatedAt
	for range 3 { // the clock stands still
		u, err := s.UpdateProject(admin(t), p.ID, ProjectInput{Name: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if !u.UpdatedAt.After(prev) || !u.CreatedAt.Equal(p.CreatedAt) {
			t.Fatalf("updated_at %v after %v; created %v", u.UpdatedAt, prev, u.CreatedAt)
		}
		prev = u.UpdatedAt
	}
}

func TestMalformedIDsAreNotFound(t *testing.T) {
	s := NewService(newFake(), opts(Options{}))
	for _, id := range []string{"", "x", "01936F0E-8C2A-7B3E-9D4F-2A6B8C0D1E2F", "01936f0e-8c2a-7b3e-9d4f-2a6b8c0d1e2", "01936f0e_8c2a_7b3e_9d4f_2a6b8c0d1e2f"} {
		if _, err := s.GetProject(admin(t), id); KindOf(err) != KindNotFound {
			t.Errorf("Project(%q) = %v, want KindNotFound", id, err)
		}
	}
}

func TestBatchRules(t *testing.T) {
	pid := testID()
	good := func() LogInput { return LogInput{ProjectID: pid, Message: ptr("m")} }
	with := func(f func(*LogInput)) LogInput { in := good(); f(&in); return in }
	limits := DefaultLimits()
	limits.MaxBatchEntries = 3
	cases := []struct {
		name   string
		batch  []LogInput
		kind   Kind
		fields []string
	}{
		{"empty", nil, KindInvalid, []string{""}},
		{"over the entry limit", []LogInput{good(), good(), good(), good()}, KindTooLarge, nil},
		{"missing message", []LogInput{good(), with(func(i *LogInput) { i.Message = nil })}, KindInvalid, []string{"/1/message"}},
		{"missing project", []LogInput{with(func(i *LogInput) { i.ProjectID = "" })}, KindInvalid, []string{"/0/project_id"}},
		{"message over 64 KiB", []LogInput{with(func(i *LogInput) { i.Message = ptr(strings.Repeat("é", 32<<10+1)) })}, KindInvalid, []string{"/0/message"}},
		{"empty level", []LogInput{with(func(i *LogInput) { i.Level = ptr("") })}, KindInvalid, []string{"/0/level"}},
		{"level of 33 characters", []LogInput{with(func(i *LogInput) { i.Level = ptr(strings.Repeat("l", 33)) })}, KindInvalid, []string{"/0/level"}},
		{"subject too long", []LogInput{with(func(i *LogInput) { i.Subject = ptr(strings.Repeat("s", 1025)) })}, KindInvalid, []string{"/0/subject"}},
		{"subject over 1024 bytes in 257 characters", []LogInput{with(func(i *LogInput) { i.Subject = ptr(strings.Repeat("𝄞", 257)) })}, KindInvalid, []string{"/0/subject"}},
		{"user id of 1024 four-byte characters", []LogInput{with(func(i *LogInput) { i.UserID = ptr(strings.Repeat("𝄞", 1024)) })}, KindInvalid, []string{"/0/user_id"}},
		{"user id of 1025 bytes", []LogInput{with(func(i *LogInput) { i.UserID = ptr("é" + strings.Repeat("u", 1023)) })}, KindInvalid, []string{"/0/user_id"}},
		{"NUL in user id", []LogInput{with(func(i *LogInput) { i.UserID = ptr("u\x00") })}, KindInvalid, []string{"/0/user_id"}},
		{"subject not UTF-8", []LogInput{with(func(i *LogInput) { i.Subject = ptr("\xc3\x28") })}, KindInvalid, []string{"/0/subject"}},
		{"message not UTF-8", []LogInput{with(func(i *LogInput) { i.Message = ptr("\xed\xa0\x80") })}, KindInvalid, []string{"/0/message"}},
		{"level of 33 four-byte characters", []LogInput{with(func(i *LogInput) { i.Level = ptr(strings.Repeat("𝄞", 33)) })}, KindInvalid, []string{"/0/level"}},
		{"level not UTF-8", []LogInput{with(func(i *LogInput) { i.Level = ptr("\xff") })}, KindInvalid, []string{"/0/level"}},
		{"user id not UTF-8", []LogInput{with(func(i *LogInput) { i.UserID = ptr("\xff") })}, KindInvalid, []string{"/0/user_id"}},
		{"NUL in message", []LogInput{with(func(i *LogInput) { i.Message = ptr("a\x00b") })}, KindInvalid, []string{"/0/message"}},
		{"NUL in level", []LogInput{with(func(i *LogInput) { i.Level = ptr("\x00") })}, KindInvalid, []string{"/0/level"}},
		{"malformed project id", []LogInput{good(), with(func(i *LogInput) { i.ProjectID = "nope" })}, KindUnknownProject, []string{"/1/project_id"}},
		{"every problem named", []LogInput{with(func(i *LogInput) { i.Level = ptr("") }), good(), with(func(i *LogInput) { i.Message = nil })}, KindInvalid, []string{"/0/level", "/2/message"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			s := NewService(f, opts(Options{Limits: limits}))
			_, err := s.CreateLogs(admin(t), c.batch, "")
			if KindOf(err) != c.kind || err == nil {
				t.Fatalf("err = %v, want kind %v", err, c.kind)
			}
			var got []string
			for _, fe := range err.(*Error).Fields {
				got = append(got, "/"+strings.Join(fe.Path, "/"))
			}
			for i := range got {
				if got[i] == "/" {
					got[i] = ""
				}
			}
			if c.fields != nil && !slices.Equal(got, c.fields) {
				t.Errorf("fields = %q, want %q", got, c.fields)
			}
			if len(f.inserted) != 0 {
				t.Errorf("a rejected batch reached the store")
			}
		})
	}
}

func TestBatchDefaults(t *testing.T) {
	now := time.UnixMilli(1_795_428_000_123)
	n := 0
	f := newFake()
	s := NewService(f, Options{Now: func() time.Time { return now }, NewID: func() string { n++; return "00000000-0000-7000-8000-00000000000" + string(rune('0'+n)) }})
	if _, err := s.CreateLogs(admin(t), []LogInput{{ProjectID: testID(), Message: ptr("a")}, {ProjectID: testID(), Message: ptr("b"), Level: ptr("warn"), Time: ptr[int64](-7)}}, ""); err != nil {
		t.Fatal(err)
	}
	a, b := f.inserted[0], f.inserted[1]
	if a.Level != DefaultLevel || a.Time != now.UnixMilli() || a.Subject != nil || a.UserID != nil {
		t.Errorf("defaults = %+v", a)
	}
	if b.Level != "warn" || b.Time != -7 || a.ID >= b.ID {
		t.Errorf("explicit = %+v (ids %s, %s)", b, a.ID, b.ID)
	}
}

// TestValidIDAcceptsTheIDsTheServiceIssues keeps validID in step with the UUIDv7 text the
// composition root supplies, and checks the order the listing relies on.
func TestValidIDAcceptsTheIDsTheServiceIssues(t *testing.T) {
	prev := ""
	for range 10_000 {
		id := testID()
		if !validID(id) || id[14] != '7' || id <= prev {
			t.Fatalf("id %q after %q", id, prev)
		}
		prev = id
	}
}

func TestWithoutAnIDSourceNothingIsStored(t *testing.T) {
	f := newFake()
	s := NewService(f, Options{})
	if _, err := s.CreateProject(admin(t), ProjectInput{Name: "p"}); KindOf(err) != KindInternal || err == nil {
		t.Errorf("CreateProject without ids = %v, want an internal error", err)
	}
	if _, err := s.CreateLogs(admin(t), []LogInput{{ProjectID: testID(), Message: ptr("m")}}, ""); KindOf(err) != KindInternal || err == nil {
		t.Errorf("CreateLogs without ids = %v, want an internal error", err)
	}
	if len(f.projects) != 0 || len(f.inserted) != 0 {
		t.Error("something was stored without ids")
	}
}

func TestCursorRoundTripAndRejects(t *testing.T) {
	c := Cursor{Time: -42, ID: testID(), Desc: true}
	got, err := DecodeCursor(EncodeCursor(c))
	if err != nil || got != c {
		t.Fatalf("round trip = %+v, %v; want %+v", got, err, c)
	}
	for _, bad := range []string{"", "!!", "e30", EncodeCursor(Cursor{ID: "not-an-id"})} {
		if _, err := DecodeCursor(bad); KindOf(err) != KindInvalid || err.(*Error).Fields[0].Param != "cursor" {
			t.Errorf("DecodeCursor(%q) = %v, want KindInvalid on cursor", bad, err)
		}
	}
}

func TestListingParameters(t *testing.T) {
	s := NewService(newFake(), opts(Options{}))
	cases := []struct {
		q     LogQuery
		param string
	}{
		{LogQuery{Limit: -1}, "limit"},
		{LogQuery{Limit: 10_001}, "limit"},
		{LogQuery{LogFilter: LogFilter{Start: ptr[int64](2), End: ptr[int64](1)}}, "start_time"},
		{LogQuery{After: &Cursor{ID: testID(), Desc: true}}, "cursor"},
		{LogQuery{After: &Cursor{ID: "\xff\x00"}}, "cursor"},
	}
	for _, c := range cases {
		_, err := s.pageQuery(c.q)
		if KindOf(err) != KindInvalid || err.(*Error).Fields[0].Param != c.param {
			t.Errorf("pageQuery(%+v) = %v, want invalid %s", c.q, err, c.param)
		}
	}
	q, err := s.pageQuery(LogQuery{LogFilter: LogFilter{Start: ptr[int64](1), End: ptr[int64](1)}})
	if err != nil || q.Limit != 1000 {
		t.Errorf("defaults = %+v, %v; want limit 1000 and start == end accepted", q, err)
	}
}

func TestMakeHatRejectsNonPositive(t *testing.T) {
	s := NewService(nil, Options{})
	for _, in := range []int32{0, -1} {
		if _, err := s.MakeHat(admin(t), in); KindOf(err) != KindInvalid || err.(*Error).Fields[0].Param != "inches" {
			t.Errorf("MakeHat(%d) = %v", in, err)
		}
	}
	if slices.Contains(HatColors(), "invisible") {
		t.Error("the palette holds invisible")
	}
}

// TestMakeHatConcurrently: the default source of randomness is shared by every call; under the
// race detector (go test -race ./domain) this fails if it is not safe for concurrent use.
func TestMakeHatConcurrently(t *testing.T) {
	s := NewService(nil, Options{})
	ctx := admin(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if h, err := s.MakeHat(ctx, 12); err != nil || !slices.Contains(HatColors(), h.Color) {
					t.Errorf("MakeHat(12) = %+v, %v", h, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestIdempotentBatches(t *testing.T) {
	f := newFake()
	s := NewService(f, opts(Options{}))
	pid := testID()
	batch := []LogInput{{ProjectID: pid, Message: ptr("a")}, {ProjectID: pid, Message: ptr("b")}}

	first, err := s.CreateLogs(admin(t), batch, "k1")
	if err != nil || first.N != 2 || first.Replayed {
		t.Fatalf("first = %+v, %v", first, err)
	}
	again, err := s.CreateLogs(admin(t), batch, "k1")
	if err != nil || again.N != 2 || !again.Replayed {
		t.Fatalf("retry = %+v, %v; want a replay of 2", again, err)
	}
	if len(f.inserted) != 2 {
		t.Fatalf("%d entries stored, want 2", len(f.inserted))
	}
	changed := []LogInput{{ProjectID: pid, Message: ptr("a")}, {ProjectID: pid, Message: ptr("B")}}
	if _, err := s.CreateLogs(admin(t), changed, "k1"); KindOf(err) != KindKeyReused {
		t.Fatalf("same key, other body = %v, want KindKeyReused", err)
	}
	// A level sent as the default is still another request than one without it.
	withLevel := []LogInput{{ProjectID: pid, Message: ptr("a"), Level: ptr("info")}, {ProjectID: pid, Message: ptr("b")}}
	if _, err := s.CreateLogs(admin(t), withLevel, "k1"); KindOf(err) != KindKeyReused {
		t.Fatalf("explicit default level under the same key = %v, want KindKeyReused", err)
	}
	// Another API key has its own key space.
	other := WithPrincipal(t.Context(), Principal{Admin: true, KeyID: "other"})
	if c, err := s.CreateLogs(other, batch, "k1"); err != nil || c.Replayed {
		t.Fatalf("same key from another API key = %+v, %v", c, err)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "tab\tkey", "ünï"} {
		if _, err := s.CreateLogs(admin(t), batch, bad); KindOf(err) != KindInvalid {
			t.Errorf("key %q = %v, want KindInvalid", bad, err)
		}
	}
}

func TestIdempotentRetryWhileInFlightConflicts(t *testing.T) {
	f := newFake()
	f.block, f.entered = make(chan struct{}), make(chan struct{}, 1)
	s := NewService(f, opts(Options{}))
	batch := []LogInput{{ProjectID: testID(), Message: ptr("a")}}
	done := make(chan error, 1)
	go func() { _, err := s.CreateLogs(admin(t), batch, "k"); done <- err }()
	<-f.entered // the first request is in the store now
	if _, err := s.CreateLogs(admin(t), batch, "k"); KindOf(err) != KindConflict {
		t.Errorf("retry while in flight = %v, want KindConflict", err)
	}
	close(f.block)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	f.entered = nil
	if c, err := s.CreateLogs(admin(t), batch, "k"); err != nil || !c.Replayed {
		t.Fatalf("retry after the first finished = %+v, %v; want a replay", c, err)
	}
}

func TestStringsAtTheLimitsAreAccepted(t *testing.T) {
	l := DefaultLimits()
	f := newFake()
	s := NewService(f, opts(Options{}))
	in := []LogInput{{
		ProjectID: testID(),
		Message:   ptr(strings.Repeat("m", l.MaxMessageBytes)),
		Level:     ptr(strings.Repeat("𝄞", l.MaxLevelChars)),
		Subject:   ptr(strings.Repeat("𝄞", l.MaxSubjectBytes/4)),
		UserID:    ptr(strings.Repeat("é", l.MaxUserIDBytes/2)),
	}, {ProjectID: testID(), Message: ptr(""), Subject: ptr(""), UserID: ptr("")}}
	if _, err := s.CreateLogs(admin(t), in, ""); err != nil {
		t.Fatalf("entries at the limits: %v", err)
	}
	if _, err := s.CreateProject(admin(t), ProjectInput{Name: strings.Repeat("𝄞", l.MaxNameChars)}); err != nil {
		t.Fatalf("a name of %d four-byte characters: %v", l.MaxNameChars, err)
	}
}

func TestLimitsInBytesSayBytes(t *testing.T) {
	s := NewService(newFake(), opts(Options{}))
	_, err := s.CreateLogs(admin(t), []LogInput{{ProjectID: testID(), Message: ptr("m"), UserID: ptr(strings.Repeat("𝄞", 257))}}, "")
	if KindOf(err) != KindInvalid || err.(*Error).Fields[0].Detail != "must be at most 1024 bytes of UTF-8" {
		t.Fatalf("err = %v, want the user_id detail in bytes of UTF-8", err)
	}
}

// TestFilterRules: a filter value that no entry could hold, or that a store could not compare
// (invalid UTF-8, NUL), is KindInvalid on the parameter as the REST API names it, for listing
// and deleting alike, before any store is asked.
func TestFilterRules(t *testing.T) {
	pid := testID()
	cases := []struct {
		name   string
		f      LogFilter
		params []string // nil: accepted
	}{
		{"NUL user_id", LogFilter{UserID: ptr("\x00")}, []string{"user_id"}},
		{"invalid UTF-8 user_id", LogFilter{UserID: ptr("\xff")}, []string{"user_id"}},
		{"surrogate half user_id", LogFilter{UserID: ptr("\xed\xa0\x80")}, []string{"user_id"}},
		{"user_id of 1025 bytes", LogFilter{UserID: ptr(strings.Repeat("u", 1025))}, []string{"user_id"}},
		{"user_id of 1024 four-byte characters", LogFilter{UserID: ptr(strings.Repeat("𝄞", 1024))}, []string{"user_id"}},
		{"invalid UTF-8 log_level", LogFilter{Level: ptr("\xc3\x28")}, []string{"log_level"}},
		{"NUL log_level", LogFilter{Level: ptr("a\x00")}, []string{"log_level"}},
		{"empty log_level", LogFilter{Level: ptr("")}, []string{"log_level"}},
		{"log_level of 33 characters", LogFilter{Level: ptr(strings.Repeat("l", 33))}, []string{"log_level"}},
		{"every problem named", LogFilter{UserID: ptr("\xff"), Level: ptr(""), Start: ptr[int64](2), End: ptr[int64](1)}, []string{"user_id", "log_level", "start_time"}},
		{"user_id of 1024 bytes", LogFilter{UserID: ptr(strings.Repeat("𝄞", 256))}, nil},
		{"empty user_id", LogFilter{UserID: ptr("")}, nil},
		{"log_level of 32 four-byte characters", LogFilter{Level: ptr(strings.Repeat("𝄞", 32))}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			s := NewService(f, opts(Options{}))
			p, err := s.CreateProject(admin(t), ProjectInput{Name: "p"})
			if err != nil {
				t.Fatal(err)
			}
			c.f.ProjectID = p.ID
			if c.params != nil {
				c.f.ProjectID = pid // the filter is judged before the project is looked up
			}
			errList := s.ListLogs(admin(t), LogQuery{LogFilter: c.f}, func(Page) error { return nil })
			_, errDelete := s.DeleteLogs(admin(t), c.f)
			for op, err := range map[string]error{"ListLogs": errList, "DeleteLogs": errDelete} {
				if c.params == nil {
					if err != nil {
						t.Errorf("%s: %v, want it accepted", op, err)
					}
					continue
				}
				var got []string
				if e, ok := err.(*Error); ok && e.Kind == KindInvalid {
					for _, fe := range e.Fields {
						got = append(got, fe.Param)
					}
				}
				if !slices.Equal(got, c.params) {
					t.Errorf("%s: %v; want KindInvalid on %q", op, err, c.params)
				}
			}
			if c.params != nil && f.reads != 0 {
				t.Errorf("a rejected filter reached the store %d times", f.reads)
			}
		})
	}
}

// TestUnknownProjectsAreCapped: the store says which projects are missing; the service names
// the entries that name them, at most MaxFieldErrors, and counts the rest.
func TestUnknownProjectsAreCapped(t *testing.T) {
	l := DefaultLimits()
	ghost, known := testID(), testID()
	f := newFake()
	f.missing = []string{ghost}
	s := NewService(f, opts(Options{}))
	in := make([]LogInput, l.MaxBatchEntries)
	for i := range in {
		in[i] = LogInput{ProjectID: ghost, Message: ptr("m")}
		if i%2 == 0 {
			in[i].ProjectID = known
		}
	}
	_, err := s.CreateLogs(admin(t), in, "")
	e, ok := err.(*Error)
	if !ok || e.Kind != KindUnknownProject {
		t.Fatalf("err = %v, want KindUnknownProject", err)
	}
	if len(e.Fields) != l.MaxFieldErrors || !slices.Equal(e.Fields[0].Path, []string{"1", "project_id"}) || !slices.Equal(e.Fields[1].Path, []string{"3", "project_id"}) {
		t.Fatalf("%d fields starting %v, want %d starting /1/project_id, /3/project_id", len(e.Fields), e.Fields[:2], l.MaxFieldErrors)
	}
	if want := "unknown project (4900 more problems not listed)"; e.Msg != want {
		t.Errorf("message = %q, want %q", e.Msg, want)
	}
	// Malformed ids, answered without the store, follow the same rule.
	for i := range in {
		in[i].ProjectID = "nope"
	}
	_, err = s.CreateLogs(admin(t), in, "")
	if e, ok := err.(*Error); !ok || e.Kind != KindUnknownProject || len(e.Fields) != l.MaxFieldErrors {
		t.Fatalf("malformed ids: %v", err)
	}
}

func TestIdempotencyScopeIsAFixedLengthHashOfTheKeyAndProjects(t *testing.T) {
	a, b := testID(), testID()
	es := func(ids ...string) []LogEntry {
		var out []LogEntry
		for _, id := range ids {
			out = append(out, LogEntry{ProjectID: id})
		}
		return out
	}
	who := Principal{Admin: true, KeyID: "0123456789abcdef"}
	got := idempotencyScope(who, es(b, a, b))
	// The text hashed is what the first release stored; migration 00003 hashes old rows to match.
	sum := sha256.Sum256([]byte("0123456789abcdef|" + min(a, b) + "," + max(a, b)))
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("scope = %s, want %s", got, want)
	}
	if other := idempotencyScope(Principal{Admin: true}, es(a, b)); other == got {
		t.Error("another API key shares the scope")
	}
	if other := idempotencyScope(who, es(a)); other == got {
		t.Error("another set of projects shares the scope")
	}
	var many []string
	for range 10_000 {
		many = append(many, testID())
	}
	if s := idempotencyScope(who, es(many...)); len(s) != 64 {
		t.Errorf("scope of 10,000 projects is %d characters, want 64", len(s))
	}
}
