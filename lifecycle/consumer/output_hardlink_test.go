package consumer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// TestHardLinkedRunFilesAreRefused: a pipeline hard-links a file only root
// may read (0600, as /etc/shadow, made by the test outside the work dir) to
// its progress and result files' names; a link made by root is not stopped
// by fs.protected_hardlinks, and neither is any user's where it is 0. The
// daemon refuses both files unread: the secret reaches no comment on the
// ticket, and the Done comment says why the files were refused.
func TestHardLinkedRunFilesAreRefused(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(cfg *consumer.ExecutorConfig) { cfg.ProgressInterval = 50 * time.Millisecond })
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte("TOPSECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	resultSecret := filepath.Join(t.TempDir(), "shadow.json")
	if err := os.WriteFile(resultSecret, []byte(`{"summary":"TOPSECRET"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.ProgressComment = true
	p.Pipeline.Env["SECRET"], p.Pipeline.Env["RESULT_SECRET"] = secret, resultSecret
	// The links stay while several polls of the progress file pass.
	p.Pipeline.Command = []string{"sh", "-c", `ln "$SECRET" "$AGENTSMITH_PROGRESS_FILE" &&
ln "$RESULT_SECRET" "$AGENTSMITH_RESULT_FILE" && sleep 0.5`}
	n := w.ClaimIssue(t, "hard links")
	eventually.Wait(t, 20*time.Second, "the ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
	var done string
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	for _, c := range is.Comments {
		if strings.Contains(c.Body, "TOPSECRET") {
			t.Errorf("a comment shows the root-only file: %q", c.Body)
		}
		if !strings.Contains(c.Body, "in progress") {
			done += c.Body
		}
	}
	for _, want := range []string{"result file refused: hard link (2 links)", "progress file refused: hard link (2 links)"} {
		if !strings.Contains(done, want) {
			t.Errorf("done comment %q does not say %q", done, want)
		}
	}
}
