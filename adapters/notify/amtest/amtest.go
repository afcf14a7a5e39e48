// Package amtest starts a real Prometheus Alertmanager for tests: Debian's
// prometheus-alertmanager, in the foreground, on a free loopback port, with a private
// configuration and storage folder, clustering off, killed when the test ends.
//
// Without the binary the tests that need it are skipped loudly, except under CI=true, where .ci/run
// installs it and its absence is a failure.
package amtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// binaries are the names the Alertmanager binary goes by: Debian's, then upstream's.
var binaries = []string{"prometheus-alertmanager", "alertmanager"}

// config routes every alert to a receiver that sends nothing: the tests read alerts back through
// Alertmanager's own API.
const config = `route:
  receiver: blackhole
  group_wait: 1s
  group_interval: 1s
receivers:
  - name: blackhole
`

// Alertmanager is one running Alertmanager.
type Alertmanager struct {
	// URL is its base URL, "http://127.0.0.1:PORT": a target of type alertmanager.
	URL string
	// Addr is its host:port, for ALERT_TARGETS.
	Addr string
}

// find returns the binary's path, or "" without one.
func find() string {
	for _, name := range binaries {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Start starts an Alertmanager for t and stops it when t ends. It skips t under -short, and
// without the binary (fails it under CI=true).
func Start(t testing.TB) *Alertmanager {
	t.Helper()
	if testing.Short() {
		t.Skip("Alertmanager tests skipped under -short (make quick); make test runs them")
	}
	bin := find()
	if bin == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Alertmanager under CI=true: .ci/run installs prometheus-alertmanager")
		}
		t.Skip("!!! no Alertmanager: the Alertmanager tests are SKIPPED (apt-get install prometheus-alertmanager)")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// A free port can be taken by another process between finding it and Alertmanager binding
	// it: try a few.
	var lastErr error
	for range 3 {
		am, err := start(t, bin, cfg, dir)
		if err == nil {
			return am
		}
		lastErr = err
	}
	t.Fatalf("amtest: Alertmanager did not start: %v", lastErr)
	return nil
}

func start(t testing.TB, bin, cfg, dir string) (*Alertmanager, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	var out bytes.Buffer
	cmd := exec.Command(bin,
		"--config.file="+cfg,
		"--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--cluster.listen-address=", // no gossip port: one instance, nothing on other addresses
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	am := &Alertmanager{URL: "http://" + addr, Addr: addr}
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("alertmanager exited: %v: %s", err, out.String())
		default:
		}
		if am.ready() {
			t.Cleanup(stop)
			return am, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("alertmanager not ready at %s after 20 s: %s", addr, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (am *Alertmanager) ready() bool {
	resp, err := http.Get(am.URL + "/-/ready")
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Alert is an alert as Alertmanager's GET /api/v2/alerts lists it (the members the tests read).
type Alert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Status       struct {
		State string `json:"state"`
	} `json:"status"`
}

// Alerts lists the alerts Alertmanager holds whose labels include match (GET /api/v2/alerts with
// a filter per label). Alertmanager lists resolved alerts too until it collects them; their
// EndsAt is in the past.
func (am *Alertmanager) Alerts(ctx context.Context, match map[string]string) ([]Alert, error) {
	q := url.Values{}
	for k, v := range match {
		q.Add("filter", fmt.Sprintf("%s=%q", k, v))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, am.URL+"/api/v2/alerts?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("list alerts: status %d", resp.StatusCode)
	}
	var alerts []Alert
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		return nil, fmt.Errorf("list alerts: %w", err)
	}
	return alerts, nil
}

// ErrTimeout is WaitFor's error when cond never held.
var ErrTimeout = errors.New("amtest: timed out")

// WaitFor polls Alerts(match) until cond holds for what it lists, or until timeout; it returns
// the last listing.
func (am *Alertmanager) WaitFor(ctx context.Context, match map[string]string, timeout time.Duration, cond func([]Alert) bool) ([]Alert, error) {
	deadline := time.Now().Add(timeout)
	for {
		alerts, err := am.Alerts(ctx, match)
		if err == nil && cond(alerts) {
			return alerts, nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return alerts, err
			}
			return alerts, ErrTimeout
		}
		select {
		case <-ctx.Done():
			return alerts, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Active reports whether alerts holds one alert that is active (not resolved).
func Active(alerts []Alert) bool {
	return len(alerts) == 1 && alerts[0].Status.State == "active"
}

// ResolvedOrAbsent reports whether alerts holds no alert that is still active: Alertmanager lists
// a resolved alert (its endsAt past) until it collects it.
func ResolvedOrAbsent(alerts []Alert) bool {
	for _, a := range alerts {
		if a.Status.State == "active" && (a.EndsAt.IsZero() || a.EndsAt.After(time.Now())) {
			return false
		}
	}
	return true
}
