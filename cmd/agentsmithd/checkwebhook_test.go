package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// webhookWorld is the trackersim (four platforms, one project each, the
// token an administrator), a real Redis, and the daemon's receiver on a
// real listener, configured as the daemon configures it from the same
// config: each project's secret from CHECK_SECRET.
type webhookWorld struct {
	sim   *trackersim.Sim
	url   string // the sim
	recv  string // the receiver's URL
	redis *redistest.Server
	dir   string
}

// webhookProjects are the four projects: platform, repo, API path.
var webhookProjects = []struct{ name, platform, repo, api, extra string }{
	{"gh", github.Platform, "acme/app", "/github/", ""},
	{"gl", gitlab.Platform, "grp/app", "/gitlab/api/v4/", ""},
	{"ado", azuredevops.Platform, "org1/proj", "/ado/", ""},
	{"jr", jira.Platform, "PROJ", "/jira/", "    jira: {email: bot@example.com}\n"},
}

// newWebhookWorld gives each project a hook to the receiver signed with
// hookSecret (checkSecret is what the daemon expects).
func newWebhookWorld(t *testing.T, hookSecret string) *webhookWorld {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{checkToken}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo", "admin:repo_hook"}})
	t.Setenv("CHECK_TOKEN", checkToken)
	t.Setenv("CHECK_SECRET", checkSecret)
	r := redistest.Start(t)
	rdb := r.Client(t)
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), lifecycle.Projects{}, claim.Config{
		Instance: "test", Labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}})
	decoders := map[string]platforms.WebhookDecoder{github.Platform: github.Webhooks{}, gitlab.Platform: gitlab.Webhooks{},
		azuredevops.Platform: azuredevops.Webhooks{}, jira.Platform: jira.Webhooks{}}
	var routes []receiver.Route
	for _, p := range webhookProjects {
		locator := p.repo
		if p.platform == azuredevops.Platform {
			locator = azuredevops.Locator("org1", "proj")
		}
		routes = append(routes, receiver.Route{Platform: p.platform, Decoder: decoders[p.platform], Projects: []receiver.ProjectRoute{
			{Name: p.name, Locator: locator, Secrets: [][]byte{[]byte(checkSecret)}, Sources: []string{"env:CHECK_SECRET"}}}})
	}
	rc := receiver.New(rdb, claims, routes, receiver.Config{})
	recv := httptest.NewServer(rc.Handler())
	t.Cleanup(recv.Close)
	w := &webhookWorld{sim: s, url: srv.URL, recv: recv.URL, redis: r, dir: t.TempDir()}
	for _, p := range webhookProjects {
		dialect := map[string]string{github.Platform: "", gitlab.Platform: "gitlab", azuredevops.Platform: "ado", jira.Platform: "jira"}[p.platform]
		s.AddHook(trackersim.Hook{Repo: p.repo, URL: recv.URL + "/webhooks/" + p.platform, Secret: hookSecret, Dialect: dialect})
		s.CreateIssue(p.repo, "first", "", "agent-smith")
	}
	// Adding a hook pings it (GitHub) and creating an issue sends an
	// event: let those land before check counts deliveries.
	if err := s.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w
}

// check runs check --webhook on every project and returns each project's
// "webhook delivery" row.
func (w *webhookWorld) check(t *testing.T, receiverURL string, wait time.Duration) (int, map[string]platforms.CheckResult) {
	t.Helper()
	var ps []string
	for _, p := range webhookProjects {
		ps = append(ps, fmt.Sprintf(`  - name: %s
    platform: %s
    base_url: %s%s
    repo: %s
    token_env: CHECK_TOKEN
    webhook: {secret_env: CHECK_SECRET}
    pipeline: {command: ["true"]}
%s`, p.name, p.platform, w.url, p.api, p.repo, p.extra))
	}
	cfg := fmt.Sprintf("redis: {addr: %q}\nprojects:\n%s", w.redis.Addr(), strings.Join(ps, ""))
	path := filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"check", "-c", path, "-o", "json", "--timeout", "10s", "--receiver-url", receiverURL,
		"--webhook", "--webhook-wait", wait.String()}, &out, &errOut)
	var rep checkReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("check printed no JSON (exit %d): %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	if all := out.String() + errOut.String(); strings.Contains(all, checkSecret) || strings.Contains(all, checkToken) {
		t.Errorf("check printed a secret:\n%s", all)
	}
	rows := map[string]platforms.CheckResult{}
	for _, p := range rep.Projects {
		for _, c := range p.Checks {
			if c.Name == webhookCheckName {
				rows[p.Name] = c
				t.Logf("%s: %s %s | fix: %s", p.Name, c.Status, c.Detail, c.Fix)
			}
		}
	}
	return code, rows
}

// The issue's "done when": with the right secret each platform that can
// send a test delivery reports it received and authenticated; Jira says it
// cannot prove the path and reports the last delivery the receiver
// recorded (the issue event's).
func TestCheckWebhookRightSecret(t *testing.T) {
	w := newWebhookWorld(t, checkSecret)
	before := w.sim.Stats().TestDeliveries
	code, rows := w.check(t, w.recv, 10*time.Second)
	for _, name := range []string{"gh", "gl", "ado"} {
		r := rows[name]
		if r.Status != platforms.CheckOK || !strings.Contains(r.Detail, "received and authenticated") || !strings.Contains(r.Detail, w.recv) {
			t.Errorf("%s: %+v, want ok, received and authenticated, naming the hook", name, r)
		}
	}
	if got := w.sim.Stats().TestDeliveries - before; got != 3 {
		t.Errorf("%d test deliveries asked for, want 3 (GitHub, GitLab, Azure DevOps)", got)
	}
	jr := rows["jr"]
	if jr.Status != platforms.CheckOK || !strings.Contains(jr.Detail, "Jira has no API that sends a test delivery") ||
		!strings.Contains(jr.Detail, "was authenticated") {
		t.Errorf("jira: %+v, want ok naming what cannot be proven and the last authenticated delivery", jr)
	}
	if code != 0 {
		t.Errorf("exit %d, want 0: %v", code, rows)
	}
}

// With a wrong secret on every hook, each platform's test delivery is
// reported not authenticated, with the rejections seen and the variable
// to fix. Jira's last delivery (the issue event) was rejected too, but
// without a test delivery anyone could have sent it: a warning.
func TestCheckWebhookWrongSecret(t *testing.T) {
	w := newWebhookWorld(t, "a-stale-secret")
	code, rows := w.check(t, w.recv, 10*time.Second)
	for _, name := range []string{"gh", "gl", "ado", "jr"} {
		r := rows[name]
		want := platforms.CheckFail
		if name == "jr" {
			want = platforms.CheckWarn
		}
		if r.Status != want || !strings.Contains(r.Detail, "rejected: wrong secret") || !strings.Contains(r.Fix, "env:CHECK_SECRET") {
			t.Errorf("%s: %+v, want %s, rejected: wrong secret, fix naming env:CHECK_SECRET", name, r, want)
		}
	}
	if !strings.Contains(rows["gh"].Detail, "sent (") || !strings.Contains(rows["gl"].Detail, "GitLab: hook") {
		t.Errorf("rows do not say what was sent: %v", rows)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// A hook whose URL nothing answers: sent but never received.
func TestCheckWebhookUnreachable(t *testing.T) {
	w := newWebhookWorld(t, checkSecret)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	_ = l.Close()
	w.sim.AddHook(trackersim.Hook{Repo: "acme/app", URL: dead + "/webhooks/github", Secret: checkSecret})
	eventually.Wait(t, 10*time.Second, "the new hook's ping fails", func() bool {
		for _, h := range w.sim.HookStates() {
			if strings.HasPrefix(h.URL, dead) && h.Failures > 0 {
				return true
			}
		}
		return false
	})
	_, rows := w.check(t, dead, time.Second)
	if r := rows["gh"]; r.Status != platforms.CheckFail || !strings.Contains(r.Detail, "never received") || !strings.Contains(r.Detail, dead+"/webhooks/github") {
		t.Errorf("gh: %+v, want fail: sent but never received, naming the URL", r)
	}
}

// Anyone who reaches the receiver can send deliveries with a bad
// signature. A flood of them while check waits for its ping, which the
// tracker delivers a moment later, does not make a correctly configured
// project's row "rejected": the verdict rests on the authenticated ping,
// and the flood is reported beside it as could be anyone.
func TestCheckWebhookRejectFloodDoesNotFailRightSecret(t *testing.T) {
	w := newWebhookWorld(t, checkSecret)
	target, err := url.Parse(w.recv)
	if err != nil {
		t.Fatal(err)
	}
	fwd := httputil.NewSingleHostReverseProxy(target)
	// The front delays GitHub's ping as a busy tracker would: the flood's
	// rejections reach the receiver first.
	const latency = 1500 * time.Millisecond
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-GitHub-Event") == "ping" {
			tm := time.NewTimer(latency)
			defer tm.Stop()
			select {
			case <-tm.C:
			case <-r.Context().Done():
				return
			}
		}
		fwd.ServeHTTP(rw, r)
	}))
	t.Cleanup(front.Close)
	w.sim.AddHook(trackersim.Hook{Repo: "acme/app", URL: front.URL + "/webhooks/github", Secret: checkSecret})
	if err := w.sim.WaitIdle(t.Context()); err != nil {
		t.Fatal(err)
	}

	ctx, stop := context.WithCancel(t.Context())
	flooded := make(chan int)
	go func() {
		n := 0
		defer func() { flooded <- n }()
		for ctx.Err() == nil {
			body := []byte(fmt.Sprintf(`{"action":"labeled","number":1,"repository":{"full_name":"acme/app"},"junk":%d}`, n))
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.recv+"/webhooks/github", bytes.NewReader(body))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-GitHub-Event", "issues")
			req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("junk-%d", n))
			req.Header.Set("X-Hub-Signature-256", github.SignatureHeader(body, []byte("a-guess")))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			_ = resp.Body.Close()
			n++
		}
	}()
	_, rows := w.check(t, front.URL, 10*time.Second)
	stop()
	n := <-flooded
	if n == 0 {
		t.Fatal("the flood sent nothing")
	}
	r := rows["gh"]
	if r.Status != platforms.CheckOK || !strings.Contains(r.Detail, "received and authenticated (ping)") ||
		!strings.Contains(r.Detail, "also seen: ") || !strings.Contains(r.Detail, "could be anyone") {
		t.Errorf("gh under a flood of %d bad signatures: %+v, want ok, received and authenticated (ping), also seen: … could be anyone", n, r)
	}
}
