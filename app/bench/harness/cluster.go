package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	_ "github.com/lib/pq"
)

// cluster is the PostgreSQL server of a run: initdb into the run's directory, then postgres as a
// child process of the harness (not daemonised by pg_ctl), so it ends with the harness even when
// the harness is killed. The steps are adapters/sqlstore/pgtest's, which serves tests only.
type cluster struct {
	bin, dir string
	port     string
	cred     *syscall.Credential // who runs the server when we are root
	proc     *proc
}

// startCluster creates a cluster under dir and starts it on a free loopback port with
// PostgreSQL's durable defaults (fsync and synchronous_commit on).
func startCluster(ctx context.Context, ps *procs, dir string) (*cluster, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	c := &cluster{bin: bin, dir: filepath.Join(dir, "pg")}
	if err := os.Mkdir(c.dir, 0o700); err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		if c.cred, err = unprivileged(); err != nil {
			return nil, err
		}
		for _, d := range []string{dir, c.dir} {
			if err := os.Chown(d, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return nil, err
			}
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", c.data(), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = c.dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, c.port, _ = net.SplitHostPort(addr)
	c.proc, err = ps.start("postgres", filepath.Join(c.dir, "server.log"), c.cred, nil, syscall.SIGINT,
		filepath.Join(bin, "postgres"), "-D", c.data(), "-c", "listen_addresses=127.0.0.1", "-c", "port="+c.port,
		"-c", "unix_socket_directories="+c.dir, "-c", "max_connections=100")
	if err != nil {
		return nil, err
	}
	// Ready when it accepts a query; crash recovery or a slow disk may take a while.
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := c.exec(ctx, "SELECT 1")
		if err == nil {
			return c, nil
		}
		if perr := c.proc.running(); perr != nil || time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
			return nil, fmt.Errorf("postgres did not start: %v %v\n%s", err, perr, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *cluster) data() string { return filepath.Join(c.dir, "data") }

// url is the URL of database name as the superuser.
func (c *cluster) url(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%s/%s?sslmode=disable&connect_timeout=10", c.port, name)
}

// exec runs statements on the postgres database, bounded in time.
func (c *cluster) exec(ctx context.Context, stmts ...string) error {
	db, err := sql.Open("postgres", c.url("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// version is the server's version, e.g. "15.14".
func (c *cluster) version(ctx context.Context) string {
	db, err := sql.Open("postgres", c.url("postgres"))
	if err != nil {
		return "?"
	}
	defer db.Close()
	var v string
	if err := db.QueryRowContext(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

var errNoBinaries = errors.New("no PostgreSQL server binaries: no initdb/postgres on PATH or under /usr/lib/postgresql/*/bin (apt-get install postgresql)")

// findBinaries looks for initdb and postgres on PATH, then in Debian's versioned directories,
// newest version first.
func findBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	major := func(d string) int { n, _ := strconv.Atoi(filepath.Base(filepath.Dir(d))); return n }
	slices.SortFunc(dirs, func(a, b string) int { return major(b) - major(a) })
	for _, d := range dirs {
		_, errInit := os.Stat(filepath.Join(d, "initdb"))
		_, errPG := os.Stat(filepath.Join(d, "postgres"))
		if errInit == nil && errPG == nil {
			return d, nil
		}
	}
	return "", errNoBinaries
}

// unprivileged is the user to run PostgreSQL as when we are root: postgres if Debian's package
// made one, else nobody.
func unprivileged() (*syscall.Credential, error) {
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, errU := strconv.Atoi(u.Uid)
		gid, errG := strconv.Atoi(u.Gid)
		if errU == nil && errG == nil {
			return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
		}
	}
	return nil, errors.New("running as root and there is no postgres or nobody user to run PostgreSQL as")
}
