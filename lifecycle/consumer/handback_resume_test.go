package consumer_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// The run a shutdown handed back starts again as the same attempt, and its
// start says so: the Enqueued → InProgress event (log line and audit
// stream) carries the hand-back source and ResumedReason, not the empty
// reason of a fresh attempt.
func TestHandedBackRunStartsAsAResume(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	stop := consumertest.StartExecutor(t, w, dir, 100*time.Millisecond)
	p := w.Projects[lifecycletest.Project]
	n := w.Sim.CreateIssue(lifecycletest.Repo, "handed back", "", p.TriggerLabel)
	ref := lifecycletest.Ref(n)
	if res, err := w.Claims.Claim(t.Context(), ref, lifecycle.SourceWebhook, 1); err != nil || res.Outcome != lifecycle.Claimed {
		t.Fatalf("claim: %+v %v", res, err)
	}
	eventually.Wait(t, 10*time.Second, "the pipeline to start", func() bool { return lifecycletest.Exists(filepath.Join(dir, "started")) })
	stop()
	if s := w.State(t, n); s != lifecycle.Enqueued {
		t.Fatalf("state %s after shutdown, want enqueued (handed back)", s)
	}

	rec := &lifecycletest.Recorder{}
	core, logs := observer.New(zapcore.InfoLevel)
	consumertest.StartExecutorWith(t, w, dir, time.Second, func(c *consumer.ExecutorConfig) {
		c.Observer = rec
		c.Logger = zap.New(core)
	})
	var start lifecycle.Event
	eventually.Wait(t, 10*time.Second, "the handed-back run to start", func() bool {
		for _, ev := range rec.Events() {
			if ev.Kind == lifecycle.EventTransition && ev.Ref == ref && ev.To == lifecycle.InProgress {
				start = ev
				return true
			}
		}
		return false
	})
	if start.Attempt != 1 || start.Source != lifecycle.SourceHandBack || start.Reason != consumer.ResumedReason {
		t.Errorf("start event %+v, want attempt 1, source %q, reason %q", start, lifecycle.SourceHandBack, consumer.ResumedReason)
	}
	logged := logs.FilterField(zap.String("reason", consumer.ResumedReason)).Len()
	if logged == 0 {
		t.Errorf("no log line with reason %q in %v", consumer.ResumedReason, logs.All())
	}
}
