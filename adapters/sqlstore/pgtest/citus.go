package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// noCitus is the reason given when the PostgreSQL server binaries have no Citus extension.
const noCitus = "no Citus extension for the PostgreSQL server binaries (citus.so and citus.control); install it with ../shared/citus/build.sh"

// Option adds servers to what Run provides.
type Option interface {
	// start starts what the option provides and returns what stops it.
	start() (stop func())
	// short records that the run is -short: its tests skip.
	short()
}

// Citus is a Citus cluster for tests: a coordinator and two workers, each a cluster of its own on
// a loopback port with the citus library preloaded. Each test gets a fresh database on all three
// nodes, with the extension created and the workers registered with the coordinator, but nothing
// distributed: distributing the schema is the service's work.
//
// Without Citus (or without PostgreSQL) the tests that need it are skipped with a loud message,
// except under CI=true, where they fail. A nil *Citus means there is no Citus.
type Citus struct {
	coordinator *Server
	workers     [2]*Server
	err         error // the cluster did not start
	isShort     bool
}

// WithCitus makes Run start a Citus cluster too and set *c (nil without Citus), under the citus
// build tag (CitusTagged); without it (make test) no cluster is started and *c stays nil.
func WithCitus(c **Citus) Option { return citusOption{c} }

type citusOption struct{ c **Citus }

func (o citusOption) short() {
	if CitusTagged {
		*o.c = &Citus{isShort: true}
	}
}

func (o citusOption) start() func() {
	if !CitusTagged {
		return func() {}
	}
	c, err := startCitus()
	switch {
	case errors.Is(err, errNoBinaries), errors.Is(err, errNoCitus):
		reason := noCitus
		if errors.Is(err, errNoBinaries) {
			reason = noBinaries
		}
		fmt.Fprintf(os.Stderr, "\n!!!\n!!! pgtest: %s.\n!!! Citus tests will be %s.\n!!!\n\n", reason, map[bool]string{true: "FAILED (CI=true)", false: "SKIPPED"}[inCI()])
		*o.c = nil
		return func() {}
	case err != nil:
		fmt.Fprintf(os.Stderr, "\n!!!\n!!! pgtest: the Citus test cluster did not start; Citus tests will FAIL:\n%v\n!!!\n\n", err)
		c = &Citus{err: err}
	}
	*o.c = c
	return c.shutdown
}

var errNoCitus = errors.New("no Citus extension")

// citusSettings preload Citus and allow its two-phase commits (every COPY into a distributed
// table commits in two phases, even on one worker); the nodes talk to each other over loopback
// without TLS. A worker that crashes between its PREPARE and COMMIT PREPARED keeps that
// transaction's rows and row locks until the coordinator's 2PC recovery rolls it forward:
// every second here instead of Citus's default minute, as adapters/sqlstore/README.md (Citus) advises.
const citusSettings = " -c max_connections=500 -c shared_preload_libraries=citus -c max_prepared_transactions=200 -c citus.node_conninfo=sslmode=disable -c citus.recover_2pc_interval=1s"

func startCitus() (*Citus, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	if !hasCitus(bin) {
		return nil, errNoCitus
	}
	c := &Citus{}
	nodes := []**Server{&c.coordinator, &c.workers[0], &c.workers[1]}
	for _, n := range nodes {
		s, err := start(citusSettings)
		if err != nil {
			c.shutdown()
			return nil, fmt.Errorf("citus node: %w", err)
		}
		*n = s
	}
	return c, nil
}

// hasCitus reports whether the server binaries in bin have the Citus extension installed.
func hasCitus(bin string) bool {
	// bin may be a directory of links (/usr/local/bin): look where pg_ctl really is.
	if real, err := filepath.EvalSymlinks(filepath.Join(bin, "pg_ctl")); err == nil {
		bin = filepath.Dir(real)
	}
	lib := filepath.Join(filepath.Dir(bin), "lib", "citus.so")
	if _, err := os.Stat(lib); err != nil {
		return false
	}
	// Debian keeps the extension's control files under /usr/share/postgresql/<version>.
	control := filepath.Join("/usr/share/postgresql", filepath.Base(filepath.Dir(bin)), "extension", "citus.control")
	_, err := os.Stat(control)
	return err == nil
}

func (c *Citus) shutdown() {
	if c == nil {
		return
	}
	for _, s := range append([]*Server{c.coordinator}, c.workers[:]...) {
		if s != nil {
			s.shutdown()
		}
	}
}

// require skips or fails t when there is no Citus cluster to test against.
func (c *Citus) require(t testing.TB) {
	t.Helper()
	switch {
	case c != nil && c.isShort:
		t.Skip("Citus tests skipped under -short (make quick)")
	case c == nil && inCI():
		t.Fatalf("Citus is required under CI=true: %s", noCitus)
	case c == nil:
		t.Skipf("Citus tests SKIPPED: %s", noCitus)
	case c.err != nil:
		t.Fatalf("pgtest: the Citus test cluster did not start: %v", c.err)
	}
}

// Require skips t, or fails it under CI=true, when there is no Citus cluster.
func (c *Citus) Require(t testing.TB) { t.Helper(); c.require(t) }

// Worker is worker i (0 or 1), to stop and start.
func (c *Citus) Worker(i int) *Server { return c.workers[i] }

// Port is the loopback port a server listens on.
func (s *Server) Port() string { return s.port }

// NewDatabase creates a fresh database on every node, creates the citus extension in each and
// registers the coordinator and the two workers in the coordinator's metadata, and returns the
// coordinator database's URL. Everything is dropped when t ends.
func (c *Citus) NewDatabase(t testing.TB) string {
	t.Helper()
	c.require(t)
	u := c.coordinator.NewDatabase(t)
	name := DatabaseName(u)
	for _, w := range c.workers {
		if err := w.admin("CREATE DATABASE " + name); err != nil {
			t.Fatalf("pgtest: create database on a Citus worker: %v", err)
		}
		t.Cleanup(func() {
			if err := w.admin("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
				t.Logf("pgtest: drop database %s on a Citus worker: %v", name, err)
			}
		})
		if err := execAll(withDatabase(w.adminURL, name), "CREATE EXTENSION citus"); err != nil {
			t.Fatalf("pgtest: citus on a worker: %v", err)
		}
	}
	setup := []string{
		"CREATE EXTENSION IF NOT EXISTS citus",
		fmt.Sprintf("SELECT citus_set_coordinator_host('127.0.0.1', %s)", c.coordinator.port),
		fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %s)", c.workers[0].port),
		fmt.Sprintf("SELECT citus_add_node('127.0.0.1', %s)", c.workers[1].port),
	}
	// Registering a worker opens connections to it; under many parallel tests one may be refused
	// for a moment. Every statement here is idempotent, so the set-up is tried again.
	var err error
	for attempt := 1; attempt <= 5; attempt++ {
		if err = execAll(u, setup...); err == nil {
			return u
		}
		t.Logf("pgtest: citus on the coordinator, attempt %d: %v", attempt, err)
		time.Sleep(time.Duration(attempt) * 500 * time.Millisecond)
	}
	t.Fatalf("pgtest: citus on the coordinator: %v", err)
	return ""
}

func withDatabase(rawURL, name string) string {
	u, _ := url.Parse(rawURL)
	u.Path = "/" + name
	return u.String()
}

// execAll runs statements, in order, on one connection to rawURL.
func execAll(rawURL string, stmts ...string) error {
	db, err := sql.Open("postgres", rawURL)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return nil
}
