package azuredevops_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// Azure DevOps Services answers a wrong or expired PAT on a GET with 203
// and an HTML sign-in page (trackersim does the same). That is an
// authentication failure: a read through azure-devops-go-api is a
// permanent rejection with the status 401, not a JSON syntax error to
// retry forever, and Check names the PAT as the cause.
func TestWrongPATIsRefusedNotRetried(t *testing.T) {
	s := trackersim.New(trackersim.Options{Tokens: []string{simToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	n := s.CreateIssue("acme/web", "a work item", "", "agent-smith")
	newTracker := func(token string) *azuredevops.Tracker {
		tr, err := azuredevops.New(azuredevops.Options{BaseURL: srv.URL + "/ado/", Repo: "acme/web", Project: "web", Token: token})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	ctx := context.Background()
	good, bad := newTracker(simToken), newTracker("expired-pat")
	ref := platforms.Ref{Platform: azuredevops.Platform, ID: azuredevops.FormatID(good.Locator(), n)}
	if _, err := good.Get(ctx, ref); err != nil {
		t.Fatalf("Get with the right PAT: %v", err)
	}

	_, err := bad.Get(ctx, ref)
	if !errors.Is(err, platforms.ErrRejected) || !strings.Contains(err.Error(), "401") {
		t.Errorf("Get with a wrong PAT = %v; want a rejection (401), never a retry", err)
	}
	if _, err := bad.ListOpen(ctx, "agent-smith"); !errors.Is(err, platforms.ErrRejected) {
		t.Errorf("ListOpen with a wrong PAT = %v; want a rejection", err)
	}

	res := bad.Check(ctx, platforms.CheckOptions{TriggerLabel: "agent-smith"})
	if len(res) == 0 || res[0].Name != "auth" || res[0].Status != platforms.CheckFail || !strings.Contains(res[0].Detail, "401") || !strings.Contains(res[0].Fix, "PAT") {
		t.Errorf("Check with a wrong PAT = %+v; want the auth check failing on the PAT", res)
	}
}
