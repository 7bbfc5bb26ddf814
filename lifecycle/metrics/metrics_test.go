package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/lifecycle/runstate"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

var ref = platforms.Ref{Platform: "gitlab", Project: "api", ID: "g/api#7"}

// Each kind of event lands in the series an operator would look for it in.
func TestObserveMapsEvents(t *testing.T) {
	m := metrics.New(metrics.Config{})
	for _, ev := range []lifecycle.Event{
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Pending, To: lifecycle.Enqueued, Outcome: "claimed",
			Owner: lifecycle.OwnerClaimService, Source: lifecycle.SourcePoll, Retrigger: true},
		{Kind: lifecycle.EventClaim, Ref: ref, From: lifecycle.Enqueued, To: lifecycle.Enqueued, Outcome: "not_eligible",
			Owner: lifecycle.OwnerClaimService, Source: lifecycle.SourceWebhook},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Enqueued, To: lifecycle.InProgress, Outcome: "started",
			Owner: lifecycle.OwnerExecutor, Wait: 300 * time.Millisecond},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Done, Outcome: "succeeded",
			Owner: lifecycle.OwnerExecutor, Run: 90 * time.Second, Lead: 95 * time.Second},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Pending, Outcome: "reverted",
			Owner: lifecycle.OwnerStaleJobDetector},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Enqueued, To: lifecycle.Enqueued, Outcome: "re-pushed",
			Owner: lifecycle.OwnerEnqueuedReconciler},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Pending, To: lifecycle.Failed, Outcome: "attempts exhausted",
			Owner: lifecycle.OwnerClaimService},
		{Kind: lifecycle.EventRepair, Outcome: "requeued dead instance's requests", Owner: lifecycle.OwnerEnqueuedReconciler},
		{Kind: lifecycle.EventStuck, Ref: ref, From: lifecycle.InProgress, To: lifecycle.InProgress, Outcome: "stuck"},
	} {
		m.Observe(ev)
	}
	want := `
# HELP agentsmith_claims_total Claim attempts by outcome: claimed, already_claimed, not_eligible, precondition_failed, refused, backing_off.
# TYPE agentsmith_claims_total counter
agentsmith_claims_total{outcome="claimed",platform="gitlab",project="api",source="poll"} 1
agentsmith_claims_total{outcome="not_eligible",platform="gitlab",project="api",source="webhook"} 1
# HELP agentsmith_repairs_total Housekeeping repairs: reverted, re-pushed, attempts exhausted, requeued dead instances' requests.
# TYPE agentsmith_repairs_total counter
agentsmith_repairs_total{kind="attempts exhausted"} 1
agentsmith_repairs_total{kind="re-pushed"} 1
agentsmith_repairs_total{kind="requeued dead instance's requests"} 1
agentsmith_repairs_total{kind="reverted"} 1
# HELP agentsmith_retriggers_total Claims of tickets that had reached done or failed before: someone asked for another run.
# TYPE agentsmith_retriggers_total counter
agentsmith_retriggers_total{platform="gitlab",project="api"} 1
# HELP agentsmith_stuck_total Tickets flagged as staying Enqueued or InProgress longer than their project's threshold.
# TYPE agentsmith_stuck_total counter
agentsmith_stuck_total{platform="gitlab",project="api",state="in-progress"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"agentsmith_claims_total", "agentsmith_repairs_total", "agentsmith_retriggers_total", "agentsmith_stuck_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_transitions_total"); n != 6 {
		t.Errorf("transition series = %d, want 6 (every transition event, none of the others)", n)
	}
	for _, c := range []struct {
		name  string
		count uint64
		sum   float64
	}{
		{"agentsmith_queue_wait_seconds", 1, 0.3},
		{"agentsmith_pipeline_duration_seconds", 1, 90},
		{"agentsmith_lead_time_seconds", 1, 95},
	} {
		fams, err := m.Registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range fams {
			if f.GetName() != c.name {
				continue
			}
			h := f.GetMetric()[0].GetHistogram()
			found = h.GetSampleCount() == c.count && h.GetSampleSum() == c.sum
			if !found {
				t.Errorf("%s: count %d sum %v, want %d and %v", c.name, h.GetSampleCount(), h.GetSampleSum(), c.count, c.sum)
			}
		}
		if !found {
			t.Errorf("%s missing or wrong", c.name)
		}
	}
}

func TestTrackerCallsAndLeases(t *testing.T) {
	m := metrics.New(metrics.Config{})
	quiet := m.TrackerCalls("jira", "ops")
	quiet.ObserveCall(trackerhttp.Call{Method: "GET", Status: 200, Remaining: -1})
	obs := m.TrackerCalls("github", "webshop")
	obs.ObserveCall(trackerhttp.Call{Method: "PATCH", Status: 200, Remaining: 4999})
	obs.ObserveCall(trackerhttp.Call{Method: "GET", Status: 0, Remaining: -1}) // no answer: keeps the last quota
	m.ObserveDelivery("github", 202)
	held := true
	m.WatchLease("housekeeping", func() bool { return held })
	want := `
# HELP agentsmith_tracker_requests_total Tracker API requests sent, by HTTP method and status code ("error": no response).
# TYPE agentsmith_tracker_requests_total counter
agentsmith_tracker_requests_total{code="200",method="PATCH",platform="github"} 1
agentsmith_tracker_requests_total{code="error",method="GET",platform="github"} 1
agentsmith_tracker_requests_total{code="200",method="GET",platform="jira"} 1
# HELP agentsmith_tracker_rate_limit_remaining Requests the tracker last reported left in the current rate-limit window for a project's credentials.
# TYPE agentsmith_tracker_rate_limit_remaining gauge
agentsmith_tracker_rate_limit_remaining{platform="github",project="webshop"} 4999
# HELP agentsmith_webhook_requests_total Webhook requests answered, by platform ("unknown" for unconfigured ones) and status code.
# TYPE agentsmith_webhook_requests_total counter
agentsmith_webhook_requests_total{code="202",platform="github"} 1
# HELP agentsmith_lease_held 1 while this replica holds the leader lease (poller, housekeeping) and may act on it.
# TYPE agentsmith_lease_held gauge
agentsmith_lease_held{lease="housekeeping"} 1
`
	names := []string{"agentsmith_tracker_requests_total", "agentsmith_tracker_rate_limit_remaining",
		"agentsmith_webhook_requests_total", "agentsmith_lease_held"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
	held = false
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(strings.Replace(want,
		`agentsmith_lease_held{lease="housekeeping"} 1`, `agentsmith_lease_held{lease="housekeeping"} 0`, 1)), names...); err != nil {
		t.Errorf("after losing the lease: %v", err)
	}
}

// The queue, delayed set, in-flight index and liveness keys are read from a
// real Redis at scrape time; a Redis that stops answering drops those
// series from the scrape and shows as Redis errors instead of as zeros.
func TestStateFromRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed()})
	m := metrics.New(metrics.Config{Redis: rdb, Queue: q, Clock: func() time.Time { return now }})
	rdb.AddHook(m.RedisHook())
	ctx := context.Background()

	state := []string{"agentsmith_queue_depth", "agentsmith_queue_oldest_age_seconds", "agentsmith_queue_delayed",
		"agentsmith_runs_inflight", "agentsmith_instances_live"}
	empty := `
# HELP agentsmith_queue_depth ` + metrics.HelpQueueDepth + `
# TYPE agentsmith_queue_depth gauge
agentsmith_queue_depth 0
# HELP agentsmith_queue_oldest_age_seconds ` + metrics.HelpQueueOldestAge + `
# TYPE agentsmith_queue_oldest_age_seconds gauge
agentsmith_queue_oldest_age_seconds 0
# HELP agentsmith_queue_delayed ` + metrics.HelpQueueDelayed + `
# TYPE agentsmith_queue_delayed gauge
agentsmith_queue_delayed 0
# HELP agentsmith_runs_inflight Pipelines running fleet-wide (entries of agentsmith:inflight).
# TYPE agentsmith_runs_inflight gauge
agentsmith_runs_inflight 0
# HELP agentsmith_instances_live Replicas whose liveness key is present.
# TYPE agentsmith_instances_live gauge
agentsmith_instances_live 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(empty), state...); err != nil {
		t.Errorf("empty Redis: %v", err)
	}

	for i, age := range []time.Duration{90 * time.Second, 30 * time.Second} {
		req := lifecycle.PipelineRequest{ID: string(rune('a' + i)), Ref: ref, Source: "webhook", Attempt: 1, EnqueuedAt: now.Add(-age)}
		if err := rdb.RPush(ctx, keys.Queue(), req.Encode()).Err(); err != nil {
			t.Fatal(err)
		}
	}
	must(t, rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: 1, Member: "x"}).Err())
	must(t, rdb.HSet(ctx, keys.Inflight(), "gitlab:a", "{}", "gitlab:b", "{}", "gitlab:c", "{}").Err())
	must(t, rdb.Set(ctx, keys.Instance("r1"), "r1", time.Minute).Err())
	must(t, rdb.Set(ctx, keys.Instance("r2"), "r2", time.Minute).Err())
	full := strings.NewReplacer(
		"agentsmith_queue_depth 0", "agentsmith_queue_depth 2",
		"agentsmith_queue_oldest_age_seconds 0", "agentsmith_queue_oldest_age_seconds 90",
		"agentsmith_queue_delayed 0", "agentsmith_queue_delayed 1",
		"agentsmith_runs_inflight 0", "agentsmith_runs_inflight 3",
		"agentsmith_instances_live 0", "agentsmith_instances_live 2").Replace(empty)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(full), state...); err != nil {
		t.Errorf("populated Redis: %v", err)
	}
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_redis_errors_total"); n != 0 {
		t.Errorf("redis error series = %d with a healthy Redis", n)
	}

	// A wrong-typed key is a real Redis error, counted by command.
	if err := rdb.HGet(ctx, keys.Queue(), "x").Err(); err == nil {
		t.Fatal("HGET on a list succeeded")
	}
	hget := `
# HELP agentsmith_redis_errors_total Redis commands that failed (redis.Nil, cancellations and script cache misses are not failures).
# TYPE agentsmith_redis_errors_total counter
agentsmith_redis_errors_total{command="hget"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(hget), "agentsmith_redis_errors_total"); err != nil {
		t.Errorf("after a WRONGTYPE answer: %v", err)
	}

	srv.Kill()
	if n := testutil.CollectAndCount(m.Registry(), state...); n != 0 {
		t.Errorf("with Redis down, %d state series were still reported", n)
	}
	if n := testutil.CollectAndCount(m.Registry(), "agentsmith_redis_errors_total"); n < 2 {
		t.Errorf("redis error series = %d after a failed scrape, want the pipeline's commands counted", n)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// The queue gauges cover every priority level and the delayed set: depth
// sums the levels, and the oldest age is the longest wait among the levels'
// heads and the delayed entries (a request given back at a concurrency
// limit keeps its enqueue time; a retry's is its due time, so its backoff
// is not counted as waiting).
func TestQueueGaugesCoverEveryLevelAndTheDelayedSet(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed(),
		Levels: []queue.Level{{Priority: 1, Key: keys.QueueLevel(1)}, {Priority: 9, Key: keys.QueueLevel(9)}}})
	m := metrics.New(metrics.Config{Redis: rdb, Queue: q, Clock: func() time.Time { return now }})
	ctx := context.Background()
	push := func(key string, prio int, age time.Duration) {
		req := lifecycle.PipelineRequest{ID: key + age.String(), Ref: ref, Attempt: 1, EnqueuedAt: now.Add(-age), Priority: prio}
		must(t, rdb.RPush(ctx, key, req.Encode()).Err())
	}
	push(keys.Queue(), 0, 10*time.Second)
	push(keys.QueueLevel(1), 1, 5*time.Minute)
	push(keys.QueueLevel(1), 1, time.Minute)
	push(keys.QueueLevel(9), 9, 20*time.Second)
	gauges := []string{"agentsmith_queue_depth", "agentsmith_queue_oldest_age_seconds", "agentsmith_queue_delayed"}
	want := func(depth int, oldest float64, delayed int) string {
		return fmt.Sprintf(`
# HELP agentsmith_queue_depth %s
# TYPE agentsmith_queue_depth gauge
agentsmith_queue_depth %d
# HELP agentsmith_queue_oldest_age_seconds %s
# TYPE agentsmith_queue_oldest_age_seconds gauge
agentsmith_queue_oldest_age_seconds %g
# HELP agentsmith_queue_delayed %s
# TYPE agentsmith_queue_delayed gauge
agentsmith_queue_delayed %d
`, metrics.HelpQueueDepth, depth, metrics.HelpQueueOldestAge, oldest, metrics.HelpQueueDelayed, delayed)
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(4, 300, 0)), gauges...); err != nil {
		t.Errorf("priority levels: %v", err)
	}
	delay := func(age time.Duration, due time.Time) {
		req := lifecycle.PipelineRequest{ID: "d" + age.String(), Ref: ref, Attempt: 2, EnqueuedAt: now.Add(-age)}
		must(t, rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(due.UnixMilli()), Member: req.Encode()}).Err())
	}
	delay(-time.Hour, now.Add(time.Hour))       // a retry due in an hour: not waiting yet
	delay(20*time.Minute, now.Add(time.Second)) // given back at a concurrency limit 20 minutes after its claim
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(4, 1200, 2)), gauges...); err != nil {
		t.Errorf("with the delayed set: %v", err)
	}
}

// On a Redis Cluster the liveness keys are spread over every master
// (without the hash tag, as here): instances_live counts them on all.
func TestInstancesLiveOnCluster(t *testing.T) {
	rdb := redistest.StartCluster(t, 3).Client(t)
	m := metrics.New(metrics.Config{Redis: rdb, Queue: queue.New(rdb, keys.Queue())})
	const n = 24
	for i := range n {
		must(t, rdb.Set(t.Context(), keys.Instance(fmt.Sprintf("replica-%02d", i)), "x", time.Minute).Err())
	}
	want := fmt.Sprintf(`
# HELP agentsmith_instances_live Replicas whose liveness key is present.
# TYPE agentsmith_instances_live gauge
agentsmith_instances_live %d
`, n)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "agentsmith_instances_live"); err != nil {
		t.Error(err)
	}
}

// Outcomes waiting for the tracker are counted at scrape time, with the
// oldest one's wait since its pipeline ended.
func TestOutcomesWaitingGauges(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DefaultPriority: lifecycle.DefaultPriority, DelayedKey: keys.Delayed()})
	m := metrics.New(metrics.Config{Redis: rdb, Queue: q, Clock: func() time.Time { return now }})
	ctx := context.Background()
	names := []string{"agentsmith_outcomes_waiting", "agentsmith_outcome_oldest_wait_seconds"}
	want := func(n int, age float64) string {
		return fmt.Sprintf(`
# HELP agentsmith_outcomes_waiting %s
# TYPE agentsmith_outcomes_waiting gauge
agentsmith_outcomes_waiting %d
# HELP agentsmith_outcome_oldest_wait_seconds %s
# TYPE agentsmith_outcome_oldest_wait_seconds gauge
agentsmith_outcome_oldest_wait_seconds %g
`, metrics.HelpOutcomesWaiting, n, metrics.HelpOutcomeOldestAge, age)
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(0, 0)), names...); err != nil {
		t.Errorf("none waiting: %v", err)
	}
	for i, age := range []time.Duration{150 * time.Second, 20 * time.Second} {
		r := platforms.Ref{Platform: "gitlab", Project: "api", ID: fmt.Sprintf("g/api#%d", i)}
		b, err := json.Marshal(runstate.Outcome{Ref: r, Token: "t", To: "done", Recorded: now.Add(-age)})
		must(t, err)
		must(t, rdb.HSet(ctx, keys.Outcomes(), r.Key(), string(b)).Err())
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want(2, 150)), names...); err != nil {
		t.Errorf("two waiting: %v", err)
	}
}
