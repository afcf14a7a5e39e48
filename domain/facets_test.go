package domain

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// facetsStore records the facets and fields questions the service hands a store.
type facetsStore struct {
	*fakeStore
	facets []FacetsQuery
	fields []FieldsQuery
}

func (f *facetsStore) Facets(_ context.Context, q FacetsQuery) ([]Facet, error) {
	if _, ok := f.projects[q.ProjectID]; !ok {
		return nil, &Error{Kind: KindNotFound, Msg: "not found"}
	}
	f.facets = append(f.facets, q)
	return nil, nil
}

func (f *facetsStore) Fields(_ context.Context, q FieldsQuery) ([]FieldCount, error) {
	if _, ok := f.projects[q.ProjectID]; !ok {
		return nil, &Error{Kind: KindNotFound, Msg: "not found"}
	}
	f.fields = append(f.fields, q)
	return nil, nil
}

func TestResolveField(t *testing.T) {
	for name, want := range map[string]QueryField{
		"level":            {Name: "level"},
		"message":          {Name: "message"},
		"span_id":          {Name: "span_id"},
		"http.route":       {Name: "http.route", Attribute: true},
		"attributes.level": {Name: "level", Attribute: true},
		"attributes.":      {Name: "", Attribute: true},
		"Level":            {Name: "Level", Attribute: true},
	} {
		if got := ResolveField(name); got != want {
			t.Errorf("ResolveField(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestFacetsAndFieldsRules(t *testing.T) {
	f := &facetsStore{fakeStore: newFake()}
	s := NewService(f, opts(Options{}))
	own, err := s.CreateProject(admin(t), ProjectInput{Name: "own"})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := s.CreateProject(admin(t), ProjectInput{Name: "other"})
	key := WithPrincipal(t.Context(), Principal{ProjectID: own.ID})
	rng := LogFilter{ProjectID: own.ID, Start: ptr[int64](0), End: ptr[int64](10)}

	// Repeats are dropped (the first name kept), fields resolved, the limit defaulted.
	if _, err := s.Facets(key, FacetsQuery{LogFilter: rng, Fields: []string{"level", "http.route", "level", "attributes.http.route", "attributes.level"}}); err != nil {
		t.Fatal(err)
	}
	q := f.facets[0]
	if !slices.Equal(q.Fields, []string{"level", "http.route", "attributes.level"}) || q.Limit != DefaultFacetValues || q.Now == 0 ||
		!slices.Equal(q.Targets, []QueryField{{Name: "level"}, {Name: "http.route", Attribute: true}, {Name: "level", Attribute: true}}) {
		t.Errorf("the store got %+v", q)
	}
	if _, err := s.Fields(key, FieldsQuery{LogFilter: rng}); err != nil || f.fields[0].Limit != MaxFieldKeys || f.fields[0].Now == 0 {
		t.Errorf("Fields: %v, the store got %+v", err, f.fields)
	}

	for _, c := range []struct {
		name string
		err  error
		want Kind
	}{
		{"facets of another project", func() error {
			_, err := s.Facets(key, FacetsQuery{LogFilter: LogFilter{ProjectID: other.ID, Start: rng.Start, End: rng.End}, Fields: []string{"level"}})
			return err
		}(), KindForbidden},
		{"fields of another project", func() error {
			_, err := s.Fields(key, FieldsQuery{LogFilter: LogFilter{ProjectID: other.ID, Start: rng.Start, End: rng.End}})
			return err
		}(), KindForbidden},
		{"facets of an unknown project", func() error {
			_, err := s.Facets(admin(t), FacetsQuery{LogFilter: LogFilter{ProjectID: testID(), Start: rng.Start, End: rng.End}, Fields: []string{"level"}})
			return err
		}(), KindNotFound},
		{"fields of an unknown project", func() error {
			_, err := s.Fields(admin(t), FieldsQuery{LogFilter: LogFilter{ProjectID: "nope", Start: rng.Start, End: rng.End}})
			return err
		}(), KindNotFound},
		{"facets without a range", func() error {
			_, err := s.Facets(key, FacetsQuery{LogFilter: LogFilter{ProjectID: own.ID}, Fields: []string{"level"}})
			return err
		}(), KindInvalid},
		{"facets of too many fields", func() error {
			_, err := s.Facets(key, FacetsQuery{LogFilter: rng, Fields: make([]string, MaxFacetFields+1)})
			return err
		}(), KindInvalid},
		{"facets over the limit", func() error {
			_, err := s.Facets(key, FacetsQuery{LogFilter: rng, Fields: []string{"level"}, Limit: MaxFacetValues + 1})
			return err
		}(), KindInvalid},
	} {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("%s: %v (%s), want %s", c.name, c.err, got, c.want)
		}
	}
	// Every problem is named at once.
	_, err = s.Facets(key, FacetsQuery{LogFilter: LogFilter{ProjectID: own.ID, TraceID: ptr("x")}, Limit: -1})
	var invalid *Error
	if KindOf(err) != KindInvalid || !errors.As(err, &invalid) {
		t.Fatalf("facets with every problem: %v", err)
	}
	var params []string
	for _, fe := range invalid.Fields {
		params = append(params, fe.Param)
	}
	if want := []string{"trace_id", "field", "limit", "start_time", "end_time"}; !slices.Equal(params, want) {
		t.Errorf("problems name %q, want %q", params, want)
	}
}
