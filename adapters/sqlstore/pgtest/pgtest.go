// Package pgtest gives tests a real PostgreSQL server: the one TEST_DATABASE_URL names, or a
// throwaway cluster it starts itself (initdb and pg_ctl into a temporary directory, listening on
// 127.0.0.1 on a free port and on a unix socket in that directory) and removes afterwards. Each
// test gets a fresh database.
//
// Without server binaries the tests that need one are skipped with a loud message, except under
// CI=true, where they fail: a CI run must never pass by silently not testing PostgreSQL. When the
// binaries are there but the cluster does not start, the tests that need it fail.
//
// Running as root, the cluster runs as the unprivileged user "postgres" (which Debian's package
// creates) or, failing that, "nobody": PostgreSQL refuses to run as root, and those two exist on
// every Debian image that has the binaries.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq" // the driver of the admin connection
)

// noBinaries is the reason given when there is neither a server URL nor server binaries.
const noBinaries = "no PostgreSQL server: TEST_DATABASE_URL is unset and there is no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin (apt-get install postgresql, or set TEST_DATABASE_URL)"

// dirPrefix names the temporary directories of clusters, so that a later run can find the ones a
// crashed run left behind.
const dirPrefix = "pgtest-"

// ownerFile, in a cluster's directory, holds the pid of the test binary that owns the cluster.
const ownerFile = "pgtest-owner"

// Server is a PostgreSQL server for tests. A nil *Server means there are no server binaries.
type Server struct {
	adminURL string
	external bool  // TEST_DATABASE_URL: not ours to stop or start
	err      error // the cluster did not start; every test that needs it fails with this

	// A cluster of our own:
	bin, dir, port string
	cred           *syscall.Credential // who runs the cluster when we are root
	seq            atomic.Int64
	stopOnce       sync.Once
	short          bool   // -short: no server, every PostgreSQL test skips
	settings       string // more -c settings for the server (a Citus node's)
}

// Run is for TestMain: it sets *srv, runs the tests and then stops and removes the cluster
// (whether or not tests failed), returning the exit code for os.Exit. TEST_DATABASE_URL, when
// set, names an existing server to use instead; its role must be allowed to create databases.
// Without server binaries *srv is nil, and a loud message goes to stderr.
//
// Options add more servers the tests of this binary need (WithCitus).
func Run(m *testing.M, srv **Server, opts ...Option) int {
	flag.Parse() // for testing.Short, which m.Run would parse later
	if testing.Short() {
		// The inner loop (make quick): no cluster; PostgreSQL tests skip, even under CI=true.
		*srv = &Server{short: true}
		for _, o := range opts {
			o.short()
		}
		return m.Run()
	}
	for _, o := range opts {
		defer o.start()()
	}
	s, err := start("")
	switch {
	case errors.Is(err, errNoBinaries):
		fmt.Fprintf(os.Stderr, "\n!!!\n!!! pgtest: %s.\n!!! PostgreSQL tests will be %s.\n!!!\n\n", noBinaries, map[bool]string{true: "FAILED (CI=true)", false: "SKIPPED"}[inCI()])
		*srv = nil
		return m.Run()
	case err != nil:
		fmt.Fprintf(os.Stderr, "\n!!!\n!!! pgtest: the PostgreSQL test cluster did not start; PostgreSQL tests will FAIL:\n%v\n!!!\n\n", err)
		s = &Server{err: err}
	}
	*srv = s
	if s.err == nil && !s.external {
		// Processes this test binary starts inherit the cluster as an external server instead of
		// each starting one: above all the workers of go test -fuzz, which are this binary again.
		_ = os.Setenv("TEST_DATABASE_URL", s.adminURL)
	}

	// An interrupted run (Ctrl-C, SIGTERM) still stops its cluster: pg_ctl puts the server in a
	// session of its own, so the terminal's signal does not reach it. A panic or -timeout ends the
	// process without any of this; the next run's reapStale removes what it left.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case got := <-sig:
			s.shutdown()
			fmt.Fprintf(os.Stderr, "pgtest: %v: stopped the PostgreSQL test cluster\n", got)
			os.Exit(1)
		case <-done:
		}
	}()
	defer func() {
		signal.Stop(sig)
		close(done)
		s.shutdown()
	}()
	return m.Run()
}

func inCI() bool { return os.Getenv("CI") == "true" }

// require skips or fails t when there is no server to test against.
func (s *Server) require(t testing.TB) {
	t.Helper()
	switch {
	case s != nil && s.short:
		t.Skip("PostgreSQL tests skipped under -short (make quick); make test runs them")
	case s == nil && inCI():
		t.Fatalf("PostgreSQL is required under CI=true: %s", noBinaries)
	case s == nil:
		t.Skipf("PostgreSQL tests SKIPPED: %s", noBinaries)
	case s.err != nil:
		t.Fatalf("pgtest: the PostgreSQL test cluster did not start: %v", s.err)
	}
}

// URL is the admin URL of the server (the postgres database as a superuser, or TEST_DATABASE_URL).
// It is "" on a nil *Server.
func (s *Server) URL() string {
	if s == nil {
		return ""
	}
	return s.adminURL
}

// NewDatabase creates a fresh, empty database and returns its URL (postgres://…?sslmode=disable
// for a cluster of our own); the database is dropped, connections and all, when t ends. On a nil
// *Server it skips t, or fails it under CI=true.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	s.require(t)
	// The pid and random bytes keep names apart across test binaries sharing TEST_DATABASE_URL.
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := fmt.Sprintf("pgtest_%d_%d_%x", os.Getpid(), s.seq.Add(1), rnd)
	if err := s.admin("CREATE DATABASE " + name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		if err := s.admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("pgtest: drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(s.adminURL)
	if err != nil {
		t.Fatalf("pgtest: server URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// DatabaseName returns the name of the database a URL NewDatabase returned names (its path);
// "" for a URL that does not parse.
func DatabaseName(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(u.Path, "/")
}

// admin runs one statement on the admin connection, bounded in time so a wedged server fails the
// test instead of hanging it.
func (s *Server) admin(stmt string) error {
	db, err := sql.Open("postgres", s.adminURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = db.ExecContext(ctx, stmt)
	return err
}

// Stop stops the server at once, as a crash would (pg_ctl stop -m immediate): connections break,
// new ones are refused. It skips t for an external server (TEST_DATABASE_URL).
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

// Start starts a stopped server again on the same port and waits until it accepts connections
// (crash recovery included). It skips t for an external server (TEST_DATABASE_URL).
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

var errNoBinaries = errors.New("no PostgreSQL server binaries")

// start provides the server: TEST_DATABASE_URL's, or a new cluster.
// settings are more -c settings for a cluster of our own.
func start(settings string) (*Server, error) {
	if u := os.Getenv("TEST_DATABASE_URL"); u != "" && settings == "" {
		return &Server{adminURL: u, external: true}, nil
	}
	return startOwn(settings)
}

// startOwn starts a new cluster of our own with more -c settings.
func startOwn(settings string) (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	reapStale()
	dir, err := os.MkdirTemp("", dirPrefix)
	if err != nil {
		return nil, err
	}
	// The owner file tells a later run whether the test binary of this cluster is still alive.
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s := &Server{bin: bin, dir: dir, settings: settings}
	if err := s.initCluster(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	s.adminURL = fmt.Sprintf("postgres://postgres@127.0.0.1:%s/postgres?sslmode=disable&connect_timeout=10", s.port)
	return s, nil
}

// initCluster creates the cluster and starts it on a free port.
func (s *Server) initCluster() error {
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			return err
		}
		s.cred = cred
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	// --no-sync: initdb's files need not survive a crash of this machine; the server itself
	// runs with PostgreSQL's default, durable settings (fsync=on).
	if out, err := s.run(filepath.Join(s.bin, "initdb"), "-D", s.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"); err != nil {
		return fmt.Errorf("initdb in %s: %v\n%s", s.dir, err, out)
	}
	// The port is free when we look but could be taken before the server binds it (another test
	// binary starting its cluster at the same moment): then try another.
	var err error
	for range 3 {
		if s.port, err = freePort(); err != nil {
			return err
		}
		if err = s.startCluster(); err == nil {
			return nil
		}
	}
	return err
}

func (s *Server) data() string    { return filepath.Join(s.dir, "data") }
func (s *Server) logFile() string { return filepath.Join(s.dir, "server.log") }

// startCluster starts the cluster and waits until it accepts connections (pg_ctl -w). Only
// settings that do not weaken durability are changed: the tests see the fsync the service relies
// on. max_connections leaves room for the parallel tests' pools.
func (s *Server) startCluster() error {
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -c port=%s -c unix_socket_directories=%s -c max_connections=200%s", s.port, s.dir, s.settings)
	out, err := s.ctl("start", "-w", "-t", "60", "-l", s.logFile(), "-o", opts)
	if err != nil {
		log, _ := os.ReadFile(s.logFile())
		return fmt.Errorf("pg_ctl start: %v\n%s\n--- server log %s ---\n%s", err, out, s.logFile(), log)
	}
	return nil
}

func (s *Server) ctl(args ...string) ([]byte, error) {
	return s.run(filepath.Join(s.bin, "pg_ctl"), append([]string{"-D", s.data()}, args...)...)
}

// run runs a server program, as the unprivileged user when we are root.
func (s *Server) run(name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = s.dir // a directory the unprivileged user can enter
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	return cmd.CombinedOutput()
}

// shutdown stops our cluster (pg_ctl stop -m fast) and removes its directory, once.
func (s *Server) shutdown() {
	if s == nil || s.external || s.dir == "" {
		return
	}
	s.stopOnce.Do(func() {
		if _, err := os.Stat(filepath.Join(s.data(), "postmaster.pid")); err == nil {
			if out, err := s.ctl("stop", "-m", "fast", "-w"); err != nil {
				fmt.Fprintf(os.Stderr, "pgtest: pg_ctl stop: %v\n%s\n", err, out)
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// reapStale stops and removes the clusters of earlier test binaries that died without cleaning
// up (a panic, a -timeout, a kill): their owner process is gone. Clusters of live test binaries,
// and directories it cannot attribute, are left alone.
func reapStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue // not ours, or still being set up
		}
		owner, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || alive(owner) {
			continue
		}
		if pid, ok := postmaster(filepath.Join(dir, "data")); ok {
			_ = syscall.Kill(pid, syscall.SIGQUIT) // immediate shutdown
			for i := 0; i < 50 && alive(pid); i++ {
				time.Sleep(100 * time.Millisecond)
			}
			if alive(pid) {
				continue
			}
		}
		_ = os.RemoveAll(dir)
	}
}

// postmaster is the pid of the server running on data, if one is.
func postmaster(data string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	// Line 1 is the pid, line 2 the data directory: both must match, or the pid was reused.
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 || lines[1] != data {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || !alive(pid) {
		return 0, false
	}
	return pid, true
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// findBinaries looks for initdb and pg_ctl on PATH, then in Debian's versioned directories,
// newest version first.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		_, errInit := os.Stat(filepath.Join(d, "initdb"))
		_, errCtl := os.Stat(filepath.Join(d, "pg_ctl"))
		if errInit == nil && errCtl == nil {
			return d, nil
		}
	}
	return "", errNoBinaries
}

// version is the major version of a /usr/lib/postgresql/<version>/bin directory.
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
		uid, errU := strconv.Atoi(u.Uid)
		gid, errG := strconv.Atoi(u.Gid)
		if errU != nil || errG != nil {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as")
}

// freePort asks the kernel for a free loopback port.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	_, port, err := net.SplitHostPort(ln.Addr().String())
	return port, err
}
