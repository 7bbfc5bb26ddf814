package daemon_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/audit"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The daemon records every transition in the audit stream, including the
// hand-back its own shutdown makes after the roles have stopped.
func TestAuditStreamKeepsShutdownHandBack(t *testing.T) {
	e := newEnv(t)
	d, err := daemon.New(e.config("replica-a", "audit: {max_len: 1000}\n"), daemon.Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	<-d.Listening()
	e.sim.AddHook(e.pc.Hook("http://"+d.Addr(), testSecret))
	n := e.sim.CreateIssue(repo, "hold until shutdown", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.InProgress)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("daemon did not stop")
	}
	if s := e.state(n); s != lifecycle.Enqueued {
		t.Fatalf("after shutdown the ticket is %s, want handed back (enqueued)", s)
	}
	rdb := e.redis.Client(t)
	hist, err := audit.NewReader(rdb).History(context.Background(), refOf(e, n), time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, h := range hist {
		if h.Event.Kind == lifecycle.EventTransition {
			path = append(path, h.Event.From.String()+"→"+h.Event.To.String())
		}
	}
	want := []string{"pending→enqueued", "enqueued→in-progress", "in-progress→enqueued"}
	if len(path) != len(want) || path[0] != want[0] || path[1] != want[1] || path[2] != want[2] {
		t.Errorf("audit transitions = %q, want %q", path, want)
	}
	last := hist[len(hist)-1].Event
	if last.Instance != "replica-a" || last.Owner != lifecycle.OwnerExecutor || last.Attempt != 1 || last.RequestID == "" {
		t.Errorf("hand-back event = %+v", last)
	}
	if n, _ := rdb.Exists(context.Background(), keys.Audit()).Result(); n != 1 {
		t.Error("no audit stream")
	}
}

func refOf(e *env, n int) platforms.Ref {
	return platforms.Ref{Platform: e.pc.Name, Project: "app", ID: e.pc.ID(n)}
}
