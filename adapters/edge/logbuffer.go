package edge

import (
	"io"
	"sync"
	"time"
)

// LogBuffer gathers log lines in memory and writes them out when the buffer fills, every
// interval, and on Close. One write(2) per access log line was about a tenth of the CPU of a
// small request; gathered, one write carries many lines. What a crash may lose: the lines of at
// most the last interval (and at most about twice the buffer's size); a clean shutdown loses
// nothing, as Close writes everything out.
//
// Lines are gathered under one lock and written out under another: a write to the output (a
// file, a pipe that may stall) swaps the gathered lines for an empty buffer and writes them
// without the first lock, so requests logging meanwhile append to the new buffer instead of
// queueing behind the write. Only a request that fills the buffer writes it out itself.
type LogBuffer struct {
	out io.Writer

	mu     sync.Mutex // guards buf, spare, err and closed
	buf    []byte     // the lines gathered since the last write out
	spare  []byte     // the buffer last written out, reused for the next lines
	err    error      // the first failed write, kept so Close can report it
	closed bool

	outMu sync.Mutex // one write out at a time, in the order the lines were gathered

	stop chan struct{}
	done chan struct{}
}

// LogBufferSize is how much a LogBuffer holds before it writes out.
const LogBufferSize = 64 << 10

// LogFlushInterval is how long a line may wait in a LogBuffer.
const LogFlushInterval = 100 * time.Millisecond

// NewLogBuffer buffers writes to out, writing them out at least every interval until Close.
func NewLogBuffer(out io.Writer, interval time.Duration) *LogBuffer {
	b := &LogBuffer{out: out, buf: make([]byte, 0, LogBufferSize), spare: make([]byte, 0, LogBufferSize),
		stop: make(chan struct{}), done: make(chan struct{})}
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

// Write buffers p (one log record: slog's handlers write each in one call, and it is kept
// whole). A write that fills the buffer writes it out. After Close it writes straight through,
// so nothing logged late is lost.
func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	flush := b.closed || len(b.buf) >= LogBufferSize
	b.mu.Unlock()
	if flush {
		if err := b.Flush(); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes out what is buffered.
func (b *LogBuffer) Flush() error {
	b.outMu.Lock()
	defer b.outMu.Unlock()
	b.mu.Lock()
	lines := b.buf
	b.buf, b.spare = b.spare[:0], nil
	b.mu.Unlock()
	if len(lines) == 0 {
		b.mu.Lock()
		b.spare = lines
		b.mu.Unlock()
		return nil
	}
	_, err := b.out.Write(lines)
	b.mu.Lock()
	defer b.mu.Unlock()
	if cap(lines) <= 4*LogBufferSize { // a buffer a burst grew far past the size is let go
		b.spare = lines[:0]
	}
	if err != nil && b.err == nil {
		b.err = err
	}
	return err
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
	_ = b.Flush()
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
