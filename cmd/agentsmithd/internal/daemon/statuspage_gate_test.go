package daemon_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// The status page's reject and approve buttons decide a parked ticket
// through the ApprovalGate as the page's operator, behind the session, its
// CSRF token and a same-origin POST: a press without them changes
// nothing, a reject without a reason is not carried out, a reject with one
// re-runs plan with the review, an approve runs the rest to Done.
func TestStatusPageApprovesAndRejects(t *testing.T) {
	e := newEnv(t)
	script := filepath.Join(e.dir, "gated.sh")
	if err := os.WriteFile(script, []byte(gatedScript), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("      stages:\n")
	for _, s := range threeStages {
		gate := ""
		if s == "implement" {
			gate = ", gate: {approval: {approvers: {access: none, users: [dana]}}}"
		}
		fmt.Fprintf(&b, "        - {name: %s, command: [sh, %q]%s}\n", s, script, gate)
	}
	cfg, err := config.Parse([]byte(e.withPipeline("replica-a", b.String())), lookupEnv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	d := e.startDaemon(cfg)
	n := e.sim.CreateIssue(e.repo, "Gate me from the page", "", "agent-smith")
	ticket := fmt.Sprintf("github:%s#%d", e.repo, n)
	e.waitState(n, 60*time.Second, lifecycle.AwaitingApproval)

	op := newAdminClient(t, d)
	if code, _ := op.do(http.MethodPost, "/status/login", url.Values{"token": {d.StatusToken()}}, "Origin", op.base); code != http.StatusSeeOther {
		t.Fatalf("login = %d, want 303", code)
	}
	var page string
	listed := fmt.Sprintf(`<tr data-ticket="%s">`, ticket)
	eventually.Wait(t, 10*time.Second, "the page to list the ticket awaiting approval, with approve and reject", func() bool {
		_, page = op.do(http.MethodGet, "/status", nil)
		return strings.Contains(page, listed) && strings.Contains(page, fmt.Sprintf(`data-action="approve" data-target="%s"`, ticket)) &&
			strings.Contains(page, fmt.Sprintf(`data-action="reject" data-target="%s"`, ticket))
	})
	if !strings.Contains(page, "<td>implement</td>") {
		t.Error("the awaiting table does not name the stage awaited, implement")
	}
	press := func(form url.Values, hdr ...string) (int, string) {
		t.Helper()
		form.Set("project", "app")
		form.Set("ticket", ticket)
		code, _ := op.do(http.MethodPost, "/status/action", form, hdr...)
		_, after := op.do(http.MethodGet, "/status", nil)
		return code, after
	}
	token := csrf(page)
	// Without the CSRF token, or from a tool naming no origin: 403.
	if code, _ := press(url.Values{"action": {"approve"}}, "Origin", op.base); code != http.StatusForbidden {
		t.Errorf("approve without CSRF = %d, want 403", code)
	}
	if code, _ := press(url.Values{"action": {"approve"}, "csrf": {token}}); code != http.StatusForbidden {
		t.Errorf("approve without an origin = %d, want 403", code)
	}
	if _, after := press(url.Values{"action": {"reject"}, "csrf": {token}}, "Origin", op.base); !strings.Contains(after, "not rejected") {
		t.Errorf("reject without a reason: page lacks the refusal")
	}
	if s := e.state(n); s != lifecycle.AwaitingApproval {
		t.Fatalf("after refused presses: %s, want awaiting-approval", s)
	}

	_, after := press(url.Values{"action": {"reject"}, "csrf": {token}, "reason": {"add a rollback step"}}, "Origin", op.base)
	if !strings.Contains(after, "rejected "+ticket) || !strings.Contains(after, statuspage.OperatorActor) {
		t.Errorf("page after reject lacks the flash naming %s", statuspage.OperatorActor)
	}
	eventually.Wait(t, 60*time.Second, "plan to run again and park", func() bool {
		return len(e.runLines("gated", n)) == 2 && e.state(n) == lifecycle.AwaitingApproval
	})
	press(url.Values{"action": {"approve"}, "csrf": {token}}, "Origin", op.base)
	e.waitState(n, 60*time.Second, lifecycle.Done)
	if _, page := op.do(http.MethodGet, "/status", nil); strings.Contains(page, listed) {
		t.Error("the page still lists the ticket as awaiting approval after its approval")
	}
	want := []string{"plan review=", "plan review=add a rollback step", "implement review=", "test review="}
	if got := e.runLines("gated", n); !slices.Equal(got, want) {
		t.Errorf("stage runs %q, want %q", got, want)
	}
	if got := e.commentsWith(n, "approved by "+statuspage.OperatorActor); got != 1 {
		t.Errorf("%d approval replies naming %s, want 1", got, statuspage.OperatorActor)
	}
}
