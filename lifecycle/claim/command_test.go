package claim_test

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"octocat":                     "octocat",
		"dana@example.com":            "dana@example.com",
		"557058:93f71831-7090":        "557058:93f71831-7090",
		"evil`](http://x)\n@everyone": "evilhttp:xeveryone",
		"@everyone":                   "everyone",
		"a:@b":                        "a:b",
		"":                            "someone",
		"***":                         "someone",
		strings.Repeat("a", 500):      strings.Repeat("a", 64),
	} {
		if got := claim.SafeName(in); got != want {
			t.Errorf("SafeName(%q) = %q, want %q", in, got, want)
		}
	}
}

// commandWorld is a world whose project takes comment commands and admits
// people with write access (trigger.allow's default).
func commandWorld(t *testing.T) *lifecycletest.World {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.Commands = lifecycle.Commands{Enabled: true, Prefix: "/agent-smith"}
	p.TriggerAllow = lifecycle.TriggerAllow{Write: true}
	return w
}

// A person without write access is refused and nothing changes; one with
// it retries the failed ticket; the daemon's replies are bounded per ticket.
func TestRunCommandGatesAndBoundsReplies(t *testing.T) {
	w := commandWorld(t)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "failed", "", "agent-smith", w.Labels.Label(lifecycle.Failed))
	ref := lifecycletest.Ref(n)

	res, err := w.Claims.RunCommand(ctx, ref, "mallory", claim.CommandRetry)
	if err != nil || res.Outcome != claim.CommandRefused {
		t.Fatalf("outsider: %+v, %v; want refused", res, err)
	}
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Fatalf("state %s after a refused retry, want failed", s)
	}
	res, err = w.Claims.RunCommand(ctx, ref, "", claim.CommandRetry)
	if err != nil || res.Outcome != claim.CommandRefused {
		t.Fatalf("unknown author: %+v, %v; want refused", res, err)
	}

	res, err = w.Claims.RunCommand(ctx, ref, trackersim.HumanLogin, claim.CommandRetry)
	if err != nil || res.Outcome != claim.CommandDone {
		t.Fatalf("collaborator: %+v, %v; want done", res, err)
	}
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s after a retry, want enqueued", s)
	}
	// Again: nothing to retry, said so.
	res, err = w.Claims.RunCommand(ctx, ref, trackersim.HumanLogin, claim.CommandRetry)
	if err != nil || res.Outcome != claim.CommandNoop || !strings.Contains(res.Reason, "state is enqueued") {
		t.Fatalf("second retry: %+v, %v; want noop", res, err)
	}
	// A spammer: replies stop at MaxCommandReplies.
	for range 10 {
		if _, err := w.Claims.RunCommand(ctx, ref, "mallory", "bogus"); err != nil {
			t.Fatal(err)
		}
	}
	cs := w.Comments(t, n)
	if len(cs) != claim.MaxCommandReplies {
		t.Errorf("%d replies, want %d: %q", len(cs), claim.MaxCommandReplies, cs)
	}
	for _, c := range cs {
		if !strings.HasPrefix(c, "**agent-smith**: ") {
			t.Errorf("reply %q does not open with the daemon's prefix", c)
		}
	}
	if ttl, err := w.RDB.TTL(ctx, keys.CommandReplies(ref.Key())).Result(); err != nil || ttl <= 0 || ttl > keys.CommandReplyWindow {
		t.Errorf("reply counter TTL %v, %v; want within %v", ttl, err, keys.CommandReplyWindow)
	}
}

// cancel asks the run to stop with a cause naming the person, only for a
// ticket that is queued or running.
func TestRunCommandCancel(t *testing.T) {
	w := commandWorld(t)
	ctx := t.Context()
	running := w.Sim.CreateIssue(lifecycletest.Repo, "running", "", "agent-smith", w.Labels.Label(lifecycle.InProgress))
	done := w.Sim.CreateIssue(lifecycletest.Repo, "done", "", "agent-smith", w.Labels.Label(lifecycle.Done))

	res, err := w.Claims.RunCommand(ctx, lifecycletest.Ref(running), trackersim.HumanLogin, claim.CommandCancel)
	if err != nil || res.Outcome != claim.CommandDone {
		t.Fatalf("cancel: %+v, %v", res, err)
	}
	cause, err := runstate.RequestedCancel(ctx, w.RDB, lifecycletest.Ref(running))
	if err != nil || cause != claim.CommandCause(trackersim.HumanLogin) || !strings.Contains(cause, trackersim.HumanLogin) {
		t.Errorf("cancel request %q, %v; want one naming %s", cause, err, trackersim.HumanLogin)
	}
	res, err = w.Claims.RunCommand(ctx, lifecycletest.Ref(done), trackersim.HumanLogin, claim.CommandCancel)
	if err != nil || res.Outcome != claim.CommandNoop {
		t.Fatalf("cancel of a done ticket: %+v, %v; want noop", res, err)
	}
	if cause, _ := runstate.RequestedCancel(ctx, w.RDB, lifecycletest.Ref(done)); cause != "" {
		t.Errorf("a done ticket got a cancel request %q", cause)
	}
}
