package daemon_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
)

// headerLog records the writer header of every request the daemon sends
// to the tracker.
type headerLog struct {
	mu      sync.Mutex
	total   int
	writes  int               // requests other than GET
	tagged  map[string]string // "METHOD path" → writer header, of tagged requests
	wrapped http.Handler
}

func (h *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.total++
	if r.Method != http.MethodGet {
		h.writes++
	}
	if v := r.Header.Get(trackerhttp.WriterHeader); v != "" {
		h.tagged[r.Method+" "+r.URL.Path] = v
	}
	h.mu.Unlock()
	h.wrapped.ServeHTTP(w, r)
}

// runFailingTicket serves the env's sim through a header log, runs one
// ticket to Failed (label writes and a failure comment) with the daemon
// configured by extra, and returns the log.
func runFailingTicket(t *testing.T, e *env, extra string) *headerLog {
	t.Helper()
	h := &headerLog{tagged: map[string]string{}, wrapped: e.sim.Handler()}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	e.simURL = srv.URL
	e.startDaemon(e.config("replica-a", extra))
	n := e.sim.CreateIssue(e.repo, "This will fail", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Failed)
	if is, _ := e.sim.Issue(e.repo, n); len(is.Comments) == 0 {
		t.Error("no failure comment")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.total == 0 || h.writes == 0 {
		t.Fatalf("saw %d requests, %d writes: the daemon did not talk through the log", h.total, h.writes)
	}
	return h
}

// trackersim's X-Agentsmith-Writer header is for the sim's write log only:
// a daemon configured for a real tracker never sends it, on any request
// (Jira Cloud's search is a POST, GitHub App token exchanges are POSTs).
// trackersim_writer_header turns it on, and then the sim's write log names
// the replica (what the chaos run's stale-write analysis reads).
func TestWriterHeaderOnlyForTrackersim(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		h := runFailingTicket(t, e, "")
		if len(h.tagged) != 0 {
			t.Errorf("a daemon configured for a real tracker sent %s: %v", trackerhttp.WriterHeader, h.tagged)
		}
		for _, w := range e.sim.Writes() {
			if w.Writer == "replica-a" {
				t.Errorf("the sim's write log names replica-a without the header: %+v", w)
			}
		}

		e = newEnvFor(t, e.pc)
		h = runFailingTicket(t, e, "trackersim_writer_header: true\n")
		if len(h.tagged) == 0 {
			t.Errorf("trackersim_writer_header: true sent no %s", trackerhttp.WriterHeader)
		}
		for req, v := range h.tagged {
			if v != "replica-a" {
				t.Errorf("%s: writer %q, want replica-a", req, v)
			}
		}
		bot := 0
		for _, w := range e.sim.Writes() {
			if w.Writer != "human" {
				bot++
				if w.Writer != "replica-a" {
					t.Errorf("the sim's write log names %q, want replica-a: %+v", w.Writer, w)
				}
			}
		}
		if bot == 0 {
			t.Error("the sim logged no write by the daemon")
		}
	})
}
