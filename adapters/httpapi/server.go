package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/oapi-codegen/nullable"

	"example.com/obsvc/api/rest"
	"example.com/obsvc/domain"
)

// server implements the generated strict server interface by calling the domain. Handlers return
// domain errors as errors; the one problem writer maps them.
type server struct {
	svc       *domain.Service
	log       *slog.Logger
	stall     time.Duration
	onCreated func(int)
	onDeleted func(int64)
	// exportPage and exportTimeout are an export's page size and the bound of each page's
	// read (Options.ExportPageSize, ExportPageTimeout).
	exportPage    int
	exportTimeout time.Duration
	// buffers recycles the listings' stream buffers (*bufio.Writer of streamBuffer bytes): a
	// 1,000-entry page was a fifth of its allocated bytes in a buffer used once.
	buffers *sync.Pool
}

var _ rest.StrictServerInterface = (*server)(nil)

func toProject(p domain.Project) rest.Project {
	out := rest.Project{Id: p.ID, Name: p.Name, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, RetentionDays: nullable.NewNullNullable[int]()}
	if p.RetentionDays != nil {
		out.RetentionDays.Set(*p.RetentionDays)
	}
	return out
}

// optional is a member a client may leave out, send as null or send with a value.
func optional(n nullable.Nullable[int]) domain.Optional[int] {
	if !n.IsSpecified() {
		return domain.Optional[int]{}
	}
	if n.IsNull() {
		return domain.Optional[int]{Set: true}
	}
	v := n.MustGet()
	return domain.Optional[int]{Set: true, Value: &v}
}

func toEntry(e domain.LogEntry) rest.LogEntry {
	return rest.LogEntry{Id: e.ID, ProjectId: e.ProjectID, Time: e.Time, Level: e.Level, Message: e.Message, Subject: e.Subject, UserId: e.UserID,
		Attributes: rest.Attributes(e.Attributes), TraceId: e.TraceID, SpanId: e.SpanID}
}

// ListProjects implements rest.StrictServerInterface.
func (s *server) ListProjects(ctx context.Context, _ rest.ListProjectsRequestObject) (rest.ListProjectsResponseObject, error) {
	ps, err := s.svc.ListProjects(ctx)
	if err != nil {
		return nil, err
	}
	out := make(rest.ListProjects200JSONResponse, len(ps))
	for i, p := range ps {
		out[i] = toProject(p)
	}
	return out, nil
}

// CreateProject implements rest.StrictServerInterface.
func (s *server) CreateProject(ctx context.Context, req rest.CreateProjectRequestObject) (rest.CreateProjectResponseObject, error) {
	p, err := s.svc.CreateProject(ctx, domain.ProjectInput{Name: req.Body.Name, RetentionDays: optional(req.Body.RetentionDays)})
	if err != nil {
		return nil, err
	}
	return rest.CreateProject201JSONResponse{
		Body:    toProject(p),
		Headers: rest.CreateProject201ResponseHeaders{Location: "/projects/" + url.PathEscape(p.ID)},
	}, nil
}

// GetProject implements rest.StrictServerInterface.
func (s *server) GetProject(ctx context.Context, req rest.GetProjectRequestObject) (rest.GetProjectResponseObject, error) {
	p, err := s.svc.GetProject(ctx, req.Id)
	if err != nil {
		return nil, err
	}
	return rest.GetProject200JSONResponse(toProject(p)), nil
}

// UpdateProject implements rest.StrictServerInterface.
func (s *server) UpdateProject(ctx context.Context, req rest.UpdateProjectRequestObject) (rest.UpdateProjectResponseObject, error) {
	p, err := s.svc.UpdateProject(ctx, req.Id, domain.ProjectInput{Name: req.Body.Name, RetentionDays: optional(req.Body.RetentionDays)})
	if err != nil {
		return nil, err
	}
	return rest.UpdateProject200JSONResponse(toProject(p)), nil
}

// PatchProject implements rest.StrictServerInterface: a JSON merge patch (RFC 7396), whose
// absent members stay as they are and whose null retention keeps entries forever.
func (s *server) PatchProject(ctx context.Context, req rest.PatchProjectRequestObject) (rest.PatchProjectResponseObject, error) {
	p, err := s.svc.PatchProject(ctx, req.Id, domain.ProjectPatch{Name: req.Body.Name, RetentionDays: optional(req.Body.RetentionDays)})
	if err != nil {
		return nil, err
	}
	return rest.PatchProject200JSONResponse(toProject(p)), nil
}

// DeleteProject implements rest.StrictServerInterface.
func (s *server) DeleteProject(ctx context.Context, req rest.DeleteProjectRequestObject) (rest.DeleteProjectResponseObject, error) {
	if err := s.svc.DeleteProject(ctx, req.Id); err != nil {
		return nil, err
	}
	return rest.DeleteProject204Response{}, nil
}

// CreateLogs implements rest.StrictServerInterface.
func (s *server) CreateLogs(ctx context.Context, req rest.CreateLogsRequestObject) (rest.CreateLogsResponseObject, error) {
	if req.JSONBody == nil {
		// Cannot happen: the validator hands every batch on as a JSON array (checkLogs).
		return nil, &httpError{status: http.StatusUnsupportedMediaType, detail: "the body must be " + contentJSON + " or " + contentNDJSON}
	}
	resp, err := s.createLogs(ctx, *req.JSONBody, req.Params)
	if err != nil {
		// The problems of an NDJSON batch's entries name their lines.
		return nil, annotateNDJSON(ctx, err)
	}
	return resp, nil
}

// createLogs stores body, a decoded batch, as CreateLogs answers it.
func (s *server) createLogs(ctx context.Context, body rest.CreateLogsJSONRequestBody, params rest.CreateLogsParams) (rest.CreateLogsResponseObject, error) {
	in := make([]domain.LogInput, len(body))
	for i := range body {
		e := &body[i]
		in[i] = domain.LogInput{ProjectID: e.ProjectId, Message: &e.Message, Level: e.Level, Time: e.Time, Subject: e.Subject, UserID: e.UserId,
			Attributes: json.RawMessage(e.Attributes), TraceID: e.TraceId, SpanID: e.SpanId}
	}
	var key string
	if params.IdempotencyKey != nil {
		key = *params.IdempotencyKey
	}
	c, err := s.svc.CreateLogs(ctx, in, key)
	if err != nil {
		return nil, err
	}
	resp := rest.CreateLogs201JSONResponse{Body: rest.LogsCreated{Created: int64(c.N)}}
	if c.Replayed {
		replayed := "true"
		resp.Headers.IdempotencyReplayed = &replayed
	} else if s.onCreated != nil {
		s.onCreated(c.N)
	}
	return resp, nil
}

// DeleteLogs implements rest.StrictServerInterface.
func (s *server) DeleteLogs(ctx context.Context, req rest.DeleteLogsRequestObject) (rest.DeleteLogsResponseObject, error) {
	p := req.Params
	n, err := s.svc.DeleteLogs(ctx, filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, p.StartTime, p.EndTime))
	if err != nil {
		return nil, err
	}
	if s.onDeleted != nil {
		s.onDeleted(n)
	}
	return rest.DeleteLogs200JSONResponse{Deleted: n}, nil
}

// query is the query parameter: absent or empty means no query (every entry).
func query(p *rest.Query) *string {
	if p == nil || *p == "" {
		return nil
	}
	return p
}

// orZero is *p, or T's zero value when p is nil.
func orZero[T any](p *T) T {
	var v T
	if p != nil {
		v = *p
	}
	return v
}

// filter is the filters every read route shares (a listing's, a delete's, stats', facets',
// fields'), as the domain takes them: an absent log_level is no level filter, an empty query
// none.
func filter(project string, user *string, lv *rest.LogLevel, subject, q *string, qry *rest.Query, trace *string, start, end *int64) domain.LogFilter {
	f := domain.LogFilter{ProjectID: project, UserID: user, Subject: subject, Q: q, Query: query(qry), TraceID: trace, Start: start, End: end}
	if lv != nil {
		f.Levels = *lv
	}
	return f
}

// LogStats implements rest.StrictServerInterface.
func (s *server) LogStats(ctx context.Context, req rest.LogStatsRequestObject) (rest.LogStatsResponseObject, error) {
	p := req.Params
	st, err := s.svc.LogStats(ctx, domain.StatsQuery{
		LogFilter: filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, &p.StartTime, &p.EndTime),
		Step:      p.Step, By: string(orZero(p.By)), Series: orZero(p.Series), // zero: the default
	})
	if err != nil {
		return nil, err
	}
	out := rest.LogStats200JSONResponse{Step: st.Step, Buckets: st.Buckets, Series: make([]rest.LogSeries, len(st.Series)), Total: st.Total}
	for i, sr := range st.Series {
		value := nullable.NewNullNullable[string]()
		var attr json.RawMessage // absent unless an attribute's value
		if sr.Value != nil {
			value.Set(*sr.Value)
			if st.Attribute {
				attr = json.RawMessage(*sr.Value) // the stored JSON text, a number as written
			}
		}
		out.Series[i] = rest.LogSeries{Value: value, AttributeValue: attr, Counts: sr.Counts, Total: sr.Total}
		if sr.Other {
			out.Series[i].Other = &sr.Other
		}
	}
	return out, nil
}

// LogFacets implements rest.StrictServerInterface.
func (s *server) LogFacets(ctx context.Context, req rest.LogFacetsRequestObject) (rest.LogFacetsResponseObject, error) {
	p := req.Params
	q := domain.FacetsQuery{
		LogFilter: filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, &p.StartTime, &p.EndTime),
		Fields:    p.Field,
	}
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
		if q.Limit == 0 {
			q.Limit = -1 // zero means "default" to the domain; a client's 0 is out of range
		}
	}
	facets, err := s.svc.Facets(ctx, q)
	if err != nil {
		return nil, err
	}
	out := rest.LogFacets200JSONResponse{Facets: make([]rest.LogFacet, len(facets))}
	for i, f := range facets {
		values := make([]rest.FacetValue, len(f.Values))
		for j, v := range f.Values {
			values[j] = rest.FacetValue{Value: json.RawMessage(v.Value), Count: v.Count}
		}
		out.Facets[i] = rest.LogFacet{Field: f.Field, Values: values, Other: f.Other, Missing: f.Missing}
	}
	return out, nil
}

// LogFields implements rest.StrictServerInterface.
func (s *server) LogFields(ctx context.Context, req rest.LogFieldsRequestObject) (rest.LogFieldsResponseObject, error) {
	p := req.Params
	keys, err := s.svc.Fields(ctx, domain.FieldsQuery{
		LogFilter: filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, &p.StartTime, &p.EndTime),
	})
	if err != nil {
		return nil, err
	}
	out := make(rest.LogFields200JSONResponse, len(keys))
	for i, k := range keys {
		out[i] = rest.LogField{Field: k.Field, Count: k.Count}
	}
	return out, nil
}

// ListLogs implements rest.StrictServerInterface. The page is not read here: the returned
// response streams it from the store while writing the body.
func (s *server) ListLogs(ctx context.Context, req rest.ListLogsRequestObject) (rest.ListLogsResponseObject, error) {
	p := req.Params
	q := domain.LogQuery{
		LogFilter: filter(p.ProjectId, p.UserId, p.LogLevel, p.Subject, p.Q, p.Query, p.TraceId, p.StartTime, p.EndTime),
		Desc:      p.Order != nil && *p.Order == rest.Desc,
	}
	if p.Limit != nil {
		q.Limit = int(*p.Limit)
		if q.Limit == 0 {
			q.Limit = -1 // zero means "default" to the domain; a client's 0 is out of range
		}
	}
	if p.Cursor != nil {
		c, err := domain.DecodeCursor(*p.Cursor)
		if err != nil {
			return nil, err
		}
		q.After = &c
	}
	return logsPage{ctx: ctx, svc: s.svc, q: q, self: requestURL(ctx), stall: s.stall, log: s.log, buffers: s.buffers}, nil
}

// logsPage is the 200 response of ListLogs, streamed: the Link header comes from the page's next
// cursor, known before the first entry; the entries are encoded one by one as the store yields
// them, so memory does not grow with the page size.
type logsPage struct {
	ctx     context.Context
	svc     *domain.Service
	q       domain.LogQuery
	self    *url.URL
	stall   time.Duration
	log     *slog.Logger
	buffers *sync.Pool
}

// streamBuffer is how much of a listing is buffered between writes to the connection.
const streamBuffer = 32 << 10

func (p logsPage) VisitListLogsResponse(w http.ResponseWriter) error {
	started := false
	err := p.svc.ListLogs(p.ctx, p.q, func(page domain.Page) error {
		h := w.Header()
		h.Set("Content-Type", "application/json")
		if page.Next != nil && p.self != nil {
			h.Set("Link", "<"+nextURL(p.self, *page.Next)+`>; rel="next"`)
		}
		started = true
		w.WriteHeader(http.StatusOK)
		bw, release := streamWriter(p.buffers, w, p.stall)
		defer release()
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		_ = bw.WriteByte('[')
		var entry rest.LogEntry
		if err := encodeEntries(bw, enc, &entry, page.Entries); err != nil {
			return err
		}
		_, _ = bw.WriteString("]\n")
		return bw.Flush()
	})
	return endStream(p.ctx, p.log, "listing", err, started)
}

// endStream ends a streamed response that failed with err: before the status went out (not
// started), err goes back to be answered as a problem; after it, the status and part of the body
// are out and the only honest signal left is to cut the response short, so the client sees a
// broken body rather than a short valid one. what names the stream in the log.
func endStream(ctx context.Context, log *slog.Logger, what string, err error, started bool) error {
	if err != nil && started {
		log.ErrorContext(ctx, what+" failed mid-stream", "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}

// streamWriter takes a buffered writer from pool and points it at w through a stallWriter
// bounded by stall; release returns it to the pool, holding no reference to w.
func streamWriter(pool *sync.Pool, w http.ResponseWriter, stall time.Duration) (bw *bufio.Writer, release func()) {
	bw, _ = pool.Get().(*bufio.Writer)
	if bw == nil {
		bw = bufio.NewWriterSize(nil, streamBuffer)
	}
	bw.Reset(stallWriter{w: w, rc: http.NewResponseController(w), stall: stall})
	return bw, func() {
		bw.Reset(nil)
		pool.Put(bw)
	}
}

// encodeEntries writes entries to bw as the elements of a JSON array, comma-separated, each as
// a listing renders it. entry is one value overwritten for each entry: encoding a fresh one per
// entry moved each to the heap, the most allocated object of a listing after the driver's.
func encodeEntries(bw *bufio.Writer, enc *json.Encoder, entry *rest.LogEntry, entries func(func(domain.LogEntry, error) bool)) error {
	first := true
	for e, err := range entries {
		if err != nil {
			return err
		}
		if !first {
			_ = bw.WriteByte(',')
		}
		first = false
		*entry = toEntry(e)
		if err := enc.Encode(entry); err != nil {
			return err
		}
	}
	return nil
}

// stallWriter renews the connection's write deadline before each write it passes on, one per
// flush of the stream's buffer: each part of the body must be taken by the client within stall,
// so a client that stops reading fails the write instead of holding the connection (and the
// store's reader behind it) until the server's write timeout.
type stallWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (s stallWriter) Write(b []byte) (int, error) {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.stall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, fmt.Errorf("renew write deadline: %w", err)
	}
	n, err := s.w.Write(b)
	if err != nil {
		return n, err
	}
	// Push the part out now, so that the deadline set for it is the one it is held to.
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return n, fmt.Errorf("flush listing: %w", err)
	}
	return n, nil
}

// nextURL is the relative reference (RFC 3986 §4.2, an absolute path) of the next page: self's
// path and query with the cursor parameter set to c. It never names a scheme or host: those would
// come from the client's Host header, which anyone may set, and a relative reference resolves
// against the URL the client used (RFC 8288 §3.1).
func nextURL(self *url.URL, c domain.Cursor) string {
	q := self.Query()
	q.Del("cursor")
	u := url.URL{Path: self.Path, RawQuery: q.Encode()}
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "cursor=" + url.QueryEscape(domain.EncodeCursor(c))
	return u.String()
}

type requestURLKey struct{}

// withRequestURL is a strict middleware that records the path and query of the request, for links.
func withRequestURL(f rest.StrictHandlerFunc, _ string) rest.StrictHandlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, req any) (any, error) {
		u := &url.URL{Path: r.URL.Path, RawQuery: r.URL.RawQuery}
		return f(context.WithValue(ctx, requestURLKey{}, u), w, r, req)
	}
}

func requestURL(ctx context.Context) *url.URL {
	u, _ := ctx.Value(requestURLKey{}).(*url.URL)
	return u
}
