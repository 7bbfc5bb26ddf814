package main_test

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// cutSim serves a sim on a port that the test closes (the tracker refuses
// connections: nothing listens) and opens again on the same port.
type cutSim struct {
	t    *testing.T
	h    http.Handler
	addr string
	mu   sync.Mutex
	srv  *http.Server
}

func (c *cutSim) up() {
	c.t.Helper()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		c.t.Fatal(err)
	}
	c.addr = ln.Addr().String()
	srv := &http.Server{Handler: c.h}
	go func() { _ = srv.Serve(ln) }()
	c.mu.Lock()
	c.srv = srv
	c.mu.Unlock()
}

func (c *cutSim) down() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.srv != nil {
		_ = c.srv.Close()
		c.srv = nil
	}
}

// newCutProcWorld is newProcWorld with a tracker the test can cut.
func newCutProcWorld(t *testing.T, pc simcases.Case) (*procWorld, *cutSim) {
	dir := reachableDir(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	c := &cutSim{t: t, h: s.Handler(), addr: "127.0.0.1:0"}
	c.up()
	t.Cleanup(c.down)
	return &procWorld{t: t, pc: pc, dir: dir, sim: s, simURL: "http://" + c.addr, redis: redistest.Start(t),
		runLog: sharedLog(t, filepath.Join(dir, "runs.log")), box: sandboxBlock(dir)}, c
}

const outcomeTimings = `consumer: {heartbeat_ttl: 3s, heartbeat_renew: 500ms}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s}
poller: {lease_ttl: 2s}`

func logHas(t *testing.T, path, s string) bool {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.Contains(string(b), s)
}

// auditHas reports whether the audit stream holds a transition of ticket
// from → to.
func (w *procWorld) auditHas(ticket, from, to string) bool {
	msgs, err := w.redis.Client(w.t).XRange(w.t.Context(), keys.Audit(), "-", "+").Result()
	if err != nil {
		return false
	}
	for _, m := range msgs {
		if m.Values["ticket"] == ticket && m.Values["from"] == from && m.Values["to"] == to {
			return true
		}
	}
	return false
}

// The tracker refuses connections from the moment the pipeline ends until
// the run's final write has given up (its 30 s write timeout) and handed
// its recorded outcome over: the ticket ends Done once the tracker answers,
// written from the record, its history has in-progress → done, and the
// pipeline ran once: StaleJobDetector does not revert a ticket whose
// outcome waits.
func TestTrackerOutageAtRunEndRunsThePipelineOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 30 s final write")
	}
	pc := simcases.GitHub
	w, cut := newCutProcWorld(t, pc)
	w.start("replica-a", outcomeTimings)
	n := w.sim.CreateIssue(pc.Repo, "outage at the end", "", "agent-smith", "keep-me")
	id := pc.ID(n)
	eventually.Wait(t, 30*time.Second, "attempt 1 to start", func() bool { return len(w.lines("start "+id+" 1 ")) == 1 })
	cut.down()
	if err := os.WriteFile(filepath.Join(w.dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "attempt 1 to end", func() bool { return len(w.lines("end "+id+" 1")) == 1 })
	// The run's final write gives up after its write timeout and hands the
	// confirmed record over (lifecycle handOver's message).
	logA := filepath.Join(w.dir, "replica-a.log")
	eventually.Wait(t, 60*time.Second, "the run to hand its outcome over", func() bool {
		return logHas(t, logA, "transition to done not written; the outcome is recorded and is written from the record")
	})
	cut.up()
	want := []string{"agent-smith", "keep-me", lifecycletest.Label(lifecycle.Done)}
	eventually.Wait(t, 60*time.Second, "the ticket to reach done", func() bool {
		is, _ := w.sim.Issue(pc.Repo, n)
		return slices.Equal(is.Labels, want)
	})
	if got := len(w.lines("start " + id)); got != 1 {
		t.Errorf("pipeline started %d times, want once", got)
	}
	eventually.Wait(t, 10*time.Second, "the history to record in-progress → done", func() bool {
		return w.auditHas(id, "in-progress", "done")
	})
}

// kill -9 of the replica after its run's outcome is recorded and before the
// tracker took it: another replica writes the outcome from the record once
// the tracker answers, and the pipeline is not run again.
func TestKill9AfterTheOutcomeIsRecordedWritesItElsewhere(t *testing.T) {
	pc := simcases.GitHub
	w, cut := newCutProcWorld(t, pc)
	a := w.start("replica-a", outcomeTimings)
	n := w.sim.CreateIssue(pc.Repo, "killed after the record", "", "agent-smith")
	id := pc.ID(n)
	ticket := "github:" + id
	eventually.Wait(t, 30*time.Second, "attempt 1 to start", func() bool { return len(w.lines("start "+id+" 1 ")) == 1 })
	cut.down()
	if err := os.WriteFile(filepath.Join(w.dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rdb := w.redis.Client(t)
	eventually.Wait(t, 20*time.Second, "the outcome to be recorded", func() bool {
		ok, _ := rdb.HExists(t.Context(), keys.Outcomes(), ticket).Result()
		return ok
	})
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = a.Process.Wait()
	cut.up()
	w.start("replica-b", outcomeTimings)
	eventually.Wait(t, 60*time.Second, "the ticket to reach done", func() bool {
		is, _ := w.sim.Issue(pc.Repo, n)
		return slices.Equal(is.Labels, []string{"agent-smith", lifecycletest.Label(lifecycle.Done)})
	})
	if got := len(w.lines("start " + id)); got != 1 {
		t.Errorf("pipeline started %d times, want once", got)
	}
	// The record is dropped right after the transition's write.
	eventually.Wait(t, 10*time.Second, "the outcome record to be dropped", func() bool {
		ok, _ := rdb.HExists(t.Context(), keys.Outcomes(), ticket).Result()
		return !ok
	})
	if !logHas(t, filepath.Join(w.dir, "replica-b.log"), "outcome written from its record") {
		t.Error("replica B's log does not say it wrote the outcome from the record")
	}
}
