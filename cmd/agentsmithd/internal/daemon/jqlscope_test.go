package daemon_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/simcases"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// A Jira project configured by a JQL scope serves the issues its query
// selects across the site's projects, through one admin webhook that sends
// every project's events (no JQL filter on it): a triggered issue in the
// scope runs to Done; triggered issues outside it (another component,
// another project) are not claimed although their deliveries authenticate;
// and one that enters the scope later (its component set after its
// trigger) is claimed on that change.
func TestJQLScopeRunsOnlyItsIssues(t *testing.T) {
	e := newEnvFor(t, simcases.Jira)
	d := e.startScope()
	hook := e.pc.Hook("http://"+d.Addr(), testSecret)
	hook.Repo = "" // the site's admin webhook: every project's events
	e.sim.AddHook(hook)

	pay := e.triggered("PAY", "Payments")
	search := e.triggered("OPS", "Search")
	other := e.triggered("OTHER", "Payments")
	e.repo, e.pc = "PAY", e.pc.WithRepo("PAY")
	if got := e.waitState(pay, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("PAY-%d: %v", pay, got)
	}
	if err := e.sim.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.untouched("OPS", search)
	e.untouched("OTHER", other)

	// OPS-n enters the scope: its Component change is a delivery, claimed.
	if err := e.sim.SetComponents("OPS", search, "Search", "Payments"); err != nil {
		t.Fatal(err)
	}
	e.repo, e.pc = "OPS", e.pc.WithRepo("OPS")
	if got := e.waitState(search, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
		t.Fatalf("OPS-%d after joining the scope: %v", search, got)
	}
	eventually.Wait(t, 5*time.Second, "the deliveries to be answered", func() bool { return e.sim.WaitIdle(t.Context()) == nil })
	e.untouched("OTHER", other)
}

// Without webhooks the poller finds a scope's triggered issues with the
// scope's own search, and only them: one search a poll, whichever projects
// the scope spans.
func TestJQLScopeIsPolled(t *testing.T) {
	e := newEnvFor(t, simcases.Jira)
	e.projectExtra = "    polling: {enabled: true, interval: 1s}\n"
	e.startScope()
	pay := e.triggered("PAY", "Payments")
	ops := e.triggered("OPS", "Payments")
	search := e.triggered("OPS", "Search")
	for _, c := range []struct {
		key string
		n   int
	}{{"PAY", pay}, {"OPS", ops}} {
		e.repo, e.pc = c.key, e.pc.WithRepo(c.key)
		if got := e.waitState(c.n, 30*time.Second, lifecycle.Done, lifecycle.Failed); got != lifecycle.Done {
			t.Fatalf("%s-%d: %v", c.key, c.n, got)
		}
	}
	// A poll after both finished has had its chance at OPS-search.
	const searchCall = "POST /jira/rest/api/{v}/search/jql"
	after := e.sim.Stats().Calls[searchCall]
	eventually.Wait(t, 10*time.Second, "two more polls", func() bool { return e.sim.Stats().Calls[searchCall] >= after+2 })
	e.untouched("OPS", search)
	if n := e.sim.Stats().Calls["GET /jira/rest/api/{v}/project/search"]; n != 0 {
		t.Errorf("%d project listings: a scope lists no projects", n)
	}
}

// startScope starts a replica serving one project, the JQL scope
// "project in (PAY, OPS) AND component = Payments" of a site with the
// projects PAY, OPS and OTHER.
func (e *env) startScope() *daemon.Daemon {
	e.t.Helper()
	for _, k := range []string{"PAY", "OPS", "OTHER"} {
		e.sim.CreateRepo(k)
	}
	yml := strings.Replace(e.configYAML("r1", ""), "    repo: APP\n", "", 1)
	yml = strings.Replace(yml, "jira: {email: bot@acme.example}",
		`jira: {email: bot@acme.example, jql: "project in (PAY, OPS) AND component = Payments"}`, 1)
	cfg, err := config.Parse([]byte(yml), lookupEnv)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.startDaemon(cfg)
}

// triggered files an issue in the Jira project key as a person would: its
// components first, then the trigger label.
func (e *env) triggered(key string, components ...string) int {
	e.t.Helper()
	n := e.sim.CreateIssue(key, "scoped", "")
	if err := e.sim.SetComponents(key, n, components...); err != nil {
		e.t.Fatal(err)
	}
	if err := e.sim.AddLabels(key, n, "agent-smith"); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// untouched fails unless issue n of key carries the trigger label and no
// lifecycle label.
func (e *env) untouched(key string, n int) {
	e.t.Helper()
	is, _ := e.sim.Issue(key, n)
	if lc := labels.Lifecycle(is.Labels); len(lc) > 0 || !slices.Contains(is.Labels, "agent-smith") {
		e.t.Errorf("%s-%d outside the scope: labels %v, want the trigger alone", key, n, is.Labels)
	}
}
