package claim_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// A claim takes its lock and reads the ticket's history in one round trip
// and pushes with the lock's release in a second; it still continues the
// attempt count, clears a stale cancel request, frees the lock, and a
// contended claim names the holder from the first round trip alone.
func TestClaimInTwoRoundTripsKeepsItsRules(t *testing.T) {
	w := lifecycletest.New(t, 5)
	ctx := t.Context()
	n := w.Sim.CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	r := lifecycletest.Ref(n)
	// A dead run left attempt 2 and a cancel request behind.
	rec := runstate.Record{Ref: r, Instance: "ghost", Token: "tok", Attempt: 2}
	if res, err := runstate.Take(ctx, w.RDB, rec, runstate.TakeArgs{TTL: time.Minute, Now: time.Now()}); err != nil || res.Result != runstate.Taken {
		t.Fatal(res, err)
	}
	if _, err := runstate.Release(ctx, w.RDB, r, "tok", false); err != nil {
		t.Fatal(err)
	}
	if err := runstate.RequestCancel(ctx, w.RDB, r, "stale cause", time.Minute); err != nil {
		t.Fatal(err)
	}
	// Warm-up: a script's first EVALSHA meets NOSCRIPT and is sent again
	// in full, once per Redis.
	warm := w.Sim.CreateIssue(lifecycletest.Repo, "warm", "", "agent-smith")
	if _, err := w.Claims.Claim(ctx, lifecycletest.Ref(warm), lifecycle.SourceWebhook, 1); err != nil {
		t.Fatal(err)
	}
	rt := redistest.CountRoundTrips(w.RDB)
	res, err := w.Claims.Claim(ctx, r, lifecycle.SourceWebhook, 1)
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	if rt.N() != 2 {
		t.Errorf("claim took %d Redis round trips, want 2", rt.N())
	}
	if res.Request.Attempt != 3 {
		t.Errorf("attempt %d, want 3 (continues after the dead run's 2)", res.Request.Attempt)
	}
	if c, _ := runstate.RequestedCancel(ctx, w.RDB, r); c != "" {
		t.Errorf("cancel request %q left for the new run", c)
	}
	if n, _ := w.RDB.Exists(ctx, keys.ClaimLock(r.Platform, r.ID)).Result(); n != 0 {
		t.Error("claim lock not released")
	}
	if reqs := w.Requests(t); len(reqs) != 2 || reqs[1].ID != res.Request.ID {
		t.Errorf("queue = %+v, want the claim's request", reqs)
	}
	// Contended: someone holds the lock.
	m := w.Sim.CreateIssue(lifecycletest.Repo, "u", "", "agent-smith")
	r2 := lifecycletest.Ref(m)
	if err := w.RDB.Set(ctx, keys.ClaimLock(r2.Platform, r2.ID), "other|sweep|0|x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rt.Reset()
	res, err = w.Claims.Claim(ctx, r2, lifecycle.SourceWebhook, 1)
	if err != nil || res.Outcome != lifecycle.AlreadyClaimed || res.Holder == nil || res.Holder.Instance != "other" {
		t.Fatalf("contended claim: %+v %v", res, err)
	}
	if rt.N() != 1 {
		t.Errorf("contended claim took %d Redis round trips, want 1", rt.N())
	}
	if s := w.State(t, m); s != lifecycle.Pending {
		t.Errorf("contended ticket is %s, want untouched", s)
	}
}

// The webhook's claim (ClaimSnapshot with the payload, its actor and
// time) and the poll's (ClaimListed) of a Pending ticket take 2 Redis
// round trips as Claim does: the refusal record they weigh is read with
// the lock. A ticket refused for good and unchanged backs off in one,
// taking nothing; once it changed, it is claimed.
func TestWebhookAndPollClaimsInTwoRoundTrips(t *testing.T) {
	w := lifecycletest.New(t, 5)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	rt := countAfterWarmUp(t, w, "")

	_, _, hookRT, pollRT := claimWebhookAndPoll(t, w, p, rt, "alice")
	if hookRT > 2 || pollRT > 2 {
		t.Errorf("webhook claim took %d Redis round trips, poll claim %d, want at most 2", hookRT, pollRT)
	}

	// Refused for good: unchanged, it backs off in one round trip and
	// leaves no lock.
	rn := w.Sim.CreateIssue(lifecycletest.Repo, "refused", "", "agent-smith")
	refused := snapshotOf(t, p, rn)
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	if _, ok := w.Claims.Refusals().Refused(ctx, p, refused, lifecycle.RefusalOpClaim, lifecycle.OwnerClaimService, lifecycle.SourcePoll, refusal); !ok {
		t.Fatal("a rejected write not taken as refused")
	}
	rt.Reset()
	res, err := w.Claims.ClaimSnapshot(ctx, refused, lifecycle.SourcePoll, 1, "", time.Time{})
	if err != nil || res.Outcome != lifecycle.BackingOff {
		t.Fatalf("refused ticket's claim: %+v %v, want backing off", res, err)
	}
	if rt.N() != 1 {
		t.Errorf("backing off took %d Redis round trips, want 1", rt.N())
	}
	if n, _ := w.RDB.Exists(ctx, keys.ClaimLock(refused.Ref.Platform, refused.Ref.ID)).Result(); n != 0 {
		t.Error("a ticket backing off was locked")
	}
	// Changed after the refusal (the webhook's time says so): claimed.
	res, err = w.Claims.ClaimSnapshot(ctx, refused, lifecycle.SourceWebhook, 1, "", time.Now().Add(time.Hour))
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("changed refused ticket's claim: %+v %v, want claimed", res, err)
	}
	if s := w.State(t, rn); s != lifecycle.Enqueued {
		t.Errorf("changed refused ticket is %s, want enqueued", s)
	}
}

// A project that gates its trigger (trigger.allow, write access by
// default) records who triggered the run and drops the remembered actor
// in the push's pipeline, with the lock's release: a webhook's claim by a
// person whose write access is cached reads that cache with the lock, in
// 2 round trips; a poll's reads the remembered actor with the lock and
// the cached answer about them in a third (its key names the actor), and
// the actor the ticket's history named (a tracker call) is not written:
// the push drops it.
func TestGatedClaimRecordsTheTriggerWithThePush(t *testing.T) {
	w := lifecycletest.New(t, 5)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	p.TriggerAllow = lifecycle.TriggerAllow{Write: true}
	// The warm-up caches the person's write access too.
	rt := countAfterWarmUp(t, w, trackersim.HumanLogin)

	hooked, polled, hookRT, pollRT := claimWebhookAndPoll(t, w, p, rt, trackersim.HumanLogin)
	if hookRT != 2 || pollRT != 3 {
		t.Errorf("gated webhook claim took %d Redis round trips, poll claim %d, want 2 and 3", hookRT, pollRT)
	}
	for _, tk := range []*platforms.Ticket{hooked, polled} {
		k := tk.Ref.Key()
		if who, _ := w.RDB.Get(ctx, keys.RunTrigger(k)).Result(); who != trackersim.HumanLogin {
			t.Errorf("%s: run triggered by %q, want %q", tk.Ref, who, trackersim.HumanLogin)
		}
		if n, _ := w.RDB.Exists(ctx, keys.TriggerActor(k), keys.ClaimLock(tk.Ref.Platform, tk.Ref.ID)).Result(); n != 0 {
			t.Errorf("%s: trigger actor or claim lock left (%d)", tk.Ref, n)
		}
	}
}

// snapshotOf reads issue n as a listing or a webhook payload shows it.
func snapshotOf(t *testing.T, p *lifecycle.Project, n int) *platforms.Ticket {
	t.Helper()
	tk, err := p.Tracker.Get(t.Context(), lifecycletest.Ref(n))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// countAfterWarmUp claims a warm-up ticket, triggered by actor ("" when
// unknown), and then counts w's Redis round trips: a script's first
// EVALSHA meets NOSCRIPT and is sent again in full, once per Redis.
func countAfterWarmUp(t *testing.T, w *lifecycletest.World, actor string) *redistest.RoundTrips {
	t.Helper()
	warm := w.Sim.CreateIssue(lifecycletest.Repo, "warm", "", "agent-smith")
	if res, err := w.Claims.ClaimBy(t.Context(), lifecycletest.Ref(warm), lifecycle.SourceWebhook, 1, actor); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatal(res, err)
	}
	return redistest.CountRoundTrips(w.RDB)
}

// claimWebhookAndPoll claims a new Pending ticket as a webhook by actor
// does (ClaimSnapshot) and another as the poller does (ClaimListed), and
// returns them with the Redis round trips each claim took.
func claimWebhookAndPoll(t *testing.T, w *lifecycletest.World, p *lifecycle.Project, rt *redistest.RoundTrips, actor string) (hooked, polled *platforms.Ticket, hookRT, pollRT int64) {
	t.Helper()
	ctx := t.Context()
	hooked = snapshotOf(t, p, w.Sim.CreateIssue(lifecycletest.Repo, "webhook", "", "agent-smith"))
	rt.Reset()
	res, err := w.Claims.ClaimSnapshot(ctx, hooked, lifecycle.SourceWebhook, 1, actor, time.Now())
	if err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("webhook claim: %+v %v", res, err)
	}
	hookRT = rt.N()
	polled = snapshotOf(t, p, w.Sim.CreateIssue(lifecycletest.Repo, "poll", "", "agent-smith"))
	rt.Reset()
	claimed, err := w.Claims.ClaimListed(ctx, p, []*platforms.Ticket{polled}, lifecycle.SourcePoll, nil)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("poll claim: %+v %v", claimed, err)
	}
	return hooked, polled, hookRT, rt.N()
}

// A gated poll claim of a person who may not trigger, named by the
// ticket's history, writes the actor and the tracker's answer on its way
// out (it pushes nothing they could go with): the next claim asks the
// tracker neither, and the ticket stays Pending.
func TestRefusedPollClaimRemembersTheActorAndTheAnswer(t *testing.T) {
	w := lifecycletest.New(t, 5)
	ctx := t.Context()
	p := w.Projects[lifecycletest.Project]
	p.TriggerAllow = lifecycle.TriggerAllow{Write: true}
	n := w.Sim.As("mallory").CreateIssue(lifecycletest.Repo, "t", "", "agent-smith")
	tk := snapshotOf(t, p, n)
	for i := 0; i < 2; i++ {
		if claimed, err := w.Claims.ClaimListed(ctx, p, []*platforms.Ticket{tk}, lifecycle.SourcePoll, nil); err != nil || len(claimed) != 0 {
			t.Fatalf("poll claim %d: %+v %v, want none claimed", i, claimed, err)
		}
		if who, _ := w.RDB.Get(ctx, keys.TriggerActor(tk.Ref.Key())).Result(); who != "mallory" {
			t.Errorf("poll claim %d: remembered actor %q, want mallory", i, who)
		}
	}
	calls := w.Sim.Stats().Calls
	if got := calls[permissionCall]; got != 1 {
		t.Errorf("%d permission lookups for two claims, want 1", got)
	}
	if got := calls["GET /repos/{owner}/{repo}/issues/{number}/events"]; got != 1 {
		t.Errorf("%d history reads for two claims, want 1", got)
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Errorf("refused ticket is %s, want pending", s)
	}
}
