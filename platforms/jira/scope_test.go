package jira_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const payScope = "project in (PAY, OPS) AND component = Payments"

// A JQL scope lists the issues its query selects across projects, with one
// search whichever projects they are in, and answers InScope for an issue
// with one more: on Cloud with the issue reconciled, so a component set a
// moment ago counts although the search index lags by an hour.
func TestJQLScopeListsAndAnswersMembership(t *testing.T) {
	for _, c := range []struct{ deployment, email, searchCall string }{
		{jira.DeploymentCloud, "bot@example.com", "POST /jira/rest/api/{v}/search/jql"},
		{jira.DeploymentDataCenter, "", "GET /jira/rest/api/{v}/search"},
	} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			if c.deployment == jira.DeploymentDataCenter {
				s.SetJiraDeployment("datacenter")
			}
			s.SetJiraSearchLag(0)
			const label = "agent-smith:pending"
			issue := func(key string, components ...string) platforms.Ref {
				n := s.CreateIssue(key, "t", "", label)
				if len(components) > 0 {
					if err := s.SetComponents(key, n, components...); err != nil {
						t.Fatal(err)
					}
				}
				return platforms.Ref{Platform: jira.Platform, ID: jira.FormatID(key, n)}
			}
			pay, ops := issue("PAY", "Payments"), issue("OPS", "payments", "Search")
			opsSearch, other := issue("OPS", "Search"), issue("OTHER", "Payments")
			tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", JQL: payScope, Project: "payments", Token: simToken,
				Email: c.email, Deployment: c.deployment, Locker: noWrites{}})
			if err != nil {
				t.Fatal(err)
			}
			if tr.Locator() != "" || tr.SearchScope().Filter != payScope {
				t.Errorf("locator %q, search filter %q: a scope routes by secret and searches alone", tr.Locator(), tr.SearchScope().Filter)
			}
			before := s.Stats().Calls[c.searchCall]
			got, err := tr.ListOpen(t.Context(), label)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, tk := range got {
				ids = append(ids, tk.Ref.ID)
				if tk.Ref.Project != "payments" {
					t.Errorf("%s: project %q", tk.Ref.ID, tk.Ref.Project)
				}
			}
			if want := []string{ops.ID, pay.ID}; !slices.Equal(ids, want) {
				t.Errorf("ListOpen = %v, want %v (ORDER BY key)", ids, want)
			}
			if n := s.Stats().Calls[c.searchCall] - before; n != 1 {
				t.Errorf("%d searches for a scope over two projects, want 1", n)
			}
			for ref, want := range map[platforms.Ref]bool{pay: true, ops: true, opsSearch: false, other: false} {
				if in, err := tr.InScope(t.Context(), ref); err != nil || in != want {
					t.Errorf("InScope(%s) = %v, %v; want %v", ref.ID, in, err, want)
				}
			}

			// The index an hour behind: only reconciling the issue shows its
			// new component (Data Center's search is consistent).
			s.SetJiraSearchLag(time.Hour)
			_, n, _ := jira.ParseID(opsSearch.ID)
			if err := s.SetComponents("OPS", n, "Search", "Payments"); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Get(t.Context(), opsSearch); err != nil { // the claim's read, which learns the id
				t.Fatal(err)
			}
			if in, err := tr.InScope(t.Context(), opsSearch); err != nil || !in {
				t.Errorf("InScope(%s) after its component was added = %v, %v; want true", opsSearch.ID, in, err)
			}
		})
	}
}

// What a scope is asked of the site: the scope itself, parsed by Jira in
// check, and write access in the issue's own project.
func TestJQLScopeCheckAndPermissions(t *testing.T) {
	s, url := newSim(t)
	s.CreateRepo("PAY")
	s.SetJiraSearchLag(0)
	s.SetUserRole("alice", "write")
	build := func(jql string) *jira.Tracker {
		tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", JQL: jql, Project: "payments", Token: simToken,
			Email: "bot@example.com", Locker: noWrites{}})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	result := func(tr *jira.Tracker) platforms.CheckResult {
		for _, r := range tr.Check(t.Context(), platforms.CheckOptions{TriggerLabel: "agent-smith"}) {
			if r.Name == "jql scope" {
				return r
			}
		}
		t.Fatal("check has no jql scope result")
		return platforms.CheckResult{}
	}
	if r := result(build("project = PAY AND component = Payments")); r.Status != platforms.CheckOK {
		t.Errorf("a valid scope: %+v", r)
	}
	if r := result(build("project = NOPE")); r.Status != platforms.CheckFail || !strings.Contains(r.Detail, "NOPE") {
		t.Errorf("a scope naming a project that does not exist: %+v", r)
	}
	tr := build(payScope)
	ref := platforms.Ref{Platform: jira.Platform, ID: "PAY-3"}
	if got := tr.PermissionScope(ref); got != "PAY" {
		t.Errorf("PermissionScope(PAY-3) = %q", got)
	}
	if may, err := tr.MayWriteIn(t.Context(), "PAY", trackersim.ActorName("jira", "alice")); err != nil || !may {
		t.Errorf("alice may write in PAY = %v, %v", may, err)
	}
	if _, err := tr.MayWrite(t.Context(), trackersim.ActorName("jira", "alice")); err == nil {
		t.Error("MayWrite answered for a scope spanning projects")
	}
	for _, bad := range []string{"", "  ", "project = PAY ORDER BY key", strings.Repeat("x", jira.MaxScopeLength+1), "project = PAY\x00"} {
		if _, err := jira.New(jira.Options{BaseURL: url + "/jira/", JQL: bad, Token: simToken, Email: "bot@example.com", Locker: noWrites{}}); err == nil && bad != "" {
			t.Errorf("scope %q accepted", bad)
		}
	}
	if _, err := jira.New(jira.Options{BaseURL: url + "/jira/", JQL: payScope, Repo: "PAY", Token: simToken, Email: "bot@example.com", Locker: noWrites{}}); err == nil {
		t.Error("a scope and a project key accepted together")
	}
}
