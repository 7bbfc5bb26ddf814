package lifecycletest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// The helpers below drive a ticket through a run from the outside: the
// role packages' tests (lifecycle, claim, consumer) open and claim a
// ticket, give the pipeline a command that leaves its traces in a
// directory $D, and read back the runs, comments and outcomes. The
// executor that runs the pipeline is started by consumertest, which may
// import the consumer and housekeeping packages that this one may not.

// Outcomes lists the outcomes of the transitions out of InProgress, oldest
// first: what each attempt of a run ended in.
func (r *Recorder) Outcomes() []string {
	var out []string
	for _, ev := range r.Events() {
		if ev.Kind == lifecycle.EventTransition && ev.From == lifecycle.InProgress {
			out = append(out, ev.Outcome)
		}
	}
	return out
}

// Find returns the first event whose outcome is outcome, and whether
// there is one.
func (r *Recorder) Find(outcome string) (lifecycle.Event, bool) {
	for _, ev := range r.Events() {
		if ev.Outcome == outcome {
			return ev, true
		}
	}
	return lifecycle.Event{}, false
}

// CountingPipeline is a pipeline command that appends its attempt number
// ($AGENTSMITH_ATTEMPT) to $D/runs and exits with the n-th word of codes
// on its n-th run (0 past the end), so a test scripts a run's exit codes
// and reads back which attempts ran with Runs.
func CountingPipeline(codes string) []string {
	return []string{"sh", "-c", `echo "$AGENTSMITH_ATTEMPT" >> "$D/runs"; n=$(wc -l < "$D/runs"); set -- ` + codes + `; shift $((n-1)) 2>/dev/null || exit 0; exit ${1:-0}`}
}

// Runs returns the words of dir's file runs, one a run of the pipeline
// (CountingPipeline writes the attempt numbers there); none if the
// pipeline never ran.
func Runs(t testing.TB, dir string) []string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "runs"))
	return strings.Fields(string(b))
}

// Exists reports whether a file is at path: a pipeline's marker files
// (started, finished) are how a test sees how far the pipeline got.
func Exists(path string) bool { _, err := os.Stat(path); return err == nil }

// RetryOn makes p's pipeline retry on the exit codes codes, with a short
// backoff (400ms doubling to 1s, jitter 0.5) that a test can wait out.
func RetryOn(p *lifecycle.Project, codes ...int) {
	p.Pipeline.Retry = lifecycle.RetryPolicy{ExitCodes: codes,
		Backoff: lifecycle.Backoff{Initial: 400 * time.Millisecond, Max: time.Second, Multiplier: 2, Jitter: 0.5}}
}

// ClaimIssue opens an issue titled title with the trigger label and the
// labels labels, claims it as a webhook would, and returns its number;
// the test fails unless the claim enqueues it.
func (w *World) ClaimIssue(t testing.TB, title string, labels ...string) int {
	t.Helper()
	n := w.Sim.CreateIssue(Repo, title, "", append([]string{w.Projects[Project].TriggerLabel}, labels...)...)
	if res, err := w.Claims.Claim(t.Context(), Ref(n), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	return n
}

// Comments returns the bodies of issue n's comments on the sim, oldest
// first.
func (w *World) Comments(t testing.TB, n int) []string {
	t.Helper()
	is, _ := w.Sim.Issue(Repo, n)
	var out []string
	for _, c := range is.Comments {
		out = append(out, c.Body)
	}
	return out
}

// WaitOutcome waits up to 20 seconds for rec to hold an event with
// outcome and for issue n to be in state: the run has ended the way the
// test expects, labels included. The test fails if it does not.
func (w *World) WaitOutcome(t testing.TB, rec *Recorder, n int, state lifecycle.State, outcome string) {
	t.Helper()
	eventually.Wait(t, 20*time.Second, "the ticket to reach "+state.String(), func() bool {
		_, ok := rec.Find(outcome)
		return ok && w.State(t, n) == state
	})
}
