//go:build faults

package faults

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// flakyReceiver is a local webhook receiver that answers 500 while failing is set and can go
// down (its port refuses connections) and come back on the same address. It keeps every
// notification it accepted (answered 200), in order of acceptance.
type flakyReceiver struct {
	t    *testing.T
	addr string

	mu       sync.Mutex
	failing  bool
	srv      *http.Server
	done     chan struct{}
	accepted []string // notification ids
	refused  int      // answered 500
}

func newFlakyReceiver(t *testing.T) *flakyReceiver {
	r := &flakyReceiver{t: t, addr: freeAddr(t)}
	r.up()
	t.Cleanup(r.down)
	return r
}

func (r *flakyReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var doc struct {
		ID, State string
	}
	body, _ := io.ReadAll(req.Body)
	if err := json.Unmarshal(body, &doc); err != nil || doc.ID == "" {
		r.t.Errorf("the receiver got %q", body)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failing {
		r.refused++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.accepted = append(r.accepted, doc.ID)
	w.WriteHeader(http.StatusOK)
}

// up serves on the receiver's address (again).
func (r *flakyReceiver) up() {
	var ln net.Listener
	var err error
	for range 100 { // the port was ours a moment ago; a restart may have to wait for it
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		r.t.Fatalf("receiver: listen again on %s: %v", r.addr, err)
	}
	srv := &http.Server{Handler: r, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.t.Errorf("receiver: %v", err)
		}
	}()
	r.mu.Lock()
	r.srv, r.done = srv, done
	r.mu.Unlock()
}

// down closes the receiver's port and every connection to it.
func (r *flakyReceiver) down() {
	r.mu.Lock()
	srv, done := r.srv, r.done
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		_ = srv.Close()
		<-done
	}
}

func (r *flakyReceiver) setFailing(v bool) { r.mu.Lock(); r.failing = v; r.mu.Unlock() }

func (r *flakyReceiver) got() ([]string, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.accepted), r.refused
}

// alertState is what GET /alerts/{id} says of a rule.
type alertState struct {
	State          string `json:"state"`
	LastEvaluation *struct {
		Time  int64 `json:"time"`
		Count int64 `json:"count"`
	} `json:"last_evaluation"`
}

func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
	}
	return resp.StatusCode
}

func postJSON(t *testing.T, u, body string) []byte {
	t.Helper()
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s = %d %s", u, resp.StatusCode, b)
	}
	return b
}

// waitUntil polls ok every 200 ms for at most d.
func waitUntil(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAlertsSurviveKillAndReceiverOutage runs two instances on one PostgreSQL database. A
// evaluates the rule (it holds its lease from the start) but never sends (its sender's interval
// is an hour); B sends. A is killed with SIGKILL as soon as the rule's firing is stored, so
// that A has changed the state and queued the notification but nobody has delivered it. The
// receiver answers 500 for the first 25 s, then is down for 30 s. B takes the rule over within
// two intervals, resolves the firing and fires and resolves once more; in the end every
// transition of the history (numbered without gaps) is notified at least once, in order, each
// firing under one id of its own.
func TestAlertsSurviveKillAndReceiverOutage(t *testing.T) {
	rcv := newFlakyReceiver(t)
	rcv.setFailing(true)
	receiverStart := time.Now()
	dsn := pg.NewDatabase(t)
	common := []string{"DATABASE_URL=" + dsn, "ALERT_TARGETS=" + rcv.addr, "ALERT_EVAL_INTERVAL=1s"}
	addrA, addrB := freeAddr(t), freeAddr(t)
	a := start(t, addrA, append(common, "ALERT_DELIVER_INTERVAL=1h")...)
	killA := sync.OnceFunc(a.kill)
	defer killA()
	baseA := "http://" + addrA
	project := createProject(t, baseA)
	var rule struct{ ID string }
	if err := json.Unmarshal(postJSON(t, baseA+"/alerts", fmt.Sprintf(
		`{"project_id":%q,"name":"errors","query":"level:error","window_seconds":10,"interval_seconds":10,"condition":{"op":">","threshold":0},"targets":[{"type":"webhook","url":"http://%s/hook"}]}`,
		project, rcv.addr)), &rule); err != nil {
		t.Fatal(err)
	}
	var st alertState
	waitUntil(t, "the first evaluation, by A", 15*time.Second, func() bool {
		return getJSON(t, baseA+"/alerts/"+rule.ID, &st) == 200 && st.LastEvaluation != nil
	})
	b := start(t, addrB, common...)
	defer b.kill()
	baseB := "http://" + addrB

	ingest := func(base string) {
		postJSON(t, base+"/logs", fmt.Sprintf(`[{"project_id":%q,"level":"error","message":"boom","time":%d}]`, project, time.Now().UnixMilli()))
	}
	// The first firing, evaluated by A; A dies the moment it is stored.
	ingest(baseB)
	waitUntil(t, "the first firing", 30*time.Second, func() bool {
		return getJSON(t, baseB+"/alerts/"+rule.ID, &st) == 200 && st.State == "firing"
	})
	firingSeen := time.Now()
	killA()
	killedAt := time.Now()
	firedAt := st.LastEvaluation.Time
	if got, _ := rcv.got(); len(got) != 0 {
		t.Fatalf("the receiver accepted %q while it was failing", got)
	}
	// B takes the rule over within two intervals and resolves it (no entry since).
	waitUntil(t, "an evaluation by B", 25*time.Second, func() bool {
		return getJSON(t, baseB+"/alerts/"+rule.ID, &st) == 200 && st.LastEvaluation.Time > firedAt
	})
	takeover := time.Since(killedAt)
	if takeover > 20*time.Second+2*time.Second {
		t.Errorf("B took the rule over %s after A died, want within two intervals (20 s)", takeover)
	}
	waitUntil(t, "the resolve", 30*time.Second, func() bool {
		return getJSON(t, baseB+"/alerts/"+rule.ID, &st) == 200 && st.State == "ok"
	})

	// The receiver: 500 for 25 s in all, then down for 30 s, then up and answering.
	time.Sleep(time.Until(receiverStart.Add(25 * time.Second)))
	rcv.down()
	rcv.setFailing(false)
	downAt := time.Now()
	// A second firing and its resolve while the receiver is down.
	ingest(baseB)
	waitUntil(t, "the second firing", 30*time.Second, func() bool {
		return getJSON(t, baseB+"/alerts/"+rule.ID, &st) == 200 && st.State == "firing"
	})
	time.Sleep(time.Until(downAt.Add(30 * time.Second)))
	rcv.up()
	waitUntil(t, "the second resolve", 30*time.Second, func() bool {
		return getJSON(t, baseB+"/alerts/"+rule.ID, &st) == 200 && st.State == "ok"
	})

	var history []struct {
		Seq  int64  `json:"seq"`
		Time int64  `json:"time"`
		From string `json:"from"`
		To   string `json:"to"`
	}
	if getJSON(t, baseB+"/alerts/"+rule.ID+"/history", &history) != 200 {
		t.Fatal("history")
	}
	slices.Reverse(history)
	// The notifications the history calls for, in order: each firing, then its resolve.
	var want []string
	var firing int64
	for i, h := range history {
		if h.Seq != int64(i+1) {
			t.Fatalf("history %+v has a gap at %d", history, i+1)
		}
		switch {
		case h.To == "firing":
			firing = h.Time
			want = append(want, fmt.Sprintf("%s/%d/firing", rule.ID, firing))
		case h.From == "firing":
			want = append(want, fmt.Sprintf("%s/%d/resolved", rule.ID, firing))
		}
	}
	if len(want) != 4 {
		t.Fatalf("history %+v: want two firings and their resolves", history)
	}
	var got []string
	var refused int
	waitUntil(t, "every notification accepted", 3*time.Minute, func() bool {
		got, refused = rcv.got()
		return len(got) >= len(want)
	})
	time.Sleep(3 * time.Second) // anything sent twice arrives meanwhile
	got, refused = rcv.got()
	// At least once, in order: the first acceptance of each id follows the history; no id
	// the history does not call for (no firing notified as another firing).
	var firsts []string
	for _, id := range got {
		if !slices.Contains(want, id) {
			t.Errorf("notified %s, which no transition calls for (want %q)", id, want)
		}
		if !slices.Contains(firsts, id) {
			firsts = append(firsts, id)
		}
	}
	if !slices.Equal(firsts, want) {
		t.Fatalf("accepted in order %q, want %q", firsts, want)
	}
	t.Logf("A killed %s after the test saw the first firing stored; B's first evaluation %s after the kill", killedAt.Sub(firingSeen).Round(time.Millisecond), takeover.Round(time.Millisecond))
	t.Logf("history of %d transitions; %d notifications accepted (%d distinct), %d answered 500 first", len(history), len(got), len(firsts), refused)
	if refused == 0 {
		t.Error("the receiver never answered 500: the retry was not exercised")
	}
}
