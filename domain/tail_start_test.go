package domain

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

// tailFake is a store of one project, read in ingest order, that holds no entries: enough for
// a tail's start. The live tail's own tests are adapters/tailhub's.
type tailFake struct {
	Store
	project Project
}

func (f *tailFake) GetProject(_ context.Context, id string) (Project, error) {
	if id != f.project.ID {
		return Project{}, Errorf(KindNotFound, "not found")
	}
	return f.project, nil
}

func (f *tailFake) TailHead(context.Context, string) (TailPosition, error) {
	return TailPosition{Tx: 1, Pos: -1}, nil
}

func (f *tailFake) TailHorizon(context.Context, string) (TailPosition, error) {
	return TailPosition{Tx: 1, Pos: -1}, nil
}

func (f *tailFake) ReadTail(context.Context, TailQuery) ([]TailEntry, error) { return nil, nil }

func (f *tailFake) ReplayTail(context.Context, LogFilter, TailPosition, int) ([]TailEntry, error) {
	return nil, nil
}

// caughtUp is a Tailer whose tails catch up at once, then wait for their end.
type caughtUp struct{}

func (caughtUp) Follow(ctx context.Context, f TailFollow) error {
	f.Started()
	<-ctx.Done()
	return nil
}

func (caughtUp) Written(map[string]uint64, []LogEntry) {}

func (caughtUp) Open(string) (func(), error) { return func() {}, nil }

// oneShare is ReadShares of one read per key, past which a read is refused at once.
type oneShare struct {
	mu   sync.Mutex
	held map[string]bool
}

func (s *oneShare) Acquire(_ context.Context, key string) (func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key] {
		return nil, Errorf(KindRateLimited, "this key already has 1 reads running")
	}
	if s.held == nil {
		s.held = map[string]bool{}
	}
	s.held[key] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.held, key)
	}, nil
}

// slowReplay is a tailFake whose replay waits until its context ends.
type slowReplay struct{ *tailFake }

func (s slowReplay) ReplayTail(ctx context.Context, _ LogFilter, _ TailPosition, _ int) ([]TailEntry, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestTailStartHasADeadline: a tail whose start (here a replay) takes longer than ReadTimeout
// fails as KindUnavailable at about ReadTimeout, before its stream starts, though the request's
// own context has no deadline.
func TestTailStartHasADeadline(t *testing.T) {
	f := &tailFake{project: Project{ID: testID(), Name: "p"}}
	svc := NewService(slowReplay{f}, opts(Options{Tailer: caughtUp{}, TailStartTimeout: 100 * time.Millisecond}))
	start := int64(0)
	began := time.Now()
	called := false
	err := svc.Tail(admin(t), TailRequest{LogFilter: LogFilter{ProjectID: f.project.ID}, StartTime: &start}, func([]TailEntry) error {
		called = true
		return nil
	})
	if KindOf(err) != KindUnavailable || called {
		t.Fatalf("Tail with a replay slower than ReadTimeout = %v (stream started: %v), want KindUnavailable before the stream", err, called)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the start failed after %v, want about 100ms", took)
	}
}

// TestTailTokens: a token decodes to the position it was made of, extremes included; anything
// else (the first format, out of range, not canonical, too long) is KindInvalid naming the
// parameter and not quoting the text.
func TestTailTokens(t *testing.T) {
	for _, p := range []TailPosition{{}, {Tx: 1, Pos: -1}, {Tx: 7, Pos: 3}, {Tx: math.MaxInt64, Pos: math.MaxInt32}} {
		got, err := DecodeTailToken("cursor", EncodeTailToken(p))
		if err != nil || got != p {
			t.Errorf("round trip of %+v = %+v, %v", p, got, err)
		}
	}
	bad := map[string]string{
		"the first format":        "eyJ4Ijo3NDUsInAiOjB9", // {"x":745,"p":0}
		"a place at 2^31":         EncodeTailToken(TailPosition{Tx: 1, Pos: math.MaxInt32 + 1}),
		"a batch at 2^63":         EncodeTailToken(TailPosition{Tx: math.MaxInt64 + 1}),
		"a place below -1":        EncodeTailToken(TailPosition{Tx: 1, Pos: -2}),
		"trailing bytes":          EncodeTailToken(TailPosition{Tx: 1}) + "AA",
		"a long varint":           "AoCAAAE", // 2, then 0 as a two-byte varint
		"not base64":              "!!",
		"empty after the version": "Ag",
		"100 KB":                  strings.Repeat("A", 100_000),
	}
	for name, text := range bad {
		_, err := DecodeTailToken("Last-Event-ID", text)
		var de *Error
		if !errors.As(err, &de) || de.Kind != KindInvalid || len(de.Fields) != 1 || de.Fields[0].Param != "Last-Event-ID" {
			t.Errorf("%s: %v, want KindInvalid on Last-Event-ID", name, err)
			continue
		}
		if len(text) > 8 && strings.Contains(de.Fields[0].Detail+de.Msg, text[:8]) {
			t.Errorf("%s: the answer quotes the token: %v", name, de)
		}
	}
}

// TestBrief: a short value is quoted whole, a long one cut to maxBrief bytes of whole
// characters.
func TestBrief(t *testing.T) {
	if got := Brief("abc"); got != `"abc"` {
		t.Errorf("Brief(abc) = %s", got)
	}
	long := strings.Repeat("é", 100_000)
	got := Brief(long)
	if len(got) > maxBrief+8 || !strings.HasSuffix(got, "…") || strings.ContainsRune(got, '\uFFFD') {
		t.Errorf("Brief of 200,000 bytes = %d bytes %q", len(got), got)
	}
	if err := projectNotFound(strings.Repeat("x", 100_000)); len(err.Error()) > 100 {
		t.Errorf("a 100 KB project id answered with %d bytes", len(err.Error()))
	}
}

// heldReplay is a tailFake whose replay closes entered and waits for release.
type heldReplay struct {
	*tailFake
	entered, release chan struct{}
}

func (s heldReplay) ReplayTail(ctx context.Context, _ LogFilter, _ TailPosition, _ int) ([]TailEntry, error) {
	close(s.entered)
	select {
	case <-s.release:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestTailStartHoldsAReadShare: a tail's start reads the store like a listing and holds one of
// its key's read shares while it does: with a share of one, the key's next read is refused
// while the replay runs, and served once the tail has caught up (the tail still open).
func TestTailStartHoldsAReadShare(t *testing.T) {
	f := &tailFake{project: Project{ID: testID(), Name: "p"}}
	hr := heldReplay{f, make(chan struct{}), make(chan struct{})}
	limits := DefaultLimits()
	limits.MaxReadsPerKey, limits.ReadShareWait = 1, 0
	svc := NewService(hr, opts(Options{Limits: limits, ReadShares: &oneShare{}, Tailer: caughtUp{}, TailStartTimeout: time.Minute}))
	ctx, cancel := context.WithCancel(WithPrincipal(t.Context(), Principal{ProjectID: f.project.ID, KeyID: "k"}))
	defer cancel()
	opened := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		start := int64(0)
		done <- svc.Tail(ctx, TailRequest{LogFilter: LogFilter{ProjectID: f.project.ID}, StartTime: &start}, func(es []TailEntry) error {
			if es == nil {
				close(opened)
			}
			return nil
		})
	}()
	<-hr.entered
	if _, err := svc.acquireRead(ctx, f.project.ID); KindOf(err) != KindRateLimited {
		t.Fatalf("a read of the key while its tail replays: %v, want KindRateLimited", err)
	}
	close(hr.release)
	<-opened
	deadline := time.Now().Add(10 * time.Second)
	for {
		release, err := svc.acquireRead(ctx, f.project.ID)
		if err == nil {
			release()
			break
		}
		if KindOf(err) != KindRateLimited || time.Now().After(deadline) {
			t.Fatalf("a read of the key once its tail caught up: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
