package main

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
)

// FuzzTicketArg: any argument is either refused with a usage or not-found
// error, or bound to a configured project with its platform and id intact.
func FuzzTicketArg(f *testing.F) {
	for _, s := range []string{"github:acme/app#12", "jira:OPS-7", "github:", ":x", "acme/app#1", "github:acme/app#",
		"github:ACME/App#3", "jira:OPS-", "gitlab:a/b/c#1", "github:acme/app#1#2", "github:acme/app-1"} {
		f.Add(s)
	}
	a := &app{cfg: &config.Config{Projects: []config.Project{
		{Name: "app", Platform: "github", Repo: "acme/app"}, {Name: "ops", Platform: "jira", Repo: "OPS"}}}}
	f.Fuzz(func(t *testing.T, arg string) {
		ref, err := a.ticket(arg, "")
		if err != nil {
			return
		}
		if ref.Platform+":"+ref.ID != arg || ref.Project == "" {
			t.Fatalf("ticket(%q) = %+v", arg, ref)
		}
		pc, _ := a.cfg.Project(ref.Project)
		if pc.Platform != ref.Platform || !strings.EqualFold(locatorOf(ref.ID), pc.Repo) {
			t.Fatalf("ticket(%q) bound to %s (%s %s)", arg, ref.Project, pc.Platform, pc.Repo)
		}
	})
}

func FuzzParseSince(f *testing.F) {
	for _, s := range []string{"24h", "7d", "0d", "-1h", "1.5h", "d", "99999999999999999d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := parseSince(s); err == nil && d <= 0 {
			t.Fatalf("parseSince(%q) = %s", s, d)
		}
	})
}

// A ticket whose project key no key-bound Jira project has belongs to the
// site's JQL scope, when there is exactly one; with two, --project says.
func TestTicketOfAJQLScope(t *testing.T) {
	t.Parallel()
	ops := config.Project{Name: "ops", Platform: "jira", Repo: "OPS"}
	pay := config.Project{Name: "payments", Platform: "jira", Jira: config.Jira{JQL: "component = Payments"}}
	a := &app{cfg: &config.Config{Projects: []config.Project{ops, pay}}}
	for arg, want := range map[string]string{"jira:OPS-7": "ops", "jira:PAY-3": "payments"} {
		if ref, err := a.ticket(arg, ""); err != nil || ref.Project != want {
			t.Errorf("ticket(%q) = %+v, %v; want project %s", arg, ref, err, want)
		}
	}
	second := config.Project{Name: "search", Platform: "jira", Jira: config.Jira{JQL: "component = Search"}}
	a.cfg.Projects = append(a.cfg.Projects, second)
	if ref, err := a.ticket("jira:PAY-3", ""); err == nil {
		t.Errorf("two scopes: ticket bound to %s without --project", ref.Project)
	}
}
