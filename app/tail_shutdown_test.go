package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShutdownEndsOpenTails opens 20 live tails and then stops the server the way SIGTERM does
// (run's context ends): every tail ends at once, so run drains and returns nil well within
// SHUTDOWN_TIMEOUT instead of failing the drain.
func TestShutdownEndsOpenTails(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan error, 1)
	env := map[string]string{"DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db"), "SHUTDOWN_TIMEOUT": "5s", "MAX_TAILS": "20",
		// A tail's start counts against the in-flight limits, and the 20 start at once from one
		// address: room for all of them.
		"MAX_IN_FLIGHT_PER_CLIENT": "40"}
	go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenvFrom(env), &stdout, &stderr) }()
	base := "http://" + listeningAddr(t, &stdout, done)

	resp, err := http.Post(base+"/projects", "application/json", strings.NewReader(`{"name":"tails"}`))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /projects = %v %v", resp, err)
	}
	var p struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()

	const tails = 20
	ended := make(chan error, tails)
	opened := make(chan struct{}, tails)
	for range tails {
		go func() {
			_, err := readEvents(context.Background(), base+"/logs/tail?project_id="+p.ID, "", func(ev sseEvent) bool {
				if ev.event == "open" {
					opened <- struct{}{}
				}
				return true
			})
			ended <- err
		}()
	}
	for range tails {
		select {
		case <-opened:
		case <-time.After(30 * time.Second):
			t.Fatal("a tail did not open")
		}
	}

	start := time.Now()
	cancel() // what SIGTERM does through signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after shutdown with %d open tails = %v, want nil", tails, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run did not return")
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("shutdown took %v, past SHUTDOWN_TIMEOUT", took)
	}
	for range tails {
		select {
		case <-ended:
		case <-time.After(10 * time.Second):
			t.Fatal("a tail's stream did not end")
		}
	}
}
