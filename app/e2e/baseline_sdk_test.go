package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// baselineSpec is the released contract that every 1.x keeps working for (Makefile BASELINE).
const baselineSpec = "../../api/baseline/openapi-1.0.0.yaml"

// TestBaselineGoSDK builds testdata/baselinesdk, a program written against the Go client that
// oapi-codegen generates from the released baseline, twice: against that client (generated here
// with the pinned oapi-codegen and the configs of api/rest, and swapped in with go build -overlay)
// and against the client generated from the current openapi.yaml (api/rest). Then it runs the
// second build against a live server. A change of openapi.yaml that breaks a program written for
// 1.0.0 fails here.
func TestBaselineGoSDK(t *testing.T) {
	goCmd := goTool(t, "the baseline SDK test")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	restDir, err := filepath.Abs("../../api/rest")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs(baselineSpec)
	if err != nil {
		t.Fatal(err)
	}
	gen := t.TempDir()
	// The oapi-codegen pinned in go.mod, built here: its configs name their output relative to
	// the working directory, which must be the scratch one.
	oapiCodegen := filepath.Join(gen, "oapi-codegen")
	runCmd(t, exec.CommandContext(ctx, goCmd, "build", "-o", oapiCodegen, "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"))
	overlay := map[string]string{}
	for _, part := range []string{"server", "client"} {
		cmd := exec.CommandContext(ctx, oapiCodegen, "-config", filepath.Join(restDir, part+".cfg.yaml"), spec)
		cmd.Dir = gen
		runCmd(t, cmd)
		overlay[filepath.Join(restDir, part+".gen.go")] = filepath.Join(gen, part+".gen.go")
	}
	// Files written since 1.0.0 to keep the names its generated code declared (stats_by.go) are
	// left out of the baseline's build, where that code declares them itself.
	empty := filepath.Join(gen, "empty.go")
	if err := os.WriteFile(empty, []byte("package rest\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"stats_by.go"} {
		overlay[filepath.Join(restDir, name)] = empty
	}
	b, err := json.Marshal(map[string]any{"Replace": overlay})
	if err != nil {
		t.Fatal(err)
	}
	overlayFile := filepath.Join(gen, "overlay.json")
	if err := os.WriteFile(overlayFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const pkg = "./testdata/baselinesdk"
	runCmd(t, exec.CommandContext(ctx, goCmd, "vet", "-overlay", overlayFile, pkg))
	runCmd(t, exec.CommandContext(ctx, goCmd, "vet", pkg))
	bin := filepath.Join(t.TempDir(), "baselinesdk")
	runCmd(t, exec.CommandContext(ctx, goCmd, "build", "-o", bin, pkg))

	e := newEnv(t, openSQLiteStore, nil)
	run := exec.CommandContext(ctx, bin)
	run.Env = append(os.Environ(), "OBSVC_URL="+e.url)
	t.Logf("%s", runCmd(t, run))
}

// TestBaselineTypeScriptSDK type-checks testdata/baselinesdk/sdk.mts (tsc --strict) against the
// types openapi-typescript generates from the released baseline and against those generated from
// the current openapi.yaml (api/ts/src/schema.d.ts), both at default options, with openapi-fetch;
// then compiles it against the current types and runs it against a live server.
func TestBaselineTypeScriptSDK(t *testing.T) {
	node, npm := nodeTools(t, "baseline TypeScript SDK")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	tsDir, err := filepath.Abs("../../api/ts")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := filepath.Abs(baselineSpec)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tsDir, "node_modules", ".bin")
	if _, err := os.Stat(filepath.Join(bin, "openapi-typescript")); err != nil {
		install := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		install.Dir = tsDir
		runCmd(t, install)
	}
	const tsconfig = `{
  "compilerOptions": {
    "strict": true, "target": "es2022", "module": "esnext", "moduleResolution": "bundler",
    "lib": ["es2022", "dom"], "types": [], "exactOptionalPropertyTypes": true,
    "noUncheckedIndexedAccess": true, "outDir": "out"
  },
  "files": ["sdk.mts"]
}`
	// prepare lays out a scratch project: the program, its tsconfig, api/ts's node_modules, and
	// the schema written by write.
	prepare := func(write func(schema string)) string {
		dir := t.TempDir()
		copyFiles(t, "testdata/baselinesdk", dir, "sdk.mts")
		if err := os.WriteFile(filepath.Join(dir, "tsconfig.json"), []byte(tsconfig), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(tsDir, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		write(filepath.Join(dir, "schema.d.ts"))
		return dir
	}
	tsc := filepath.Join(bin, "tsc")

	baseline := prepare(func(schema string) {
		runCmd(t, exec.CommandContext(ctx, filepath.Join(bin, "openapi-typescript"), spec, "--output", schema))
	})
	check := exec.CommandContext(ctx, tsc, "-p", "tsconfig.json", "--noEmit")
	check.Dir = baseline
	runCmd(t, check)

	current := prepare(func(schema string) {
		copyFiles(t, filepath.Join(tsDir, "src"), filepath.Dir(schema), "schema.d.ts")
	})
	build := exec.CommandContext(ctx, tsc, "-p", "tsconfig.json")
	build.Dir = current
	runCmd(t, build)

	e := newEnv(t, openSQLiteStore, nil)
	run := exec.CommandContext(ctx, node, filepath.Join(current, "out", "sdk.mjs"))
	run.Env = append(os.Environ(), "OBSVC_URL="+e.url)
	t.Logf("%s", runCmd(t, run))
}
