//go:build faults

package faults

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSIGTERMEndsOpenTails holds 20 live tails open on a real server process, with entries
// flowing, and sends it SIGTERM: every tail's stream must end cleanly (so clients resume on the
// next instance) and the process must exit with status 0 within SHUTDOWN_TIMEOUT. A tail that
// held its connection would hold the drain until the timeout, and the process would then exit 1.
func TestSIGTERMEndsOpenTails(t *testing.T) {
	for _, s := range faultStores() {
		t.Run(s.name, func(t *testing.T) { sigtermTails(t, s.name, s.env(t)) })
	}
}

func sigtermTails(t *testing.T, name string, env []string) {
	const tails = 20
	const drainTimeout = 5 * time.Second
	addr := freeAddr(t)
	// The tails start at once from one address, and count against its in-flight share while
	// they start.
	srv := start(t, addr, append(env, "SHUTDOWN_TIMEOUT="+drainTimeout.String(), fmt.Sprintf("MAX_TAILS=%d", tails), fmt.Sprintf("MAX_IN_FLIGHT_PER_CLIENT=%d", 2*tails))...)
	exited := false
	defer func() {
		if !exited {
			srv.kill()
		}
	}()
	base := "http://" + addr
	projectID := createProject(t, base)

	type ended struct {
		events int
		err    error
	}
	opened := make(chan struct{}, tails)
	done := make(chan ended, tails)
	client := &http.Client{} // no timeout: a tail is open-ended; the test's own deadline bounds it
	for range tails {
		go func() {
			events, err := followTail(client, base+"/logs/tail?project_id="+projectID, opened)
			done <- ended{events, err}
		}()
	}
	for range tails {
		select {
		case <-opened:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: a tail did not open\n%s", name, srv.log.String())
		}
	}
	// Entries flow to every tail while the signal arrives.
	stop := make(chan struct{})
	posted := make(chan int, 1)
	go func() {
		n := 0
		defer func() { posted <- n }()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprintf(`[{"project_id":%q,"message":"tail %d"}]`, projectID, i)
			resp, err := http.Post(base+"/logs", "application/json", strings.NewReader(body))
			if err != nil {
				return // the server stopped accepting
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusCreated {
				n++
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	time.Sleep(300 * time.Millisecond)

	signalled := time.Now()
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var exitErr error
	select {
	case exitErr = <-srv.done:
		exited = true
	case <-time.After(drainTimeout + 10*time.Second):
		t.Fatalf("%s: the server did not exit after SIGTERM\n%s", name, srv.log.String())
	}
	took := time.Since(signalled)
	close(stop)
	n := <-posted

	events, clean := 0, 0
	for range tails {
		select {
		case e := <-done:
			events += e.events
			if e.err == nil {
				clean++
			} else {
				t.Logf("%s: a tail ended with %v", name, e.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: a tail's stream did not end when the server exited", name)
		}
	}
	fmt.Printf("FAULTS sigterm-tails/%s: tails=%d ended_cleanly=%d events=%d posted=%d exit=%v after=%s\n",
		name, tails, clean, events, n, exitErr, took.Round(time.Millisecond))
	if exitErr != nil {
		t.Errorf("%s: exit after SIGTERM with %d open tails = %v, want status 0\n%s", name, tails, exitErr, srv.log.String())
	}
	if took >= drainTimeout {
		t.Errorf("%s: the process took %v to exit, not within SHUTDOWN_TIMEOUT %v", name, took, drainTimeout)
	}
	if clean != tails {
		t.Errorf("%s: %d of %d tails' streams ended cleanly (the server ends them; a reset or a cut chunk means it did not)", name, clean, tails)
	}
	if n == 0 || events == 0 {
		t.Errorf("%s: %d entries posted, %d events received: the tails were not live", name, n, events)
	}
}

// followTail reads a tail until its stream ends, signalling opened at its first line (the retry
// field), and returns how many events it held and the error that ended it: nil for a clean end.
func followTail(client *http.Client, url string, opened chan<- struct{}) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("tail answered %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	events, first := 0, true
	for sc.Scan() {
		if first {
			first = false
			opened <- struct{}{}
		}
		if sc.Text() == "event: log" {
			events++
		}
	}
	if first {
		return 0, fmt.Errorf("the stream ended before its first line: %v", sc.Err())
	}
	return events, sc.Err()
}
