package edge

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// Pinger is what readiness needs of a store.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ReadyTimeout bounds the store check of /readyz.
const ReadyTimeout = 2 * time.Second

// RegisterHealth serves liveness (the process serves) and readiness (the store answers; migrations
// ran when it opened) on mux.
func RegisterHealth(mux *http.ServeMux, st Pinger) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ReadyTimeout)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "the store does not answer"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is out; nobody to tell of a failed write
}
