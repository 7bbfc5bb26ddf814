package daemon_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// withPipeline adds lines to every project's pipeline block of the env's
// config; the delayed set is promoted every 50ms.
func (e *env) withPipeline(instance, pipelineLines string) string {
	yml := strings.Replace(e.configYAML(instance, ""), "lease_ttl: 2s}", "lease_ttl: 2s, delayed_interval: 50ms}", 1)
	return strings.ReplaceAll(yml, "      max_attempts: 3\n", "      max_attempts: 3\n"+pipelineLines)
}

func (e *env) startWith(yml string) {
	e.t.Helper()
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		e.t.Fatalf("config: %v", err)
	}
	e.startDaemon(cfg)
}

// lifecyclePath is issue n's label transitions as the tracker saw them. A
// write that leaves the state as it was is the second half of a transition
// (GitHub adds the new label, then removes the old one) and is not listed.
func (e *env) lifecyclePath(n int) []string {
	var path []string
	for _, w := range e.sim.Writes() {
		if w.Number == n && w.Writer != "human" {
			if from, to := labels.StateOf(w.Before), labels.StateOf(w.After); from != to {
				path = append(path, from.String()+"→"+to.String())
			}
		}
	}
	return path
}

// A retryable failure runs again after its backoff, through the delayed set
// and the housekeeping leader's promoter, until the attempts run out; the
// persist command runs before each retry and before the Failed label, in
// the work dir the attempts share.
func TestRetriesWithBackoffUntilAttemptsRunOut(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startWith(e.withPipeline("replica-a", `      retry:
        exit_codes: [7]
        backoff: {initial: 200ms, max: 400ms, jitter: 0.5}
      persist_command: ["sh", "-c", "echo $AGENTSMITH_OUTCOME $AGENTSMITH_ATTEMPT >> persisted"]
      persist_timeout: 5s
`))
		n := e.sim.CreateIssue(e.repo, "This will fail", "", "agent-smith")
		e.waitState(n, 30*time.Second, lifecycle.Failed)
		if got := e.starts(n); len(got) != 3 {
			t.Errorf("pipeline started %d times, want 3: %q", len(got), got)
		}
		want := []string{"pending→enqueued", "enqueued→in-progress", "in-progress→enqueued", "enqueued→in-progress",
			"in-progress→enqueued", "enqueued→in-progress", "in-progress→failed"}
		if got := e.lifecyclePath(n); !slices.Equal(got, want) {
			t.Errorf("transitions = %q, want %q", got, want)
		}
		is, _ := e.sim.Issue(e.repo, n)
		var heads []string
		for _, c := range is.Comments {
			heads = append(heads, strings.SplitN(c.Body, "\n", 2)[0])
		}
		if len(heads) != 3 || !strings.Contains(heads[0], "(attempt 1 of 3), retrying in") ||
			!strings.Contains(heads[1], "(attempt 2 of 3), retrying in") || !strings.Contains(heads[2], "; attempts used up (3 of 3)") {
			t.Errorf("comment headlines %q", heads)
		}
		ref := platforms.Ref{Platform: e.pc.Name, Project: "app", ID: e.pc.ID(n)}
		b, err := os.ReadFile(lifecycle.WorkDir(e.dir+"/work", ref) + "/persisted")
		if err != nil || string(b) != "retrying 1\nretrying 2\nfailed 3\n" {
			t.Errorf("persisted %q, %v", b, err)
		}
	})
}

// An escalating exit status fails the ticket at once, adds the configured
// label next to the others and mentions the configured people.
func TestEscalationAddsLabelAndMentions(t *testing.T) {
	forEachPlatform(t, func(t *testing.T, e *env) {
		e.startWith(e.withPipeline("replica-a", `      retry: {exit_codes: [75]}
      escalate: {exit_codes: [7], label: needs-human, mention: ["@alice"]}
`))
		n := e.sim.CreateIssue(e.repo, "This will fail", "", "bug", "agent-smith")
		e.waitState(n, 20*time.Second, lifecycle.Failed)
		is, _ := e.sim.Issue(e.repo, n)
		for _, l := range []string{"bug", "agent-smith", "needs-human", lifecycletest.Label(lifecycle.Failed)} {
			if !slices.ContainsFunc(is.Labels, func(x string) bool { return strings.EqualFold(x, l) }) {
				t.Errorf("labels %q lack %q", is.Labels, l)
			}
		}
		if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "needs a person: @alice") {
			t.Errorf("comments %+v", is.Comments)
		}
		if got := e.starts(n); len(got) != 1 {
			t.Errorf("pipeline started %d times, want 1", len(got))
		}
	})
}

// pipeline.concurrency holds across replicas: two replicas with two workers
// each run one ticket of the project at a time, and waiting for the slot
// costs no attempt.
func TestProjectConcurrencyAcrossReplicas(t *testing.T) {
	e := newEnv(t)
	yml := e.withPipeline("replica-a", "      concurrency: 1\n")
	yml = strings.Replace(yml, "consumer: {", "consumer: {limit_delay: 100ms, ", 1)
	e.startWith(yml)
	e.startWith(strings.Replace(yml, "instance_id: replica-a", "instance_id: replica-b", 1))
	var ns []int
	for range 3 {
		ns = append(ns, e.sim.CreateIssue(e.repo, "hold me", "", "agent-smith"))
	}
	eventually.Wait(t, 20*time.Second, "one run to start and the others to wait for the slot", func() bool {
		b, _ := os.ReadFile(e.runLog)
		return strings.Count(string(b), "start ") == 1 && e.state(ns[0]) != lifecycle.Pending &&
			e.state(ns[1]) != lifecycle.Pending && e.state(ns[2]) != lifecycle.Pending
	})
	e.openGate()
	for _, n := range ns {
		e.waitState(n, 30*time.Second, lifecycle.Done)
	}
	// The run log is appended in order: every start is followed by its own
	// end before the next start, or two runs overlapped.
	b, _ := os.ReadFile(e.runLog)
	lines := strings.Fields(strings.ReplaceAll(string(b), "\n", " | "))
	var open string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[0] == "start" && open != "":
			t.Fatalf("%s started while %s was running:\n%s", f[1], open, b)
		case f[0] == "start":
			open = f[1]
		case f[0] == "end":
			open = ""
		}
		if f[2] != "1" {
			t.Errorf("%s ran as attempt %s: waiting for a slot used up an attempt", f[1], f[2])
		}
	}
	if strings.Count(string(b), "start ") != 3 {
		t.Errorf("runs: %q", lines)
	}
}
