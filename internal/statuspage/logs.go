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

// serveLog answers GET /status/logs?ticket=platform:id[&run=R][&attempt=N]
// with the attempt's log file (the last run and its last attempt by
// default; each operator retry starts a run) when this replica
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
	var run, attempt int
	for _, q := range []struct {
		name string
		n    *int
	}{{"run", &run}, {"attempt", &attempt}} {
		if v := r.URL.Query().Get(q.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				http.Error(w, q.name+" must be a positive number", http.StatusBadRequest)
				return
			}
			*q.n = n
		}
	}
	rl, ok := pickRunLog(rls, run, attempt)
	if !ok {
		http.Error(w, fmt.Sprintf("no recorded log of run %d attempt %d", run, attempt), http.StatusNotFound)
		return
	}
	f, err := lifecycle.OpenLog(h.cfg.LogRoots, rl.Path)
	if err != nil {
		http.Error(w, fmt.Sprintf("run %d attempt %d of %s ran on replica %s (log %s), and this replica (%s) cannot serve it: open this page on that replica, or run agentsmithctl logs there (%v)",
			rl.Run, rl.Attempt, ref, rl.Instance, rl.Path, h.cfg.Instance, err), http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	// The output is the pipeline's: never let a browser run it.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	_, _ = io.Copy(w, f)
}

// pickRunLog is attempt of run in rls (as runstate.RunLogs returns them);
// run 0 is the last run, attempt 0 that run's last attempt.
func pickRunLog(rls []runstate.RunLog, run, attempt int) (runstate.RunLog, bool) {
	if len(rls) == 0 {
		return runstate.RunLog{}, false
	}
	if run == 0 {
		run = rls[len(rls)-1].Run
	}
	var rl runstate.RunLog
	found := false
	for _, r := range rls {
		if r.Run == run && (attempt == 0 || r.Attempt == attempt) {
			rl, found = r, true // sorted: the last match is the run's last attempt
		}
	}
	return rl, found
}
