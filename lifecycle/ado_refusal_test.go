package lifecycle_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/metrics"
	"github.com/agentsmithd/agentsmithd/lifecycle/poller"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	adoRepo  = "org1/proj"
	adoToken = "ado-stakeholder-pat"
	// adoPatch is the sim's Work Items - Update route, the tracker's only
	// label write.
	adoPatch = "PATCH /ado/{org}/{project}/_apis/wit/workItems/{id}"
)

// refusalWorld is one project on trackersim, read and written by the real
// tracker (here Azure DevOps, azure-devops-go-api; newJiraWorld: go-jira),
// with a poller on an injected clock.
type refusalWorld struct {
	sim     *trackersim.Sim
	poller  *poller.Poller
	clock   *trackerhttptest.Clock
	metrics *metrics.Metrics
	labels  lifecycle.Labels
	// write is the sim's route of the tracker's label write.
	write string
}

func newADOWorld(t *testing.T, access trackersim.Access) *refusalWorld {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	s := trackersim.New(trackersim.Options{Tokens: []string{adoToken}})
	t.Cleanup(s.Close)
	s.SetAccess(adoToken, access)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.CreateRepo(adoRepo)
	tr, err := azuredevops.New(azuredevops.Options{BaseURL: srv.URL + "/ado/", Repo: adoRepo, Project: "p", Token: adoToken, Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	projects := lifecycle.Projects{"p": {Name: "p", Platform: azuredevops.Platform, Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}}
	w := &refusalWorld{sim: s, clock: trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		metrics: metrics.New(metrics.Config{}), labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}, write: adoPatch}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{Instance: "test",
		Labels: w.labels, Clock: w.clock.Now, Logger: zaptest.NewLogger(t), Observer: w.metrics})
	w.poller = poller.NewPoller(claims, zaptest.NewLogger(t))
	return w
}

// pollMinutes polls once a minute for minutes+1 cycles and returns the
// minutes at which the tracker was asked to write the ticket.
func (w *refusalWorld) pollMinutes(t *testing.T, minutes int) []int {
	t.Helper()
	var wroteAt []int
	for minute := 0; minute <= minutes; minute++ {
		before := w.sim.Stats().Calls[w.write]
		if _, err := w.poller.PollOnce(t.Context(), "p"); err != nil {
			t.Errorf("minute %d: poll failed: %v (a refusal for good is an outcome, not an error)", minute, err)
		}
		if w.sim.Stats().Calls[w.write] != before {
			wroteAt = append(wroteAt, minute)
		}
		w.clock.Advance(time.Minute)
	}
	return wroteAt
}

// An identity that may not create tags (a Stakeholder, or one without
// Create tag definition) claiming a ticket in a project that does not
// define the lifecycle tags yet is refused 403 TF401289. The ticket is
// told once, with the cause and how to pre-create the tags, and backs off
// (written at minutes 0, 5 and 15 of 31 one-minute polls) instead of
// being refused every cycle. Once the tags exist, the next change of the
// ticket has it claimed.
func TestADOStakeholderClaimWithoutLifecycleTags(t *testing.T) {
	w := newADOWorld(t, trackersim.Access{Login: "stakeholder-bot", CannotCreateTags: true})
	n := w.sim.CreateIssue(adoRepo, "needs a run", "", "agent-smith")
	if wroteAt := w.pollMinutes(t, 30); !slices.Equal(wroteAt, []int{0, 5, 15}) {
		t.Errorf("work item writes at minutes %v, want [0 5 15]", wroteAt)
	}
	is, _ := w.sim.Issue(adoRepo, n)
	if len(is.Comments) != 1 {
		t.Fatalf("%d comments, want 1: %+v", len(is.Comments), is.Comments)
	}
	body := is.Comments[0].Body
	for _, want := range []string{"HTTP 403", "TF401289", "Create tag definition", "pre-create the tags", "Basic access", `"agent-smith:enqueued"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment does not say %q:\n%s", want, body)
		}
	}
	if got := refusalsCounted(t, w.metrics); got != 3 {
		t.Errorf("agentsmith_tracker_refusals_total = %v, want 3", got)
	}
	if st := w.labels.StateOf(is.Labels); st != lifecycle.Pending || slices.ContainsFunc(is.Labels, w.labels.IsLifecycle) {
		t.Errorf("labels %q, want no lifecycle tag written", is.Labels)
	}

	// The tags are pre-created and a person touches the ticket: claimed at
	// the next cycle, without another comment.
	if err := w.sim.DefineTags(adoRepo, lifecycleTags(w.labels)...); err != nil {
		t.Fatal(err)
	}
	if err := w.sim.AddLabels(adoRepo, n, "ready"); err != nil {
		t.Fatal(err)
	}
	if claimed, err := w.poller.PollOnce(t.Context(), "p"); err != nil || claimed != 1 {
		t.Fatalf("after pre-creating the tags: claimed %d, %v; want 1", claimed, err)
	}
	is, _ = w.sim.Issue(adoRepo, n)
	if st := w.labels.StateOf(is.Labels); st != lifecycle.Enqueued || len(is.Comments) != 1 {
		t.Errorf("state %s with %d comments, want enqueued and still 1 comment", st, len(is.Comments))
	}
}

// The same identity claims at once in a project that defines the
// lifecycle tags: adding an existing tag is every member's right.
func TestADOStakeholderClaimWithPreCreatedTags(t *testing.T) {
	w := newADOWorld(t, trackersim.Access{Login: "stakeholder-bot", CannotCreateTags: true})
	if err := w.sim.DefineTags(adoRepo, lifecycleTags(w.labels)...); err != nil {
		t.Fatal(err)
	}
	n := w.sim.CreateIssue(adoRepo, "needs a run", "", "agent-smith")
	if claimed, err := w.poller.PollOnce(t.Context(), "p"); err != nil || claimed != 1 {
		t.Fatalf("claimed %d, %v; want 1", claimed, err)
	}
	is, _ := w.sim.Issue(adoRepo, n)
	if st := w.labels.StateOf(is.Labels); st != lifecycle.Enqueued || len(is.Comments) != 0 {
		t.Errorf("state %s with comments %+v, want enqueued and none", st, is.Comments)
	}
}

// A work item that breaks a rule on another field (a required field left
// empty) refuses the tags-only claim with 400 TF401320: a refusal for
// good, told once with the field's name and the fix, then backed off.
func TestADOClaimRefusedByAnotherFieldsRule(t *testing.T) {
	w := newADOWorld(t, trackersim.Access{Login: "basic-bot"})
	n := w.sim.CreateIssue(adoRepo, "needs a run", "", "agent-smith")
	w.sim.BreakRequiredField(adoRepo, n, "Microsoft.VSTS.Common.Activity")
	if wroteAt := w.pollMinutes(t, 6); !slices.Equal(wroteAt, []int{0, 5}) {
		t.Errorf("work item writes at minutes %v, want [0 5]", wroteAt)
	}
	is, _ := w.sim.Issue(adoRepo, n)
	if len(is.Comments) != 1 {
		t.Fatalf("%d comments, want 1: %+v", len(is.Comments), is.Comments)
	}
	body := is.Comments[0].Body
	for _, want := range []string{"HTTP 400", "TF401320: Rule Error for field Activity", "`Microsoft.VSTS.Common.Activity`", "set that field"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment does not say %q:\n%s", want, body)
		}
	}
	w.sim.BreakRequiredField(adoRepo, n, "")
	if err := w.sim.AddLabels(adoRepo, n, "fixed"); err != nil {
		t.Fatal(err)
	}
	if claimed, err := w.poller.PollOnce(t.Context(), "p"); err != nil || claimed != 1 {
		t.Errorf("after the fix: claimed %d, %v; want 1", claimed, err)
	}
}

// lifecycleTags are the five lifecycle tags.
func lifecycleTags(l lifecycle.Labels) []string {
	var out []string
	for _, s := range lifecycle.AllStates {
		out = append(out, l.Label(s))
	}
	return out
}

var _ platforms.Tracker = (*azuredevops.Tracker)(nil)
