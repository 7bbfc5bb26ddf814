package daemon_test

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
)

// scrape is one /metrics answer, parsed.
type scrape struct {
	raw      string
	families map[string]*dto.MetricFamily
}

// scrapeMetrics scrapes d's /metrics as Prometheus does, with the status
// token as bearer token.
func scrapeMetrics(t *testing.T, d *daemon.Daemon) scrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+d.AdminAddr()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+d.StatusToken())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d: %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return scrape{raw: string(body), families: fams}
}

// value returns the sample of name whose labels include want, summing
// counters and histogram counts over the samples that match; ok is false
// when none does.
func (s scrape) value(name string, want map[string]string) (float64, bool) {
	base, field := name, ""
	for _, suffix := range []string{"_count", "_sum"} {
		if fam, ok := s.families[strings.TrimSuffix(name, suffix)]; ok && strings.HasSuffix(name, suffix) && fam.GetType() == dto.MetricType_HISTOGRAM {
			base, field = strings.TrimSuffix(name, suffix), suffix
		}
	}
	fam, ok := s.families[base]
	if !ok {
		return 0, false
	}
	total, found := 0.0, false
next:
	for _, m := range fam.GetMetric() {
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case field == "_count":
			total += float64(m.GetHistogram().GetSampleCount())
		case field == "_sum":
			total += m.GetHistogram().GetSampleSum()
		case m.Counter != nil:
			total += m.GetCounter().GetValue()
		case m.Gauge != nil:
			total += m.GetGauge().GetValue()
		}
	}
	return total, found
}

func (s scrape) must(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	v, ok := s.value(name, want)
	if !ok {
		t.Fatalf("no series %s%v in /metrics; families: %s", name, want, strings.Join(s.names(), ", "))
	}
	return v
}

func (s scrape) names() []string {
	var out []string
	for n := range s.families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// A real claim and run against the sim and a real Redis, seen through
// /metrics over HTTP: every series below is what the daemon did, counted.
func TestMetricsCountARealRun(t *testing.T) {
	e := newEnv(t)
	// The REST write path, whose requests the counts below name.
	e.projectExtra = "    github: {api: rest}\n"
	d := e.startDaemon(e.config("replica-a", ""))
	ok := e.sim.CreateIssue(e.repo, "Fix the login page", "", "agent-smith")
	bad := e.sim.CreateIssue(e.repo, "This will fail", "", "agent-smith")
	e.waitState(ok, 20*time.Second, lifecycle.Done)
	e.waitState(bad, 20*time.Second, lifecycle.Failed)
	// The run releases the ticket (attempts forgotten, finished mark set)
	// just after its Done label: a re-trigger inside that window continues
	// the attempt chain instead of starting a new one, so the person below
	// acts once the runs are released, as a person reading the label does.
	eventually.Wait(t, 10*time.Second, "both runs released", func() bool {
		inflight, ok := scrapeMetrics(t, d).value("agentsmith_runs_inflight", nil)
		return ok && inflight == 0
	})

	// A human asks for the finished ticket to run again.
	if err := e.sim.RemoveLabel(e.repo, ok, lifecycletest.Label(lifecycle.Done)); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.RemoveLabel(e.repo, ok, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.AddLabels(e.repo, ok, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	e.waitState(ok, 20*time.Second, lifecycle.Done)

	gh := map[string]string{"platform": "github", "project": "app"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	var s scrape
	// The executor emits its last transition before it releases the run:
	// wait until the in-flight index is empty again and the lease is held.
	eventually.Wait(t, 10*time.Second, "run released and housekeeping lease held", func() bool {
		s = scrapeMetrics(t, d)
		inflight, ok1 := s.value("agentsmith_runs_inflight", nil)
		lease, ok2 := s.value("agentsmith_lease_held", map[string]string{"lease": "housekeeping"})
		return ok1 && ok2 && inflight == 0 && lease == 1
	})
	// One scrape is no snapshot: the registry gathers its collectors
	// concurrently, so the counters may have been read before the run's last
	// transition while the in-flight count, read from Redis a few ms later,
	// already saw its release (CI saw exactly that: done = 1 beside
	// inflight = 0). The release follows the transition, so a scrape begun
	// after inflight = 0 was seen holds every count.
	s = scrapeMetrics(t, d)

	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"agentsmith_transitions_total", with(gh, "from", "pending", "to", "enqueued", "outcome", "claimed"), 3},
		{"agentsmith_transitions_total", with(gh, "from", "enqueued", "to", "in-progress", "outcome", "started"), 3},
		{"agentsmith_transitions_total", with(gh, "from", "in-progress", "to", "done", "outcome", "succeeded"), 2},
		{"agentsmith_transitions_total", with(gh, "from", "in-progress", "to", "failed", "outcome", "failed"), 1},
		// The TriggerSweeper may beat a webhook to a ticket: count every source.
		{"agentsmith_claims_total", with(gh, "outcome", "claimed"), 3},
		{"agentsmith_retriggers_total", gh, 1},
		{"agentsmith_pipeline_duration_seconds_count", map[string]string{"project": "app", "outcome": "succeeded"}, 2},
		{"agentsmith_pipeline_duration_seconds_count", map[string]string{"project": "app", "outcome": "failed"}, 1},
		{"agentsmith_queue_wait_seconds_count", map[string]string{"project": "app"}, 3},
		{"agentsmith_lead_time_seconds_count", map[string]string{"project": "app", "state": "done"}, 2},
		{"agentsmith_lead_time_seconds_count", map[string]string{"project": "app", "state": "failed"}, 1},
		{"agentsmith_tracker_requests_total", map[string]string{"platform": "github", "method": "POST", "code": "201"}, 1},
		{"agentsmith_queue_depth", nil, 0},
		{"agentsmith_queue_oldest_age_seconds", nil, 0},
		{"agentsmith_runs_inflight", nil, 0},
		{"agentsmith_instances_live", nil, 1},
		{"agentsmith_lease_held", map[string]string{"lease": "housekeeping"}, 1},
	}
	for _, c := range checks {
		if got := s.must(t, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Every label write of the run is a POST of the new label and a DELETE
	// of the old one the sim answered 200: three claims (no old label),
	// three starts, three ends.
	if got := s.must(t, "agentsmith_tracker_requests_total", map[string]string{"platform": "github", "method": "POST", "code": "200"}); got != 9 {
		t.Errorf("tracker POST 200 = %v, want 9", got)
	}
	if got := s.must(t, "agentsmith_tracker_requests_total", map[string]string{"platform": "github", "method": "DELETE", "code": "200"}); got != 6 {
		t.Errorf("tracker DELETE 200 = %v, want 6", got)
	}
	if got := s.must(t, "agentsmith_tracker_rate_limit_remaining", gh); got <= 0 {
		t.Errorf("rate limit remaining = %v, want > 0 (the sim reports its quota)", got)
	}
	// Each trigger was one signed delivery answered 202; the sim also sends
	// deliveries for the daemon's own label writes, which are not eligible.
	if got := s.must(t, "agentsmith_webhook_requests_total", map[string]string{"platform": "github", "code": "202"}); got < 3 {
		t.Errorf("webhook 202 answers = %v, want >= 3", got)
	}
	if got, _ := s.value("agentsmith_webhook_requests_total", map[string]string{"code": "401"}); got != 0 {
		t.Errorf("webhook 401 answers = %v, want 0", got)
	}
	if _, ok := s.value("agentsmith_redis_errors_total", nil); ok {
		if got := s.must(t, "agentsmith_redis_errors_total", nil); got != 0 {
			t.Errorf("redis errors = %v with a healthy Redis:\n%s", got, grepLines(s.raw, "agentsmith_redis_errors_total"))
		}
	}
	for _, secret := range []string{testToken, testSecret, "rotated-out-secret"} {
		if strings.Contains(s.raw, secret) {
			t.Errorf("/metrics contains a configured secret")
		}
	}

	// An unknown platform path is counted under "unknown", not as a new
	// label value per path.
	resp, err := http.Post(fmt.Sprintf("http://%s/webhooks/bogus-%d", d.Addr(), time.Now().UnixNano()), "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s = scrapeMetrics(t, d)
	if got := s.must(t, "agentsmith_webhook_requests_total", map[string]string{"platform": "unknown", "code": "404"}); got != 1 {
		t.Errorf("unknown-platform 404s = %v, want 1", got)
	}
}

// A replica that runs no receiver still serves /metrics, /healthz and
// /readyz on its admin listener, the probes on its webhook listener, and
// no webhook route.
func TestMetricsWithoutReceiverRole(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("consumer-only", "")
	cfg.Roles = []string{"consumer"}
	d := e.startDaemon(cfg)
	<-d.Listening()
	s := scrapeMetrics(t, d)
	s.must(t, "agentsmith_queue_depth", nil)
	if _, ok := s.value("agentsmith_lease_held", nil); ok {
		t.Error("a replica without poller or housekeeping reports a lease")
	}
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/webhooks/github": 404, "/metrics": 404} {
		resp, err := http.Get("http://" + d.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s = %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
