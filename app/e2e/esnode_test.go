package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"
)

var esNode = nodePackage{dir: "testdata/es-node", what: "Elasticsearch node client"}

// TestESNodeClient: the official Elasticsearch node client (@elastic/elasticsearch, pinned by
// testdata/es-node/package-lock.json) sends a few thousand documents with its bulk helper
// (helpers.bulk, two requests at once, ApiKey in Elasticsearch's base64(id:key) form) against
// the live service on each store: every good document is stored once, counted through the API,
// and every bad one reaches the helper's onDrop with its own status.
//
// Cost: one npm ci per checkout (cached in testdata/es-node/node_modules), then a node process
// of about a second per store.
func TestESNodeClient(t *testing.T) {
	esNode.install(t) // skip before a PostgreSQL database is made for nothing
	forEachStore(t, testESNodeClient)
}

func testESNodeClient(t *testing.T, open storeOpener) {
	e := newESEnv(t, open, nil)
	node, dir := esNode.install(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const n = 3000
	cmd := exec.CommandContext(ctx, node, "bulk.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ES_URL="+e.url, "ES_API_KEY="+esKeyA, "ES_INDEX="+e.a.ID, "ES_OTHER_INDEX="+e.b.ID, "RUN=node", "N=3000")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("bulk.mjs: %v\n%s\n%s", err, out, stderr)
	}
	var res struct {
		Stats struct {
			Total, Failed, Successful, Retry int
			Aborted                          bool
		}
		Expected []struct {
			Line int
			Kind string
		}
		Dropped []struct {
			Line         int
			Kind         string
			Status       int
			Type, Reason string
		}
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("bulk.mjs printed %s: %v", out, err)
	}
	want := map[string]int{"no message": 400, "not a time": 400, "too long": 400, "delete": 400, "other project": 403}
	dropped := map[int]bool{}
	for _, d := range res.Dropped {
		if d.Status != want[d.Kind] || d.Type == "" || d.Reason == "" {
			t.Errorf("line %d (%s) dropped with %d %s %q, want %d", d.Line, d.Kind, d.Status, d.Type, d.Reason, want[d.Kind])
		}
		dropped[d.Line] = true
	}
	for _, x := range res.Expected {
		if !dropped[x.Line] {
			t.Errorf("bad line %d (%s) was not reported", x.Line, x.Kind)
		}
	}
	good := n + 5 - len(res.Expected)
	if res.Stats.Aborted || res.Stats.Successful != good || res.Stats.Failed != len(res.Expected) || len(res.Dropped) != len(res.Expected) {
		t.Errorf("helper stats %+v, %d dropped; want %d stored, %d failed", res.Stats, len(res.Dropped), good, len(res.Expected))
	}
	if got := apiCount(t, e.url, esKeyA, e.a.ID, "run:node"); got != int64(good) {
		t.Errorf("the API counts %d entries, want %d", got, good)
	}
	if got := apiCount(t, e.url, esKeyA, e.a.ID, "run:node AND subject:node-host AND level:error"); got == 0 {
		t.Errorf("no entry mapped with its subject and level")
	}
}
