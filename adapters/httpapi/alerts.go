package httpapi

import (
	"context"
	"net/url"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// redactURL is a target's URL as the API shows it: a Slack URL is its secret, so its scheme and
// host only; any other without user information, query and fragment, which may carry secrets
// too. A URL that does not parse shows as "".
func redactURL(kind, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if kind == domain.TargetSlack {
		return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}).String()
}

func toAlert(r domain.AlertRule) rest.Alert {
	targets := make([]rest.AlertTarget, len(r.Targets))
	for i, t := range r.Targets {
		targets[i] = rest.AlertTarget{Type: rest.AlertTargetType(t.Type), Url: redactURL(t.Type, t.URL), BearerTokenSet: t.BearerToken != ""}
	}
	// Windows, intervals and durations are bounded far within an int32 (domain.MaxAlert…).
	out := rest.Alert{Id: r.ID, ProjectId: r.ProjectID, Name: r.Name, WindowSeconds: int32(r.WindowSeconds), IntervalSeconds: int32(r.IntervalSeconds),
		ForSeconds: int32(r.ForSeconds), Condition: rest.AlertCondition{Op: rest.AlertConditionOp(r.Condition.Op), Threshold: r.Condition.Threshold},
		Targets: targets, SilencedUntil: r.SilencedUntil, State: rest.AlertState(r.Status.State), NextEvaluation: r.Status.NextEvalAt,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.SearchID != "" {
		out.SearchId = &r.SearchID
	} else {
		out.Query = &r.Query
	}
	if st := r.Status; st.LastEvalAt != 0 {
		out.LastEvaluation = &rest.AlertEvaluation{Time: st.LastEvalAt, Count: st.LastCount, WindowStart: st.LastEvalAt - int64(r.WindowSeconds)*1000, WindowEnd: st.LastEvalAt}
	}
	return out
}

func fromTargets(in []rest.AlertTargetInput) []domain.AlertTarget {
	out := make([]domain.AlertTarget, len(in))
	for i, t := range in {
		out[i] = domain.AlertTarget{Type: string(t.Type), URL: t.Url}
		if t.BearerToken != nil {
			out[i].BearerToken = *t.BearerToken
		}
	}
	return out
}

func intPtr(v *int32) *int {
	if v == nil {
		return nil
	}
	n := int(*v)
	return &n
}

// ListAlerts implements rest.StrictServerInterface.
func (s *server) ListAlerts(ctx context.Context, req rest.ListAlertsRequestObject) (rest.ListAlertsResponseObject, error) {
	list, err := s.svc.ListAlerts(ctx, req.Params.ProjectId)
	if err != nil {
		return nil, err
	}
	out := make(rest.ListAlerts200JSONResponse, len(list))
	for i, r := range list {
		out[i] = toAlert(r)
	}
	return out, nil
}

// CreateAlert implements rest.StrictServerInterface.
func (s *server) CreateAlert(ctx context.Context, req rest.CreateAlertRequestObject) (rest.CreateAlertResponseObject, error) {
	b := req.Body
	in := domain.AlertInput{ProjectID: b.ProjectId, Name: b.Name, SearchID: b.SearchId, Query: b.Query, WindowSeconds: int(b.WindowSeconds),
		IntervalSeconds: int(b.IntervalSeconds), Condition: domain.AlertCondition{Op: string(b.Condition.Op), Threshold: b.Condition.Threshold},
		Targets: fromTargets(b.Targets)}
	if b.ForSeconds != nil {
		in.ForSeconds = int(*b.ForSeconds)
	}
	if b.SilencedUntil != nil {
		in.SilencedUntil = *b.SilencedUntil
	}
	r, err := s.svc.CreateAlert(ctx, in)
	if err != nil {
		return nil, err
	}
	return rest.CreateAlert201JSONResponse{
		Body:    toAlert(r),
		Headers: rest.CreateAlert201ResponseHeaders{Location: "/alerts/" + url.PathEscape(r.ID)},
	}, nil
}

// GetAlert implements rest.StrictServerInterface.
func (s *server) GetAlert(ctx context.Context, req rest.GetAlertRequestObject) (rest.GetAlertResponseObject, error) {
	r, err := s.svc.GetAlert(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return rest.GetAlert200JSONResponse(toAlert(r)), nil
}

// PatchAlert implements rest.StrictServerInterface: a JSON merge patch whose members cannot be
// null (the validator refuses a null before it gets here).
func (s *server) PatchAlert(ctx context.Context, req rest.PatchAlertRequestObject) (rest.PatchAlertResponseObject, error) {
	b := req.Body
	patch := domain.AlertPatch{Name: b.Name, SearchID: b.SearchId, Query: b.Query, WindowSeconds: intPtr(b.WindowSeconds),
		IntervalSeconds: intPtr(b.IntervalSeconds), ForSeconds: intPtr(b.ForSeconds), SilencedUntil: b.SilencedUntil}
	if b.Condition != nil {
		patch.Condition = &domain.AlertCondition{Op: string(b.Condition.Op), Threshold: b.Condition.Threshold}
	}
	if b.Targets != nil {
		patch.Targets = fromTargets(*b.Targets)
	}
	r, err := s.svc.PatchAlert(ctx, req.Id, patch)
	if err != nil {
		return nil, err
	}
	return rest.PatchAlert200JSONResponse(toAlert(r)), nil
}

// DeleteAlert implements rest.StrictServerInterface.
func (s *server) DeleteAlert(ctx context.Context, req rest.DeleteAlertRequestObject) (rest.DeleteAlertResponseObject, error) {
	if err := s.svc.DeleteAlert(ctx, req.Id); err != nil {
		return nil, err
	}
	return rest.DeleteAlert204Response{}, nil
}

// GetAlertHistory implements rest.StrictServerInterface.
func (s *server) GetAlertHistory(ctx context.Context, req rest.GetAlertHistoryRequestObject) (rest.GetAlertHistoryResponseObject, error) {
	h, err := s.svc.AlertHistory(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out := make(rest.GetAlertHistory200JSONResponse, len(h))
	for i, t := range h {
		out[i] = rest.AlertTransition{Seq: t.Seq, Time: t.Time, From: rest.AlertState(t.From), To: rest.AlertState(t.To), Count: t.Count,
			WindowStart: t.WindowStart, WindowEnd: t.WindowEnd}
	}
	return out, nil
}

// TestAlert implements rest.StrictServerInterface.
func (s *server) TestAlert(ctx context.Context, req rest.TestAlertRequestObject) (rest.TestAlertResponseObject, error) {
	res, err := s.svc.TestAlert(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	out := make(rest.TestAlert200JSONResponse, len(res))
	for i, r := range res {
		// A status is a three-digit number; the target's index at most domain.MaxAlertTargets.
		out[i] = rest.AlertTestResult{Target: int32(r.Target), Type: rest.AlertTestResultType(r.Type), Ok: r.Error == "",
			Status: int32(r.Result.Status), Body: r.Result.Body}
		if r.Error != "" {
			out[i].Error = &r.Error
		}
	}
	return out, nil
}
