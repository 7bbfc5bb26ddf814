package azuredevops_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	orgWiql  = "POST /ado/{org}/_apis/wit/wiql"
	orgBatch = "POST /ado/{org}/_apis/wit/workItemsBatch"
)

func newOrgSim(t *testing.T) (*trackersim.Sim, string) {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{"tok", "other"}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL + "/ado/"
}

func newADO(t *testing.T, base, repo, token string) *azuredevops.Tracker {
	t.Helper()
	tr, err := azuredevops.New(azuredevops.Options{BaseURL: base, Repo: repo, Project: repo, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// ListAcross finds the tagged open work items of every project of the
// organisation with one organisation-level WIQL query and batch reads of
// 200, ids unique across projects as Azure DevOps numbers them, each placed
// in its project by System.TeamProject; closed and untagged items are left
// out. Another token is another scope.
func TestListAcrossQueriesTheOrganisation(t *testing.T) {
	s, base := newOrgSim(t)
	s.NumberWorkItemsPerOrganisation("acmeorg")
	for _, p := range []string{"acmeorg/Web", "acmeorg/Ops", "acmeorg/Unconfigured"} {
		s.CreateRepo(p)
	}
	web, ops, other := newADO(t, base, "acmeorg/Web", "tok"), newADO(t, base, "acmeorg/Ops", "tok"), newADO(t, base, "acmeorg/Ops", "other")
	if web.SearchScope() != ops.SearchScope() || web.SearchScope() == other.SearchScope() {
		t.Fatalf("scopes web=%v ops=%v other=%v", web.SearchScope(), ops.SearchScope(), other.SearchScope())
	}
	const label = "agent-smith:in-progress"
	want := map[string]bool{}
	for i := range 250 {
		repo := []string{"acmeorg/Web", "acmeorg/Ops", "acmeorg/Unconfigured"}[i%3]
		want[azuredevops.FormatID(azuredevops.Locator("acmeorg", repo[len("acmeorg/"):]), s.CreateIssue(repo, "hit", "", label))] = true
	}
	s.CreateIssue("acmeorg/Web", "untagged", "")
	closed := s.CreateIssue("acmeorg/Ops", "closed", "", label)
	if err := s.SetOpen("acmeorg/Ops", closed, false); err != nil {
		t.Fatal(err)
	}
	before := s.Stats()
	got, err := web.ListAcross(context.Background(), web.SearchScope(), label)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("ListAcross found %d work items, want %d", len(got), len(want))
	}
	covered := map[string]int{}
	for _, tk := range got {
		if !want[tk.Ref.ID] {
			t.Errorf("unexpected hit %s", tk.Ref.ID)
		}
		switch {
		case web.Covers(tk.Ref) && !ops.Covers(tk.Ref):
			covered["web"]++
		case ops.Covers(tk.Ref) && !web.Covers(tk.Ref):
			covered["ops"]++
		case !web.Covers(tk.Ref) && !ops.Covers(tk.Ref):
			covered["neither"]++
		default:
			t.Errorf("%s covered by both", tk.Ref.ID)
		}
	}
	if covered["web"] != 84 || covered["ops"] != 83 || covered["neither"] != 83 {
		t.Errorf("covered %v, want web 84, ops 83, neither 83", covered)
	}
	after := s.Stats()
	if n := after.Calls[orgWiql] - before.Calls[orgWiql]; n != 1 {
		t.Errorf("%d organisation queries, want 1", n)
	}
	if n := after.Calls[orgBatch] - before.Calls[orgBatch]; n != 2 {
		t.Errorf("%d organisation batch reads, want 2 (250 ids, 200 a batch)", n)
	}
	if _, err := web.ListAcross(context.Background(), other.SearchScope(), label); err == nil {
		t.Error("ListAcross with another token's scope succeeded")
	}
}

// trackersim refuses organisation-level reads of an organisation it numbers
// per project (ids would collide, which Azure DevOps never allows), so no
// test passes on a cross-project read the service could not give; the
// refusal is one the housekeeping falls back from (ErrRejected).
func TestOrganisationReadsNeedOrganisationNumbering(t *testing.T) {
	s, base := newOrgSim(t)
	s.CreateRepo("acmeorg/Web")
	s.CreateIssue("acmeorg/Web", "hit", "", "x")
	web := newADO(t, base, "acmeorg/Web", "tok")
	_, err := web.ListAcross(context.Background(), web.SearchScope(), "x")
	if !errors.Is(err, platforms.ErrRejected) {
		t.Fatalf("ListAcross on a per-project numbered organisation: %v, want ErrRejected", err)
	}
}
