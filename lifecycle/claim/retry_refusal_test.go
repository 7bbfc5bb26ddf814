package claim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// simWrites counts the sim's write requests other than comments: the label
// writes a refused ticket must not get again.
func simWrites(calls map[string]int) (writes, comments int) {
	for call, n := range calls {
		switch {
		case strings.HasPrefix(call, "GET "):
		case strings.HasSuffix(call, "/comments"):
			comments += n
		default:
			writes += n
		}
	}
	return writes, comments
}

// An operator's retry of a Failed ticket backing off after a refusal for
// good is a change: it is tried at once, with the backoff started over,
// and the tracker's refusal of the retry's own write goes through
// Refusals (op retry, no error, no reply) so the ticket is told once in
// all: three retries, by comment and by agentsmithctl, write three times
// and comment once.
func TestRetryRefusedForGoodIsToldOnceAndStartsTheBackoffOver(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	rec := &lifecycletest.Recorder{}
	claims := claim.NewService(w.RDB, w.Queue, w.Projects, claim.Config{Instance: "test", Labels: w.Labels,
		Clock: clock.Now, Logger: zaptest.NewLogger(t), Observer: rec})
	w.Sim.CreateRepo(lifecycletest.Repo)
	w.Sim.RefuseLabelWrites(lifecycletest.Repo, 1, true)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "failed, refused", "", "agent-smith", w.Labels.Label(lifecycle.Failed))
	ref := lifecycletest.Ref(n)
	p := w.Projects[lifecycletest.Project]
	snap, err := p.Tracker.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	// The executor's last write was refused: the ticket was told, and
	// backs off for RefusalBackoffInitial.
	refusal := platforms.Rejected(403, errors.New("403 Resource not accessible by integration"))
	if _, ok := claims.Refusals().Refused(ctx, p, snap, lifecycle.RefusalOpTransition, lifecycle.OwnerExecutor, lifecycle.SourcePoll, refusal); !ok {
		t.Fatal("a rejected write not taken as refused")
	}
	clock.Advance(time.Minute)

	res, err := claims.RunCommand(ctx, ref, "alice", claim.CommandRetry)
	if err != nil || res.Outcome != claim.CommandNoop || !strings.Contains(res.Reason, "HTTP 403") {
		t.Errorf("retry command = %+v, %v; want a no-op naming the refusal, no error", res, err)
	}
	// Started over (tries 0): five minutes from the retry, not ten.
	until, wait := claims.Refusals().BackingOff(ctx, snap, time.Time{})
	if want := clock.Now().Add(lifecycle.RefusalBackoffInitial); !wait || !until.Equal(want) {
		t.Errorf("backing off %v until %v, want until %v", wait, until, want)
	}
	for range 2 {
		clock.Advance(time.Minute)
		r, err := claims.Retry(ctx, ref, lifecycle.SourceOperator, "")
		if err != nil || r.Retried() || !strings.Contains(r.Reason, "HTTP 403") {
			t.Errorf("retry = %+v, %v; want refused, no error", r, err)
		}
	}
	writes, comments := simWrites(w.Sim.Stats().Calls)
	if writes != 3 || comments != 1 {
		t.Errorf("%d label writes and %d comments over three retries, want 3 and 1", writes, comments)
	}
	var ops []string
	for _, ev := range rec.Kind(lifecycle.EventRefusal) {
		ops = append(ops, ev.Op)
	}
	if strings.Join(ops, " ") != "transition retry retry retry" {
		t.Errorf("refusal events %q, want the transition's and three retries'", ops)
	}
	if l, _ := w.Queue.Len(ctx); l != 0 {
		t.Errorf("queue length %d, want 0", l)
	}
}
