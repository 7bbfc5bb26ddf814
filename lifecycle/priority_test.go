package lifecycle_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer/consumertest"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

func TestPriorityOfLabels(t *testing.T) {
	pp := lifecycle.PriorityPolicy{Labels: map[string]int{"priority:high": 1, "priority:low": 10}, Default: 4}
	for labels, want := range map[string]int{"": 4, "bug": 4, "priority:low": 10, "priority:low,priority:high": 1, "Priority:High": 4} {
		if got := pp.Of(strings.Split(labels, ",")); got != want {
			t.Errorf("%q: priority %d, want %d", labels, got, want)
		}
	}
	if got := (lifecycle.PriorityPolicy{}).Of(nil); got != lifecycle.DefaultPriority {
		t.Errorf("no policy: %d", got)
	}
}

// The claim reads the priority label into the request, which lands on its
// level's list; the consumer serves higher levels first.
func TestPriorityLabelsOrderRuns(t *testing.T) {
	w := lifecycletest.New(t, 3)
	dir := t.TempDir()
	low := w.ClaimIssue(t, "low", "priority:low")
	normal := w.ClaimIssue(t, "normal")
	high := w.ClaimIssue(t, "high", "priority:high", "priority:low")
	for key, n := range map[string]int{keys.QueueLevel(lifecycletest.LowPriority): low, keys.Queue(): normal, keys.QueueLevel(lifecycletest.HighPriority): high} {
		got, _ := w.RDB.LRange(t.Context(), key, 0, -1).Result()
		if len(got) != 1 || !strings.Contains(got[0], lifecycletest.Ref(n).ID) {
			t.Errorf("%s = %q, want issue %d's request", key, got, n)
		}
	}
	w.Projects[lifecycletest.Project].Pipeline.Command = []string{"sh", "-c", `echo "$AGENTSMITH_TITLE" >> "$D/order"`}
	consumertest.RunWorld(t, w, dir, 1)
	for _, n := range []int{low, normal, high} {
		eventually.Wait(t, 20*time.Second, "every ticket to reach done", func() bool { return w.State(t, n) == lifecycle.Done })
	}
	b, _ := os.ReadFile(filepath.Join(dir, "order"))
	if got := strings.Fields(string(b)); !slices.Equal(got, []string{"high", "normal", "low"}) {
		t.Errorf("run order %q, want high, normal, low", got)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := lifecycle.Backoff{Initial: time.Second, Max: 10 * time.Second, Multiplier: 3, Jitter: 0.2}
	for _, c := range []struct {
		retry int
		r     float64
		want  time.Duration
	}{
		{1, 0, time.Second},
		{2, 0, 3 * time.Second},
		{3, 0, 9 * time.Second},
		{4, 0, 10 * time.Second},   // capped
		{500, 0, 10 * time.Second}, // no overflow
		{2, 1, 2400 * time.Millisecond},
		{2, 0.5, 2700 * time.Millisecond},
	} {
		if got := b.Delay(c.retry, c.r); got != c.want {
			t.Errorf("Delay(%d, %v) = %s, want %s", c.retry, c.r, got, c.want)
		}
	}
	nan := lifecycle.Backoff{Initial: time.Second, Max: time.Minute, Multiplier: math.NaN(), Jitter: math.NaN()}
	if got := nan.Delay(3, 0.5); got != time.Second {
		t.Errorf("NaN policy: %s, want the initial delay", got)
	}
}
