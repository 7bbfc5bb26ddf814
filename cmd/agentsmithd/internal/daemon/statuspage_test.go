package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/agentsmithd/agentsmithd/internal/statuspage"
	"github.com/agentsmithd/agentsmithd/lifecycle"
)

const chromiumPath = "/usr/bin/chromium"

// browser starts a headless Chromium for the test with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s is not installed (apt-get install chromium); CI installs it and runs this test", chromiumPath)
		}
		t.Fatalf("CI must provide %s: %v", chromiumPath, err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	return ctx
}

// screenshotPath is where a test leaves a screenshot for a person to look
// at: $AGENTSMITH_ARTIFACTS, else a fresh directory under the system's
// temp dir (kept after the test, never in the repository).
func screenshotPath(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("AGENTSMITH_ARTIFACTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "agentsmith-status-"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := filepath.Abs(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// loginInChromium logs in with the status token through the page's form.
func loginInChromium(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/status"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), testStatusToken), chromedp.Click(chromedp.CSS("#login")),
		chromedp.WaitVisible(chromedp.CSS("#live"))); err != nil {
		body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("chromium: log in: %v\npage:\n%s", err, body)
	}
}

func TestStatusPageInChromium(t *testing.T) {
	ctx := browser(t)
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "status: {token_env: E2E_STATUS_TOKEN}\n"))
	// The pipeline holds "hold" tickets until the gate opens, so the page
	// can be caught with the run in flight.
	n := e.sim.CreateIssue(repo, "hold: show me on the status page", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.InProgress)
	base := "http://" + d.AdminAddr()
	ticket := fmt.Sprintf("github:%s#%d", repo, n)

	// Only the admin listener serves the page.
	for _, path := range []string{"/status", "/status.json"} {
		if got := get(t, "http://"+d.Addr()+path); got != http.StatusNotFound {
			t.Errorf("webhook listener GET %s = %d, want 404", path, got)
		}
	}
	// The token is required, and never taken from the URL.
	for _, path := range []string{"/status", "/status.json", "/status.json?access_token=" + testStatusToken} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", path, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/status.json", nil)
	req.Header.Set("Authorization", "Bearer "+testStatusToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st statuspage.Status
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status.json: %d %v", resp.StatusCode, err)
	}
	link := st.Links[ticket]
	if want := fmt.Sprintf("%s/github/%s/issues/%d", e.simURL, repo, n); link != want {
		t.Errorf("link of %s = %q, want %q", ticket, link, want)
	}

	loginInChromium(t, ctx, base)
	// Rendered on the server, refreshed in place by the page's script.
	// First the run in flight, with its owner and heartbeat age.
	waitPage := func(what, js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			body, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
			t.Fatalf("chromium: waiting for %s: %v\npage:\n%s", what, err, body)
		}
	}
	waitPage("the run in flight", fmt.Sprintf(`(() => { const t = document.querySelector("#runs").innerText;
		return t.includes(%q) && t.includes("replica-a") && / s\b/.test(t); })()`, ticket))
	runs, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#runs")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(runs, ticket+"\treplica-a\t1\t") {
		t.Errorf("runs table lacks ticket, owner and attempt:\n%s", runs)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100 means PNG
	if err != nil {
		t.Fatal(err)
	}
	shot := screenshotPath(t, "status-page.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("status page screenshot: %s", shot)

	// Then, without a reload, the transition to done.
	e.openGate()
	e.waitState(n, 20*time.Second, lifecycle.Done)
	waitPage("the transition to done", fmt.Sprintf(`(() => { const t = document.querySelector("#events").innerText;
		return t.includes(%q) && t.includes("succeeded") && document.querySelector("#runs").innerText.includes("nothing running"); })()`, ticket))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	attr, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#events a"), "href"))
	if err != nil {
		t.Fatal(err)
	}
	href := attr.Value
	for _, want := range []string{"served by replica-a", ticket, "in-progress", "done", "Live instances", "housekeeping\treplica-a"} {
		if !strings.Contains(text, want) {
			t.Errorf("page text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, testStatusToken) {
		t.Error("the page shows the token")
	}
	if href != link {
		t.Errorf("event link = %q, want %q", href, link)
	}
	// Following the link lands on the ticket in the sim's page.
	if err := chromedp.Do(ctx, chromedp.Navigate(href)); err != nil {
		t.Fatal(err)
	}
	simText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(simText, "hold: show me on the status page") {
		t.Errorf("ticket link did not lead to the ticket:\n%s", simText)
	}
}
