package statuspage

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/gate"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// The cancel button on a parked ticket fails it at once through the
// ApprovalGate as the page's operator: Failed, one comment naming
// OperatorActor, no cancel request left for a run that does not exist.
func TestCancelButtonFailsParkedTicket(t *testing.T) {
	w := lifecycletest.New(t, 1)
	p := w.Projects[lifecycletest.Project]
	p.Stages = []lifecycle.Stage{{Name: "plan"}, {Name: "implement", Gate: &lifecycle.Gate{Approval: &lifecycle.Approval{
		Approvers: lifecycle.TriggerAllow{Users: []string{"dana"}}, MaxRejections: 2}}}}
	sl := p.Labels(w.Labels)
	n := w.Sim.CreateIssue(lifecycletest.Repo, "parked", "", "agent-smith", sl.Label(lifecycle.AwaitingApproval), sl.Stage("implement"))
	ref := lifecycletest.Ref(n)
	h := New(Config{RDB: w.RDB, Projects: w.Projects, Instance: "replica-a", Token: "s3cret", Claims: w.Claims, Queue: w.Queue,
		Gate: gate.New(w.RDB, w.Claims, w.Queue, gate.Config{Instance: "replica-a"})})
	b := &browserSim{t: t, h: h, cookies: map[string]*http.Cookie{}}
	same := map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}
	b.do("POST", "/status/login", url.Values{"token": {"s3cret"}}, same)
	m := csrfField.FindStringSubmatch(b.do("GET", "/status", nil, nil).Body.String())
	if m == nil {
		t.Fatal("no CSRF field in the page")
	}
	form := url.Values{"csrf": {html.UnescapeString(m[1])}, "action": {"cancel"}, "project": {lifecycletest.Project}, "ticket": {ref.String()}}
	if rec := b.do("POST", "/status/action", form, same); rec.Code != http.StatusSeeOther {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	if body := b.do("GET", "/status", nil, nil).Body.String(); !strings.Contains(body, "cancelled "+html.EscapeString(ref.String())) {
		t.Errorf("page after cancel lacks the flash:\n%s", body)
	}
	if s := w.State(t, n); s != lifecycle.Failed {
		t.Errorf("state %s after cancel, want failed", s)
	}
	comments := w.Comments(t, n)
	if len(comments) != 1 || !strings.Contains(comments[0], "cancelled by "+OperatorActor) {
		t.Errorf("comments %q, want one naming %s", comments, OperatorActor)
	}
	if v, err := w.RDB.Exists(t.Context(), keys.Cancel(ref.Key())).Result(); err != nil || v != 0 {
		t.Errorf("cancel request left for a parked ticket (%d, %v)", v, err)
	}
}
