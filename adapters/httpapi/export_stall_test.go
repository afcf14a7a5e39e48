package httpapi_test

import (
	"bufio"
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

// TestStalledExportIsCutOff: a download whose client stops reading is cut off after
// StallTimeout, as a listing is, though it has no row cap and no request deadline: the export
// ends, its store reader and read share with it, and the body is left incomplete.
func TestStalledExportIsCutOff(t *testing.T) {
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
	// 10,000 entries of 1 KiB: far more than the socket buffers between server and client.
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
	h, err := httpapi.NewHandler(svc, httpapi.Options{StallTimeout: stall, ExportPageSize: 500,
		Logger: slog.New(&noticeHandler{msg: "export failed mid-stream", seen: cut})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(domain.WithPrincipal(r.Context(), domain.Principal{Admin: true})))
	}))
	t.Cleanup(srv.Close)

	for _, format := range []string{"ndjson", "csv"} {
		t.Run(format, func(t *testing.T) {
			conn, err := net.Dial("tcp", srv.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := fmt.Fprintf(conn, "GET /logs/export?project_id=%s&format=%s HTTP/1.1\r\nHost: test\r\n\r\n", p.ID, format); err != nil {
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
				t.Logf("the stalled export was cut %v after the client stopped reading", time.Since(stopped).Round(time.Millisecond))
			case <-time.After(20 * time.Second):
				t.Fatal("an export whose client stopped reading was still being written after 20 s")
			}
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			rest, err := io.ReadAll(r)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the server kept the stalled connection open (read %d bytes more)", len(rest))
			}
			if strings.HasSuffix(string(rest), "0\r\n\r\n") {
				t.Fatal("the stalled export was completed, not cut off")
			}
		})
	}
}
