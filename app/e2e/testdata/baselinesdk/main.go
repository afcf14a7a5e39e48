// Command baselinesdk is a client program written against the Go client (oapi-codegen) generated
// from the released contract, api/baseline/openapi-1.0.0.yaml. app/e2e/baseline_sdk_test.go builds
// it against the client generated from the baseline and against the one generated from the
// current openapi.yaml (api/rest), then runs it against a live server at OBSVC_URL: a 1.x
// release must keep a program like this compiling and passing. It drives every operation the
// client expresses (POST /v1/logs and GET /logs/tail are left out of its generation).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/oapi-codegen/nullable"

	"example.com/obsvc/api/rest"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Getenv("OBSVC_URL")); err != nil {
		fmt.Fprintln(os.Stderr, "baselinesdk:", err)
		os.Exit(1)
	}
}

// want fails unless the response has the status.
func want(op string, status int, r *http.Response, body []byte) error {
	if r.StatusCode != status {
		return fmt.Errorf("%s: status %d, want %d: %s", op, r.StatusCode, status, body)
	}
	return nil
}

func run(ctx context.Context, base string) error {
	if base == "" {
		return errors.New("OBSVC_URL must name a running server")
	}
	c, err := rest.NewClientWithResponses(base)
	if err != nil {
		return err
	}

	created, err := c.CreateProjectWithResponse(ctx, rest.ProjectInput{Name: "baseline-go"})
	if err != nil {
		return err
	}
	if err := want("createProject", 201, created.HTTPResponse, created.Body); err != nil {
		return err
	}
	p := *created.JSON201
	if created.HTTPResponse.Header.Get("Location") != "/projects/"+p.Id {
		return fmt.Errorf("createProject: Location %q", created.HTTPResponse.Header.Get("Location"))
	}

	list, err := c.ListProjectsWithResponse(ctx)
	if err != nil {
		return err
	}
	if err := want("listProjects", 200, list.HTTPResponse, list.Body); err != nil {
		return err
	}
	found := false
	for _, q := range *list.JSON200 {
		found = found || q.Id == p.Id
	}
	if !found {
		return fmt.Errorf("listProjects: %s missing", p.Id)
	}

	got, err := c.GetProjectWithResponse(ctx, p.Id)
	if err != nil {
		return err
	}
	if err := want("getProject", 200, got.HTTPResponse, got.Body); err != nil {
		return err
	}
	if got.JSON200.Name != "baseline-go" {
		return fmt.Errorf("getProject: %+v", got.JSON200)
	}

	renamed, err := c.UpdateProjectWithResponse(ctx, p.Id, rest.ProjectInput{Name: "baseline-go-2", RetentionDays: nullable.NewNullableWithValue[rest.RetentionDays](30)})
	if err != nil {
		return err
	}
	if err := want("updateProject", 200, renamed.HTTPResponse, renamed.Body); err != nil {
		return err
	}
	if days, _ := renamed.JSON200.RetentionDays.Get(); renamed.JSON200.Name != "baseline-go-2" || days != 30 {
		return fmt.Errorf("updateProject: %+v", renamed.JSON200)
	}

	patched, err := c.PatchProjectWithApplicationMergePatchPlusJSONBodyWithResponse(ctx, p.Id, rest.ProjectPatch{RetentionDays: nullable.NewNullNullable[rest.RetentionDays]()})
	if err != nil {
		return err
	}
	if err := want("patchProject", 200, patched.HTTPResponse, patched.Body); err != nil {
		return err
	}
	if !patched.JSON200.RetentionDays.IsNull() || patched.JSON200.Name != "baseline-go-2" {
		return fmt.Errorf("patchProject: %+v", patched.JSON200)
	}

	level, user, subject := "error", "u1", "checkout"
	t1, t2, t3 := int64(1000), int64(2000), int64(3000)
	batch := []rest.LogEntryInput{
		{ProjectId: p.Id, Message: "one", Level: &level, UserId: &user, Time: &t1},
		{ProjectId: p.Id, Message: "two", Time: &t2, Subject: &subject},
		{ProjectId: p.Id, Message: "three", Time: &t3},
	}
	key := "baseline-go-1"
	logs, err := c.CreateLogsWithResponse(ctx, &rest.CreateLogsParams{IdempotencyKey: &key}, batch)
	if err != nil {
		return err
	}
	if err := want("createLogs", 201, logs.HTTPResponse, logs.Body); err != nil {
		return err
	}
	if logs.JSON201.Created != 3 {
		return fmt.Errorf("createLogs: %+v", logs.JSON201)
	}

	limit := int32(2)
	page, err := c.ListLogsWithResponse(ctx, &rest.ListLogsParams{ProjectId: p.Id, Limit: &limit})
	if err != nil {
		return err
	}
	if err := want("listLogs", 200, page.HTTPResponse, page.Body); err != nil {
		return err
	}
	if len(*page.JSON200) != 2 || (*page.JSON200)[0].Message != "one" || !strings.Contains(page.HTTPResponse.Header.Get("Link"), `rel="next"`) {
		return fmt.Errorf("listLogs: %+v, Link %q", *page.JSON200, page.HTTPResponse.Header.Get("Link"))
	}
	levels := rest.LogLevel{"error", "fatal"}
	errorsOnly, err := c.ListLogsWithResponse(ctx, &rest.ListLogsParams{ProjectId: p.Id, LogLevel: &levels})
	if err != nil {
		return err
	}
	if err := want("listLogs (log_level)", 200, errorsOnly.HTTPResponse, errorsOnly.Body); err != nil {
		return err
	}
	if len(*errorsOnly.JSON200) != 1 || *(*errorsOnly.JSON200)[0].UserId != "u1" {
		return fmt.Errorf("listLogs (log_level): %+v", *errorsOnly.JSON200)
	}
	q := "THREE"
	found3, err := c.ListLogsWithResponse(ctx, &rest.ListLogsParams{ProjectId: p.Id, Q: &q})
	if err != nil {
		return err
	}
	if err := want("listLogs (q)", 200, found3.HTTPResponse, found3.Body); err != nil {
		return err
	}
	if len(*found3.JSON200) != 1 || (*found3.JSON200)[0].Message != "three" {
		return fmt.Errorf("listLogs (q): %+v", *found3.JSON200)
	}
	start, end := int64(5), int64(1)
	bad, err := c.ListLogsWithResponse(ctx, &rest.ListLogsParams{ProjectId: p.Id, StartTime: &start, EndTime: &end})
	if err != nil {
		return err
	}
	if err := want("listLogs (start after end)", 400, bad.HTTPResponse, bad.Body); err != nil {
		return err
	}
	if ct := bad.HTTPResponse.Header.Get("Content-Type"); ct != "application/problem+json" {
		return fmt.Errorf("listLogs (start after end): Content-Type %q", ct)
	}

	// by as 1.0.0's client typed it too: its named type, constants and Valid.
	none := rest.LogStatsParamsByNone
	if !none.Valid() {
		return fmt.Errorf("logStats: %q is not Valid", none)
	}
	for _, q := range []struct {
		name string
		by   *rest.LogStatsParamsBy
	}{{"logStats", nil}, {"logStats by none", &none}} {
		stats, err := c.LogStatsWithResponse(ctx, &rest.LogStatsParams{ProjectId: p.Id, StartTime: 0, EndTime: 9999, Step: 5000, By: q.by})
		if err != nil {
			return err
		}
		if err := want(q.name, 200, stats.HTTPResponse, stats.Body); err != nil {
			return err
		}
		if stats.JSON200.Total != 3 || len(stats.JSON200.Buckets) != 2 || q.by != nil && len(stats.JSON200.Series) != 1 {
			return fmt.Errorf("%s: %+v", q.name, stats.JSON200)
		}
	}

	deleted, err := c.DeleteLogsWithResponse(ctx, &rest.DeleteLogsParams{ProjectId: p.Id, EndTime: &t2})
	if err != nil {
		return err
	}
	if err := want("deleteLogs", 200, deleted.HTTPResponse, deleted.Body); err != nil {
		return err
	}
	if deleted.JSON200.Deleted != 2 {
		return fmt.Errorf("deleteLogs: %+v", deleted.JSON200)
	}

	gone, err := c.DeleteProjectWithResponse(ctx, p.Id)
	if err != nil {
		return err
	}
	if err := want("deleteProject", 204, gone.HTTPResponse, gone.Body); err != nil {
		return err
	}
	missing, err := c.GetProjectWithResponse(ctx, p.Id)
	if err != nil {
		return err
	}
	if err := want("getProject (deleted)", 404, missing.HTTPResponse, missing.Body); err != nil {
		return err
	}
	fmt.Println("baselinesdk (Go): every operation of the client: ok")
	return nil
}
