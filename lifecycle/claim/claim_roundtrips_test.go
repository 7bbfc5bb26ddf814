package claim_test

import (
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
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
