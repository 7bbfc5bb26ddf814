package daemon_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/ops"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// The daemon hands its queue layout to /metrics and /status: a request
// waiting on a priority level, and one in the delayed set, are counted by
// both. (No consumer runs, so the requests stay where they were put.)
func TestMetricsAndStatusCountThePriorityLevels(t *testing.T) {
	e := newEnv(t)
	e.projectExtra = "    priority: {labels: {urgent: 1}}\n"
	d := e.startDaemon(e.config("replica-a", "roles: [receiver]\n"))
	<-d.Listening()
	rdb := e.redis.Client(t)
	ref := platforms.Ref{Platform: "github", Project: "app", ID: e.repo + "#1"}
	req := lifecycle.PipelineRequest{ID: "urgent", Ref: ref, Source: lifecycle.SourceWebhook, Attempt: 1,
		EnqueuedAt: time.Now().Add(-time.Hour), Priority: 1}
	if err := rdb.RPush(t.Context(), keys.QueueLevel(1), req.Encode()).Err(); err != nil {
		t.Fatal(err)
	}
	retry := lifecycle.PipelineRequest{ID: "retry", Ref: ref, Source: lifecycle.SourceRetry, Attempt: 2, EnqueuedAt: time.Now().Add(time.Hour)}
	if err := rdb.ZAdd(t.Context(), keys.Delayed(), redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: retry.Encode()}).Err(); err != nil {
		t.Fatal(err)
	}
	admin := "http://" + d.AdminAddr()

	var st statuspage.Status
	if err := json.Unmarshal([]byte(body(t, d, admin+"/status.json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Queue.Depth != 1 || st.Queue.Delayed != 1 || st.Queue.Oldest != ref.String() || st.Queue.OldestAgeMS < 3_599_000 {
		t.Errorf("/status.json queue = %+v, want the urgent request counted and an hour old", st.Queue)
	}
	if len(st.Queue.Levels) != 2 || st.Queue.Levels[0] != (ops.Level{Priority: 1, Depth: 1}) {
		t.Errorf("/status.json levels = %+v, want priority 1 first with depth 1", st.Queue.Levels)
	}
	m := body(t, d, admin+"/metrics")
	for _, want := range []string{"agentsmith_queue_depth 1\n", "agentsmith_queue_delayed 1\n", "agentsmith_queue_oldest_age_seconds 3600"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
}

func body(t *testing.T, d *daemon.Daemon, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.StatusToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}
