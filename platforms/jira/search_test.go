package jira_test

import (
	"context"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// ListAcross finds the labelled open issues of every project of the site
// with one search (both deployments' search APIs, both pages of 100), with
// keys Covers assigns to the right tracker; none of closed or unlabelled
// issues. Another account on the same site is another scope.
func TestListAcrossSearchesTheSite(t *testing.T) {
	for _, c := range []struct{ deployment, email, searchCall string }{
		{jira.DeploymentCloud, "bot@example.com", "POST /jira/rest/api/{v}/search/jql"},
		{jira.DeploymentDataCenter, "", "GET /jira/rest/api/{v}/search"},
	} {
		t.Run(c.deployment, func(t *testing.T) {
			s, url := newSim(t)
			locker := redisLocker{rdb: redistest.Start(t).Client(t)}
			s.SetJiraSearchLag(0)
			newTracker := func(key, token string) *jira.Tracker {
				s.CreateRepo(key)
				tr, err := jira.New(jira.Options{BaseURL: url + "/jira/", Repo: key, Token: token, Email: c.email, Deployment: c.deployment, Locker: locker})
				if err != nil {
					t.Fatal(err)
				}
				return tr
			}
			ops, web, other := newTracker("OPS", simToken), newTracker("WEB", simToken), newTracker("OTH", "another-token")
			if ops.SearchScope() != web.SearchScope() || ops.SearchScope() == other.SearchScope() {
				t.Fatalf("scopes ops=%v web=%v other=%v: want ops and web equal, other apart", ops.SearchScope(), web.SearchScope(), other.SearchScope())
			}
			const label = "agent-smith:in-progress"
			want := map[string]bool{}
			for i := range 150 {
				key := []string{"OPS", "WEB"}[i%2]
				want[jira.FormatID(key, s.CreateIssue(key, "hit", "", label))] = true
			}
			s.CreateIssue("OPS", "unlabelled", "")
			closed := s.CreateIssue("WEB", "closed", "", label)
			if err := s.SetOpen("WEB", closed, false); err != nil {
				t.Fatal(err)
			}
			before := s.Stats().Calls[c.searchCall]
			got, err := ops.ListAcross(context.Background(), ops.SearchScope(), label)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("ListAcross found %d issues, want %d (both pages)", len(got), len(want))
			}
			for _, tk := range got {
				if !want[tk.Ref.ID] {
					t.Errorf("unexpected hit %s", tk.Ref.ID)
				}
				if ops.Covers(tk.Ref) == web.Covers(tk.Ref) || other.Covers(tk.Ref) {
					t.Errorf("%s: covered by ops=%v web=%v other=%v, want exactly one of ops, web", tk.Ref.ID, ops.Covers(tk.Ref), web.Covers(tk.Ref), other.Covers(tk.Ref))
				}
			}
			if n := s.Stats().Calls[c.searchCall] - before; n != 2 {
				t.Errorf("%d searches, want 2 (150 hits, 100 a page)", n)
			}
		})
	}
}
