package domain

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"
)

// Search is a saved search: a named query and time range of one project, kept on the server so
// that a person (the explorer's menu) and, later, an alert rule can come back to it. Its
// timestamps carry the precision every store keeps, as a project's do.
type Search struct {
	ID        string
	ProjectID string
	Name      string
	// Query is the text of the query language as the client sent it (empty: every entry); it
	// parsed when it was saved.
	Query string
	// RangeSeconds is how far back from now the search looks.
	RangeSeconds int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// SearchInput is what a client sets when it saves a search.
type SearchInput struct {
	ProjectID    string
	Name         string
	Query        string
	RangeSeconds int
}

// SearchPatch is a merge patch of a saved search: only what it names changes (none of its
// members can be null).
type SearchPatch struct {
	Name         *string
	Query        *string
	RangeSeconds *int
}

// The rules of a saved search. A name is 1 to MaxSearchNameChars characters, neither beginning
// nor ending with white space (the service never alters a name, so that two names that look
// alike are not two searches by accident), unique within its project. A range is 1 second to
// MaxSearchRangeSeconds (366 days: a year, leap day included).
const (
	MaxSearchNameChars    = 200
	MaxSearchRangeSeconds = 366 * 24 * 60 * 60
	// DefaultMaxSearches is how many saved searches a project may hold when Limits say nothing.
	DefaultMaxSearches = 1000
)

// SearchStore persists saved searches. A search belongs to one project and goes with it.
type SearchStore interface {
	// CreateSearch stores a new search unless its project already holds max searches
	// (KindConflict, ErrTooManySearches) or one with the same name (KindConflict,
	// ErrSearchNameTaken); KindUnknownProject if the project does not exist. Concurrent creates
	// never take a project past max.
	CreateSearch(ctx context.Context, s Search, max int) error
	// GetSearch returns the search; KindNotFound if there is none.
	GetSearch(ctx context.Context, id string) (Search, error)
	// ListSearches returns the project's searches ordered by name (bytewise), then id.
	ListSearches(ctx context.Context, projectID string) ([]Search, error)
	// UpdateSearch replaces the name, query, range and UpdatedAt of the search with s.ID in
	// project s.ProjectID; KindNotFound if there is none, ErrSearchNameTaken if another search
	// of the project has the name.
	UpdateSearch(ctx context.Context, s Search) error
	// DeleteSearch removes the search with id in project projectID; KindNotFound if there is none.
	DeleteSearch(ctx context.Context, projectID, id string) error
}

// ErrSearchNameTaken is a store's answer to a search named as another of its project.
var ErrSearchNameTaken = &Error{Kind: KindConflict, Msg: "the project has a saved search with this name",
	Fields: []FieldError{{Path: []string{"name"}, Detail: "is taken by another saved search of the project"}}}

// ErrTooManySearches is a store's answer to a search that would take its project past the most
// saved searches it may hold; the service says the number.
var ErrTooManySearches = &Error{Kind: KindConflict, Msg: "the project holds the most saved searches it may"}

// unknownSearchProject is the answer to a search of a project that does not exist.
func unknownSearchProject() error {
	return &Error{Kind: KindUnknownProject, Msg: "unknown project",
		Fields: []FieldError{{Path: []string{"project_id"}, Detail: "no project with this id"}}}
}

func searchNotFound(id string) error {
	return Errorf(KindNotFound, "no saved search with id %s", Brief(id))
}

// maxSearches is how many saved searches a project may hold under l.
func (l Limits) maxSearches() int { return cmp.Or(max(l.MaxSearchesPerProject, 0), DefaultMaxSearches) }

// checkSearchName reports a problem with a saved search's name; "" when it keeps the rules.
func checkSearchName(name string) string {
	if d := checkChars(name, 1, MaxSearchNameChars); d != "" {
		return d
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return "must not begin or end with white space"
	}
	return ""
}

// checkSearchRange reports a problem with a saved search's range; "" when it keeps the rules.
func checkSearchRange(seconds int) string {
	if seconds < 1 || seconds > MaxSearchRangeSeconds {
		return "must be from 1 to " + strconv.Itoa(MaxSearchRangeSeconds) + " seconds (366 days)"
	}
	return ""
}

// checkSearchQuery reports a problem with a saved search's query, as GET /logs reports one of
// its query parameter (the message gives the position); "" when it parses.
func (l Limits) checkSearchQuery(text string) (string, error) {
	_, err := ParseQuery(text, l.Query)
	var syntax *QuerySyntaxError
	switch {
	case errors.As(err, &syntax):
		return syntax.Msg, nil
	case err != nil:
		return "", err
	}
	return "", nil
}

// validateSearch checks what a client sets on a search: every member the patch names (for a
// new search, every member).
func (l Limits) validateSearch(p SearchPatch) error {
	var fields []FieldError
	if p.Name != nil {
		if d := checkSearchName(*p.Name); d != "" {
			fields = append(fields, FieldError{Path: []string{"name"}, Detail: d})
		}
	}
	if p.Query != nil {
		d, err := l.checkSearchQuery(*p.Query)
		if err != nil {
			return err
		}
		if d != "" {
			fields = append(fields, FieldError{Path: []string{"query"}, Detail: d})
		}
	}
	if p.RangeSeconds != nil {
		if d := checkSearchRange(*p.RangeSeconds); d != "" {
			fields = append(fields, FieldError{Path: []string{"range_seconds"}, Detail: d})
		}
	}
	if len(fields) == 0 {
		return nil
	}
	return &Error{Kind: KindInvalid, Msg: "invalid saved search", Fields: fields}
}

// storeSearchError phrases a store's answer about a search for the client.
func (s *Service) storeSearchError(op string, err error, id string) error {
	switch {
	case errors.Is(err, ErrTooManySearches):
		return &Error{Kind: KindConflict, Msg: fmt.Sprintf("the project holds %d saved searches, the most it may; delete one first", s.limits.maxSearches())}
	case errors.Is(err, ErrSearchNameTaken):
		return ErrSearchNameTaken
	case KindOf(err) == KindNotFound:
		return searchNotFound(id)
	case KindOf(err) == KindUnknownProject:
		return unknownSearchProject()
	}
	return fmt.Errorf("%s: %w", op, err)
}

// CreateSearch saves a search of in.ProjectID. A project key may save searches of its own
// project only (KindForbidden otherwise); a project that does not exist is KindUnknownProject;
// a name taken in the project, or a project at its most saved searches, KindConflict.
func (s *Service) CreateSearch(ctx context.Context, in SearchInput) (Search, error) {
	if err := authorize(ctx, in.ProjectID); err != nil {
		return Search{}, err
	}
	if err := s.limits.validateSearch(SearchPatch{Name: &in.Name, Query: &in.Query, RangeSeconds: &in.RangeSeconds}); err != nil {
		return Search{}, err
	}
	if !validID(in.ProjectID) {
		return Search{}, unknownSearchProject()
	}
	now := storeTime(s.now())
	sr := Search{ID: s.newID(), ProjectID: in.ProjectID, Name: in.Name, Query: in.Query, RangeSeconds: in.RangeSeconds, CreatedAt: now, UpdatedAt: now}
	if !validID(sr.ID) {
		return Search{}, errNoIDs
	}
	if err := s.store.CreateSearch(ctx, sr, s.limits.maxSearches()); err != nil {
		return Search{}, s.storeSearchError("create saved search", err, sr.ID)
	}
	return sr, nil
}

// ListSearches returns the saved searches of a project, by name. A project key may list its own
// project's only (KindForbidden otherwise); KindNotFound if the project does not exist.
func (s *Service) ListSearches(ctx context.Context, projectID string) ([]Search, error) {
	if err := authorize(ctx, projectID); err != nil {
		return nil, err
	}
	if _, err := s.project(ctx, projectID); err != nil {
		return nil, err
	}
	out, err := s.store.ListSearches(ctx, projectID)
	if err != nil {
		return nil, fmt.Errorf("list saved searches: %w", err)
	}
	return out, nil
}

// GetSearch returns one saved search. A project key sees its own project's only: another
// project's search is KindNotFound, as an id that names nothing is, so that a key learns
// nothing of other projects' ids.
func (s *Service) GetSearch(ctx context.Context, id string) (Search, error) {
	if err := authenticated(ctx); err != nil {
		return Search{}, err
	}
	return s.search(ctx, id)
}

// authenticated answers KindUnauthenticated unless ctx acts for someone: what a project key
// may reach by a search's id is decided by the search's project (see search).
func authenticated(ctx context.Context) error {
	if _, ok := PrincipalFrom(ctx); !ok {
		return Errorf(KindUnauthenticated, "authentication required")
	}
	return nil
}

// search reads the search with id as the principal of ctx may see it.
func (s *Service) search(ctx context.Context, id string) (Search, error) {
	if !validID(id) {
		return Search{}, searchNotFound(id)
	}
	sr, err := s.store.GetSearch(ctx, id)
	if err != nil {
		return Search{}, s.storeSearchError("get saved search", err, id)
	}
	if authorize(ctx, sr.ProjectID) != nil {
		return Search{}, searchNotFound(id)
	}
	return sr, nil
}

// PatchSearch applies a merge patch to a saved search: a name, query or range it names changes,
// what it does not name stays; UpdatedAt always advances. KindInvalid for values breaking the
// rules, KindNotFound as GetSearch, KindConflict for a name another search of the project has.
func (s *Service) PatchSearch(ctx context.Context, id string, patch SearchPatch) (Search, error) {
	if err := authenticated(ctx); err != nil {
		return Search{}, err
	}
	if err := s.limits.validateSearch(patch); err != nil {
		return Search{}, err
	}
	sr, err := s.search(ctx, id)
	if err != nil {
		return Search{}, err
	}
	if patch.Name != nil {
		sr.Name = *patch.Name
	}
	if patch.Query != nil {
		sr.Query = *patch.Query
	}
	if patch.RangeSeconds != nil {
		sr.RangeSeconds = *patch.RangeSeconds
	}
	now := storeTime(s.now())
	if !now.After(sr.UpdatedAt) {
		now = sr.UpdatedAt.Add(time.Microsecond)
	}
	sr.UpdatedAt = now
	if err := s.store.UpdateSearch(ctx, sr); err != nil {
		return Search{}, s.storeSearchError("update saved search", err, id)
	}
	return sr, nil
}

// DeleteSearch deletes a saved search; KindNotFound as GetSearch.
func (s *Service) DeleteSearch(ctx context.Context, id string) error {
	if err := authenticated(ctx); err != nil {
		return err
	}
	sr, err := s.search(ctx, id)
	if err != nil {
		return err
	}
	if err := s.store.DeleteSearch(ctx, sr.ProjectID, sr.ID); err != nil {
		return s.storeSearchError("delete saved search", err, id)
	}
	return nil
}
