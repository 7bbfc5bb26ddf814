package main_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
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

// fromFile names the release the upgrade test starts from: one line, the
// full commit hash and its tag. The test reads the hash, so a clone without
// tags still finds the commit.
const fromFile = "../../deploy/upgrade/FROM"

var (
	releaseOnce sync.Once
	releaseBin  string
	releaseErr  error
	releaseSkip string
)

// releaseBinary builds ./cmd/agentsmithd of the commit in fromFile from a
// git archive of it (the repository's worktrees are left alone). A history
// without the commit (a shallow clone) skips the test.
func releaseBinary(t *testing.T) (bin, tag string) {
	t.Helper()
	b, err := os.ReadFile(fromFile)
	if err != nil {
		t.Fatalf("read %s: %v", fromFile, err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 || len(f[0]) != 40 {
		t.Fatalf("%s: want one line \"<40-hex commit> <tag>\", got %q", fromFile, b)
	}
	hash, tag := f[0], f[1]
	releaseOnce.Do(func() {
		if out, err := exec.Command("git", "cat-file", "-e", hash+"^{commit}").CombinedOutput(); err != nil {
			releaseSkip = fmt.Sprintf("commit %s (%s, named in deploy/upgrade/FROM) is not in this clone's history "+
				"(shallow clone?): %v %s; fetch it (git fetch --unshallow) to run the upgrade test", hash, tag, err, out)
			return
		}
		dir, err := os.MkdirTemp("", "agentsmithd-release-")
		if err != nil {
			releaseErr = err
			return
		}
		src := filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			releaseErr = err
			return
		}
		// From the top: git archive run in a subdirectory archives only
		// that subdirectory.
		archive := exec.Command("sh", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive "$1" | tar -x -C "$2"`, "sh", hash, src)
		if out, err := archive.CombinedOutput(); err != nil {
			releaseErr = fmt.Errorf("git archive %s: %w\n%s", hash, err, out)
			return
		}
		releaseBin = filepath.Join(dir, "agentsmithd-"+tag)
		// -trimpath: the build cache is keyed without the temporary
		// directory, so a second run reuses the first one's packages.
		build := exec.Command("go", "build", "-trimpath", "-o", releaseBin, "./cmd/agentsmithd")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			releaseErr = fmt.Errorf("go build of %s (%s): %w\n%s", tag, hash, err, out)
		}
	})
	if releaseSkip != "" {
		t.Skip(releaseSkip)
	}
	if releaseErr != nil {
		t.Fatal(releaseErr)
	}
	return releaseBin, tag
}

// upgradePipeline logs each start, end and failure with the binary that
// ran it ($BIN: from or to). Under the first binary a run holds until its
// ticket's gate file exists, so the test decides which tickets finish
// before the switch; a ticket titled "flaky" fails attempt 1 with a retry
// code. Under the second binary nothing holds.
const upgradePipeline = `g="$GATES/$(printf %s "$AGENTSMITH_TICKET_ID" | tr -c 'A-Za-z0-9' _)"
echo "start $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT $BIN" >> "$RUN_LOG"
if [ "$AGENTSMITH_TITLE" = flaky ] && [ "$AGENTSMITH_ATTEMPT" = 1 ]; then
  echo "fail $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT $BIN" >> "$RUN_LOG"; exit 75
fi
if [ "$BIN" = from ]; then while [ ! -f "$g" ]; do sleep 0.05; done; fi
echo "end $AGENTSMITH_TICKET_ID $AGENTSMITH_ATTEMPT $BIN" >> "$RUN_LOG"`

const upgradeTimings = `consumer: {concurrency: 1, heartbeat_ttl: 3s, heartbeat_renew: 500ms, shutdown_grace: 1s, kill_grace: 1s}
housekeeping: {fast_interval: 200ms, slow_interval: 1s, instance_ttl: 2s, lease_ttl: 2s}
poller: {lease_ttl: 2s}`

type upgradeWorld struct {
	*procWorld
	gates string
}

func (w *upgradeWorld) open(id string) {
	w.t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, id)
	if err := os.WriteFile(filepath.Join(w.gates, name), nil, 0o644); err != nil {
		w.t.Fatal(err)
	}
}

// startBin runs bin serve as instance name; role is from or to, the
// pipeline's $BIN.
func (w *upgradeWorld) startBin(bin, name, role string) *exec.Cmd {
	env := fmt.Sprintf("RUN_LOG: %q, GATES: %q, BIN: %s", w.runLog, w.gates, role)
	// The release predates the sandbox, whose block it would refuse; this
	// tree's runs see the world's dir through it.
	w.box = ""
	if bin == daemonBinary(w.t) {
		w.box = sandboxBlock(w.dir)
	}
	retry := "      retry: {exit_codes: [75], backoff: {initial: 20s, max: 20s}}\n"
	return w.serve(bin, name, "upgrade-test-token", w.daemonYAML(name, upgradeTimings, upgradePipeline, env, retry))
}

// upgradeHandOver runs from until its Redis holds a ticket of each kind
// (done, in progress, enqueued behind it, failed once and waiting in the
// delayed set), stops it with sig, and runs to on the same Redis and
// tracker. Every ticket must reach done with its other labels kept and end
// exactly once, what from finished must not run again, and to must read
// from's epoch rather than start over from an empty Redis.
func upgradeHandOver(t *testing.T, from, to string, sig syscall.Signal) {
	pc := simcases.GitHub
	dir := reachableDir(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	w := &upgradeWorld{procWorld: &procWorld{t: t, pc: pc, dir: dir, sim: s, simURL: srv.URL, redis: redistest.Start(t),
		runLog: sharedLog(t, filepath.Join(dir, "runs.log"))}, gates: filepath.Join(dir, "gates")}
	if err := os.Mkdir(w.gates, 0o755); err != nil {
		t.Fatal(err)
	}
	rdb := w.redis.Client(t)
	a := w.startBin(from, "replica-from", "from")

	create := func(title string) (int, string) {
		n := s.CreateIssue(pc.Repo, title, "", "agent-smith", "keep-me")
		return n, pc.ID(n)
	}
	done := slices.Sorted(slices.Values([]string{"agent-smith", "keep-me", lifecycletest.Label(lifecycle.Done)}))
	isDone := func(n int) bool {
		is, _ := s.Issue(pc.Repo, n)
		return slices.Equal(slices.Sorted(slices.Values(is.Labels)), done)
	}
	hasLabel := func(n int, state lifecycle.State) bool {
		is, _ := s.Issue(pc.Repo, n)
		return slices.Contains(is.Labels, lifecycletest.Label(state))
	}

	nFinished, finished := create("finished")
	w.open(finished)
	eventually.Wait(t, 60*time.Second, "the first ticket to reach done under the first binary", func() bool { return isDone(nFinished) })

	nFlaky, flaky := create("flaky")
	eventually.Wait(t, 30*time.Second, "the flaky ticket to wait in the delayed set", func() bool {
		ds, _ := rdb.ZRange(t.Context(), keys.Delayed(), 0, -1).Result()
		return len(w.lines("fail "+flaky+" 1 from")) == 1 && len(ds) == 1 && strings.Contains(ds[0], flaky)
	})

	nRunning, running := create("running")
	eventually.Wait(t, 30*time.Second, "the running ticket's pipeline to start", func() bool {
		return len(w.lines("start "+running+" 1 from")) == 1 && hasLabel(nRunning, lifecycle.InProgress)
	})
	nQ1, q1 := create("queued 1")
	nQ2, q2 := create("queued 2")
	eventually.Wait(t, 30*time.Second, "the queued tickets to be enqueued", func() bool {
		return hasLabel(nQ1, lifecycle.Enqueued) && hasLabel(nQ2, lifecycle.Enqueued)
	})
	// The retry is due 20 s after attempt 1 failed: still in the delayed
	// set when the first binary stops.
	if ds, _ := rdb.ZRange(t.Context(), keys.Delayed(), 0, -1).Result(); len(ds) != 1 || !strings.Contains(ds[0], flaky) {
		t.Fatalf("the delayed set holds %q before the switch, want the flaky ticket's retry", ds)
	}
	epoch, err := rdb.Get(t.Context(), keys.Epoch()).Result()
	if err != nil {
		t.Fatalf("the first binary wrote no epoch: %v", err)
	}

	if err := a.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	_, _ = a.Process.Wait()
	// After kill -9 the running ticket's pipeline is an orphan holding on
	// its gate; open it at the end so the orphan exits.
	t.Cleanup(func() { w.open(running) })

	w.startBin(to, "replica-to", "to")
	all := map[string]int{finished: nFinished, flaky: nFlaky, running: nRunning, q1: nQ1, q2: nQ2}
	eventually.Wait(t, 120*time.Second, "every ticket to reach done with its labels kept", func() bool {
		for _, n := range all {
			if !isDone(n) {
				return false
			}
		}
		return true
	})
	for id := range all {
		if got := len(w.lines("end " + id + " ")); got != 1 {
			t.Errorf("%s: pipeline ended %d times, want once", id, got)
		}
	}
	if got := w.lines("start " + finished + " "); len(got) != 1 {
		t.Errorf("the ticket done before the switch started %q, want one start under the first binary", got)
	}
	// The running ticket: attempt 1 stopped with the first binary, one run
	// under the second; the queued ones: one run, under the second.
	for id, starts := range map[string]int{running: 2, q1: 1, q2: 1} {
		if got := w.lines("start " + id + " "); len(got) != starts {
			t.Errorf("%s: pipeline started %q, want %d starts", id, got, starts)
		}
		if got := w.lines("end " + id + " "); len(got) == 1 && !strings.HasSuffix(got[0], " to") {
			t.Errorf("%s ended under the first binary: %q", id, got)
		}
	}
	// Attempt 2 under the second binary: the retry and its count came from
	// the delayed set the first one wrote.
	if got := w.lines("end " + flaky + " "); len(got) != 1 || got[0] != "end "+flaky+" 2 to" {
		t.Errorf("the flaky ticket ended %q, want attempt 2 under the second binary", got)
	}
	if now, err := rdb.Get(t.Context(), keys.Epoch()).Result(); err != nil || now != epoch {
		t.Errorf("epoch %q (%v) after the switch, want the first binary's %q", now, err, epoch)
	}
	logTo := filepath.Join(w.dir, "replica-to.log")
	for _, reset := range []string{"Redis holds no agentsmithd data", "Redis has no epoch", "Redis lost its data"} {
		if logHas(t, logTo, reset) {
			t.Errorf("the second binary's log says %q: it did not read the first one's Redis", reset)
		}
	}
}

// The release in deploy/upgrade/FROM leaves a Redis with a ticket of each
// kind; the worktree's binary serves it (upgrade), and the release serves
// the worktree binary's Redis (roll back). See docs/operations.md,
// "Upgrading".
func TestUpgradeFromReleaseServesItsRedisState(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the release named in deploy/upgrade/FROM and runs two daemons per case")
	}
	release, tag := releaseBinary(t)
	current := daemonBinary(t)
	for _, c := range []struct {
		name     string
		from, to string
		sig      syscall.Signal
	}{
		{tag + " to this tree, SIGTERM (rolling update)", release, current, syscall.SIGTERM},
		{tag + " to this tree, kill -9", release, current, syscall.SIGKILL},
		{"this tree back to " + tag + ", SIGTERM (roll back)", current, release, syscall.SIGTERM},
	} {
		t.Run(c.name, func(t *testing.T) { upgradeHandOver(t, c.from, c.to, c.sig) })
	}
}
