package domain

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// searchFake keeps saved searches in memory, for the service's rules only; the real stores
// keep the SearchStore contract in adapters/sqlstore/storetest.
type searchFake struct {
	*fakeStore
	searches map[string]Search
	calls    int
}

func newSearchFake() *searchFake {
	return &searchFake{fakeStore: newFake(), searches: map[string]Search{}}
}

func (f *searchFake) CreateSearch(_ context.Context, s Search, limit int) error {
	f.calls++
	if _, ok := f.projects[s.ProjectID]; !ok {
		return Errorf(KindUnknownProject, "unknown project")
	}
	n := 0
	for _, o := range f.searches {
		if o.ProjectID == s.ProjectID {
			n++
			if o.Name == s.Name {
				return ErrSearchNameTaken
			}
		}
	}
	if n >= limit {
		return ErrTooManySearches
	}
	f.searches[s.ID] = s
	return nil
}

func (f *searchFake) GetSearch(_ context.Context, id string) (Search, error) {
	f.calls++
	s, ok := f.searches[id]
	if !ok {
		return Search{}, Errorf(KindNotFound, "not found")
	}
	return s, nil
}

func (f *searchFake) ListSearches(_ context.Context, projectID string) ([]Search, error) {
	f.calls++
	var out []Search
	for _, s := range f.searches {
		if s.ProjectID == projectID {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Search) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (f *searchFake) UpdateSearch(_ context.Context, s Search) error {
	f.calls++
	for _, o := range f.searches {
		if o.ProjectID == s.ProjectID && o.Name == s.Name && o.ID != s.ID {
			return ErrSearchNameTaken
		}
	}
	f.searches[s.ID] = s
	return nil
}

func (f *searchFake) DeleteSearch(_ context.Context, _, id string) error {
	f.calls++
	delete(f.searches, id)
	return nil
}

// searchService is a service over a searchFake holding one project, and that project.
func searchService(t *testing.T, o Options) (*Service, *searchFake, Project) {
	t.Helper()
	f := newSearchFake()
	svc := NewService(f, opts(o))
	p, err := svc.CreateProject(admin(t), ProjectInput{Name: "p"})
	if err != nil {
		t.Fatal(err)
	}
	return svc, f, p
}

func TestSavedSearchRules(t *testing.T) {
	svc, f, p := searchService(t, Options{})
	ok := SearchInput{ProjectID: p.ID, Name: "errors", Query: "level:error", RangeSeconds: 3600}
	for _, c := range []struct {
		name   string
		change func(*SearchInput)
		path   string // the field named; "" when valid
		detail string // a part of its detail
	}{
		{"valid", func(*SearchInput) {}, "", ""},
		{"name of 200 characters", func(in *SearchInput) { in.Name = strings.Repeat("é", 200) }, "", ""},
		{"inner white space", func(in *SearchInput) { in.Name = "5xx  on checkout" }, "", ""},
		{"empty query: every entry", func(in *SearchInput) { in.Query = "" }, "", ""},
		{"a range of one second", func(in *SearchInput) { in.RangeSeconds = 1 }, "", ""},
		{"a range of 366 days", func(in *SearchInput) { in.RangeSeconds = 366 * 86400 }, "", ""},
		{"empty name", func(in *SearchInput) { in.Name = "" }, "name", "must not be empty"},
		{"name of 201 characters", func(in *SearchInput) { in.Name = strings.Repeat("é", 201) }, "name", "at most 200 characters"},
		{"name of spaces", func(in *SearchInput) { in.Name = "   " }, "name", "white space"},
		{"leading space", func(in *SearchInput) { in.Name = " errors" }, "name", "white space"},
		{"trailing tab", func(in *SearchInput) { in.Name = "errors\t" }, "name", "white space"},
		{"NUL in the name", func(in *SearchInput) { in.Name = "a\x00b" }, "name", "NUL"},
		{"invalid UTF-8", func(in *SearchInput) { in.Name = "a\xffb" }, "name", "UTF-8"},
		{"unbalanced query", func(in *SearchInput) { in.Query = "level:error )" }, "query", "at 13"},
		{"query over the limit", func(in *SearchInput) { in.Query = strings.Repeat("a", 4097) }, "query", "longer than 4096"},
		{"range of zero", func(in *SearchInput) { in.RangeSeconds = 0 }, "range_seconds", "from 1 to 31622400"},
		{"negative range", func(in *SearchInput) { in.RangeSeconds = -5 }, "range_seconds", "from 1 to 31622400"},
		{"range past 366 days", func(in *SearchInput) { in.RangeSeconds = 366*86400 + 1 }, "range_seconds", "from 1 to 31622400"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := ok
			in.Name += " " + c.name // unique per case
			c.change(&in)
			calls := f.calls
			_, err := svc.CreateSearch(admin(t), in)
			if c.path == "" {
				if err != nil {
					t.Fatalf("CreateSearch: %v", err)
				}
				return
			}
			wantKindOf(t, err, KindInvalid)
			e := err.(*Error)
			if len(e.Fields) != 1 || strings.Join(e.Fields[0].Path, "/") != c.path || !strings.Contains(e.Fields[0].Detail, c.detail) {
				t.Fatalf("fields %+v, want one at %s saying %q", e.Fields, c.path, c.detail)
			}
			if f.calls != calls {
				t.Fatal("an invalid search reached the store")
			}
		})
	}
}

// The query is checked as GET /logs checks its query parameter: the same message, with the
// position.
func TestSavedSearchQuerySaysWhatGetLogsSays(t *testing.T) {
	svc, _, p := searchService(t, Options{})
	bad := `level:"error`
	_, listErr := svc.limits.validateFilter(LogFilter{ProjectID: p.ID, Query: &bad})
	_, saveErr := svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: "n", Query: bad, RangeSeconds: 60})
	le, se := listErr.(*Error), saveErr.(*Error)
	if le == nil || se == nil || le.Fields[0].Detail != se.Fields[0].Detail || le.Fields[0].Param != "query" || se.Fields[0].Path[0] != "query" {
		t.Fatalf("GET /logs says %v, a save says %v", listErr, saveErr)
	}
}

func wantKindOf(t *testing.T, err error, k Kind) {
	t.Helper()
	if KindOf(err) != k {
		t.Fatalf("error %v, want kind %v", err, k)
	}
}

func TestSavedSearchesOfAProjectKey(t *testing.T) {
	svc, _, p := searchService(t, Options{})
	q, err := svc.CreateProject(admin(t), ProjectInput{Name: "q"})
	if err != nil {
		t.Fatal(err)
	}
	mine := WithPrincipal(t.Context(), Principal{ProjectID: p.ID})
	own, err := svc.CreateSearch(mine, SearchInput{ProjectID: p.ID, Name: "mine", RangeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := svc.CreateSearch(admin(t), SearchInput{ProjectID: q.ID, Name: "theirs", RangeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.CreateSearch(mine, SearchInput{ProjectID: q.ID, Name: "x", RangeSeconds: 60})
	wantKindOf(t, err, KindForbidden)
	_, err = svc.ListSearches(mine, q.ID)
	wantKindOf(t, err, KindForbidden)
	// Another project's search is not found, as an id that names nothing is.
	_, err = svc.GetSearch(mine, theirs.ID)
	wantKindOf(t, err, KindNotFound)
	_, err = svc.PatchSearch(mine, theirs.ID, SearchPatch{Name: ptr("taken")})
	wantKindOf(t, err, KindNotFound)
	wantKindOf(t, svc.DeleteSearch(mine, theirs.ID), KindNotFound)
	if got, err := svc.GetSearch(admin(t), theirs.ID); err != nil || got != theirs {
		t.Fatalf("the other project's search after the attempts: %+v, %v", got, err)
	}
	if got, err := svc.GetSearch(mine, own.ID); err != nil || got != own {
		t.Fatalf("the key's own search: %+v, %v", got, err)
	}
	if list, err := svc.ListSearches(mine, p.ID); err != nil || len(list) != 1 || list[0] != own {
		t.Fatalf("the key's own list: %+v, %v", list, err)
	}
	if err := svc.DeleteSearch(mine, own.ID); err != nil {
		t.Fatal(err)
	}
	_, err = svc.GetSearch(t.Context(), own.ID)
	wantKindOf(t, err, KindUnauthenticated)
	_, err = svc.GetSearch(admin(t), "not-an-id")
	wantKindOf(t, err, KindNotFound)
	_, err = svc.ListSearches(admin(t), testID())
	wantKindOf(t, err, KindNotFound)
	_, err = svc.CreateSearch(admin(t), SearchInput{ProjectID: "nope", Name: "x", RangeSeconds: 60})
	wantKindOf(t, err, KindUnknownProject)
}

func TestPatchSearchIsAMergePatch(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	svc, _, p := searchService(t, Options{Now: func() time.Time { return now }})
	sr, err := svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: "errors", Query: "level:error", RangeSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	other, err := svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: "warnings", RangeSeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	// The clock stands still: updated_at advances all the same.
	got, err := svc.PatchSearch(admin(t), sr.ID, SearchPatch{RangeSeconds: ptr(60)})
	if err != nil {
		t.Fatal(err)
	}
	want := sr
	want.RangeSeconds, want.UpdatedAt = 60, sr.UpdatedAt.Add(time.Microsecond)
	if got != want {
		t.Fatalf("after a patch of the range: %+v, want %+v", got, want)
	}
	got, err = svc.PatchSearch(admin(t), sr.ID, SearchPatch{Query: ptr("")})
	if err != nil || got.Query != "" || got.Name != "errors" || got.RangeSeconds != 60 {
		t.Fatalf("after a patch of the query: %+v, %v", got, err)
	}
	_, err = svc.PatchSearch(admin(t), sr.ID, SearchPatch{Name: &other.Name})
	wantKindOf(t, err, KindConflict)
	_, err = svc.PatchSearch(admin(t), sr.ID, SearchPatch{Name: ptr(""), Query: ptr("("), RangeSeconds: ptr(0)})
	if e, ok := err.(*Error); !ok || e.Kind != KindInvalid || len(e.Fields) != 3 {
		t.Fatalf("a patch breaking three rules: %v, want the three named", err)
	}
}

func TestSavedSearchesPerProjectAreBounded(t *testing.T) {
	l := DefaultLimits()
	l.MaxSearchesPerProject = 2
	svc, _, p := searchService(t, Options{Limits: l})
	for _, name := range []string{"a", "b"} {
		if _, err := svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: name, RangeSeconds: 60}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: "c", RangeSeconds: 60})
	wantKindOf(t, err, KindConflict)
	if !strings.Contains(err.Error(), "holds 2 saved searches") {
		t.Fatalf("the refusal does not say the bound: %v", err)
	}
	_, err = svc.CreateSearch(admin(t), SearchInput{ProjectID: p.ID, Name: "a", RangeSeconds: 60})
	if e, ok := err.(*Error); !ok || e.Kind != KindConflict {
		t.Fatalf("a taken name: %v, want a conflict", err)
	}
}
