// Package docs serves the API contract to people and tools: the OpenAPI document as YAML (the
// exact file the code was generated from) and as JSON, and an interactive reference rendered from
// it by Swagger UI, whose assets are embedded in the binary (no CDN at run time).
package docs

import (
	"fmt"
	"net/http"

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
	return &Handler{yaml: specYAML, json: j, ui: swgui.New("Observability API", "/openapi.yaml", "/docs/")}, nil
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
