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
	"github.com/agentsmithd/agentsmithd/pkg/redislock"
	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp/trackerhttptest"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const (
	jiraProjectKey = "PROJ"
	// jiraEdit is the sim's Edit issue route, the tracker's only label
	// write; jiraEditMeta is the editmeta read that explains a refusal.
	jiraEdit     = "PUT /jira/rest/api/{v}/issue/{key}"
	jiraEditMeta = "GET /jira/rest/api/{v}/issue/{key}/editmeta"
)

// newJiraWorld is one Jira Cloud project on trackersim, read and written
// by the real tracker (go-jira), with a poller; the sim and the daemon
// share one injected clock, so the sim's search lag passes with it.
func newJiraWorld(t *testing.T) *refusalWorld {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	clock := trackerhttptest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s := trackersim.New(trackersim.Options{Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := jira.New(jira.Options{BaseURL: srv.URL + "/jira/", Repo: jiraProjectKey, Project: "p", Token: "t",
		Email: "bot@example.com", Locker: redislock.Locker{RDB: rdb}, Clock: clock.Now, Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	projects := lifecycle.Projects{"p": {Name: "p", Platform: jira.Platform, Tracker: tr, TriggerLabel: "agent-smith",
		Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 3}}}
	w := &refusalWorld{sim: s, clock: clock, metrics: metrics.New(metrics.Config{}),
		labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}, write: jiraEdit}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{Instance: "test",
		Labels: w.labels, Clock: clock.Now, Logger: zaptest.NewLogger(t), Observer: w.metrics})
	w.poller = poller.NewPoller(claims, zaptest.NewLogger(t))
	return w
}

// A claim in a project whose Edit screen lacks Labels is refused 400
// "Field 'labels' cannot be set. It is not on the appropriate screen".
// The ticket is told once, with the cause (the issue's editmeta lists
// fields but not labels: the screen) and where to put Labels, and backs
// off (label edits at minutes 0, 5 and 15 of 31 one-minute polls) instead
// of being refused every cycle. With Labels on the screen, the next change
// of the ticket has it claimed.
func TestJiraClaimWithoutLabelsOnEditScreen(t *testing.T) {
	w := newJiraWorld(t)
	w.sim.SetJiraLabelsOnEditScreen(jiraProjectKey, "Task", false)
	n := w.sim.CreateIssue(jiraProjectKey, "needs a run", "", "agent-smith")
	w.clock.Advance(time.Minute) // past the sim's search lag
	if wroteAt := w.pollMinutes(t, 30); !slices.Equal(wroteAt, []int{0, 5, 15}) {
		t.Errorf("label edits at minutes %v, want [0 5 15]", wroteAt)
	}
	if got := w.sim.Stats().Calls[jiraEditMeta]; got != 3 {
		t.Errorf("%d editmeta reads, want 3 (one per refusal)", got)
	}
	is, _ := w.sim.Issue(jiraProjectKey, n)
	if len(is.Comments) != 1 {
		t.Fatalf("%d comments, want 1: %+v", len(is.Comments), is.Comments)
	}
	body := is.Comments[0].Body
	for _, want := range []string{"HTTP 400", "Field 'labels' cannot be set. It is not on the appropriate screen",
		"lacks the Labels field", "put Labels on it", "Project settings → Screens"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment does not say %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "jira.issue.editable") {
		t.Errorf("the comment blames the status, whose editmeta lists fields:\n%s", body)
	}
	if got := refusalsCounted(t, w.metrics); got != 3 {
		t.Errorf("agentsmith_tracker_refusals_total = %v, want 3", got)
	}
	if slices.ContainsFunc(is.Labels, w.labels.IsLifecycle) {
		t.Errorf("labels %q, want no lifecycle label written", is.Labels)
	}

	// Labels goes on the screen and a person touches the ticket: claimed
	// at the next cycle, without another comment.
	w.sim.SetJiraLabelsOnEditScreen(jiraProjectKey, "Task", true)
	if err := w.sim.AddLabels(jiraProjectKey, n, "ready"); err != nil {
		t.Fatal(err)
	}
	w.clock.Advance(time.Minute)
	if claimed, err := w.poller.PollOnce(t.Context(), "p"); err != nil || claimed != 1 {
		t.Fatalf("with Labels on the screen: claimed %d, %v; want 1", claimed, err)
	}
	is, _ = w.sim.Issue(jiraProjectKey, n)
	if st := w.labels.StateOf(is.Labels); st != lifecycle.Enqueued || len(is.Comments) != 1 {
		t.Errorf("state %s with %d comments, want enqueued and still 1 comment", st, len(is.Comments))
	}
}

// A claim of an issue in a status with jira.issue.editable=false is
// refused with the same 400; its editmeta lists no field, so the ticket is
// told the status is the cause, not the screen.
func TestJiraClaimInNonEditableStatus(t *testing.T) {
	w := newJiraWorld(t)
	w.sim.SetJiraStatusEditable(jiraProjectKey, "To Do", false)
	n := w.sim.CreateIssue(jiraProjectKey, "needs a run", "", "agent-smith")
	w.clock.Advance(time.Minute)
	if wroteAt := w.pollMinutes(t, 6); !slices.Equal(wroteAt, []int{0, 5}) {
		t.Errorf("label edits at minutes %v, want [0 5]", wroteAt)
	}
	is, _ := w.sim.Issue(jiraProjectKey, n)
	if len(is.Comments) != 1 {
		t.Fatalf("%d comments, want 1: %+v", len(is.Comments), is.Comments)
	}
	body := is.Comments[0].Body
	for _, want := range []string{"HTTP 400", "jira.issue.editable is false", "move the issue to an editable status"} {
		if !strings.Contains(body, want) {
			t.Errorf("the comment does not say %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "lacks the Labels field") {
		t.Errorf("the comment blames the screen, though editmeta lists no field:\n%s", body)
	}
}
