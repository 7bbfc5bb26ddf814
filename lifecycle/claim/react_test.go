package claim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func TestClaimReactsOnlyWhenAsked(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	quiet := w.Sim.CreateIssue(lifecycletest.Repo, "no reaction", "", "agent-smith")
	if res, err := w.Claims.Claim(ctx, ref(quiet), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	if got := w.Sim.Reactions(lifecycletest.Repo, quiet); len(got) != 0 {
		t.Errorf("reactions without reactions: true: %+v", got)
	}

	w.Projects[lifecycletest.Project].React = true
	seen := w.Sim.CreateIssue(lifecycletest.Repo, "react", "", "agent-smith")
	if res, err := w.Claims.Claim(ctx, ref(seen), lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v, %v", res, err)
	}
	if got := w.Sim.Reactions(lifecycletest.Repo, seen); len(got) != 1 || got[0].Content != platforms.ReactionEyes {
		t.Errorf("reactions = %+v, want one eyes", got)
	}
	// A claim that is not Claimed adds nothing.
	if res, _ := w.Claims.Claim(ctx, ref(seen), lifecycle.SourceWebhook, 1); res.Outcome == lifecycle.Claimed {
		t.Fatal("claimed twice")
	}
	if got := w.Sim.Reactions(lifecycletest.Repo, seen); len(got) != 1 {
		t.Errorf("reactions after a second claim attempt = %+v", got)
	}
}

// failingReactor is the real tracker with its reaction call failing, as a
// tracker that refuses reactions (a locked issue, a missing scope) would.
type failingReactor struct{ platforms.Tracker }

func (failingReactor) React(context.Context, platforms.Ref, string) error {
	return errors.New("403 reactions refused")
}

func TestFailedReactionDoesNotFailTheClaim(t *testing.T) {
	w := newWorld(t)
	p := w.Projects[lifecycletest.Project]
	p.React, p.Tracker = true, failingReactor{p.Tracker}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "react", "", "agent-smith")
	res, err := w.Claims.Claim(context.Background(), ref(n), lifecycle.SourceWebhook, 1)
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim = %+v, %v; want claimed despite the failed reaction", res, err)
	}
	if l, _ := w.Queue.Len(context.Background()); l != 1 {
		t.Errorf("queue length %d, want 1", l)
	}
}
