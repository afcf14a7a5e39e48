// Command ogenclient drives every operation of the REST API through a client that ogen generates
// from openapi.yaml at its default options, against the live server at OBSVC_URL. The client is
// not committed: app/e2e/ogen_test.go copies this module into a scratch directory, generates package
// oas there with the ogen pinned in go.mod (go tool ogen), then runs this program.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"example.com/obsvc/ogenclient/oas"
)

// anyKey answers bearerAuth: the test server has no keys configured, so any key is accepted.
type anyKey struct{}

func (anyKey) BearerAuth(context.Context, oas.OperationName) (oas.BearerAuth, error) {
	return oas.BearerAuth{Token: "ogen"}, nil
}

// tailWatch is the client's HTTP client: it closes connected when the answer to a tail request
// has arrived, that is when the server has fixed the tail's start, so that the entries written
// after it are streamed, and delivered when the stream has carried an event naming the entry
// the program writes live. ogen's client reads an event stream to its end before it returns, so
// the tail is followed in a goroutine and the stream ends when the project is deleted. The
// program waits for delivered before it deletes the live entry: the contract does not order a
// tail's delivery against a later delete, so without the wait a slow machine could see the
// entry deleted before the tail read it.
type tailWatch struct {
	once      sync.Once
	connected chan struct{}
	delivered chan struct{}
}

func (w *tailWatch) Do(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(r)
	if err == nil && r.URL.Path == "/logs/tail" {
		w.once.Do(func() { close(w.connected) })
		resp.Body = &watchedBody{ReadCloser: resp.Body, want: []byte(`"message":"live"`), seen: w.delivered}
	}
	return resp, err
}

// watchedBody closes seen once the bytes read through it hold want.
type watchedBody struct {
	io.ReadCloser
	want []byte
	buf  []byte
	seen chan struct{}
	done bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if !b.done && n > 0 {
		b.buf = append(b.buf, p[:n]...)
		if bytes.Contains(b.buf, b.want) {
			b.done = true
			b.buf = nil
			close(b.seen)
		} else if keep := len(b.want) - 1; len(b.buf) > keep {
			b.buf = b.buf[len(b.buf)-keep:]
		}
	}
	return n, err
}

type tailResult struct {
	res oas.TailLogsRes
	err error
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Getenv("OBSVC_URL")); err != nil {
		fmt.Fprintln(os.Stderr, "ogenclient:", err)
		os.Exit(1)
	}
}

// as takes an operation's result and returns it as a T, or an error naming the operation and the
// type the client decoded: as[*oas.Project]("getProject")(c.GetProject(ctx, params)).
func as[T any](op string) func(res any, err error) (T, error) {
	return func(res any, err error) (T, error) {
		var zero T
		if err != nil {
			return zero, fmt.Errorf("%s: %w", op, err)
		}
		v, ok := res.(T)
		if !ok {
			return zero, fmt.Errorf("%s: got %T %+v, want %T", op, res, res, zero)
		}
		return v, nil
	}
}

func run(ctx context.Context, base string) error {
	if base == "" {
		return errors.New("OBSVC_URL must name a running server")
	}
	watch := &tailWatch{connected: make(chan struct{}), delivered: make(chan struct{})}
	c, err := oas.NewClient(base, anyKey{}, oas.WithClient(watch))
	if err != nil {
		return err
	}
	ops := 0

	created, err := as[*oas.ProjectHeaders]("createProject")(c.CreateProject(ctx, &oas.ProjectInput{Name: "ogen"}))
	if err != nil {
		return err
	}
	ops++
	p := created.Response
	if created.Location != "/projects/"+p.ID || !p.RetentionDays.Null {
		return fmt.Errorf("createProject: Location %q, project %+v", created.Location, p)
	}

	list, err := as[*oas.ListProjectsOKApplicationJSON]("listProjects")(c.ListProjects(ctx))
	if err != nil {
		return err
	}
	ops++
	found := false
	for _, q := range *list {
		found = found || q.ID == p.ID
	}
	if !found {
		return fmt.Errorf("listProjects: %s missing", p.ID)
	}

	got, err := as[*oas.Project]("getProject")(c.GetProject(ctx, oas.GetProjectParams{ID: p.ID}))
	if err != nil {
		return err
	}
	ops++
	if got.Name != "ogen" {
		return fmt.Errorf("getProject: %+v", got)
	}
	if _, err := as[*oas.GetProjectNotFound]("getProject (missing)")(c.GetProject(ctx, oas.GetProjectParams{ID: "no-such-project"})); err != nil {
		return err
	}

	renamed, err := as[*oas.Project]("updateProject")(c.UpdateProject(ctx, &oas.ProjectInput{Name: "ogen-2"}, oas.UpdateProjectParams{ID: p.ID}))
	if err != nil {
		return err
	}
	ops++
	if renamed.Name != "ogen-2" || !renamed.UpdatedAt.After(p.UpdatedAt) {
		return fmt.Errorf("updateProject: %+v", renamed)
	}

	patch := &oas.ProjectPatch{}
	patch.RetentionDays.SetTo(7)
	patched, err := as[*oas.Project]("patchProject")(c.PatchProject(ctx, patch, oas.PatchProjectParams{ID: p.ID}))
	if err != nil {
		return err
	}
	if patched.RetentionDays.Null || patched.RetentionDays.Value != 7 || patched.Name != "ogen-2" {
		return fmt.Errorf("patchProject: %+v", patched)
	}
	forever := &oas.ProjectPatch{}
	forever.RetentionDays.SetToNull()
	if patched, err = as[*oas.Project]("patchProject (null)")(c.PatchProject(ctx, forever, oas.PatchProjectParams{ID: p.ID})); err != nil {
		return err
	}
	ops++
	if !patched.RetentionDays.Null {
		return fmt.Errorf("patchProject: retention %+v, want null", patched.RetentionDays)
	}

	entries := []oas.LogEntryInput{
		{ProjectID: p.ID, Message: "one", Level: oas.NewOptString("error"), UserID: oas.NewOptString("u1"), Time: oas.NewOptInt64(1000),
			Attributes: oas.NewOptAttributes(oas.Attributes{"n": []byte("12345678901234567890")})},
		{ProjectID: p.ID, Message: "two", Time: oas.NewOptInt64(2000)},
		{ProjectID: p.ID, Message: "three", Time: oas.NewOptInt64(3000), Subject: oas.NewOptString("checkout")},
	}
	logs, err := as[*oas.LogsCreatedHeaders]("createLogs")(c.CreateLogs(ctx, entries, oas.CreateLogsParams{IdempotencyKey: oas.NewOptString("ogen-1")}))
	if err != nil {
		return err
	}
	ops++
	if logs.Response.Created != 3 || logs.IdempotencyReplayed.Set {
		return fmt.Errorf("createLogs: %+v", logs)
	}
	replay, err := as[*oas.LogsCreatedHeaders]("createLogs (retry)")(c.CreateLogs(ctx, entries, oas.CreateLogsParams{IdempotencyKey: oas.NewOptString("ogen-1")}))
	if err != nil {
		return err
	}
	if replay.Response.Created != 3 || !replay.IdempotencyReplayed.Set {
		return fmt.Errorf("createLogs (retry): %+v", replay)
	}

	// A tail of the error entries, followed until the project is deleted; once it is under way,
	// one more error entry is written, and the stream must carry it.
	tailed := make(chan tailResult, 1)
	go func() {
		res, err := c.TailLogs(ctx, oas.TailLogsParams{ProjectID: p.ID, LogLevel: []string{"error"}})
		tailed <- tailResult{res, err}
	}()
	select {
	case <-watch.connected:
	case r := <-tailed:
		return fmt.Errorf("tailLogs: ended before it started: %T %+v %v", r.res, r.res, r.err)
	case <-ctx.Done():
		return fmt.Errorf("tailLogs: %w", ctx.Err())
	}
	live := []oas.LogEntryInput{{ProjectID: p.ID, Message: "live", Level: oas.NewOptString("error"), Time: oas.NewOptInt64(1500)}}
	if _, err := as[*oas.LogsCreatedHeaders]("createLogs (live)")(c.CreateLogs(ctx, live, oas.CreateLogsParams{})); err != nil {
		return err
	}

	page, err := as[*oas.ListLogsOKHeaders]("listLogs")(c.ListLogs(ctx, oas.ListLogsParams{ProjectID: p.ID, Limit: oas.NewOptInt32(2)}))
	if err != nil {
		return err
	}
	ops++
	if len(page.Response) != 2 || page.Response[0].Message != "one" || page.Response[1].Message != "live" || !page.Link.Set {
		return fmt.Errorf("listLogs: %+v", page)
	}
	if n := string(page.Response[0].Attributes.Value["n"]); n != "12345678901234567890" {
		return fmt.Errorf("listLogs: attribute n = %s", n)
	}
	byLevel, err := as[*oas.ListLogsOKHeaders]("listLogs (log_level)")(c.ListLogs(ctx, oas.ListLogsParams{ProjectID: p.ID, LogLevel: []string{"error", "fatal"}, Order: oas.NewOptListLogsOrder(oas.ListLogsOrderDesc)}))
	if err != nil {
		return err
	}
	if len(byLevel.Response) != 2 || byLevel.Response[1].UserID.Value != "u1" {
		return fmt.Errorf("listLogs (log_level): %+v", byLevel.Response)
	}
	bad, err := as[*oas.ListLogsBadRequest]("listLogs (start after end)")(c.ListLogs(ctx, oas.ListLogsParams{ProjectID: p.ID, StartTime: oas.NewOptInt64(5), EndTime: oas.NewOptInt64(1)}))
	if err != nil {
		return err
	}
	if bad.Status != 400 || len(bad.Errors) != 1 || bad.Errors[0].Parameter.Value != "start_time" {
		return fmt.Errorf("listLogs (start after end): %+v", bad)
	}

	stats, err := as[*oas.LogStats]("logStats")(c.LogStats(ctx, oas.LogStatsParams{ProjectID: p.ID, StartTime: 0, EndTime: 9999, Step: 5000}))
	if err != nil {
		return err
	}
	ops++
	if stats.Total != 4 || len(stats.Buckets) != 2 || len(stats.Series) != 2 || stats.Series[0].Value.Value != "error" || stats.Series[0].Total != 2 {
		return fmt.Errorf("logStats: %+v", stats)
	}

	facets, err := as[*oas.LogFacets]("logFacets")(c.LogFacets(ctx, oas.LogFacetsParams{ProjectID: p.ID, StartTime: 0, EndTime: 9999, Field: []string{"level"}}))
	if err != nil {
		return err
	}
	ops++
	if len(facets.Facets) != 1 || len(facets.Facets[0].Values) == 0 {
		return fmt.Errorf("logFacets: %+v", facets)
	}
	counted := facets.Facets[0].Other + facets.Facets[0].Missing
	for _, v := range facets.Facets[0].Values {
		counted += v.Count
	}
	if counted != stats.Total {
		return fmt.Errorf("logFacets: %+v counts %d entries, stats %d", facets, counted, stats.Total)
	}
	fields, err := as[*oas.LogFieldsOKApplicationJSON]("logFields")(c.LogFields(ctx, oas.LogFieldsParams{ProjectID: p.ID, StartTime: 0, EndTime: 9999}))
	if err != nil {
		return err
	}
	ops++
	for _, f := range *fields {
		if f.Count < 1 || f.Count > stats.Total {
			return fmt.Errorf("logFields: %+v", *fields)
		}
	}

	// The entries around the first one, then every entry as a CSV download.
	first := page.Response[0].ID
	around, err := as[*oas.LogContext]("logContext")(c.LogContext(ctx, oas.LogContextParams{ProjectID: p.ID, ID: first, Before: oas.NewOptInt32(0), After: oas.NewOptInt32(1)}))
	if err != nil {
		return err
	}
	ops++
	if len(around.Before) != 0 || around.Entry.ID != first || len(around.After) != 1 || around.After[0].ID != page.Response[1].ID {
		return fmt.Errorf("logContext: %+v", around)
	}
	download, err := as[*oas.ExportLogsOKTextCsvHeaders]("exportLogs")(c.ExportLogs(ctx, oas.ExportLogsParams{ProjectID: p.ID, Format: oas.NewOptExportLogsFormat(oas.ExportLogsFormatCsv)}))
	if err != nil {
		return err
	}
	ops++
	rows, err := io.ReadAll(download.Response)
	if err != nil || !strings.HasPrefix(string(rows), "time,level,subject,user_id,trace_id,span_id,message,attributes\n") ||
		!strings.HasPrefix(download.ContentDisposition, "attachment; ") {
		return fmt.Errorf("exportLogs: %v, %q, %.300q", err, download.ContentDisposition, rows)
	}

	otlp := &oas.OtlpExportLogsServiceRequest{ResourceLogs: []oas.OtlpExportLogsServiceRequestResourceLogsItem{{
		ScopeLogs: []oas.OtlpExportLogsServiceRequestResourceLogsItemScopeLogsItem{{
			LogRecords: []oas.OtlpLogRecord{{
				TimeUnixNano: oas.NewOptString("4000000000"),
				SeverityText: oas.NewOptString("WARN"),
				Body:         oas.NewOptOtlpAnyValue(oas.OtlpAnyValue{StringValue: oas.NewOptString("over otlp")}),
			}},
		}},
	}}}
	exported, err := as[*oas.OtlpExportLogsServiceResponse]("exportOtlpLogs (JSON)")(c.ExportOtlpLogs(ctx, otlp, oas.ExportOtlpLogsParams{XProjectID: oas.NewOptString(p.ID)}))
	if err != nil {
		return err
	}
	ops++
	if exported.PartialSuccess.Set && exported.PartialSuccess.Value.RejectedLogRecords.Value != "0" && exported.PartialSuccess.Value.RejectedLogRecords.Value != "" {
		return fmt.Errorf("exportOtlpLogs (JSON): %+v", exported)
	}
	// An empty body is an empty ExportLogsServiceRequest in the protobuf encoding.
	empty := &oas.ExportOtlpLogsReqApplicationXProtobuf{Data: bytes.NewReader(nil)}
	if _, err := as[*oas.ExportOtlpLogsOKApplicationXProtobuf]("exportOtlpLogs (protobuf)")(c.ExportOtlpLogs(ctx, empty, oas.ExportOtlpLogsParams{XProjectID: oas.NewOptString(p.ID)})); err != nil {
		return err
	}
	otlpOnly, err := as[*oas.ListLogsOKHeaders]("listLogs (otlp)")(c.ListLogs(ctx, oas.ListLogsParams{ProjectID: p.ID, LogLevel: []string{"warn"}}))
	if err != nil {
		return err
	}
	if len(otlpOnly.Response) != 1 || otlpOnly.Response[0].Message != "over otlp" || otlpOnly.Response[0].Time != 4000 {
		return fmt.Errorf("listLogs (otlp): %+v", otlpOnly.Response)
	}

	select {
	case <-watch.delivered:
	case r := <-tailed:
		return fmt.Errorf("tailLogs: ended before the live entry: %T %+v %v", r.res, r.res, r.err)
	case <-ctx.Done():
		return fmt.Errorf("tailLogs: the live entry did not arrive: %w", ctx.Err())
	}
	deleted, err := as[*oas.LogsDeleted]("deleteLogs")(c.DeleteLogs(ctx, oas.DeleteLogsParams{ProjectID: p.ID, EndTime: oas.NewOptInt64(2000)}))
	if err != nil {
		return err
	}
	ops++
	if deleted.Deleted != 3 {
		return fmt.Errorf("deleteLogs: %+v", deleted)
	}

	if err := savedSearches(ctx, c, p.ID, &ops); err != nil {
		return err
	}
	if err := alertRules(ctx, c, p.ID, &ops); err != nil {
		return err
	}

	if _, err := as[*oas.DeleteProjectNoContent]("deleteProject")(c.DeleteProject(ctx, oas.DeleteProjectParams{ID: p.ID})); err != nil {
		return err
	}
	ops++
	if _, err := as[*oas.GetProjectNotFound]("getProject (deleted)")(c.GetProject(ctx, oas.GetProjectParams{ID: p.ID})); err != nil {
		return err
	}
	r := <-tailed
	tail, err := as[*oas.TailLogsOK]("tailLogs")(r.res, r.err)
	if err != nil {
		return err
	}
	ops++
	events, err := dataLines(tail.Data)
	if err != nil {
		return fmt.Errorf("tailLogs: %w", err)
	}
	if len(events) != 1 || !strings.Contains(events[0], `"message":"live"`) {
		return fmt.Errorf("tailLogs: events %q, want the live entry alone", events)
	}
	fmt.Printf("ogenclient: %d operations: ok\n", ops)
	return nil
}

// savedSearches drives the saved-search operations on the project: save, list, read, patch, a
// taken name, delete; ops counts the operations it ran.
func savedSearches(ctx context.Context, c *oas.Client, project string, ops *int) error {
	in := &oas.SearchInput{ProjectID: project, Name: "errors", Query: "level:error", RangeSeconds: 3600}
	saved, err := as[*oas.SearchHeaders]("createSearch")(c.CreateSearch(ctx, in))
	if err != nil {
		return err
	}
	*ops++
	s := saved.Response
	if saved.Location != "/searches/"+s.ID || s.ProjectID != project || s.Name != "errors" || s.RangeSeconds != 3600 {
		return fmt.Errorf("createSearch: Location %q, search %+v", saved.Location, s)
	}
	list, err := as[*oas.ListSearchesOKApplicationJSON]("listSearches")(c.ListSearches(ctx, oas.ListSearchesParams{ProjectID: project}))
	if err != nil {
		return err
	}
	*ops++
	if len(*list) != 1 || (*list)[0].ID != s.ID {
		return fmt.Errorf("listSearches: %+v", *list)
	}
	got, err := as[*oas.Search]("getSearch")(c.GetSearch(ctx, oas.GetSearchParams{ID: s.ID}))
	if err != nil {
		return err
	}
	*ops++
	if got.ID != s.ID || got.Query != "level:error" {
		return fmt.Errorf("getSearch: %+v", got)
	}
	patched, err := as[*oas.Search]("patchSearch")(c.PatchSearch(ctx, &oas.SearchPatch{RangeSeconds: oas.NewOptSearchRange(86400)}, oas.PatchSearchParams{ID: s.ID}))
	if err != nil {
		return err
	}
	*ops++
	if patched.RangeSeconds != 86400 || patched.Name != "errors" || !patched.UpdatedAt.After(s.UpdatedAt) {
		return fmt.Errorf("patchSearch: %+v", patched)
	}
	if _, err := as[*oas.CreateSearchConflict]("createSearch (a taken name)")(c.CreateSearch(ctx, in)); err != nil {
		return err
	}
	if _, err := as[*oas.DeleteSearchNoContent]("deleteSearch")(c.DeleteSearch(ctx, oas.DeleteSearchParams{ID: s.ID})); err != nil {
		return err
	}
	*ops++
	if _, err := as[*oas.GetSearchNotFound]("getSearch (deleted)")(c.GetSearch(ctx, oas.GetSearchParams{ID: s.ID})); err != nil {
		return err
	}
	return nil
}

// alertRules drives the alert operations on the project: create (its secret not returned),
// list, read, patch, history, the test button (the target, on the discard port, does not
// answer), a refused target, delete; ops counts the operations it ran. The server allows
// targets on 127.0.0.1.
func alertRules(ctx context.Context, c *oas.Client, project string, ops *int) error {
	in := &oas.AlertInput{ProjectID: project, Name: "errors", Query: oas.NewOptSearchQuery("level:error"), WindowSeconds: 300, IntervalSeconds: 60,
		Condition: oas.AlertCondition{Op: oas.AlertConditionOpGreater, Threshold: 10},
		Targets:   []oas.AlertTargetInput{{Type: oas.AlertTargetInputTypeWebhook, URL: "http://127.0.0.1:9/hook?token=secret", BearerToken: oas.NewOptString("secret")}}}
	created, err := as[*oas.AlertHeaders]("createAlert")(c.CreateAlert(ctx, in))
	if err != nil {
		return err
	}
	*ops++
	a := created.Response
	if created.Location != "/alerts/"+a.ID || a.State != oas.AlertStateOk || a.Targets[0].URL != "http://127.0.0.1:9/hook" || !a.Targets[0].BearerTokenSet {
		return fmt.Errorf("createAlert: Location %q, alert %+v", created.Location, a)
	}
	list, err := as[*oas.ListAlertsOKApplicationJSON]("listAlerts")(c.ListAlerts(ctx, oas.ListAlertsParams{ProjectID: project}))
	if err != nil {
		return err
	}
	*ops++
	if len(*list) != 1 || (*list)[0].ID != a.ID {
		return fmt.Errorf("listAlerts: %+v", *list)
	}
	got, err := as[*oas.Alert]("getAlert")(c.GetAlert(ctx, oas.GetAlertParams{ID: a.ID}))
	if err != nil {
		return err
	}
	*ops++
	if got.Query.Value != "level:error" || got.WindowSeconds != 300 {
		return fmt.Errorf("getAlert: %+v", got)
	}
	patched, err := as[*oas.Alert]("patchAlert")(c.PatchAlert(ctx, &oas.AlertPatch{SilencedUntil: oas.NewOptInt64(1)}, oas.PatchAlertParams{ID: a.ID}))
	if err != nil {
		return err
	}
	*ops++
	if patched.SilencedUntil != 1 || patched.Name != "errors" {
		return fmt.Errorf("patchAlert: %+v", patched)
	}
	if _, err := as[*oas.GetAlertHistoryOKApplicationJSON]("getAlertHistory")(c.GetAlertHistory(ctx, oas.GetAlertHistoryParams{ID: a.ID})); err != nil {
		return err
	}
	*ops++
	tested, err := as[*oas.TestAlertOKApplicationJSON]("testAlert")(c.TestAlert(ctx, oas.TestAlertParams{ID: a.ID}))
	if err != nil {
		return err
	}
	*ops++
	if len(*tested) != 1 || (*tested)[0].Ok {
		return fmt.Errorf("testAlert: %+v", *tested)
	}
	in.Targets[0].URL = "http://169.254.169.254/"
	if _, err := as[*oas.CreateAlertBadRequest]("createAlert (a refused target)")(c.CreateAlert(ctx, in)); err != nil {
		return err
	}
	if _, err := as[*oas.DeleteAlertNoContent]("deleteAlert")(c.DeleteAlert(ctx, oas.DeleteAlertParams{ID: a.ID})); err != nil {
		return err
	}
	*ops++
	if _, err := as[*oas.GetAlertNotFound]("getAlert (deleted)")(c.GetAlert(ctx, oas.GetAlertParams{ID: a.ID})); err != nil {
		return err
	}
	return nil
}

// dataLines returns the data of each event of a text/event-stream.
func dataLines(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
			out = append(out, strings.TrimSpace(data))
		}
	}
	return out, sc.Err()
}
