package lifecycle_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// A run records when it used its work dir, by the executor's clock, in the
// logs dir (which retention dates tickets by), whatever the pipeline does
// to its files' times.
func TestARunMarksItsWorkDirUsed(t *testing.T) {
	w := lifecycletest.New(t, 1)
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = []string{"sh", "-c", `touch -d '10 years ago' . && echo done`}
	work := filepath.Join(t.TempDir(), "work")
	ahead := 48 * time.Hour
	ctx := consumertest.RunExecutor(t, w, consumer.ExecutorConfig{WorkDir: work, Clock: func() time.Time { return time.Now().Add(ahead) }})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "mark me", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	before := time.Now().Add(ahead)
	if _, err := w.Claims.Claim(ctx, ref, lifecycle.SourcePoll, 0); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "the run to finish", func() bool { return w.State(t, n) == lifecycle.Done })
	rel, err := filepath.Rel(work, lifecycle.WorkDir(work, ref))
	if err != nil {
		t.Fatal(err)
	}
	// The mark after the run is written once the outcome is: wait for it.
	eventually.Wait(t, 10*time.Second, "the last-use mark", func() bool {
		at, err := lifecycle.LastUsed(lifecycle.LogsRoot(work, ""), rel)
		return err == nil && !at.Before(before)
	})
}
