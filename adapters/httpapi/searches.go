package httpapi

import (
	"context"
	"net/url"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

func toSearch(s domain.Search) rest.Search {
	// A range is at most domain.MaxSearchRangeSeconds, well within an int32.
	return rest.Search{Id: s.ID, ProjectId: s.ProjectID, Name: s.Name, Query: s.Query, RangeSeconds: int32(s.RangeSeconds),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// ListSearches implements rest.StrictServerInterface.
func (s *server) ListSearches(ctx context.Context, req rest.ListSearchesRequestObject) (rest.ListSearchesResponseObject, error) {
	list, err := s.svc.ListSearches(ctx, req.Params.ProjectId)
	if err != nil {
		return nil, err
	}
	out := make(rest.ListSearches200JSONResponse, len(list))
	for i, sr := range list {
		out[i] = toSearch(sr)
	}
	return out, nil
}

// CreateSearch implements rest.StrictServerInterface.
func (s *server) CreateSearch(ctx context.Context, req rest.CreateSearchRequestObject) (rest.CreateSearchResponseObject, error) {
	b := req.Body
	sr, err := s.svc.CreateSearch(ctx, domain.SearchInput{ProjectID: b.ProjectId, Name: b.Name, Query: b.Query, RangeSeconds: int(b.RangeSeconds)})
	if err != nil {
		return nil, err
	}
	return rest.CreateSearch201JSONResponse{
		Body:    toSearch(sr),
		Headers: rest.CreateSearch201ResponseHeaders{Location: "/searches/" + url.PathEscape(sr.ID)},
	}, nil
}

// GetSearch implements rest.StrictServerInterface.
func (s *server) GetSearch(ctx context.Context, req rest.GetSearchRequestObject) (rest.GetSearchResponseObject, error) {
	sr, err := s.svc.GetSearch(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return rest.GetSearch200JSONResponse(toSearch(sr)), nil
}

// PatchSearch implements rest.StrictServerInterface: a JSON merge patch (RFC 7396) whose members
// cannot be null (the validator refuses a null before it gets here).
func (s *server) PatchSearch(ctx context.Context, req rest.PatchSearchRequestObject) (rest.PatchSearchResponseObject, error) {
	b := req.Body
	patch := domain.SearchPatch{Name: b.Name, Query: b.Query}
	if b.RangeSeconds != nil {
		n := int(*b.RangeSeconds)
		patch.RangeSeconds = &n
	}
	sr, err := s.svc.PatchSearch(ctx, req.Id, patch)
	if err != nil {
		return nil, err
	}
	return rest.PatchSearch200JSONResponse(toSearch(sr)), nil
}

// DeleteSearch implements rest.StrictServerInterface.
func (s *server) DeleteSearch(ctx context.Context, req rest.DeleteSearchRequestObject) (rest.DeleteSearchResponseObject, error) {
	if err := s.svc.DeleteSearch(ctx, req.Id); err != nil {
		return nil, err
	}
	return rest.DeleteSearch204Response{}, nil
}
