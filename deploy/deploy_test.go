// Package deploy_test keeps the files in deploy/ honest: every YAML and JSON
// file parses, the agentsmithd configs in them are configs the daemon
// accepts, and the alert rules and the Grafana dashboard name only metrics
// the daemon really registers.
package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"gopkg.in/yaml.v3"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// files returns every file under deploy/ with one of the extensions, but
// the Helm chart's templates.
func files(t *testing.T, exts ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path == filepath.Join("helm", "agentsmithd", "templates") {
			return fs.SkipDir // Go templates, rendered and checked by deploy/helm's own test
		}
		for _, ext := range exts {
			if !d.IsDir() && strings.HasSuffix(path, ext) {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
}

func TestEveryFileParses(t *testing.T) {
	ys := files(t, ".yaml", ".yml")
	if len(ys) < 5 {
		t.Fatalf("found only %d YAML files: %q", len(ys), ys)
	}
	for _, path := range ys {
		if len(yamlDocs(t, path)) == 0 {
			t.Errorf("%s: no YAML document", path)
		}
	}
	for _, path := range files(t, ".json") {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// registered lists every series family the daemon's metrics package
// exposes, by driving each of its inputs once against a real Redis and
// gathering the registry.
func registered(t *testing.T) map[string]dto.MetricType {
	t.Helper()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DelayedKey: keys.Delayed(), DefaultPool: lifecycle.DefaultPool})
	m := metrics.New(metrics.Config{Redis: rdb, Queue: q})
	// A request of a pool the queue does not hold: agentsmith_queue_unplaced_total.
	if err := q.Push(t.Context(), []byte(`{"id":"u","pool":"gpu"}`)); err != nil {
		t.Fatal(err)
	}
	rdb.AddHook(m.RedisHook())
	ref := platforms.Ref{Platform: "github", Project: "p", ID: "o/r#1"}
	for _, ev := range []lifecycle.Event{
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Pending, To: lifecycle.Enqueued, Outcome: "claimed", Retrigger: true},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.Enqueued, To: lifecycle.InProgress, Outcome: "started", Wait: time.Second},
		{Kind: lifecycle.EventTransition, Ref: ref, From: lifecycle.InProgress, To: lifecycle.Done, Outcome: "succeeded", Run: time.Second, Lead: time.Second, Stage: "plan"},
		{Kind: lifecycle.EventRepair, Outcome: "requeued dead instance's requests"},
		{Kind: lifecycle.EventStuck, Ref: ref, From: lifecycle.InProgress},
	} {
		m.Observe(ev)
	}
	m.TrackerCalls("github", "p").ObserveCall(trackerhttp.Call{Method: "GET", Status: 200, Remaining: 10})
	m.ObserveDelivery("github", 202)
	m.RefusedConnection("per_address")
	m.WatchLease("housekeeping", func() bool { return true })
	ctx := context.Background()
	_ = rdb.RPush(ctx, keys.Queue(), "x").Err()
	_ = rdb.HGet(ctx, keys.Queue(), "x").Err() // WRONGTYPE: one Redis error
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]dto.MetricType{}
	for _, f := range fams {
		out[f.GetName()] = f.GetType()
	}
	return out
}

var metricName = regexp.MustCompile(`\bagentsmith_[a-z0-9_]+`)

// checkNames reports every agentsmith_ name in expr that the daemon does
// not register; histogram series may carry _bucket, _count or _sum.
func checkNames(t *testing.T, where, expr string, known map[string]dto.MetricType) int {
	t.Helper()
	names := metricName.FindAllString(expr, -1)
	for _, n := range names {
		if _, ok := known[n]; ok {
			continue
		}
		base := n
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			base = strings.TrimSuffix(base, suffix)
		}
		if typ, ok := known[base]; ok && base != n && typ == dto.MetricType_HISTOGRAM {
			continue
		}
		t.Errorf("%s: %s is not a metric agentsmithd registers (expr %q)", where, n, expr)
	}
	return len(names)
}

func TestAlertRulesUseRegisteredMetrics(t *testing.T) {
	known := registered(t)
	docs := yamlDocs(t, "prometheus/alerts.yaml")
	var file struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert       string
				Expr        string
				For         string
				Labels      map[string]string
				Annotations map[string]string
			}
		}
	}
	b, _ := yaml.Marshal(docs[0])
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	alerts := map[string]bool{}
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			where := "alerts.yaml " + r.Alert
			switch {
			case r.Alert == "" || r.Expr == "":
				t.Errorf("%s: a rule needs alert and expr", where)
			case r.Labels["severity"] == "" || r.Annotations["summary"] == "":
				t.Errorf("%s: needs labels.severity and annotations.summary", where)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", where, r.For, err)
				}
			}
			if checkNames(t, where, r.Expr, known) == 0 {
				t.Errorf("%s: expr names no agentsmith_ metric", where)
			}
			alerts[r.Alert] = true
		}
	}
	for _, want := range []string{"AgentsmithQueueOldestAgeHigh", "AgentsmithNoHousekeepingLeader", "AgentsmithPipelineFailureRateHigh",
		"AgentsmithTrackerRateLimitLow", "AgentsmithRedisErrors", "AgentsmithTicketsStuck"} {
		if !alerts[want] {
			t.Errorf("alerts.yaml lacks %s", want)
		}
	}
}

func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	known := registered(t)
	data, err := os.ReadFile("grafana/agentsmithd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string
		Panels []struct {
			Type    string
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Name       string
				Definition string
			}
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	queries := 0
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			queries += checkNames(t, "dashboard panel "+p.Title, tg.Expr, known)
			for _, n := range metricName.FindAllString(tg.Expr, -1) {
				used[strings.TrimSuffix(n, "_bucket")] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		checkNames(t, "dashboard variable "+v.Name, v.Definition, known)
	}
	if dash.UID == "" || queries == 0 {
		t.Fatalf("dashboard has uid %q and %d metric references", dash.UID, queries)
	}
	// Every agentsmith_ family has a panel: a metric nobody can see is
	// either missing from the dashboard or not worth registering.
	for n := range known {
		if strings.HasPrefix(n, "agentsmith_") && !used[n] {
			t.Errorf("no dashboard panel shows %s", n)
		}
	}
}

// The agentsmithd configs in deploy/ are configs the daemon accepts: the
// only problems allowed are the secret files that exist only inside the
// container or pod.
func TestDeployConfigsValidate(t *testing.T) {
	cm := yamlDocs(t, "kubernetes/configmap.yaml")[0]
	k8s, _ := cm["data"].(map[string]any)["config.yaml"].(string)
	compose, err := os.ReadFile("compose/agentsmithd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) { return "value-of-" + k, true }
	for name, data := range map[string]string{"kubernetes/configmap.yaml": k8s, "compose/agentsmithd.yaml": string(compose)} {
		if data == "" {
			t.Fatalf("%s: no config", name)
		}
		_, err := config.Parse([]byte(data), env)
		var errs config.Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("%s: %v", name, err)
		}
		for _, e := range errs {
			if !strings.Contains(e.Error(), "cannot read /etc/agentsmithd/secrets/") && !strings.Contains(e.Error(), "cannot read /run/secrets/") {
				t.Errorf("%s: %v", name, e)
			}
		}
	}
}
