package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"example.com/obsvc/domain"
)

// DefaultTailHeartbeat is how long an idle tail stays silent before it sends a comment line.
const DefaultTailHeartbeat = 15 * time.Second

// tailRetry is the reconnection delay the stream announces (the SSE "retry" field), in ms.
const tailRetry = 1000

// tailHandler serves GET /logs/tail as Server-Sent Events (text/event-stream).
//
// It is written by hand rather than through the generated strict server: a strict response is
// one value written once by its Visit method, which has no way to flush each event as it
// happens, to renew the write deadline per event (so that WRITE_TIMEOUT never cuts a healthy
// stream while a reader that stops taking events is still cut off), or to end at shutdown. The
// route is still described in openapi.yaml, but being left out of the generated code it is left
// out of the embedded spec too, so the validator in front does not see it: tailRequest and the
// domain check its parameters.
type tailHandler struct {
	svc       *domain.Service
	problems  problemWriter
	stall     time.Duration
	heartbeat time.Duration
	// stop, when closed, ends every open tail (the server is shutting down).
	stop <-chan struct{}
	// started, when not nil, is told of each tail whose start is done (Options.TailStarted).
	started func(context.Context)
}

func (t tailHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := tailRequest(r)
	if err != nil {
		t.problems.write(w, r, err)
		return
	}
	if t.started != nil {
		req.Started = func() { t.started(r.Context()) }
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if t.stop != nil {
		go func() {
			select {
			case <-t.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	s := &sseStream{w: w, rc: http.NewResponseController(w), stall: t.stall, heartbeat: t.heartbeat}
	err = t.svc.Tail(ctx, req, s.send)
	switch {
	case !s.started && err != nil:
		t.problems.write(w, r, err)
	case !s.started:
		// Ended (shutdown) before anything was found: still a valid, empty stream.
		_ = s.begin()
	case err != nil && !errors.Is(err, errStreamWrite):
		// The stream is under way: the project is gone or the store failed. Ending the stream is
		// the signal; a client that reconnects is told why in its status.
		t.problems.log.InfoContext(r.Context(), "tail ended", "err", err)
	}
}

// tailRequest reads the parameters of a tail; the domain checks their values.
func tailRequest(r *http.Request) (domain.TailRequest, error) {
	q := r.URL.Query()
	if q.Get("project_id") == "" {
		// The spec validator does not see this route (it is left out of the generated code and
		// of its embedded spec), so the required parameter is checked here.
		return domain.TailRequest{}, domain.ParamError("project_id", "is required")
	}
	req := domain.TailRequest{
		LogFilter: domain.LogFilter{ProjectID: q.Get("project_id")},
		Resume:    r.Header.Get(ResumeHeader),
		Cursor:    q.Get("cursor"),
	}
	if q.Has("user_id") {
		v := q.Get("user_id")
		req.UserID = &v
	}
	req.Levels = q["log_level"] // repeated: any of them
	if q.Has("subject") {
		v := q.Get("subject")
		req.Subject = &v
	}
	if q.Has("q") {
		v := q.Get("q")
		req.Q = &v
	}
	if v := q.Get("query"); v != "" {
		req.Query = &v // absent or empty: no query
	}
	if q.Has("trace_id") {
		v := q.Get("trace_id")
		req.TraceID = &v
	}
	if q.Has("start_time") {
		v, err := strconv.ParseInt(q.Get("start_time"), 10, 64)
		if err != nil {
			return req, domain.ParamError("start_time", "must be an integer")
		}
		req.StartTime = &v
	}
	if q.Has("limit") {
		v, err := strconv.Atoi(q.Get("limit"))
		if err != nil || v == 0 {
			v = -1 // out of range: the domain names the bounds
		}
		req.ReplayLimit = v
	}
	req.Client, _, _ = net.SplitHostPort(r.RemoteAddr)
	return req, nil
}

// errStreamWrite is a failed write to the client: it went away or stopped reading.
var errStreamWrite = errors.New("tail: write to client failed")

// sseStream writes events to one client.
type sseStream struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	bw        *bufio.Writer
	stall     time.Duration
	heartbeat time.Duration
	started   bool
	last      time.Time
}

// begin sends the status, the headers and the retry field.
func (s *sseStream) begin() error {
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies that buffer by default (nginx) pass events on at once
	s.w.WriteHeader(http.StatusOK)
	s.bw = bufio.NewWriterSize(s.w, 16<<10)
	_, _ = fmt.Fprintf(s.bw, "retry: %d\n\n", tailRetry)
	return s.flush()
}

// send writes the entries as events and flushes them once, or, with none, a heartbeat when the
// stream has been quiet for the heartbeat interval.
func (s *sseStream) send(entries []domain.TailEntry) error {
	if !s.started {
		if err := s.begin(); err != nil {
			return err
		}
	}
	if len(entries) == 0 {
		if time.Since(s.last) < s.heartbeat {
			return nil
		}
		_, _ = s.bw.WriteString(": keep-alive\n\n")
		return s.flush()
	}
	for i := range entries {
		if err := s.event(&entries[i]); err != nil {
			return err
		}
	}
	return s.flush()
}

// event writes one entry as an event into the buffer.
func (s *sseStream) event(e *domain.TailEntry) error {
	var ev []byte
	if e.Memo != nil {
		// Every tail of the instance that hands this entry on shares the one rendering.
		ev = e.Memo.Bytes(e, logEvent)
	} else {
		ev = logEvent(e)
	}
	if ev == nil {
		return fmt.Errorf("tail: entry %s cannot be rendered", e.ID)
	}
	// Only flush reaches the client, under a deadline it renews: an event that does not fit in
	// the buffer goes after a flush, never out of a full buffer under the deadline of an earlier
	// flush, which has passed if the tail was idle for the stall timeout. (One larger than the
	// whole buffer goes straight through, under the deadline just renewed.)
	if len(ev) > s.bw.Available() {
		if err := s.flush(); err != nil {
			return err
		}
	}
	if _, err := s.bw.Write(ev); err != nil {
		return errStreamWrite
	}
	return nil
}

// logEvent renders an entry as an SSE event; nil if it cannot (attributes that are not JSON).
// The data is the entry as GET /logs renders it, byte for byte: the same encoder, with HTML
// characters left as they are.
func logEvent(e *domain.TailEntry) []byte {
	var b bytes.Buffer
	b.Grow(len(e.Message) + len(e.Attributes) + 256)
	b.WriteString("id: ")
	b.WriteString(domain.EncodeTailToken(e.At))
	b.WriteString("\nevent: log\ndata: ")
	// One line, ended by encodeEntry; the blank line ends the event.
	if err := encodeEntry(&b, e.LogEntry); err != nil {
		return nil
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// flush pushes the buffered events out under a fresh write deadline: each flush must be taken by
// the client within the stall timeout, so a reader that stops taking events (whose backlog
// fills the socket buffers) is cut off, and resumes by id, while a healthy stream is never cut
// by the server's WRITE_TIMEOUT, set once per request.
func (s *sseStream) flush() error {
	if err := s.deadline(); err != nil {
		return err
	}
	if err := s.bw.Flush(); err != nil {
		return errStreamWrite
	}
	if err := s.rc.Flush(); err != nil {
		return errStreamWrite
	}
	s.last = time.Now()
	return nil
}

// deadline gives the writes from now on the stall timeout.
func (s *sseStream) deadline() error {
	if err := s.rc.SetWriteDeadline(time.Now().Add(s.stall)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return errStreamWrite
	}
	return nil
}
