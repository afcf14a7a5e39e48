package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// nodeTools finds node and npm for a test that runs a real JavaScript client. Under -short it
// skips; without node or npm it skips loudly, and under CI=true it fails instead.
func nodeTools(t *testing.T, what string) (node, npm string) {
	t.Helper()
	if testing.Short() {
		t.Skip("node tests skipped under -short (make quick); make test runs them")
	}
	node, err := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are required under CI=true")
		}
		t.Skipf("!!! no node/npm: the %s tests are SKIPPED", what)
	}
	return node, npm
}

// nodePackage is a JavaScript package under testdata whose dependencies are pinned in its
// package-lock.json.
type nodePackage struct {
	dir, what string

	once sync.Once
	abs  string
	err  error
	out  []byte
}

// install returns node and the package's absolute directory, having run npm ci once per test
// process, and only when node_modules does not already hold what the lock pins (npm ci's own
// record of it, node_modules/.package-lock.json, is missing or older than the lock).
func (p *nodePackage) install(t *testing.T) (node, dir string) {
	t.Helper()
	node, npm := nodeTools(t, p.what)
	p.once.Do(func() {
		if p.abs, p.err = filepath.Abs(p.dir); p.err != nil {
			return
		}
		lock, err := os.Stat(filepath.Join(p.abs, "package-lock.json"))
		if err != nil {
			p.err = err
			return
		}
		if done, err := os.Stat(filepath.Join(p.abs, "node_modules", ".package-lock.json")); err == nil && !done.ModTime().Before(lock.ModTime()) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = p.abs
		p.out, p.err = cmd.CombinedOutput()
	})
	if p.err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", p.dir, p.err, p.out)
	}
	return node, p.abs
}
