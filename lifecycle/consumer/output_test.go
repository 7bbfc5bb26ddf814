package consumer_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// Each attempt's whole output goes to its own capped log file, recorded in
// Redis with the replica that ran it, and line by line to the daemon's log
// at debug level with the ticket and attempt; a huge line is cut in the
// log, never buffered whole.
func TestEveryAttemptsOutputIsKept(t *testing.T) {
	w := lifecycletest.New(t, 2)
	p := w.Projects[lifecycletest.Project]
	// Attempt 1 prints a line per step, a 10 KB line, then 100 KB more than
	// the cap allows, and fails (exit 75 retries); attempt 2 succeeds.
	p.Pipeline.Command = []string{"sh", "-c", `echo "hello from attempt $AGENTSMITH_ATTEMPT"; echo "to stderr" >&2
if [ "$AGENTSMITH_ATTEMPT" = 1 ]; then head -c 10000 /dev/zero | tr '\0' x; echo; head -c 100000 /dev/zero | tr '\0' y; exit 75; fi`}
	p.Pipeline.Retry = lifecycle.RetryPolicy{ExitCodes: []int{75}, Backoff: lifecycle.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Multiplier: 1}}
	dir := t.TempDir()
	core, logs := observer.New(zap.DebugLevel)
	ex := consumer.NewExecutor(w.RDB, w.Queue, w.Projects, consumer.ExecutorConfig{
		Instance: "exec-1", Concurrency: 1, HeartbeatTTL: 2 * time.Second, HeartbeatRenew: 100 * time.Millisecond,
		WorkDir: filepath.Join(dir, "work"), LogsDir: filepath.Join(dir, "logs"), LogMaxBytes: 20000,
		TakeWait: 100 * time.Millisecond, Logger: zap.New(core)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = ex.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// The delayed retry is promoted by housekeeping in the daemon; here
	// the test moves it when due.
	n := w.Sim.CreateIssue(lifecycletest.Repo, "log me", "", "agent-smith")
	if _, err := w.Claims.Claim(ctx, lifecycletest.Ref(n), lifecycle.SourcePoll, 0); err != nil {
		t.Fatal(err)
	}
	eventually.Wait(t, 20*time.Second, "attempt 2 to finish", func() bool {
		_, _ = w.Queue.PromoteDue(ctx, 10)
		return w.State(t, n) == lifecycle.Done
	})

	rls, err := runstate.RunLogs(ctx, w.RDB, lifecycletest.Ref(n))
	if err != nil || len(rls) != 2 || rls[0].Attempt != 1 || rls[1].Attempt != 2 || rls[0].Instance != "exec-1" {
		t.Fatalf("recorded run logs: %+v %v", rls, err)
	}
	one, err := os.ReadFile(rls[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rls[0].Path, filepath.Join(dir, "logs")) || !strings.HasPrefix(string(one), "hello from attempt 1\n") ||
		!strings.Contains(string(one), "to stderr\n") || !strings.Contains(string(one), "output truncated at 20000 bytes") ||
		len(one) > 20000+200 {
		t.Errorf("attempt 1 log (%d bytes, %s) head %q", len(one), rls[0].Path, one[:min(len(one), 80)])
	}
	two, _ := os.ReadFile(rls[1].Path)
	if string(two) != "hello from attempt 2\nto stderr\n" {
		t.Errorf("attempt 2 log = %q", two)
	}
	var lines, long int
	for _, e := range logs.FilterMessage("pipeline output").All() {
		cm := e.ContextMap()
		line := fmt.Sprint(cm["line"])
		if e.Level != zap.DebugLevel || cm["ticketId"] == nil || cm["attempt"] == nil {
			t.Fatalf("output line without ticket and attempt: %+v", cm)
		}
		if len(line) > 4096 {
			t.Fatalf("a %d-byte line reached the log", len(line))
		}
		if strings.HasPrefix(line, "xxxx") {
			long++
		}
		lines++
	}
	if lines < 4 || long != 3 { // 10,000 x's in pieces of 4096
		t.Errorf("debug lines: %d, pieces of the long line: %d", lines, long)
	}
}

// An operator's retry starts the attempts over at 1, and its run writes a
// log of its own: the failed run's log stays readable, under its own name
// and record, from the files (lifecycle.OpenLog, which agentsmithctl logs
// uses) and on the status page, beside the new run's.
func TestRetryKeepsTheFailedRunsLog(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo x >> "$D/runs"; n=$(wc -l < "$D/runs"); echo "output of run $n attempt $AGENTSMITH_ATTEMPT"; [ "$n" -gt 1 ]`}
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "fails, then is retried")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	ref := lifecycletest.Ref(n)
	eventually.Wait(t, 10*time.Second, "the failed run to let go of the ticket", func() bool {
		running, err := runstate.Running(t.Context(), w.RDB, ref)
		return err == nil && !running
	})
	if res, err := w.Claims.Retry(t.Context(), ref, lifecycle.SourceOperator, ""); err != nil || !res.Retried() || res.Request.Attempt != 1 {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")

	rls, err := runstate.RunLogs(t.Context(), w.RDB, ref)
	if err != nil || len(rls) != 2 || rls[0].Path == rls[1].Path {
		t.Fatalf("recorded logs %+v, %v; want one per run, in two files", rls, err)
	}
	roots := []string{lifecycle.LogsRoot(filepath.Join(dir, "work"), "")}
	for i, want := range []string{"output of run 1 attempt 1\n", "output of run 2 attempt 1\n"} {
		f, err := lifecycle.OpenLog(roots, rls[i].Path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != want {
			t.Errorf("log %d (%s) = %q, want %q", i, rls[i].Path, b, want)
		}
	}

	h := statuspage.New(statuspage.Config{RDB: w.RDB, Queue: w.Queue, Instance: "exec-1", Token: "s3cret", LogRoots: roots})
	page := func(target string) string {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.Header.Set("Authorization", "Bearer s3cret")
		rr := httptest.NewRecorder()
		h.ServeHTTP(rr, req)
		return rr.Body.String()
	}
	tk := url.QueryEscape(ref.Platform + ":" + ref.ID)
	body := page("/status/ticket?ticket=" + tk)
	for _, want := range []string{"output of run 1 attempt 1", "output of run 2 attempt 1", `id="attempt-1"`, `id="run-2-attempt-1"`, "log of attempt 1 of run 2"} {
		if !strings.Contains(body, want) {
			t.Errorf("ticket page lacks %q", want)
		}
	}
	if got := page("/status/logs?ticket=" + tk + "&run=1&attempt=1"); got != "output of run 1 attempt 1\n" {
		t.Errorf("/status/logs run 1 attempt 1 = %q", got)
	}
	if got := page("/status/logs?ticket=" + tk); got != "output of run 2 attempt 1\n" {
		t.Errorf("/status/logs (the last) = %q", got)
	}
}

// When Redis no longer has the records (expired, or a restart lost them)
// but the disk still has the files, a retry's run still does not
// overwrite them: the existing file moves it on to the next run's name.
func TestRetryNeverOverwritesALogOnDisk(t *testing.T) {
	w := lifecycletest.New(t, 1)
	dir := t.TempDir()
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c",
		`echo x >> "$D/runs"; n=$(wc -l < "$D/runs"); echo "output of run $n"; [ "$n" -gt 1 ]`}
	rec := consumertest.RunWorld(t, w, dir, 1)
	n := w.ClaimIssue(t, "fails, loses its records, is retried")
	w.WaitOutcome(t, rec, n, lifecycle.Failed, "failed")
	ref := lifecycletest.Ref(n)
	eventually.Wait(t, 10*time.Second, "the failed run to let go of the ticket", func() bool {
		running, err := runstate.Running(t.Context(), w.RDB, ref)
		return err == nil && !running
	})
	if err := w.RDB.Del(t.Context(), keys.RunLogs(ref.Key())).Err(); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Retry(t.Context(), ref, lifecycle.SourceOperator, ""); err != nil || !res.Retried() {
		t.Fatalf("retry = %+v, %v", res, err)
	}
	w.WaitOutcome(t, rec, n, lifecycle.Done, "succeeded")

	work := filepath.Join(dir, "work")
	if b, err := os.ReadFile(lifecycle.LogPath(work, "", ref, 1, 1)); err != nil || string(b) != "output of run 1\n" {
		t.Errorf("run 1's log = %q, %v; want it kept", b, err)
	}
	rls, err := runstate.RunLogs(t.Context(), w.RDB, ref)
	if err != nil || len(rls) != 1 || rls[0].Run != 2 || rls[0].Path != lifecycle.LogPath(work, "", ref, 2, 1) {
		t.Fatalf("recorded logs %+v, %v; want the retry as run 2", rls, err)
	}
	if b, err := os.ReadFile(rls[0].Path); err != nil || string(b) != "output of run 2\n" {
		t.Errorf("run 2's log = %q, %v", b, err)
	}
}
