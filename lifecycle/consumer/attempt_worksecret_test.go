package consumer_test

import (
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
)

// TestWorkBranchWithASecretIsNotPushed: a pipeline that writes the
// project's token into a file of its work tree succeeds, but its work
// branch is not pushed: the remote has no branch, and the Done comment
// says which commit and file hold a secret, never the secret.
func TestWorkBranchWithASecretIsNotPushed(t *testing.T) {
	const token = "ghp_W0rkBranchT0ken_42"
	w := lifecycletest.New(t, 1)
	bare := bareRemote(t)
	ws, err := gitws.New(gitws.Config{URL: bare, Timeout: 30 * time.Second, Secrets: []string{token}})
	if err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.Workspace = ws
	p.Pipeline.Secrets = map[string]string{"TOKEN": token}
	p.Redact = redact.New(token)
	p.Pipeline.Command = []string{"sh", "-c", `mkdir -p config && printf 'token=%s\n' "$TOKEN" > config/token.txt`}
	rec := &lifecycletest.Recorder{}
	replica(t, w, "replica-a", filepath.Join(t.TempDir(), "a"), rec)
	n := w.ClaimIssue(t, "leaky work")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if out, err := exec.Command("git", "-C", bare, "branch", "--list", "agent-smith/*").CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("the work branch with the token was pushed: %q %v", out, err)
	}
	cs := w.Comments(t, n)
	all := strings.Join(cs, "\n")
	if !strings.Contains(all, "**not pushed**: commit ") || !strings.Contains(all, "adds a secret in config") || !strings.Contains(all, "token.txt") {
		t.Errorf("no comment says the push was refused for config/token.txt:\n%s", all)
	}
	for _, f := range []string{token, base64.StdEncoding.EncodeToString([]byte(token))} {
		if strings.Contains(all, f) {
			t.Errorf("a comment holds the token:\n%s", all)
		}
	}
}
