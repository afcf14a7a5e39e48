package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

var srv *Server

func TestMain(m *testing.M) { os.Exit(Run(m, &srv)) }

// recorder is a testing.TB that records Skip and Fatal instead of acting on the real test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs fn with a recorder in a goroutine of its own, as Skip and Fatal end it.
func call(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

func TestWithoutServerSkipsOrFailsUnderCI(t *testing.T) {
	var none *Server
	t.Setenv("CI", "")
	if r := call(t, func(tb testing.TB) { none.NewDatabase(tb) }); r.skipped == "" || r.failed != "" {
		t.Errorf("NewDatabase on a nil *Server: skipped %q, failed %q; want a skip", r.skipped, r.failed)
	} else if !strings.Contains(r.skipped, "TEST_DATABASE_URL") {
		t.Errorf("the skip message %q does not say what to do", r.skipped)
	}
	t.Setenv("CI", "true")
	for name, fn := range map[string]func(testing.TB){"NewDatabase": func(tb testing.TB) { none.NewDatabase(tb) }, "Stop": none.Stop, "Start": none.Start} {
		if r := call(t, fn); r.failed == "" {
			t.Errorf("%s on a nil *Server under CI=true: skipped %q; want a failure", name, r.skipped)
		}
	}
	if got := none.URL(); got != "" {
		t.Errorf("URL() of a nil *Server = %q", got)
	}
	broken := &Server{err: fmt.Errorf("initdb: boom")}
	t.Setenv("CI", "")
	if r := call(t, func(tb testing.TB) { broken.NewDatabase(tb) }); r.failed == "" {
		t.Errorf("NewDatabase on a cluster that did not start: skipped %q; want a failure", r.skipped)
	}
}

func TestNewDatabaseIsFreshAndDroppedAfterwards(t *testing.T) {
	var dbURL string
	t.Run("use", func(t *testing.T) {
		dbURL = srv.NewDatabase(t)
		if other := srv.NewDatabase(t); other == dbURL {
			t.Fatalf("two databases share the URL %s", dbURL)
		}
		db, err := sql.Open("postgres", dbURL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var tables int
		if err := db.QueryRow("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if tables != 0 {
			t.Errorf("a new database has %d tables", tables)
		}
		var current string
		if err := db.QueryRow("SELECT current_database()").Scan(&current); err != nil {
			t.Fatal(err)
		}
		if got := DatabaseName(dbURL); got != current {
			t.Errorf("DatabaseName(%s) = %q, want %q", dbURL, got, current)
		}
		// An open connection must not keep the database from being dropped.
		if _, err := db.Exec("CREATE TABLE t (x int)"); err != nil {
			t.Fatal(err)
		}
	})
	if t.Skipped() || dbURL == "" {
		return
	}
	u, _ := url.Parse(dbURL)
	admin, err := sql.Open("postgres", srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	var n int
	if err := admin.QueryRow("SELECT count(*) FROM pg_database WHERE datname = $1", strings.TrimPrefix(u.Path, "/")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("database %s outlived its test", u.Path)
	}
}

func TestStopAndStart(t *testing.T) {
	dbURL := srv.NewDatabase(t)
	if srv.external {
		t.Skip("an external server is not ours to stop")
	}
	db, err := sql.Open("postgres", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv.Stop(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err == nil {
		t.Fatal("the server answers after Stop")
	}
	srv.Start(t)
	if err := db.PingContext(t.Context()); err != nil {
		t.Fatalf("after Start: %v", err)
	}
}

func TestReapStaleRemovesOnlyDeadRunsClusters(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	mk := func(name, owner string) string {
		dir := filepath.Join(os.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	deadRun := mk(dirPrefix+"dead", strconv.Itoa(dead.Process.Pid))
	liveRun := mk(dirPrefix+"live", strconv.Itoa(os.Getpid()))
	unknown := mk(dirPrefix+"unknown", "")
	reapStale()
	for dir, wantGone := range map[string]bool{deadRun: true, liveRun: false, unknown: false} {
		_, err := os.Stat(dir)
		if gone := os.IsNotExist(err); gone != wantGone {
			t.Errorf("%s: removed = %v, want %v", filepath.Base(dir), gone, wantGone)
		}
	}
}
