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

// TestTypeScriptClients runs api/ts's node tests (every REST operation through the generated
// openapi-fetch client, MakeHat in JSON and protobuf through the generated protobuf-ts client)
// against the real wiring. It also type-checks api/ts/test/required-fields.mts with tsc (strict,
// --noEmit) against the types openapi-typescript generates at its default options, then compiles
// and runs it: every operation sent with only its required fields.
func TestTypeScriptClients(t *testing.T) {
	node, npm := nodeTools(t, "TypeScript client")
	dir, err := filepath.Abs("../../api/ts")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	tsc := filepath.Join(dir, "node_modules", ".bin", "tsc")
	_, errFetch := os.Stat(filepath.Join(dir, "node_modules", "openapi-fetch"))
	if _, errTSC := os.Stat(tsc); errFetch != nil || errTSC != nil {
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		install.Dir = dir
		if out, err := install.CombinedOutput(); err != nil {
			t.Fatalf("npm ci: %v\n%s", err, out)
		}
	}
	e := newEnv(t, openSQLiteStore, func(c *server.Config) { c.AlertTargets = "127.0.0.1" })
	run := exec.CommandContext(ctx, node, "--test", "test/")
	run.Dir = dir
	run.Env = append(os.Environ(), "OBSVC_URL="+e.url)
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	// The required-fields program: type-checked as is, then compiled into a scratch directory
	// (with src/ beside it, so its import of ../src/rest.mjs resolves) and run.
	check := exec.CommandContext(ctx, tsc, "-p", "test/tsconfig.json", "--noEmit")
	check.Dir = dir
	if out, err := check.CombinedOutput(); err != nil {
		t.Fatalf("tsc --noEmit (strict, against the default-options types): %v\n%s", err, out)
	}
	build := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "src"), filepath.Join(build, "src")); err != nil {
		t.Fatal(err)
	}
	emit := exec.CommandContext(ctx, tsc, "-p", "test/tsconfig.json", "--noEmit", "false", "--outDir", filepath.Join(build, "test"))
	emit.Dir = dir
	if out, err := emit.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	prog := exec.CommandContext(ctx, node, filepath.Join(build, "test", "required-fields.mjs"))
	prog.Env = append(os.Environ(), "OBSVC_URL="+e.url)
	out, err = prog.CombinedOutput()
	if err != nil {
		t.Fatalf("required-fields.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
