package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"example.com/obsvc/api/haberdasher"
)

// latencyResult is what get prints: per base, in the order given.
type latencyResult struct {
	P50ms    []float64 `json:"p50_ms"`
	P90ms    []float64 `json:"p90_ms"`
	Bytes    []int     `json:"bytes"`
	SameBody bool      `json:"same_body"` // every base answered the first request with the same bytes
}

// latency times one GET against each base in turn, n times after warm unmeasured rounds, one
// request at a time: the figure is the latency of a request, not a throughput.
func latency(ctx context.Context, bases []string, path string, next bool, warm, n int) (latencyResult, error) {
	if len(bases) == 0 || path == "" {
		return latencyResult{}, fmt.Errorf("get needs -base and -path")
	}
	clients := make([]*http.Client, len(bases))
	paths := make([]string, len(bases))
	var first [][]byte
	for i, base := range bases {
		clients[i] = &http.Client{Transport: &http.Transport{}, Timeout: time.Minute}
		body, link, err := get(ctx, clients[i], base+path)
		if err != nil {
			return latencyResult{}, err
		}
		paths[i] = path
		if next {
			if paths[i], err = nextPath(link); err != nil {
				return latencyResult{}, fmt.Errorf("%s%s: %w", base, path, err)
			}
			if body, _, err = get(ctx, clients[i], base+paths[i]); err != nil {
				return latencyResult{}, err
			}
		}
		first = append(first, body)
	}
	res := latencyResult{SameBody: true}
	for _, b := range first {
		res.Bytes = append(res.Bytes, len(b))
		if !bytes.Equal(b, first[0]) {
			res.SameBody = false
		}
	}
	times := make([][]time.Duration, len(bases))
	for round := range warm + n {
		for i, base := range bases {
			start := time.Now()
			if _, _, err := get(ctx, clients[i], base+paths[i]); err != nil {
				return latencyResult{}, err
			}
			if round >= warm {
				times[i] = append(times[i], time.Since(start))
			}
		}
	}
	for _, ts := range times {
		slices.Sort(ts)
		res.P50ms = append(res.P50ms, ms(ts[len(ts)/2]))
		res.P90ms = append(res.P90ms, ms(ts[len(ts)*9/10]))
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// get reads the whole answer of a GET, which must be a 200, and returns it with its Link header.
func get(ctx context.Context, c *http.Client, url string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("GET %s = %d %.300s", url, resp.StatusCode, body)
	}
	return body, resp.Header.Get("Link"), nil
}

// nextPath is the target of a `<…>; rel="next"` Link, a path and query.
func nextPath(link string) (string, error) {
	start, end := strings.Index(link, "<"), strings.Index(link, ">")
	if start < 0 || end < start || !strings.Contains(link[end:], `rel="next"`) {
		return "", fmt.Errorf("no next link in %q", link)
	}
	return link[start+1 : end], nil
}

// hatResult is what hat prints.
type hatResult struct {
	Calls     int64   `json:"calls"` // answered 200
	Non2xx    int64   `json:"non2xx"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"` // calls answered 200 per second
}

// hats calls MakeHat over conns connections, each with one call outstanding, for d.
func hats(ctx context.Context, base, enc string, conns int, d time.Duration) (hatResult, error) {
	if base == "" || d <= 0 {
		return hatResult{}, fmt.Errorf("hat needs -url and -duration")
	}
	body, ctype := []byte{0x08, 12}, "application/protobuf" // Size{inches: 12}
	if enc == "json" {
		body, ctype = []byte(`{"inches":12}`), "application/json"
	}
	url := base + haberdasher.HaberdasherPathPrefix + "MakeHat"
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, bad atomic.Int64
	var errOnce sync.Once
	var firstErr error
	var wg sync.WaitGroup
	start := time.Now()
	for range conns {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				req.Header.Set("Content-Type", ctype)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errOnce.Do(func() { firstErr = err })
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if firstErr != nil {
		return hatResult{}, firstErr
	}
	return hatResult{Calls: ok.Load(), Non2xx: bad.Load(), Seconds: elapsed, PerSecond: float64(ok.Load()) / elapsed}, nil
}
