package consumer_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/housekeeping"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/gitws"
	"github.com/agentsmithd/agentsmithd/pkg/runcg"
)

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// bareRemote is a real bare repository with one commit on main.
func bareRemote(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	bare := filepath.Join(root, "origin.git")
	git(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	seed := filepath.Join(root, "seed")
	git(t, root, "init", "--quiet", "--initial-branch=main", seed)
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("base\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, seed, "add", "README")
	git(t, seed, "commit", "--quiet", "-m", "base")
	git(t, seed, "push", "--quiet", bare, "main")
	return bare
}

// withRemote gives w's project a workspace on a new bare remote.
func withRemote(t *testing.T, w *lifecycletest.World) (bare string, p *lifecycle.Project) {
	t.Helper()
	bare = bareRemote(t)
	ws, err := gitws.New(gitws.Config{URL: bare, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p = w.Projects[lifecycletest.Project]
	p.Workspace = ws
	return bare, p
}

// replica runs one executor (its own instance and work root) and the
// delayed set's promoter until stop; opts adjust the executor's config.
func replica(t *testing.T, w *lifecycletest.World, name, workRoot string, rec *lifecycletest.Recorder, opts ...func(*consumer.ExecutorConfig)) (stop func()) {
	t.Helper()
	cfg := consumer.ExecutorConfig{
		Instance: name, Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		ShutdownGrace: time.Second, KillGrace: 200 * time.Millisecond, WorkDir: workRoot,
		TakeWait: 100 * time.Millisecond, Logger: zaptest.NewLogger(t), Observer: rec, Rand: func() float64 { return 0.5 },
	}
	for _, o := range opts {
		o(&cfg)
	}
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, cfg)
	promoter := housekeeping.NewDelayedPromoter(w.Queue, housekeeping.DelayedPromoterConfig{Interval: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ex.Run(ctx) })
	wg.Go(func() { _ = promoter.Run(ctx) })
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// The seed's branch persistence, end to end with the real git: attempt 1
// fails on replica A after writing half its work, which is pushed as a
// [wip] commit before the retry; attempt 2 runs on replica B, in another
// work dir, finds that work, finishes, and reports a result; the branch is
// left for a pull request and the Done comment shows the result, escaped.
func TestFailedAttemptsWorkResumesOnAnotherReplica(t *testing.T) {
	w := lifecycletest.New(t, 2)
	bare, p := withRemote(t, w)
	lifecycletest.RetryOn(p, 3)
	p.Pipeline.Command = []string{"sh", "-c", `set -e
if [ "$AGENTSMITH_ATTEMPT" = 1 ]; then echo "step one" > work.txt; exit 3; fi
grep -q "step one" work.txt || exit 9
echo "step two" >> work.txt
printf '%s' '{"summary":"Opened a PR *now* @alice","links":[{"title":"PR #1","url":"https://example.com/pr/1"},{"title":"x","url":"javascript:alert(1)"}]}' > "$AGENTSMITH_RESULT_FILE"`}

	rec := &lifecycletest.Recorder{}
	stopA := replica(t, w, "replica-a", filepath.Join(t.TempDir(), "a"), rec)
	n := w.ClaimIssue(t, "resumable")
	branch := fmt.Sprintf("agent-smith/acme-app-%d", n)
	eventually.Wait(t, 20*time.Second, "attempt 1 to fail and be retried", func() bool {
		for _, ev := range rec.Kind(lifecycle.EventTransition) {
			if ev.To == lifecycle.Enqueued && ev.Attempt == 1 {
				return true
			}
		}
		return false
	})
	stopA()
	if got := git(t, bare, "log", "-1", "--format=%s", branch); !strings.HasPrefix(got, "[wip] agent-smith attempt 1: ") {
		t.Fatalf("branch head after the failure = %q, want the [wip] commit", got)
	}
	if got := git(t, bare, "show", branch+":work.txt"); got != "step one" {
		t.Fatalf("work on the branch = %q", got)
	}

	replica(t, w, "replica-b", filepath.Join(t.TempDir(), "b"), rec)
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if got := git(t, bare, "show", branch+":work.txt"); got != "step one\nstep two" {
		t.Fatalf("work on the branch after attempt 2 = %q (attempt 2 did not resume from attempt 1)", got)
	}
	git(t, bare, "merge-base", "--is-ancestor", "main", branch)
	if subjects := git(t, bare, "log", "--format=%s", "main.."+branch); !strings.HasPrefix(subjects, "agent-smith attempt 2: succeeded\n[wip] agent-smith attempt 1: ") {
		t.Fatalf("branch history:\n%s", subjects)
	}
	if files := git(t, bare, "ls-tree", "-r", "--name-only", branch); strings.Contains(files, ".agentsmith") {
		t.Fatalf("the daemon's files were committed:\n%s", files)
	}

	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 2 {
		t.Fatalf("%d comments, want the failure's and the Done one", len(is.Comments))
	}
	failure, done := is.Comments[0].Body, is.Comments[1].Body
	if !strings.Contains(failure, "work branch `"+branch+"`: pushed at ") {
		t.Errorf("failure comment does not name the pushed branch:\n%s", failure)
	}
	for _, want := range []string{"pipeline succeeded (attempt 2)", "work branch `" + branch + "`: pushed at ",
		`Opened a PR \*now\* @` + "\u200b" + `alice`, "- [PR #\u200b1](https://example.com/pr/1)", "1 link(s) left out"} {
		if !strings.Contains(done, want) {
			t.Errorf("done comment lacks %q:\n%s", want, done)
		}
	}
	if strings.Contains(done, "javascript") {
		t.Errorf("done comment carries a javascript: link:\n%s", done)
	}
}

// A shutdown hand-back pushes the stopped run's work before the ticket goes
// back to the queue.
func TestShutdownHandBackPushesTheWork(t *testing.T) {
	w := lifecycletest.New(t, 3)
	bare, p := withRemote(t, w)
	dir := t.TempDir()
	p.Pipeline.Env = map[string]string{"D": dir}
	p.Pipeline.Command = []string{"sh", "-c", `echo partial > part.txt; touch "$D/started"; while :; do sleep 0.02; done`}
	rec := &lifecycletest.Recorder{}
	stop := replica(t, w, "replica-a", filepath.Join(dir, "work"), rec)
	n := w.ClaimIssue(t, "interrupted")
	eventually.Wait(t, 20*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	stop()
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s, want enqueued (handed back)", s)
	}
	branch := fmt.Sprintf("agent-smith/acme-app-%d", n)
	if got := git(t, bare, "log", "-1", "--format=%s", branch); got != "[wip] agent-smith attempt 1: stopped by shutdown, handed back" {
		t.Fatalf("branch head = %q", got)
	}
	if got := git(t, bare, "show", branch+":part.txt"); got != "partial" {
		t.Fatalf("part.txt on the branch = %q", got)
	}
}

// A result file that is not JSON is a warning line in the Done comment; the
// ticket is Done all the same.
func TestInvalidResultIsAWarningNotAFailure(t *testing.T) {
	w := lifecycletest.New(t, 1)
	p := w.Projects[lifecycletest.Project]
	p.Pipeline.Command = []string{"sh", "-c", `printf '{"summary": ' > "$AGENTSMITH_RESULT_FILE"`}
	rec := &lifecycletest.Recorder{}
	replica(t, w, "replica-a", filepath.Join(t.TempDir(), "work"), rec)
	n := w.ClaimIssue(t, "sloppy result")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "- result file: ignored, not valid JSON") {
		t.Fatalf("comments: %+v", is.Comments)
	}
}

// A run whose cgroup cannot be emptied (here: the pipeline made a cgroup
// inside its own, so the run cgroup cannot be removed) may have processes
// left writing the work dir: the daemon does not save the work branch
// from it.
func TestWorkIsNotSavedWhenTheRunCgroupIsNotEmptied(t *testing.T) {
	cg, err := runcg.Detect()
	if err != nil {
		t.Skipf("no run cgroups here: %v", err)
	}
	w := lifecycletest.New(t, 1)
	bare, p := withRemote(t, w)
	p.Pipeline.Command = []string{"sh", "-c", fmt.Sprintf(`set -e
echo work > work.txt
own=$(sed -n 's/^0:://p' /proc/self/cgroup)
mkdir "%s/${own##*/}/stay"`, cg.Dir())}
	t.Cleanup(func() {
		runs, _ := filepath.Glob(filepath.Join(cg.Dir(), "run-*", "stay"))
		for _, stay := range runs {
			_ = os.Remove(stay)
			_ = os.Remove(filepath.Dir(stay))
		}
	})
	rec := &lifecycletest.Recorder{}
	replica(t, w, "replica-a", t.TempDir(), rec, func(c *consumer.ExecutorConfig) { c.Cgroups = cg })
	n := w.ClaimIssue(t, "leftover")
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")
	if out, err := exec.Command("git", "-C", bare, "branch", "--list", "agent-smith/*").CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("the work branch was saved from a run with processes possibly left: %q %v", out, err)
	}
}

// The executor names {work_dir}-git as the git root, so a root that anyone
// may write (made first by another local user, under the default work_dir
// in $TMPDIR) fails the attempt before any git runs, and the pipeline
// never starts.
func TestAGitRootOthersCanWriteFailsTheAttempt(t *testing.T) {
	w := lifecycletest.New(t, 2)
	ws, err := gitws.New(gitws.Config{URL: bareRemote(t), Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base, marks := t.TempDir(), t.TempDir()
	workRoot := filepath.Join(base, "work")
	if err := os.Mkdir(lifecycle.GitRoot(workRoot), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(lifecycle.GitRoot(workRoot), 0o777); err != nil {
		t.Fatal(err)
	}
	p := w.Projects[lifecycletest.Project]
	p.Workspace = ws
	p.Pipeline.Command = []string{"sh", "-c", "touch " + filepath.Join(marks, "ran")}
	rec := &lifecycletest.Recorder{}
	replica(t, w, "replica-a", workRoot, rec)
	n := w.ClaimIssue(t, "git root")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	if _, err := os.Stat(filepath.Join(marks, "ran")); !os.IsNotExist(err) {
		t.Errorf("the pipeline ran with a git root anyone may write: %v", err)
	}
	if ev, _ := rec.Find("failed"); !strings.Contains(ev.Reason, "git root") || !strings.Contains(ev.Reason, "no one else may write") {
		t.Errorf("the failure does not name the refused git root: %q", ev.Reason)
	}
}
