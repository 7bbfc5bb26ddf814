package consumer_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// pipeline.run_as: the pipeline runs as another user, works in its own
// work dir (handed to that user), and cannot read a file only the daemon's
// user may read (a token file). Without run_as the same pipeline reads it.
func TestRunAsKeepsDaemonFilesOutOfReach(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("pipeline.run_as needs the daemon to run as root; run the tests as root to cover it")
	}
	for _, c := range []struct {
		name     string
		runAs    *syscall.Credential
		readable bool
	}{{"run_as nobody", &syscall.Credential{Uid: 65534, Gid: 65534}, false}, {"daemon's user", nil, true}} {
		t.Run(c.name, func(t *testing.T) {
			w := lifecycletest.New(t, 1)
			// The work root's parents must let the pipeline's user pass
			// (as /var/lib does); t.TempDir's are 0700.
			dir, err := os.MkdirTemp("", "runas")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o711); err != nil {
				t.Fatal(err)
			}
			secrets := filepath.Join(dir, "secrets") // like /etc/agentsmithd: the daemon's only
			if err := os.Mkdir(secrets, 0o700); err != nil {
				t.Fatal(err)
			}
			token := filepath.Join(secrets, "token")
			if err := os.WriteFile(token, []byte("ghp_daemon_secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			work := filepath.Join(dir, "work")
			p := w.Projects[lifecycletest.Project]
			p.Pipeline.RunAs = c.runAs
			p.Pipeline.Env = map[string]string{"TOKEN_FILE": token}
			// The pipeline must be able to write in its work dir; it records
			// whether it could read the token and who it ran as.
			p.Pipeline.Command = []string{"sh", "-c", `id -u > uid; if cat "$TOKEN_FILE" > /dev/null 2>&1; then echo read > token-read; else echo denied > token-read; fi`}
			ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
				Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
				KillGrace: 200 * time.Millisecond, WorkDir: work, TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t)})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); _ = ex.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })

			n := w.Sim.CreateIssue(lifecycletest.Repo, "run as", "", "agent-smith")
			if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
				t.Fatalf("claim: %+v %v", res, err)
			}
			eventually.Wait(t, 20*time.Second, "the ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
			wd := lifecycle.WorkDir(work, lifecycletest.Ref(n))
			uid, err1 := os.ReadFile(filepath.Join(wd, "uid"))
			read, err2 := os.ReadFile(filepath.Join(wd, "token-read"))
			if err1 != nil || err2 != nil {
				t.Fatalf("pipeline's files: %v %v", err1, err2)
			}
			wantUID := "0"
			if c.runAs != nil {
				wantUID = "65534"
			}
			if got := strings.TrimSpace(string(uid)); got != wantUID {
				t.Errorf("pipeline ran as uid %s, want %s", got, wantUID)
			}
			if got, want := strings.TrimSpace(string(read)) == "read", c.readable; got != want {
				t.Errorf("pipeline could read the daemon's token file: %v, want %v", got, want)
			}
		})
	}
}
