package domain_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDomainImportsNoTransportOrStorage keeps the core hexagonal: nothing it depends on, directly
// or not, may be a transport, SQL, generated code or an adapter.
func TestDomainImportsNoTransportOrStorage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"net/http", "database/sql", "example.com/obsvc/api", "example.com/obsvc/adapters", "example.com/obsvc/app", "github.com/twitchtv/twirp", "github.com/jmoiron/sqlx", "github.com/getkin/kin-openapi"}
	deps := strings.Fields(string(out))
	if len(deps) < 5 {
		t.Fatalf("go list returned too little to judge: %q", deps)
	}
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("domain depends on %s", d)
			}
		}
	}
}
