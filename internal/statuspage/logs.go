package statuspage

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// serveLog answers GET /status/logs?ticket=platform:id[&attempt=N] with
// the attempt's log file (the last attempt by default) when this replica
// has it, else 404 naming the replica and path where it is. Only files
// under the configured log roots are served: the path comes from Redis,
// and Redis is not trusted to name any file on this machine.
func (h *handler) serveLog(w http.ResponseWriter, r *http.Request) {
	platform, id, ok := strings.Cut(r.URL.Query().Get("ticket"), ":")
	if !ok || platform == "" || id == "" {
		http.Error(w, "ticket=platform:id required", http.StatusBadRequest)
		return
	}
	ref := platforms.Ref{Platform: platform, ID: id}
	rls, err := runstate.RunLogs(r.Context(), h.cfg.RDB, ref)
	if err != nil {
		http.Error(w, "redis unavailable", http.StatusServiceUnavailable)
		return
	}
	if len(rls) == 0 {
		http.Error(w, "no recorded log for "+ref.String(), http.StatusNotFound)
		return
	}
	rl := rls[len(rls)-1]
	if a := r.URL.Query().Get("attempt"); a != "" {
		n, err := strconv.Atoi(a)
		if err != nil {
			http.Error(w, "attempt must be a number", http.StatusBadRequest)
			return
		}
		rl.Attempt = 0
		for _, x := range rls {
			if x.Attempt == n {
				rl = x
			}
		}
		if rl.Attempt == 0 {
			http.Error(w, fmt.Sprintf("no recorded log of attempt %d", n), http.StatusNotFound)
			return
		}
	}
	f, err := lifecycle.OpenLog(h.cfg.LogRoots, rl.Path)
	if err != nil {
		http.Error(w, fmt.Sprintf("attempt %d of %s ran on replica %s (log %s), and this replica (%s) cannot serve it: open this page on that replica, or run agentsmithctl logs there (%v)",
			rl.Attempt, ref, rl.Instance, rl.Path, h.cfg.Instance, err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// The output is the pipeline's: never let a browser run it.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, _ = io.Copy(w, f)
}
