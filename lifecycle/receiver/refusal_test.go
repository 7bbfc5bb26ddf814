package receiver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const refusalSecret = "refusal-secret"

// sentDelivery is one webhook request the sim sent.
type sentDelivery struct {
	header http.Header
	body   []byte
}

// A label write GitHub refuses for good (403 "Resource not accessible by
// integration") is an answer, not a failure: the delivery is answered 2xx
// (GitLab counts failed deliveries towards disabling the hook, Jira
// redelivers), the ticket gets one comment naming the cause, and the next
// delivery of the unchanged ticket makes no tracker call at all. A change
// of the ticket is tried again, and told nothing new.
func TestWebhookClaimRefusedForGoodAnswers2xxAndTellsOnce(t *testing.T) {
	w := lifecycletest.New(t, 3)
	ctx := t.Context()
	routes := []receiver.Route{{Platform: github.Platform, Decoder: github.Webhooks{}, Projects: []receiver.ProjectRoute{
		{Name: lifecycletest.Project, Locator: lifecycletest.Repo, Secrets: [][]byte{[]byte(refusalSecret)}}}}}
	h := receiver.New(w.RDB, w.Claims, routes, receiver.Config{}).Handler()
	var mu sync.Mutex
	var seen []sentDelivery
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, sentDelivery{r.Header.Clone(), body})
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	w.Sim.AddHook(trackersim.Hook{Repo: lifecycletest.Repo, URL: srv.URL + "/webhooks/github", Secret: refusalSecret})

	// A new issue with the trigger label: GitHub sends issues/opened and
	// issues/labeled, two deliveries of the same ticket in the same state.
	n := w.RefusedIssue(t)
	if err := w.Sim.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st := w.Sim.Stats()
	if st.DeliveryFailures != 0 {
		t.Errorf("%d of %d deliveries answered non-2xx; a refusal for good must be answered 2xx", st.DeliveryFailures, st.Deliveries)
	}
	mu.Lock()
	issueEvents := 0
	for _, d := range seen {
		if d.header.Get(github.HeaderEvent) == "issues" {
			issueEvents++
		}
	}
	mu.Unlock()
	if issueEvents != 2 {
		t.Fatalf("%d issues deliveries, want 2 (opened, labeled)", issueEvents)
	}
	if got := st.Calls[lifecycletest.GitHubLabelWrite]; got != 1 {
		t.Errorf("%d label writes, want 1: the second delivery of the unchanged ticket must not write", got)
	}
	if got := st.Calls["GET /repos/{owner}/{repo}/issues/{number}"]; got != 1 {
		t.Errorf("%d reads of the ticket, want 1: the second delivery of the unchanged ticket must not call the tracker", got)
	}
	is, _ := w.Sim.Issue(lifecycletest.Repo, n)
	if len(is.Comments) != 1 || !strings.Contains(is.Comments[0].Body, "403") || !strings.Contains(is.Comments[0].Body, "Resource not accessible") {
		t.Fatalf("comments %+v, want one naming the 403 and the tracker's message", is.Comments)
	}
	if s := w.State(t, n); s != lifecycle.Pending {
		t.Errorf("state %s, want pending", s)
	}

	// A person changes the ticket: it is tried again (refused again, the
	// same cause: no second comment).
	writes := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]
	if err := w.Sim.AddLabels(lifecycletest.Repo, n, "needs-review"); err != nil {
		t.Fatal(err)
	}
	if err := w.Sim.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := w.Sim.Stats().Calls[lifecycletest.GitHubLabelWrite]; got != writes+1 {
		t.Errorf("after the ticket changed: %d label writes, want 1", got-writes)
	}
	if is, _ := w.Sim.Issue(lifecycletest.Repo, n); len(is.Comments) != 1 {
		t.Errorf("%d comments, want still 1 (the same cause is told once)", len(is.Comments))
	}
	if st := w.Sim.Stats(); st.DeliveryFailures != 0 {
		t.Errorf("%d deliveries answered non-2xx", st.DeliveryFailures)
	}
}
