package edge_test

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/obsvc/adapters/edge"
)

// lockedBuffer is a bytes.Buffer the test reads while the LogBuffer writes to it.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogBufferLosesNothingOnCloseAndGathersWrites(t *testing.T) {
	var out lockedBuffer
	buf := edge.NewLogBuffer(&out, time.Hour) // no periodic flush within the test: Close alone writes out
	var wg sync.WaitGroup
	const writers, lines = 8, 500
	for w := range writers {
		wg.Go(func() {
			for i := range lines {
				fmt.Fprintf(buf, "writer %d line %d\n", w, i)
			}
		})
	}
	wg.Wait()
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(got) != writers*lines {
		t.Fatalf("%d lines after Close, want %d", len(got), writers*lines)
	}
	for _, l := range got {
		var w, i int
		if _, err := fmt.Sscanf(l, "writer %d line %d", &w, &i); err != nil {
			t.Fatalf("torn line %q", l)
		}
	}
	if out.writes >= writers*lines/10 {
		t.Errorf("%d writes for %d lines: the buffer does not gather them", out.writes, writers*lines)
	}
	// After Close a late line is written straight through.
	fmt.Fprintln(buf, "late")
	if !strings.HasSuffix(out.String(), "late\n") {
		t.Error("a line written after Close was not written out")
	}
}

func TestLogBufferWritesOutWithinItsInterval(t *testing.T) {
	var out lockedBuffer
	buf := edge.NewLogBuffer(&out, 10*time.Millisecond)
	defer buf.Close()
	fmt.Fprintln(buf, "one line")
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one line\n" {
		if time.Now().After(deadline) {
			t.Fatalf("the line is still buffered after 5s: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stallingWriter blocks each write until release is closed.
type stallingWriter struct {
	entered chan struct{}
	release chan struct{}
	lockedBuffer
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	select {
	case s.entered <- struct{}{}:
	default:
	}
	<-s.release
	return s.lockedBuffer.Write(p)
}

// A request logging while the buffer is being written out (to a slow disk, a stalled pipe) is
// not held up by that write: it appends to the next buffer.
func TestLogBufferWritesDoNotWaitForTheOutput(t *testing.T) {
	out := &stallingWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
	buf := edge.NewLogBuffer(out, time.Hour)
	fmt.Fprintln(buf, "first")
	flushed := make(chan error, 1)
	go func() { flushed <- buf.Flush() }()
	<-out.entered // the write out of "first" is under way, and stalls
	wrote := make(chan struct{})
	go func() {
		fmt.Fprintln(buf, "second")
		close(wrote)
	}()
	select {
	case <-wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("a log line waited for the stalled write of the lines before it")
	}
	close(out.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if err := buf.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "first\nsecond\n" {
		t.Errorf("written %q, want both lines in order", got)
	}
}
