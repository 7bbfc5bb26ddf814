package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// The demo's config, run against a real Redis and the sandbox until every
// project's ticket settled: its /metrics shows the runs and never the
// tracker token or the webhook secret.
func TestDemoMetricsCarryNoSecrets(t *testing.T) {
	const token, secret = "demo-token-must-not-leak-3141", "demo-secret-must-not-leak-2718"
	r := redistest.Start(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	cfg, err := demoConfig(demoRedis{addr: r.Addr()}, t.TempDir(), srv.URL, token, secret, demoPR{}, "")
	if err != nil {
		t.Fatal(err)
	}
	d, err := daemon.New(cfg, daemon.Options{OwnRedis: true}) // as the demo: Redis started for it
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-d.Listening()
	labels := lifecycle.Labels{Prefix: cfg.LabelPrefix}
	type issue struct {
		repo string
		n    int
	}
	var issues []issue
	for _, p := range demoProjects {
		if !p.poll {
			s.AddHook(p.pc.Hook("http://"+d.Addr(), secret))
		}
		// "flaky" makes the demo pipeline fail after its one-second sleep.
		issues = append(issues, issue{p.pc.Repo, s.CreateIssue(p.pc.Repo, "Checkout is flaky", "", "agent-smith")})
	}
	eventually.Wait(t, 60*time.Second, "every demo ticket settled", func() bool {
		for _, is := range issues {
			got, _ := s.Issue(is.repo, is.n)
			if !labels.StateOf(got.Labels).Terminal() {
				return false
			}
		}
		return true
	})
	var body string
	eventually.Wait(t, 10*time.Second, "/metrics to count every failed run", func() bool {
		req, err := http.NewRequest(http.MethodGet, "http://"+d.AdminAddr()+"/metrics", nil)
		if err != nil {
			return false
		}
		req.Header.Set("Authorization", "Bearer "+d.StatusToken())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Count(body, `agentsmith_lead_time_seconds_count{project=`) == len(demoProjects)
	})
	for _, leak := range []string{token, secret} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics contains a configured secret")
		}
	}
	for _, want := range []string{`platform="jira"`, `platform="azuredevops"`, `platform="gitlab"`, `platform="github"`,
		`agentsmith_claims_total{outcome="claimed",platform="jira",project="ops",source="poll"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
