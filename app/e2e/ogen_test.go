package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"example.com/obsvc/app/server"
)

// TestOgenClient generates a client from openapi.yaml with ogen (pinned in
// testdata/ogenclient/go.mod, run at its default options) and runs testdata/ogenclient against
// a live server on each store: every operation, the OTLP route in JSON and protobuf and the SSE
// tail included. The module is copied to a scratch directory so that nothing generated lands in
// the tree; its own go.mod keeps ogen and its runtime out of the service's module.
func TestOgenClient(t *testing.T) {
	goCmd := goTool(t, "the ogen client test")
	src, err := filepath.Abs("testdata/ogenclient")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs("../../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	copyFiles(t, src, dir, "go.mod", "go.sum", "main.go")
	gen := exec.CommandContext(ctx, goCmd, "tool", "ogen", "--target", "oas", "--package", "oas", "--clean", spec)
	gen.Dir = dir
	runCmd(t, gen)
	bin := filepath.Join(dir, "ogenclient")
	build := exec.CommandContext(ctx, goCmd, "build", "-o", bin, ".")
	build.Dir = dir
	runCmd(t, build)
	vet := exec.CommandContext(ctx, goCmd, "vet", ".")
	vet.Dir = dir
	runCmd(t, vet)

	for _, s := range []namedStore{{"sqlite", openSQLiteStore}, {"postgres", openPostgresStore}} {
		t.Run(s.name, func(t *testing.T) {
			e := newEnv(t, s.open, func(c *server.Config) { c.AlertTargets = "127.0.0.1" })
			run := exec.CommandContext(ctx, bin)
			run.Env = append(os.Environ(), "OBSVC_URL="+e.url)
			t.Logf("%s", runCmd(t, run))
		})
	}
}
