package consumer_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// Attempt 1's pipeline plants links where the next attempt's log would be
// in its work dir, and where the logs dir's files are, pointing at a file
// only the daemon may write; attempt 2 runs. The daemon keeps the logs
// outside the work dir and opens them without following a link: the file
// outside is untouched and attempt 2's output is in its own log.
func TestAnAttemptCannotMakeTheDaemonWriteThroughALink(t *testing.T) {
	w := lifecycletest.New(t, 2)
	p := w.Projects[lifecycletest.Project]
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	p.Pipeline.Command = []string{"sh", "-c", `if [ "$AGENTSMITH_ATTEMPT" = 1 ]; then
mkdir -p .agentsmith/logs && ln -s "$SECRET" .agentsmith/logs/attempt-2.log && ln -s "$SECRET" .agentsmith/logs/attempt-1.log
exit 75; fi
echo "attempt 2 output"`}
	p.Pipeline.Env = map[string]string{"SECRET": secret}
	p.Pipeline.Retry = lifecycle.RetryPolicy{ExitCodes: []int{75}, Backoff: lifecycle.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}}
	ctx := consumertest.RunExecutor(t, w, consumer.ExecutorConfig{WorkDir: work})
	n := w.Sim.CreateIssue(lifecycletest.Repo, "plant a link", "", "agent-smith")
	ref := lifecycletest.Ref(n)
	if _, err := w.Claims.Claim(ctx, ref, lifecycle.SourcePoll, 0); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "attempt 2 to finish", func() bool {
		_, _ = w.Queue.PromoteDue(ctx, 10)
		return w.State(t, n) == lifecycle.Done
	})
	if b, err := os.ReadFile(secret); err != nil || string(b) != "root only\n" {
		t.Fatalf("the file outside was written through the planted link: %q %v", b, err)
	}
	log := lifecycle.LogPath(work, "", ref, 1, 2)
	if rel, err := filepath.Rel(work, log); err == nil && filepath.IsLocal(rel) {
		t.Fatalf("the attempt log %s is in the work dir", log)
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "attempt 2 output\n" {
		t.Fatalf("attempt 2's log: %q %v", b, err)
	}
}
