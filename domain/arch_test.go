package domain_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "example.com/obsvc"

// appServer is the one constructor of the service.
const appServer = module + "/app/server"

// serveTest serves the service for the tests under app/ (the httptest of app/server); it imports
// appServer and is imported by tests only.
const serveTest = module + "/app/server/servetest"

// listedPackage is what the architecture rules need of `go list -json`.
type listedPackage struct {
	ImportPath  string
	Standard    bool
	Deps        []string
	Imports     []string
	TestImports []string
	// XTestImports are the imports of the package's external tests (package x_test).
	XTestImports []string
}

// TestArchitecture enforces the dependency rules of the hexagonal layout (make arch-check runs
// it):
//
//  1. domain depends, directly or not, on the standard library only, and not on its transports or
//     SQL (net/http, database/sql): no generated code, no adapter, no library.
//  2. No adapter imports another adapter: packages under adapters/X import nothing under
//     adapters/Y. (Their tests may: a real store is a real part, not a dependency of the code.)
//     adapters/internal/... is not an adapter but what several share (reading a request body,
//     say): any adapter may import it, and it imports only domain and the standard library.
//  3. Only app imports adapters: neither domain nor api does.
//  4. The adapters that hold the domain's own machinery behind its ports (tailhub, the live
//     tail's fan-out; readshare, the per-key read semaphore) import only domain and the
//     standard library.
//  5. Nothing imports app/server, the one constructor, but the command (app) and the tests under
//     app/ (its own, the end-to-end tests, the benchmarks and the fault tests), directly or
//     through app/server/servetest, which only those tests import.
func TestArchitecture(t *testing.T) {
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listedPackage
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 8 {
		t.Fatalf("go list found %d packages: too few to judge", len(pkgs))
	}
	std := standardPackages(t)
	seenDomain := false
	for _, p := range pkgs {
		switch layer, adapter := layerOf(p.ImportPath); layer {
		case "domain":
			seenDomain = true
			for _, d := range p.Deps {
				if !std[d] || d == "net/http" || strings.HasPrefix(d, "net/http/") || d == "database/sql" || strings.HasPrefix(d, "database/sql/") {
					t.Errorf("%s depends on %s", p.ImportPath, d)
				}
			}
		case "adapters":
			for _, imp := range p.Imports {
				if l, other := layerOf(imp); l == "adapters" && other != adapter && other != "internal" {
					t.Errorf("adapter %s imports adapter %s", p.ImportPath, imp)
				}
				if (domainOnly[adapter] || adapter == "internal") && !std[imp] && imp != module+"/domain" {
					t.Errorf("%s imports %s: it may import only domain and the standard library", p.ImportPath, imp)
				}
			}
		case "app":
		default:
			for _, imp := range p.Imports {
				if l, _ := layerOf(imp); l == "adapters" || l == "app" {
					t.Errorf("%s imports %s: only app may import adapters", p.ImportPath, imp)
				}
			}
		}
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			if imp == appServer && p.ImportPath != module+"/app" && p.ImportPath != serveTest {
				t.Errorf("%s imports %s: only app may", p.ImportPath, imp)
			}
			if imp == serveTest {
				t.Errorf("%s imports %s: only tests may", p.ImportPath, imp)
			}
		}
		for _, imp := range append(slices.Clone(p.TestImports), p.XTestImports...) {
			if l, _ := layerOf(p.ImportPath); (imp == appServer || imp == serveTest) && l != "app" {
				t.Errorf("the tests of %s import %s: only the tests under app/ may", p.ImportPath, imp)
			}
		}
	}
	if !seenDomain {
		t.Fatal("go list did not list the domain package")
	}
}

// domainOnly are the adapters that import only domain and the standard library (rule 4).
var domainOnly = map[string]bool{"tailhub": true, "readshare": true}

// layerOf names the top-level folder of a package of this module ("" outside it) and, under
// adapters/, which adapter.
func layerOf(importPath string) (layer, adapter string) {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return "", ""
	}
	parts := strings.Split(rest, "/")
	if parts[0] == "adapters" && len(parts) > 1 {
		return "adapters", parts[1]
	}
	return parts[0], ""
}

// standardPackages lists the standard library.
func standardPackages(t *testing.T) map[string]bool {
	out, err := exec.Command("go", "list", "std").Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	m := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		m[p] = true
	}
	return m
}
