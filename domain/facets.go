package domain

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The fixed bounds of the facets and fields questions (the API contract states them).
const (
	// MaxFacetFields is how many fields one facets question may name.
	MaxFacetFields = 20
	// DefaultFacetValues is how many values of each field a facets answer lists when the
	// question names no limit; MaxFacetValues the most it may ask for.
	DefaultFacetValues = 10
	MaxFacetValues     = 100
	// MaxFieldKeys is how many attribute keys a fields answer lists at most: the most common.
	MaxFieldKeys = 1000
)

// FacetsQuery asks, for each of Fields, which values the project's entries matching the filter
// with Time in [Start, End] (both required) have most often.
type FacetsQuery struct {
	LogFilter
	// Fields are the fields as named, in the query language's words (see QueryField); the
	// service drops repeats and sets Targets, one per field, before a store sees the question.
	Fields  []string
	Targets []QueryField
	// Limit is how many values of each field the answer lists (zero: DefaultFacetValues).
	Limit int
	// Now is the time of the question (Unix ms), for the retention cut; the service sets it.
	Now int64
}

// Facet is the answer for one field: its Limit most common values, most common first (ties in
// the bytewise order of an attribute's JSON text, or of the text of one of the entry's own
// fields, which differs from its JSON text's order only where quotes, backslashes or control
// characters are escaped), how many matching entries have any other value
// (Other), and how many do not have the field (Missing).
type Facet struct {
	Field   string
	Values  []FacetValue
	Other   int64
	Missing int64
}

// FacetValue is one value of a field as JSON text, as stored (a number keeps its text; an
// attribute whose value is null is "null"), and how many matching entries have it.
type FacetValue struct {
	Value string
	Count int64
}

// FieldsQuery asks which top-level attribute keys the project's entries matching the filter with
// Time in [Start, End] (both required) hold, and how many entries hold each.
type FieldsQuery struct {
	LogFilter
	// Limit is how many keys the answer lists at most, the most common (the service sets it).
	Limit int
	// Now is the time of the question (Unix ms), for the retention cut; the service sets it.
	Now int64
}

// FieldCount is one attribute key and how many matching entries hold it.
type FieldCount struct {
	Field string
	Count int64
}

// ResolveField names what a field of the query language stands for: one of the entry's fields
// (FieldLevel and the others) or, for any other name and for "attributes.<key>", the attribute
// with that key.
func ResolveField(name string) QueryField {
	if key, ok := strings.CutPrefix(name, "attributes."); ok {
		return QueryField{Name: key, Attribute: true}
	}
	switch name {
	case FieldMessage, FieldLevel, FieldSubject, FieldUserID, FieldTraceID, FieldSpanID:
		return QueryField{Name: name}
	}
	return QueryField{Name: name, Attribute: true}
}

// validateRange checks the filter of a facets or fields question: the filter's own rules, and
// both ends of the range given. The problems of extra are added to those found.
func (l Limits) validateRange(f LogFilter, extra []FieldError) (LogFilter, error) {
	f, err := l.validateFilter(f)
	fields := extra
	var invalid *Error
	if errors.As(err, &invalid) && invalid.Kind == KindInvalid {
		fields = append(invalid.Fields, extra...)
	} else if err != nil {
		return f, err
	}
	if f.Start == nil {
		fields = append(fields, FieldError{Param: "start_time", Detail: "is required"})
	}
	if f.End == nil {
		fields = append(fields, FieldError{Param: "end_time", Detail: "is required"})
	}
	if len(fields) > 0 {
		return f, &Error{Kind: KindInvalid, Msg: "invalid parameter", Fields: fields}
	}
	return f, nil
}

// validateFacets checks a facets question and resolves its fields.
func (l Limits) validateFacets(q FacetsQuery) (FacetsQuery, error) {
	var fields []FieldError
	switch {
	case len(q.Fields) == 0:
		fields = append(fields, FieldError{Param: "field", Detail: "is required"})
	case len(q.Fields) > MaxFacetFields:
		fields = append(fields, FieldError{Param: "field", Detail: "may be given at most " + strconv.Itoa(MaxFacetFields) + " times"})
	default:
		names, targets := make([]string, 0, len(q.Fields)), make([]QueryField, 0, len(q.Fields))
		seen := map[QueryField]bool{}
		for _, name := range q.Fields {
			t := ResolveField(name)
			if d := checkChars(t.Name, 1, l.MaxAttributeKeyChars); d != "" {
				fields = append(fields, FieldError{Param: "field", Detail: d})
				break
			}
			if !seen[t] {
				seen[t] = true
				names, targets = append(names, name), append(targets, t)
			}
		}
		q.Fields, q.Targets = names, targets
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultFacetValues
	case q.Limit < 1 || q.Limit > MaxFacetValues:
		fields = append(fields, FieldError{Param: "limit", Detail: fmt.Sprintf("must be between 1 and %d", MaxFacetValues)})
	}
	f, err := l.validateRange(q.LogFilter, fields)
	q.LogFilter = f
	return q, err
}

// Facets answers, for each field of q, its most common values among the project's entries that
// match q's filter in its range, with exact counts; expired entries are left out as a listing
// leaves them out. It is authorised as LogStats is: a project key for its own project, an admin
// key for any; the project must exist (KindNotFound otherwise).
func (s *Service) Facets(ctx context.Context, q FacetsQuery) ([]Facet, error) {
	q, err := s.limits.validateFacets(q)
	if err != nil {
		return nil, err
	}
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return nil, err
	}
	q.Now = now
	defer release()
	facets, err := s.store.Facets(ctx, q)
	if KindOf(err) == KindNotFound {
		return nil, projectNotFound(q.ProjectID)
	}
	if err != nil {
		return nil, fmt.Errorf("log facets: %w", err)
	}
	return facets, nil
}

// Fields answers which top-level attribute keys the project's entries that match q's filter in
// its range hold, each with how many entries hold it, most common first (ties by key), at most
// MaxFieldKeys of them. Authorised, bounded and cut by retention as Facets.
func (s *Service) Fields(ctx context.Context, q FieldsQuery) ([]FieldCount, error) {
	f, err := s.limits.validateRange(q.LogFilter, nil)
	if err != nil {
		return nil, err
	}
	q.LogFilter = f
	now, release, err := s.openRead(ctx, q.ProjectID)
	if err != nil {
		return nil, err
	}
	q.Now = now
	q.Limit = MaxFieldKeys
	defer release()
	keys, err := s.store.Fields(ctx, q)
	if KindOf(err) == KindNotFound {
		return nil, projectNotFound(q.ProjectID)
	}
	if err != nil {
		return nil, fmt.Errorf("log fields: %w", err)
	}
	return keys, nil
}
