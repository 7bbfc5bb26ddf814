package daemon_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsmithd/agentsmithd/lifecycle"
)

// The status page's charts and a ticket's detail view, in headless
// Chromium against a running daemon: one ticket done and one failed show
// in the throughput chart; the failed ticket's "details" link opens its
// page with the transitions over time, its attempt's output tail and
// result, and the link to the tracker. The ticket's title is hostile HTML
// and shows as text. Screenshots of both pages are saved and logged.
func TestStatusPageTicketDetailInChromium(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "status: {token_env: E2E_STATUS_TOKEN}\n"))
	const hostile = `fail <img src=x onerror="document.title='pwned'"> & "quotes"`
	bad := e.sim.CreateIssue(repo, hostile, "", "agent-smith")
	good := e.sim.CreateIssue(repo, "works fine", "", "agent-smith")
	e.waitState(bad, 20*time.Second, lifecycle.Failed)
	e.waitState(good, 20*time.Second, lifecycle.Done)
	base := "http://" + d.AdminAddr()
	ticket := fmt.Sprintf("github:%s#%d", repo, bad)

	loginInChromium(t, ctx, base)
	poll := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("chromium: waiting for %s: %v\npage:\n%s", what, err, body)
		}
	}
	// The audit writer flushes in batches: wait for both finishes in the
	// throughput chart (the page refreshes itself, the charts every 15 s
	// at most; a reload asks afresh).
	poll("both finishes in the throughput chart", `(() => {
		const tips = [...document.querySelectorAll("#chart-throughput rect title")].map(t => t.textContent);
		if (!tips.some(t => t.includes("1 done, 1 failed"))) { setTimeout(() => location.reload(), 500); return false; }
		return document.querySelectorAll("#chart-throughput rect.s-done").length === 1 &&
			document.querySelectorAll("#chart-throughput rect.s-failed").length === 1 &&
			document.querySelectorAll("#chart-lead rect.lead").length === 1; })()`)
	shot(t, ctx, "status-page-charts.png")

	// The failed ticket's details link, from the tickets table. It is
	// followed by navigating to its href rather than clicking: the page's
	// 2 s refresh replaces the table, and a click can land on a node just
	// replaced.
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector(%q).href`, fmt.Sprintf(`#tickets a.details[href$="%%23%d"]`, bad))))
	if err != nil || !strings.Contains(strings.ToLower(href), "/status/ticket?ticket=github:acme%2fapp%23") {
		t.Fatalf("details link of %s: %q %v", ticket, href, err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(href)); err != nil {
		t.Fatalf("open details: %v", err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS("#ticket-id"))); err != nil {
		t.Fatalf("the ticket page: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#ticket-title")))
	if err != nil {
		t.Fatal(err)
	}
	if title != hostile {
		t.Errorf("title shown as %q, want the raw text %q", title, hostile)
	}
	poll("no element injected by the title", `document.querySelectorAll("img").length === 0 && document.title !== "pwned"`)
	id, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#ticket-id")))
	history, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#history")))
	attempt, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#attempt-1")))
	links, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#links")))
	for what, c := range map[string]struct{ text, want string }{
		"heading":             {id, ticket},
		"heading state":       {id, "failed"},
		"claim in history":    {history, "pending → enqueued"},
		"start in history":    {history, "enqueued → in-progress"},
		"failure in history":  {history, "in-progress → failed"},
		"attempt result":      {attempt, "failed"},
		"attempt output tail": {attempt, "boom: the widget exploded"},
		"attempt owner":       {attempt, "on replica-a"},
		"tracker link":        {links, "the ticket on its tracker"},
		"attempt log link":    {links, "log of attempt 1"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s: %q lacks %q", what, c.text, c.want)
		}
	}
	poll("the timeline strip", `document.querySelectorAll("#timeline rect.s-enqueued").length === 1 &&
		document.querySelectorAll("#timeline rect.s-in-progress").length === 1 &&
		document.querySelectorAll("#timeline rect.s-failed").length === 1`)
	shot(t, ctx, "status-ticket-detail.png")
}

// shot saves a full-page screenshot for a person to look at and logs where.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		t.Fatal(err)
	}
	path := screenshotPath(t, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
