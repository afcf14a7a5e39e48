package apitest

import (
	"bufio"
	"context"
	"fmt"
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
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if ev.Data != "" || ev.ID != "" {
				if !fn(ev) {
					return resp.StatusCode, nil
				}
			}
			ev = Event{}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			ev.Data = value
		}
	}
	return resp.StatusCode, sc.Err()
}
