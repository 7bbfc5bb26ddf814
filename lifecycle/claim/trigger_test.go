package claim_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// unreachablePermissions is a tracker whose permission lookups fail.
type unreachablePermissions struct{ platforms.Tracker }

func (unreachablePermissions) MayWrite(context.Context, string) (bool, error) {
	return false, errors.New("503 from the tracker")
}

const permissionCall = "GET /repos/{owner}/{repo}/collaborators/{username}/permission"

// A failed permission lookup never runs the ticket: the claim is an error
// the caller retries (ErrPermissionUnknown), and a later claim that does
// not know the person (the sweeper) checks the same person again.
func TestTriggerLookupFailureRefusesAndRetries(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.TriggerAllow = lifecycle.TriggerAllow{Write: true}
	real := p.Tracker
	p.Tracker = unreachablePermissions{real}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	_, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "human")
	if !errors.Is(err, claim.ErrPermissionUnknown) {
		t.Fatalf("claim error = %v, want ErrPermissionUnknown", err)
	}
	if s := w.State(t, n); s != lifecycle.Pending || len(w.Requests(t)) != 0 {
		t.Fatalf("after a failed lookup: state %s, %d requests", s, len(w.Requests(t)))
	}
	p.Tracker = real
	res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourceSweep, 1)
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("sweep after recovery = %+v, %v; want claimed", res, err)
	}
}

// The tracker is asked once per person and project while the answer is
// cached, and the cache key does not spell the person's name.
func TestTriggerPermissionCached(t *testing.T) {
	w := lifecycletest.New(t, 3)
	w.Projects[lifecycletest.Project].TriggerAllow = lifecycle.TriggerAllow{Write: true}
	for i := 0; i < 3; i++ {
		n := w.Sim.As("mallory").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
		res, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "mallory")
		if err != nil || res.Outcome != lifecycle.NotEligible || res.Reason != claim.NotAllowedReason("mallory") {
			t.Fatalf("claim %d = %+v, %v", i, res, err)
		}
	}
	if got := w.Sim.Stats().Calls[permissionCall]; got != 1 {
		t.Errorf("%d permission lookups for three claims by one person, want 1", got)
	}
	keys, err := w.RDB.Keys(t.Context(), "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(strings.ToLower(k), "mallory") {
			t.Errorf("key %q spells the person's name", k)
		}
	}
}

// A listed user runs without write access; the zero TriggerAllow gates
// nothing (the daemon always sets it from config).
func TestTriggerListedUser(t *testing.T) {
	w := lifecycletest.New(t, 3)
	w.Projects[lifecycletest.Project].TriggerAllow = lifecycle.TriggerAllow{Users: []string{"Friend"}}
	n := w.Sim.As("friend").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	res, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "friend")
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("listed user's claim = %+v, %v", res, err)
	}
	if got := w.Sim.Stats().Calls[permissionCall]; got != 0 {
		t.Errorf("%d permission lookups for a listed user, want 0", got)
	}
}

// unreachableTeams is a tracker whose team lookups fail.
type unreachableTeams struct{ platforms.Tracker }

func (unreachableTeams) InTeam(context.Context, string, string) (bool, error) {
	return false, errors.New("503 from the tracker")
}

const teamCall = "GET /orgs/{org}/teams/{team_slug}/memberships/{username}"

// A team member runs; the membership answer is cached (one lookup for
// several claims, no names in keys); a failed team lookup never runs and
// is ErrPermissionUnknown, as a failed permission lookup.
func TestTriggerTeamMember(t *testing.T) {
	w := lifecycletest.New(t, 3)
	p := w.Projects[lifecycletest.Project]
	p.TriggerAllow = lifecycle.TriggerAllow{Teams: []string{"reviewers"}}
	owner, _, _ := strings.Cut(lifecycletest.Repo, "/")
	w.Sim.SetTeamMembers(owner+"/reviewers", "friend")
	for i := 0; i < 2; i++ {
		n := w.Sim.As("friend").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
		res, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "friend")
		if err != nil || res.Outcome != lifecycle.Claimed {
			t.Fatalf("team member's claim %d = %+v, %v", i, res, err)
		}
	}
	if got := w.Sim.Stats().Calls[teamCall]; got != 1 {
		t.Errorf("%d team lookups for two claims by one person, want 1", got)
	}
	ks, err := w.RDB.Keys(t.Context(), "*trigger-team*").Result()
	if err != nil || len(ks) != 1 || strings.Contains(ks[0], "friend") || strings.Contains(ks[0], "reviewers") {
		t.Errorf("team cache keys %q, %v: want one naming neither person nor team", ks, err)
	}
	n := w.Sim.As("mallory").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	res, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "mallory")
	if err != nil || res.Outcome != lifecycle.NotEligible {
		t.Fatalf("outsider's claim = %+v, %v; want not eligible", res, err)
	}
	real := p.Tracker
	p.Tracker = unreachableTeams{real}
	n = w.Sim.As("carol").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	if _, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(n), lifecycle.SourceWebhook, 1, "carol"); !errors.Is(err, claim.ErrPermissionUnknown) {
		t.Fatalf("claim with a failed team lookup: %v, want ErrPermissionUnknown", err)
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Fatalf("after a failed team lookup: state %s", s)
	}
}
