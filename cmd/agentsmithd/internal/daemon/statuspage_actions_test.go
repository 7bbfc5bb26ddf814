package daemon_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// The status page's buttons in a real browser against a real daemon,
// Redis and trackersim: pause keeps a claimed ticket Enqueued with its one
// request put aside, requeue finds it queued, resume runs it, cancel fails
// it, retry runs it again; a form posted from another origin is refused.
func TestStatusPageActionsInChromium(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "status: {token_env: E2E_STATUS_TOKEN}\n"))
	base := "http://" + d.AdminAddr()
	rdb := e.redis.Client(t)
	loginInChromium(t, ctx, base)

	// press clicks an action button and waits for the page it leads to,
	// whose flash message must contain want.
	press := func(action, target, want string) {
		t.Helper()
		sel := fmt.Sprintf(`button[data-action=%q][data-target=%q]`, action, target)
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel)), chromedp.Click(chromedp.CSS(sel))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("chromium: press %s %s: %v\npage:\n%s", action, target, err, body)
		}
		waitText(t, ctx, "#flash", want)
	}

	press("pause", "app", "paused app")
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 1 {
		t.Fatal("pause button set no pause key")
	}
	n := e.sim.CreateIssue(repo, "hold: act on me from the status page", "", "agent-smith")
	ticket := fmt.Sprintf("github:%s#%d", repo, n)
	e.waitState(n, 20*time.Second, lifecycle.Enqueued)
	// The page (refreshing itself) shows the ticket waiting for the pause.
	waitText(t, ctx, "#tickets", ticket+"\tapp\t")
	waitText(t, ctx, "#tickets", "waiting: project paused")
	if s := e.state(n); s != lifecycle.Enqueued || len(e.starts(n)) != 0 {
		t.Fatalf("paused project's ticket: %s, starts %q", s, e.starts(n))
	}
	// requeue: the request is put aside, not lost, so the page offers no
	// requeue for the ticket and nothing is pushed.
	offered, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(
		`document.querySelector('button[data-action="requeue"][data-target=%q]') !== null`, ticket)))
	if err != nil {
		t.Fatal(err)
	}
	if offered {
		t.Fatalf("the page offers requeue for %s, whose request is queued", ticket)
	}
	requests := func() int {
		q, _ := rdb.LRange(t.Context(), keys.Queue(), 0, -1).Result()
		dl, _ := rdb.ZRange(t.Context(), keys.Delayed(), 0, -1).Result()
		c := 0
		for _, v := range append(q, dl...) {
			if r, err := lifecycle.DecodeRequest([]byte(v)); err == nil && r.Ref.String() == ticket {
				c++
			}
		}
		return c
	}
	if c := requests(); c != 1 {
		t.Fatalf("%d requests for the paused ticket, want 1", c)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := screenshotPath(t, "status-page-actions.png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("status page screenshot: %s", path)

	// resume: the ticket runs (held by its pipeline) at once, not after the
	// pause delay.
	press("resume", "app", "resumed app")
	e.waitState(n, 10*time.Second, lifecycle.InProgress)
	// cancel: the run stops and the ticket fails with the page's cause.
	press("cancel", ticket, "cancel requested for "+ticket)
	e.waitState(n, 20*time.Second, lifecycle.Failed)
	is, _ := e.sim.Issue(repo, n)
	if len(is.Comments) == 0 || !strings.Contains(is.Comments[len(is.Comments)-1].Body, statuspage.CancelCause) {
		t.Errorf("comments after cancel: %+v", is.Comments)
	}
	eventually.Wait(t, 10*time.Second, "the cancelled run to be released", func() bool {
		n, _ := rdb.Exists(t.Context(), keys.Heartbeat("github:"+e.pc.ID(n))).Result()
		return n == 0
	})
	// retry: back to Enqueued with a fresh attempt, and it runs to done.
	press("retry", ticket, "retried "+ticket)
	e.waitState(n, 20*time.Second, lifecycle.InProgress)
	e.openGate()
	e.waitState(n, 20*time.Second, lifecycle.Done)
	if got := e.starts(n); len(got) != 2 {
		t.Errorf("starts %q, want the cancelled run and the retried one", got)
	}

	// CSRF in the browser: a form on another origin (the sim's page) that
	// posts to the page with a valid-looking body is refused, and nothing
	// changes.
	if err := chromedp.Do(ctx, chromedp.Navigate(e.simURL)); err != nil {
		t.Fatal(err)
	}
	forge := fmt.Sprintf(`(() => { const f = document.createElement("form"); f.method = "POST"; f.action = %q;
		for (const [k, v] of [["action", "pause"], ["project", "app"], ["csrf", "guess"]]) {
			const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i); }
		document.body.appendChild(f); f.submit(); return true; })()`, base+"/status/action")
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](forge)); err != nil {
		t.Fatal(err)
	}
	waitText(t, ctx, "body", "cross-origin request detected")
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 0 {
		t.Error("a cross-origin form paused the project")
	}
}

// waitText waits until the element's text contains want. Each check is
// one evaluation, so a check cut off by the page navigating (after a
// button's POST and 303) is simply tried again.
func waitText(t *testing.T, ctx context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.innerText.includes(%q); })()`, sel, want)
	var ok bool
	var cerr error
	deadline := time.Now().Add(30 * time.Second)
	for !ok && time.Now().Before(deadline) {
		ok, cerr = chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(time.Until(deadline))))
	}
	if !ok {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("chromium: waiting for %q in %s: %v\npage:\n%s", want, sel, cerr, body)
	}
}
