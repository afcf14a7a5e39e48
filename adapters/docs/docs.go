// Package docs serves the API contract to people and tools: the OpenAPI document as YAML (the
// exact file the code was generated from) and as JSON, and an interactive reference rendered from
// it by Swagger UI, whose assets are embedded in the binary (no CDN at run time).
package docs

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/oasdiff/yaml"
	swgui "github.com/swaggest/swgui/v5emb"
)

// Handler serves GET /openapi.yaml, GET /openapi.json and /docs/.
type Handler struct {
	yaml, json []byte
	ui         http.Handler
}

// NewHandler serves the given OpenAPI document.
func NewHandler(specYAML []byte) (*Handler, error) {
	j, err := yaml.YAMLToJSON(specYAML)
	if err != nil {
		return nil, fmt.Errorf("docs: convert the spec to JSON: %w", err)
	}
	ui := swgui.New("Observability API", "/openapi.yaml", "/docs/")
	csp, err := pagePolicy(ui)
	if err != nil {
		return nil, err
	}
	return &Handler{yaml: specYAML, json: j, ui: withPolicy(csp, ui)}, nil
}

// inlineScript finds the inline scripts of a page (script elements without a src).
var inlineScript = regexp.MustCompile(`(?s)<script>(.*?)</script>`)

// pagePolicy builds the Content-Security-Policy of the reference pages: scripts and styles from
// this server only, plus the page's own inline scripts by their SHA-256 (so no other inline script
// runs), Swagger UI's inline styles and data: images, requests to this server only, and no
// framing. It renders the page once to hash exactly what will be served.
func pagePolicy(ui http.Handler) (string, error) {
	rec := httptest.NewRecorder()
	ui.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/docs/", nil))
	if rec.Code != http.StatusOK {
		return "", fmt.Errorf("docs: the reference page answered %d", rec.Code)
	}
	var hashes []string
	for _, m := range inlineScript.FindAllStringSubmatch(rec.Body.String(), -1) {
		sum := sha256.Sum256([]byte(m[1]))
		hashes = append(hashes, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return "default-src 'none'; script-src 'self' " + strings.Join(hashes, " ") +
		"; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self'" +
		"; frame-ancestors 'none'; base-uri 'none'; form-action 'none'", nil
}

// withPolicy serves next with the page policy csp; its assets may be cached but are revalidated.
func withPolicy(csp string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// Register mounts the routes on mux.
func (h *Handler) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /openapi.yaml", h.serve("application/yaml", h.yaml))
	mux.HandleFunc("GET /openapi.json", h.serve("application/json", h.json))
	mux.Handle("GET /docs/", h.ui)
	mux.Handle("GET /docs", http.RedirectHandler("/docs/", http.StatusMovedPermanently))
}

func (h *Handler) serve(contentType string, body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	}
}
