package consumer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// loudFailure is a pipeline that prints ~140 KB of lines full of backticks
// (the fence around them grows to 21) and fails.
var loudFailure = []string{"awk", "BEGIN { for (i = 0; i < 4000; i++) print \"" + strings.Repeat("`", 20) + " line \" i; exit 1 }"}

// runFailing claims issue n and runs one failing attempt of pipeline with
// tail_bytes 100,000, returning the executor's transitions and its stop.
func runFailing(t *testing.T, w *lifecycletest.World, n int) (*lifecycletest.Recorder, func()) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(n), lifecycle.SourcePoll, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	rec := &lifecycletest.Recorder{}
	stop := consumertest.StartExecutorWith(t, w, dir, time.Second, func(c *consumer.ExecutorConfig) {
		w.Projects[lifecycletest.Project].Pipeline.Command = loudFailure
		c.TailBytes = 100_000
		c.Observer = rec
	})
	return rec, stop
}

func failedTransitions(rec *lifecycletest.Recorder) int {
	n := 0
	for _, ev := range rec.Kind(lifecycle.EventTransition) {
		if ev.To == lifecycle.Failed {
			n++
		}
	}
	return n
}

// GitHub refuses a comment over 65,536 characters with 422. A failure
// comment is cut to fit, so the ticket moves to Failed once, well inside
// the write budget: a comment retried until the budget is gone would time
// the Failed transition out and let StaleJobDetector run the pipeline again.
func TestOversizedFailureCommentStillFailsTheTicketOnce(t *testing.T) {
	w := lifecycletest.New(t, 1)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "loud failure", "", "agent-smith")
	rec, stop := runFailing(t, w, n)
	eventually.Wait(t, 20*time.Second, "the ticket to reach failed", func() bool { return failedTransitions(rec) > 0 })
	stop()
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Fatalf("state %s, want failed", s)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 {
		t.Fatalf("%d comments, want 1", len(is.Comments))
	}
	body := is.Comments[0].Body
	if c := utf8.RuneCountInString(body); c > 65536 || !strings.Contains(body, "line 3999") {
		t.Errorf("comment of %d characters, ends %q", c, body[max(len(body)-60, 0):])
	}
	if got := failedTransitions(rec); got != 1 {
		t.Errorf("%d transitions to failed, want 1", got)
	}
}

// refusingTracker claims a large comment limit but refuses, for good, any
// comment longer than max: a platform whose real limit is lower than the
// daemon knows.
type refusingTracker struct {
	platforms.Tracker
	max int
}

func (r refusingTracker) CommentLimit() int { return 1_000_000 }

func (r refusingTracker) Comment(ctx context.Context, ref platforms.Ref, body string) error {
	if len(body) > r.max {
		return platforms.Rejected(422, errors.New("body is too long"))
	}
	return r.Tracker.Comment(ctx, ref, body)
}

// A refused comment is replaced by a short one without the output, and the
// ticket still moves to Failed once.
func TestRefusedFailureCommentIsReplacedByAShortOne(t *testing.T) {
	w := lifecycletest.New(t, 1)
	p := w.Projects[lifecycletest.Project]
	p.Tracker = refusingTracker{Tracker: p.Tracker, max: 2000}
	n := w.Sim.CreateIssue(lifecycletest.Repo, "refused comment", "", "agent-smith")
	rec, stop := runFailing(t, w, n)
	eventually.Wait(t, 20*time.Second, "the ticket to reach failed", func() bool { return failedTransitions(rec) > 0 })
	stop()
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Fatalf("state %s, want failed", s)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "output omitted") || strings.Contains(is.Comments[0].Body, "line 3999") {
		t.Fatalf("comments: %+v", is.Comments)
	}
	if got := failedTransitions(rec); got != 1 {
		t.Errorf("%d transitions to failed, want 1", got)
	}
}
