// Package health serves the liveness and readiness probes every replica
// answers, whatever roles it runs: /healthz (the process serves HTTP) and
// /readyz (its shared state, Redis, answers). Orchestrators restart on the
// first and route traffic on the second.
package health

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// PingTimeout bounds the readiness check, so a hung Redis makes a replica
// unready rather than making the probe itself time out.
const PingTimeout = time.Second

// Register adds GET /healthz and GET /readyz to mux. ping reports whether
// the replica's dependencies answer (nil: ready).
func Register(mux *http.ServeMux, ping func(context.Context) error) {
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		write(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), PingTimeout)
		defer cancel()
		if err := ping(ctx); err != nil {
			write(w, http.StatusServiceUnavailable, "redis unreachable")
			return
		}
		write(w, http.StatusOK, "ready")
	})
}

func write(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"status": s})
}
