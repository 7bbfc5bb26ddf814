package lifecycle_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestProjectSetReplaceRetiresAndRevives(t *testing.T) {
	a, b, c := &lifecycle.Project{Name: "a"}, &lifecycle.Project{Name: "b"}, &lifecycle.Project{Name: "c"}
	set := lifecycle.NewProjectSet(lifecycle.Projects{"a": a, "b": b})
	first := set.Watched()

	added, retired := set.Replace(lifecycle.Projects{"a": a, "c": c})
	if !slices.Equal(added, []string{"c"}) || !slices.Equal(retired, []string{"b"}) {
		t.Fatalf("added %v retired %v", added, retired)
	}
	if _, ok := set.Watched()["b"]; ok {
		t.Error("b still watched")
	}
	if p, ok := set.Lookup(platforms.Ref{Project: "b"}); !ok || p != b {
		t.Errorf("retired b does not resolve: %v %v", p, ok)
	}
	if p, ok := set.Retired("b"); !ok || p != b {
		t.Errorf("Retired(b) = %v %v", p, ok)
	}
	if len(first) != 2 || first["b"] != b {
		t.Errorf("a snapshot taken before Replace changed: %v", first)
	}

	added, retired = set.Replace(lifecycle.Projects{"a": a, "b": b})
	if !slices.Equal(added, []string{"b"}) || !slices.Equal(retired, []string{"c"}) {
		t.Fatalf("added %v retired %v", added, retired)
	}
	if _, ok := set.Retired("b"); ok {
		t.Error("b revived but still listed as retired")
	}
	if _, ok := set.Lookup(platforms.Ref{Project: "nope"}); ok {
		t.Error("an unknown project resolves")
	}
}

// Readers never lock: run under -race, concurrent lookups during Replace
// are what the daemon's claims, runs and housekeeping do.
func TestProjectSetConcurrentReadsDuringReplace(t *testing.T) {
	a, b := &lifecycle.Project{Name: "a"}, &lifecycle.Project{Name: "b"}
	set := lifecycle.NewProjectSet(lifecycle.Projects{"a": a})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for name, p := range set.Watched() {
					if p.Name != name {
						t.Errorf("project %q under %q", p.Name, name)
						return
					}
				}
				if _, ok := set.Lookup(platforms.Ref{Project: "a"}); !ok {
					t.Error("a stopped resolving")
					return
				}
			}
		})
	}
	for i := range 1000 {
		next := lifecycle.Projects{"a": a}
		if i%2 == 0 {
			next["b"] = b
		}
		set.Replace(next)
	}
	close(stop)
	wg.Wait()
}

// A project discovery retires while its ticket runs (its repository left
// the organisation's listing) lets that run, and a request still queued
// behind it, finish to Done; a ticket triggered in it afterwards is not
// claimed, until the project comes back.
func TestRetiredProjectsRunFinishesAndNothingNewStarts(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = []string{"sh", "-c", `touch "$D/started"; while [ ! -f "$D/gate" ]; do sleep 0.02; done`}
	p.Pipeline.Env = map[string]string{"D": dir}
	set := lifecycle.NewProjectSet(w.Projects)
	claims := claim.NewService(w.RDB, w.Queue, set, claim.Config{Instance: "test", Labels: w.Labels, Logger: zaptest.NewLogger(t)})
	ex := consumer.NewExecutor(w.RDB, w.Queue, set, consumer.ExecutorConfig{Instance: "exec-1", Concurrency: 1,
		HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond, WorkDir: filepath.Join(dir, "work"),
		TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	running := w.Sim.CreateIssue(lifecycletest.Repo, "running", "", "agent-smith")
	if res, err := claims.Claim(ctx, lifecycletest.Ref(running), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool {
		_, err := os.Stat(filepath.Join(dir, "started"))
		return err == nil
	})
	queued := w.Sim.CreateIssue(lifecycletest.Repo, "queued behind it", "", "agent-smith")
	if res, err := claims.Claim(ctx, lifecycletest.Ref(queued), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}

	if _, retired := set.Replace(lifecycle.Projects{}); !slices.Equal(retired, []string{lifecycletest.Project}) {
		t.Fatalf("retired %v", retired)
	}
	later := w.Sim.CreateIssue(lifecycletest.Repo, "after the repository left", "", "agent-smith")
	if res, err := claims.Claim(ctx, lifecycletest.Ref(later), lifecycle.SourceWebhook, 1); err == nil {
		t.Fatalf("a retired project's ticket was claimed: %+v", res)
	}
	if len(claims.Projects()) != 0 {
		t.Errorf("watched after retiring: %v", claims.Projects().Names())
	}

	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 10*time.Second, "the retired project's runs to reach Done", func() bool {
		return w.State(t, running) == lifecycle.Done && w.State(t, queued) == lifecycle.Done
	})
	if got := w.State(t, later); got != lifecycle.Pending {
		t.Errorf("later ticket: %v, want Pending", got)
	}

	if added, _ := set.Replace(w.Projects); !slices.Equal(added, []string{lifecycletest.Project}) {
		t.Fatalf("added %v", added)
	}
	if res, err := claims.Claim(ctx, lifecycletest.Ref(later), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim after the project came back: %+v %v", res, err)
	}
}
