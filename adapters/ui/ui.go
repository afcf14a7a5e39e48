// Package ui serves the log explorer: one page at /ui, built from plain ES modules and a vendored
// charting library (uPlot), all embedded in the binary, so the page needs no network access beyond
// this server and no build step. The page holds no data: it asks the REST API for everything, with
// the API key the user types (kept in the tab's sessionStorage, sent as Authorization: Bearer).
// That is why the page and its assets are public and the API behind them is not.
package ui

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// Policy is the Content-Security-Policy of the page and its assets: scripts, styles and requests
// to this server only, no inline script or style at all, nothing framed, nothing submitted. The
// one data: image is the page's empty favicon, which spares the browser a request the API would
// refuse.
const Policy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:" +
	"; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

// Patterns are the routes the handler serves; app mounts each of them before the REST API's
// catch-all. "GET /{$}" is the root alone, redirected to the page.
var Patterns = []string{"GET /ui", "GET /ui/", "GET /{$}"}

// asset is one embedded file, ready to serve: its type, its bytes as stored and gzipped (compressed
// once, at start), and an entity tag.
type asset struct {
	contentType string
	raw, gz     []byte
	etag        string
}

// Handler serves the page at /ui (and /ui/), its assets under /ui/, and redirects / to /ui.
type Handler struct {
	files map[string]*asset // by path below assets/, e.g. "app.js"
	mux   *http.ServeMux
}

// NewHandler reads and compresses the embedded assets.
func NewHandler() (*Handler, error) {
	h := &Handler{files: map[string]*asset{}, mux: http.NewServeMux()}
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		var gz bytes.Buffer
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(raw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" || path.Base(p) == "LICENSE" || path.Base(p) == "VERSION" {
			ct = "text/plain; charset=utf-8"
		}
		sum := sha256.Sum256(raw)
		h.files[strings.TrimPrefix(p, "assets/")] = &asset{contentType: ct, raw: raw, gz: gz.Bytes(), etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: read the embedded assets: %w", err)
	}
	if h.files["index.html"] == nil {
		return nil, fmt.Errorf("ui: no index.html among the embedded assets")
	}
	h.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		target := "/ui"
		if r.URL.RawQuery != "" {
			target += "?" + r.URL.RawQuery // a shared link's choices survive the redirect
		}
		http.Redirect(w, r, target, http.StatusFound)
	})
	h.mux.HandleFunc("GET /ui", h.serve)
	h.mux.HandleFunc("GET /ui/", h.serve)
	return h, nil
}

// ServeHTTP serves the routes named by Patterns.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Files lists the served asset paths (below /ui/), for tests and size checks.
func (h *Handler) Files() []string {
	out := make([]string, 0, len(h.files))
	for p := range h.files {
		out = append(out, p)
	}
	return out
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/ui"), "/")
	if name == "" {
		name = "index.html"
	}
	a := h.files[name]
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", Policy)
	if a == nil {
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = fmt.Fprintln(w, "not found")
		return
	}
	// Cached, but revalidated: a new binary's page is never mixed with the old one's modules.
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("ETag", a.etag)
	hdr.Set("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", a.contentType)
	hdr.Set("Referrer-Policy", "no-referrer")
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Contains(inm, a.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := a.raw
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		hdr.Set("Content-Encoding", "gzip")
		body = a.gz
	}
	hdr.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(body)
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip (and does not refuse it with q=0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
