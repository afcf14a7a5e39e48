package httpapi_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"example.com/obsvc/adapters/httpapi"
	"example.com/obsvc/adapters/sqlstore"
	"example.com/obsvc/domain"
)

// TestStalledListingIsCutOff: a client that asks for a large page and stops reading loses the
// connection after StallTimeout, instead of holding it (and a store reader) until the server's
// write timeout; httptest's server has none, so without the bound the handler would never end.
func TestStalledListingIsCutOff(t *testing.T) {
	srv, project, cut := stallServer(t, httpapi.Options{}, "listing failed mid-stream")
	expectCut(t, srv, fmt.Sprintf("/logs?project_id=%s&limit=10000", project), "listing", cut)
}

// TestStalledExportIsCutOff: a download whose client stops reading is cut off after
// StallTimeout, as a listing is, though it has no row cap and no request deadline: the export
// ends, its store reader and read share with it, and the body is left incomplete.
func TestStalledExportIsCutOff(t *testing.T) {
	srv, project, cut := stallServer(t, httpapi.Options{ExportPageSize: 500}, "export failed mid-stream")
	for _, format := range []string{"ndjson", "csv"} {
		t.Run(format, func(t *testing.T) {
			expectCut(t, srv, fmt.Sprintf("/logs/export?project_id=%s&format=%s", project, format), "export", cut)
		})
	}
}

// stallServer serves opts with a StallTimeout of 200 ms over a SQLite store holding one project
// of 10,000 entries of 1 KiB, far more than the socket buffers between server and client; cut
// receives when the handler logs notice.
func stallServer(t *testing.T, opts httpapi.Options, notice string) (srv *httptest.Server, project string, cut chan struct{}) {
	t.Helper()
	ctx := domain.WithPrincipal(t.Context(), domain.Principal{Admin: true})
	st, err := sqlstore.OpenSQLite(ctx, filepath.Join(t.TempDir(), "stall.db"), sqlstore.DefaultSQLiteOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	svc := domain.NewService(st, domain.Options{Limits: domain.DefaultLimits(), NewID: func() string { return uuid.Must(uuid.NewV7()).String() }})
	p, err := svc.CreateProject(ctx, domain.ProjectInput{Name: "stall"})
	if err != nil {
		t.Fatal(err)
	}
	msg := strings.Repeat("m", 1<<10)
	batch := make([]domain.LogInput, domain.DefaultLimits().MaxBatchEntries)
	for i := range batch {
		batch[i] = domain.LogInput{ProjectID: p.ID, Message: &msg}
	}
	if _, err := svc.CreateLogs(ctx, batch, ""); err != nil {
		t.Fatal(err)
	}
	cut = make(chan struct{}, 1)
	opts.StallTimeout = 200 * time.Millisecond
	opts.Logger = slog.New(&noticeHandler{msg: notice, seen: cut})
	h, err := httpapi.NewHandler(svc, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
	}))
	t.Cleanup(srv.Close)
	return srv, p.ID, cut
}

// expectCut asks srv for path on a raw connection, reads the status line and then nothing: the
// handler must log its notice (cut) and close the connection short of a complete body.
func expectCut(t *testing.T, srv *httptest.Server, path, what string, cut <-chan struct{}) {
	t.Helper()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(conn, 16)
	status, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("status line %q, %v", status, err)
	}
	stopped := time.Now() // and the client reads nothing more for now

	select {
	case <-cut:
		t.Logf("the stalled %s was cut %v after the client stopped reading", what, time.Since(stopped).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatalf("a %s whose client stopped reading was still being written after 20 s", what)
	}
	// The connection is closed: what is left to read ends, short of a complete chunked body.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the stalled connection open (read %d bytes more)", len(rest))
	}
	if strings.HasSuffix(string(rest), "0\r\n\r\n") {
		t.Fatalf("the stalled %s was completed, not cut off", what)
	}
}

// noticeHandler is a slog.Handler that signals when a record with message msg is logged.
type noticeHandler struct {
	msg  string
	seen chan<- struct{}
}

func (h *noticeHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *noticeHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *noticeHandler) WithGroup(string) slog.Handler            { return h }
func (h *noticeHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}
