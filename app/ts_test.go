package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestTypeScriptClients runs api/ts's node tests (every REST operation through the generated
// openapi-fetch client, MakeHat in JSON and protobuf through the generated protobuf-ts client)
// against the real wiring.
func TestTypeScriptClients(t *testing.T) {
	node, err := exec.LookPath("node")
	npm, err2 := exec.LookPath("npm")
	if err != nil || err2 != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node and npm are required under CI=true")
		}
		t.Skip("!!! no node/npm: the TypeScript client tests are SKIPPED")
	}
	dir, err := filepath.Abs("../api/ts")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openapi-fetch")); err != nil {
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	e := newEnv(t, openSQLiteStore, nil)
	run := exec.CommandContext(ctx, node, "--test", "test/")
	run.Dir = dir
	run.Env = append(os.Environ(), "OBSVC_URL="+e.url)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
