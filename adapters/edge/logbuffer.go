package edge

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// LogBuffer gathers log lines in memory and writes them out when the buffer fills, every
// interval, and on Close. One write(2) per access log line was about a tenth of the CPU of a
// small request; gathered, one write carries many lines. What a crash may lose: the lines of at
// most the last interval (and at most the buffer's size); a clean shutdown loses nothing, as
// Close writes everything out.
type LogBuffer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	err    error // the first failed write, kept so Close can report it
	stop   chan struct{}
	done   chan struct{}
	closed bool
}

// LogBufferSize is how much a LogBuffer holds before it writes out.
const LogBufferSize = 64 << 10

// LogFlushInterval is how long a line may wait in a LogBuffer.
const LogFlushInterval = 100 * time.Millisecond

// NewLogBuffer buffers writes to out, writing them out at least every interval until Close.
func NewLogBuffer(out io.Writer, interval time.Duration) *LogBuffer {
	b := &LogBuffer{w: bufio.NewWriterSize(out, LogBufferSize), stop: make(chan struct{}), done: make(chan struct{})}
	go b.flushEvery(interval)
	return b
}

func (b *LogBuffer) flushEvery(interval time.Duration) {
	defer close(b.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			_ = b.Flush()
		}
	}
}

// Write buffers p (one log record: slog's handlers write each in one call). After Close it
// writes straight through, so nothing logged late is lost.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.w.Write(p)
	if b.closed && err == nil {
		err = b.w.Flush()
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	return n, err
}

// Flush writes out what is buffered.
func (b *LogBuffer) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.w.Flush()
}

// Close stops the periodic flush and writes out what is buffered. It returns the first write
// error the buffer met, if any.
func (b *LogBuffer) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.w.Flush(); err != nil && b.err == nil {
		b.err = err
	}
	return b.err
}
