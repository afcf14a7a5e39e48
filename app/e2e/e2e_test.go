package e2e

import (
	"testing"
)

// TestE2E runs the whole REST and Twirp contract against each store.
func TestE2E(t *testing.T) {
	forEachStore(t, runContract)
}

func runContract(t *testing.T, open storeOpener) {
	tests := []struct {
		name string
		fn   func(*testing.T, storeOpener)
	}{
		{"ProjectsLifecycle", testProjectsLifecycle},
		{"ProjectInputErrors", testProjectInputErrors},
		{"ProjectIDsThatDoNotResolve", testProjectIDsThatDoNotResolve},
		{"LogsRoundTrip", testLogsRoundTrip},
		{"BadBatchesStoreNothing", testBadBatches},
		{"BatchLimits", testBatchLimits},
		{"ListLogsFilters", testListLogsFilters},
		{"ListLogsParameterErrors", testListLogsParameterErrors},
		{"ListLogsPaging", testListLogsPaging},
		{"DeleteLogs", testDeleteLogs},
		{"DeleteProjectDeletesLogs", testDeleteProjectDeletesLogs},
		{"UnknownRoutes", testUnknownRoutes},
		{"MakeHat", testMakeHat},
		{"IdempotentRetries", testIdempotentRetries},
		{"AttributesRoundTrip", testAttributesRoundTrip},
		{"BadAttributesStoreNothing", testBadAttributes},
		{"RetentionValidation", testRetentionValidation},
		{"RetentionMergePatch", testRetentionMergePatch},
		{"RetentionHidesAndRefuses", testRetentionHidesAndRefuses},
		{"SearchAndStats", testSearchAndStats},
		{"StatsSeries", testStatsSeries},
		{"SavedSearchesRoundTrip", testSavedSearchesRoundTrip},
		{"SavedSearchErrors", testSavedSearchErrors},
		{"DeleteProjectDeletesSearches", testDeleteProjectDeletesSearches},
		{"AlertsThroughTheAPI", testAlertsThroughTheAPI},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open)
		})
	}
}

func testUnknownRoutes(t *testing.T, open storeOpener) {
	e := newEnv(t, open, nil)
	for _, c := range []struct{ method, path string }{{"GET", "/nothing"}, {"GET", "/projects/a/b"}} {
		resp, body := e.do(c.method, c.path, "", "")
		if resp.StatusCode != 404 {
			t.Errorf("%s %s = %d, want 404: %s", c.method, c.path, resp.StatusCode, body)
		}
	}
	for _, c := range []struct{ method, path, allow string }{{"PATCH", "/projects", "GET, HEAD, POST"}, {"POST", "/projects/x", "DELETE, GET, HEAD, PATCH, PUT"}, {"PUT", "/logs", "DELETE, GET, HEAD, POST"}} {
		resp, body := e.do(c.method, c.path, "application/json", "{}")
		if resp.StatusCode != 405 || resp.Header.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d Allow %q, want 405 Allow %q: %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), c.allow, body)
		}
	}
	if e.tr.Checked() == 0 {
		t.Fatal("no response went through the contract check")
	}
}
