package apitest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Event is one event of a text/event-stream, as the WHATWG parsing rules read it.
type Event struct {
	ID, Event, Data string
}

// ReadEvents connects to url (with Last-Event-ID when lastID is set) and hands each event to fn
// until fn returns false, the stream ends or ctx ends. It returns the status of the response.
func ReadEvents(ctx context.Context, url, lastID string, fn func(Event) bool) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return resp.StatusCode, fmt.Errorf("content type %q", ct)
	}
	if !fn(Event{Event: "open"}) { // not an event of the stream: the response has begun
		return resp.StatusCode, nil
	}
	err = ScanBlocks(resp.Body, func(b Block) bool {
		if b.Data == "" && b.ID == "" {
			return true
		}
		return fn(Event{ID: b.ID, Event: b.Event, Data: b.Data})
	})
	return resp.StatusCode, err
}

// Block is one block of a text/event-stream: the fields of its lines up to a blank line, and
// its last comment (a line that begins with a colon), trimmed.
type Block struct {
	ID, Event, Data, Retry, Comment string
}

// ScanBlocks reads a text/event-stream from r and hands fn every block of one line or more,
// until fn returns false or r ends; a last block without its blank line is not handed on.
func ScanBlocks(r io.Reader, fn func(Block) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var b Block
	seen := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if seen && !fn(b) {
				return nil
			}
			b, seen = Block{}, false
			continue
		}
		seen = true
		if c, ok := strings.CutPrefix(line, ":"); ok {
			b.Comment = strings.TrimSpace(c)
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			b.ID = value
		case "event":
			b.Event = value
		case "data":
			b.Data = value
		case "retry":
			b.Retry = value
		}
	}
	return sc.Err()
}
