// Package pgtest gives tests a real PostgreSQL server: the one TEST_DATABASE_URL names, or a
// throwaway cluster it starts itself (initdb and pg_ctl into a temporary directory, listening on
// loopback on a free port) and removes afterwards. Each test gets a fresh database.
//
// Without server binaries the tests that need one are skipped with a loud message, except under
// CI=true, where they fail: a CI run must never pass by silently not testing PostgreSQL.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // the driver the admin connection uses
)

// Server is a PostgreSQL server for tests. A nil *Server means none could be had.
type Server struct {
	adminURL string
	external bool
	missing  string // why there is no server, for skip messages

	// A cluster of our own:
	bin, dir, port string
	cred           *syscall.Credential
	seq            atomic.Int64
}

// Run is for TestMain: it provides *srv for the tests, runs them and cleans up, returning the
// exit code for os.Exit.
func Run(m *testing.M, srv **Server) int {
	s, err := start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "\n!!! pgtest: NO POSTGRESQL: %v\n!!! PostgreSQL tests will be %s.\n\n", err, map[bool]string{true: "FAILED (CI=true)", false: "SKIPPED"}[os.Getenv("CI") == "true"])
		s = &Server{missing: err.Error()}
	}
	*srv = s
	code := m.Run()
	s.shutdown()
	return code
}

// Available reports whether a server is running.
func (s *Server) Available() bool { return s != nil && s.adminURL != "" }

func (s *Server) require(t testing.TB) {
	t.Helper()
	if s.Available() {
		return
	}
	reason := "no PostgreSQL server"
	if s != nil && s.missing != "" {
		reason = s.missing
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL is required under CI=true: %s", reason)
	}
	t.Skipf("PostgreSQL tests skipped: %s (install postgresql or set TEST_DATABASE_URL)", reason)
}

// NewDatabase creates a fresh, empty database and returns its URL; it is dropped when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	s.require(t)
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), s.seq.Add(1))
	admin, err := sql.Open("postgres", s.adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		a, err := sql.Open("postgres", s.adminURL)
		if err != nil {
			return
		}
		defer a.Close()
		_, _ = a.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
	})
	u, _ := url.Parse(s.adminURL)
	u.Path = "/" + name
	return u.String()
}

// Stop stops the server at once, as a crash would (pg_ctl stop -m immediate).
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	s.require(t)
	if s.external {
		t.Skip("pgtest: cannot stop an external server (TEST_DATABASE_URL)")
	}
	if out, err := s.ctl("stop", "-m", "immediate", "-w"); err != nil {
		t.Fatalf("pgtest: stop: %v\n%s", err, out)
	}
}

// Start starts a stopped server again on the same port.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	s.require(t)
	if s.external {
		t.Skip("pgtest: cannot start an external server (TEST_DATABASE_URL)")
	}
	if err := s.startCluster(); err != nil {
		t.Fatalf("pgtest: start: %v", err)
	}
}

func start() (*Server, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" {
		return &Server{adminURL: u, external: true}, nil
	}
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: dir}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root: run it as an unprivileged user that owns the cluster.
		cred, err := unprivileged()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		s.cred = cred
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	port, err := freePort()
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.port = port
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", s.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	if err := s.startCluster(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.adminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable", port)
	return s, nil
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// startCluster starts the cluster and waits until it accepts connections. fsync stays on: the
// tests measure the durability the service promises.
func (s *Server) startCluster() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%s -c unix_socket_directories=%s -c max_connections=200 -c shared_buffers=128MB", s.port, s.dir)
	out, err := s.ctl("start", "-w", "-t", "60", "-l", filepath.Join(s.dir, "server.log"), "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "server.log"))
		return fmt.Errorf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
	return nil
}

func (s *Server) ctl(args ...string) ([]byte, error) {
	return s.run(filepath.Join(s.bin, "pg_ctl"), append([]string{"-D", s.data()}, args...)...)
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.dir
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

func (s *Server) shutdown() {
	if s == nil || s.external || s.dir == "" {
		return
	}
	_, _ = s.ctl("stop", "-m", "fast", "-w")
	_ = os.RemoveAll(s.dir)
}

// findBinaries looks for initdb and pg_ctl on PATH, then in Debian's versioned directories,
// newest first.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin")
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// unprivileged finds a user to run PostgreSQL as: postgres if the package made one, else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and no postgres or nobody user to run PostgreSQL as")
}

func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:"), nil
}
