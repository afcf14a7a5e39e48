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
	// 10,000 entries of 1 KiB: a page far larger than the socket buffers between server and client.
	msg := strings.Repeat("m", 1<<10)
	batch := make([]domain.LogInput, domain.DefaultLimits().MaxBatchEntries)
	for i := range batch {
		batch[i] = domain.LogInput{ProjectID: p.ID, Message: &msg}
	}
	if _, err := svc.CreateLogs(ctx, batch, ""); err != nil {
		t.Fatal(err)
	}

	cut := make(chan struct{}, 1)
	const stall = 200 * time.Millisecond
	h, err := httpapi.NewHandler(svc, httpapi.Options{StallTimeout: stall, Logger: slog.New(&noticeHandler{msg: "listing failed mid-stream", seen: cut})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
	}))
	t.Cleanup(srv.Close)

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "GET /logs?project_id=%s&limit=10000 HTTP/1.1\r\nHost: test\r\n\r\n", p.ID); err != nil {
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
		t.Logf("the stalled listing was cut %v after the client stopped reading", time.Since(stopped).Round(time.Millisecond))
	case <-time.After(20 * time.Second):
		t.Fatal("a listing whose client stopped reading was still being written after 20 s")
	}
	// The connection is closed: what is left to read ends, short of a complete chunked body.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept the stalled connection open (read %d bytes more)", len(rest))
	}
	if strings.HasSuffix(string(rest), "0\r\n\r\n") {
		t.Fatal("the stalled listing was completed, not cut off")
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
