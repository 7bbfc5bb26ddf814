package daemon_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/cmd/agentsmithd/internal/daemon"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

// adminClient talks to a daemon's admin listener over HTTP as a tool or a
// browser does: it keeps the cookies it is given, and can claim any Host
// and send any Origin.
type adminClient struct {
	t       *testing.T
	base    string
	host    string // the Host header; "" for the address dialled
	cookies map[string]*http.Cookie
	setHost []string // the Host headers that got a Set-Cookie
}

func newAdminClient(t *testing.T, d *daemon.Daemon) *adminClient {
	return &adminClient{t: t, base: "http://" + d.AdminAddr(), cookies: map[string]*http.Cookie{}}
}

// do sends one request (a form when form is not nil) and answers the
// status code and body; hdr is pairs of header names and values.
func (c *adminClient) do(method, path string, form url.Values, hdr ...string) (int, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.base+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.host != "" {
		req.Host = c.host
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	for _, ck := range c.cookies {
		req.AddCookie(ck)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, ck := range resp.Cookies() {
		c.setHost = append(c.setHost, req.Host)
		if ck.MaxAge < 0 {
			delete(c.cookies, ck.Name)
		} else {
			c.cookies[ck.Name] = ck
		}
	}
	return resp.StatusCode, string(b)
}

var csrfInPage = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token of the page body, "" when it has none.
func csrf(body string) string {
	if m := csrfInPage.FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// A pipeline runs on the daemon's host and reaches 127.0.0.1 too. With the
// README walkthrough's config (no status.token) it has no credentials, and
// the admin listener gives it nothing: no status, no attempt log, no
// metrics, no button, whatever it tries first to get a session and a CSRF
// token the way a browser does.
func TestAdminListenerRefusesAPipeline(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", ""))
	n := e.sim.CreateIssue(repo, "fail: a ticket the pipeline would like to retry", "", "agent-smith")
	e.waitState(n, 20*time.Second, lifecycle.Failed)
	ticket := fmt.Sprintf("github:%s#%d", repo, n)
	rdb := e.redis.Client(t)

	pipeline := newAdminClient(t, d)
	for _, path := range []string{"/status", "/status.json", "/status/logs?ticket=" + url.QueryEscape(ticket) + "&attempt=1",
		"/status/ticket?ticket=" + url.QueryEscape(ticket), "/metrics", "/healthz", "/readyz", "/"} {
		code, body := pipeline.do(http.MethodGet, path, nil)
		if code != http.StatusUnauthorized {
			t.Errorf("GET %s without credentials = %d, want 401", path, code)
		}
		if strings.Contains(body, repo) || strings.Contains(body, "boom") {
			t.Errorf("GET %s without credentials shows the ticket or its output:\n%s", path, body)
		}
	}
	if code, _ := pipeline.do(http.MethodPost, "/status/login", url.Values{"token": {""}}); code != http.StatusUnauthorized {
		t.Errorf("login with an empty token = %d, want 401", code)
	}
	if len(pipeline.cookies) != 0 {
		t.Errorf("a client without credentials got cookies %v", pipeline.cookies)
	}
	// Whatever it found on the page (nothing, now), it presses every
	// button as curl does: no Origin, no Sec-Fetch-Site.
	_, page := pipeline.do(http.MethodGet, "/status", nil)
	token := csrf(page)
	for _, f := range []url.Values{
		{"action": {"pause"}, "project": {"app"}},
		{"action": {"cancel"}, "project": {"app"}, "ticket": {ticket}},
		{"action": {"retry"}, "project": {"app"}, "ticket": {ticket}},
		{"action": {"requeue"}, "project": {"app"}, "ticket": {ticket}},
	} {
		f.Set("csrf", token)
		if code, _ := pipeline.do(http.MethodPost, "/status/action", f); code != http.StatusForbidden && code != http.StatusUnauthorized {
			t.Errorf("%s without credentials = %d, want 401 or 403", f.Get("action"), code)
		}
	}
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app"), keys.Cancel(ticket)).Result(); n != 0 {
		t.Errorf("a client without credentials paused the project or cancelled %s", ticket)
	}
	if s := e.state(n); s != lifecycle.Failed {
		t.Errorf("a client without credentials retried %s: it is %s", ticket, s)
	}

	// The operator, with the token, gets everything.
	op := newAdminClient(t, d)
	if code, _ := op.do(http.MethodGet, "/metrics", nil, "Authorization", "Bearer "+d.StatusToken()); code != http.StatusOK {
		t.Errorf("GET /metrics with the token = %d, want 200", code)
	}
	if code, _ := op.do(http.MethodPost, "/status/login", url.Values{"token": {d.StatusToken()}}, "Origin", op.base); code != http.StatusSeeOther {
		t.Fatalf("login with the token = %d, want 303", code)
	}
	code, page := op.do(http.MethodGet, "/status", nil)
	if code != http.StatusOK || csrf(page) == "" {
		t.Fatalf("GET /status logged in = %d, CSRF token %q", code, csrf(page))
	}
	if code, _ := op.do(http.MethodPost, "/status/action", url.Values{"csrf": {csrf(page)}, "action": {"pause"}, "project": {"app"}},
		"Origin", op.base); code != http.StatusSeeOther {
		t.Errorf("pause from the page = %d, want 303", code)
	}
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 1 {
		t.Error("the operator's pause set no pause key")
	}
}

// DNS rebinding: a page of rebind.attacker.example, its name now resolving
// to 127.0.0.1, is same-origin with itself in the browser and sends its
// own name as Host. The admin listener refuses that Host before anything
// else: no page, no cookie, no CSRF token, no button, even for a browser
// that holds the token.
func TestAdminListenerRefusesARebindingHost(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", ""))
	rdb := e.redis.Client(t)
	if err := lifecycle.PauseProject(t.Context(), rdb, "app", "operator", time.Now()); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(d.AdminAddr(), ":")
	attacker := newAdminClient(t, d)
	attacker.host = "rebind.attacker.example:" + port
	origin := "http://" + attacker.host
	for _, path := range []string{"/status", "/status.json", "/metrics"} {
		if code, _ := attacker.do(http.MethodGet, path, nil, "Sec-Fetch-Site", "same-origin"); code != http.StatusMisdirectedRequest {
			t.Errorf("GET %s with Host %s = %d, want 421", path, attacker.host, code)
		}
	}
	_, page := attacker.do(http.MethodGet, "/status", nil)
	if code, _ := attacker.do(http.MethodPost, "/status/action", url.Values{"csrf": {csrf(page)}, "action": {"resume"}, "project": {"app"}},
		"Origin", origin); code != http.StatusMisdirectedRequest {
		t.Errorf("resume with Host %s = %d, want 421", attacker.host, code)
	}
	if code, _ := attacker.do(http.MethodPost, "/status/login", url.Values{"token": {d.StatusToken()}}, "Origin", origin); code != http.StatusMisdirectedRequest {
		t.Errorf("login with Host %s = %d, want 421", attacker.host, code)
	}
	if len(attacker.setHost) != 0 {
		t.Errorf("cookies set for Host %v", attacker.setHost)
	}
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 1 {
		t.Error("a rebinding page resumed the project")
	}
	// The names the listener is reached by still work.
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port} {
		c := newAdminClient(t, d)
		c.host = host
		if code, _ := c.do(http.MethodGet, "/status.json", nil, "Authorization", "Bearer "+d.StatusToken()); code != http.StatusOK {
			t.Errorf("GET /status.json with Host %s = %d, want 200", host, code)
		}
	}
}

// A button press needs the session, its CSRF token, and a request that
// says it comes from the page's own origin: one from another origin, or
// from a tool that names no origin at all (a stolen cookie and CSRF token
// replayed with curl), is refused.
func TestAdminActionsNeedASameOriginPost(t *testing.T) {
	e := newEnv(t)
	d := e.startDaemon(e.config("replica-a", "status: {token_env: E2E_STATUS_TOKEN}\n"))
	rdb := e.redis.Client(t)
	op := newAdminClient(t, d)
	if code, _ := op.do(http.MethodPost, "/status/login", url.Values{"token": {testStatusToken}}, "Origin", op.base); code != http.StatusSeeOther {
		t.Fatalf("login = %d, want 303", code)
	}
	_, page := op.do(http.MethodGet, "/status", nil)
	pause := url.Values{"csrf": {csrf(page)}, "action": {"pause"}, "project": {"app"}}
	for name, hdr := range map[string][]string{
		"another origin":    {"Origin", "http://evil.example"},
		"cross-site":        {"Sec-Fetch-Site", "cross-site"},
		"same-site":         {"Sec-Fetch-Site", "same-site", "Origin", "http://other.localhost"},
		"no origin (curl)":  nil,
		"bearer, no origin": {"Authorization", "Bearer " + testStatusToken},
	} {
		if code, _ := op.do(http.MethodPost, "/status/action", pause, hdr...); code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, code)
		}
		if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 0 {
			t.Fatalf("%s paused the project", name)
		}
	}
	if code, _ := op.do(http.MethodPost, "/status/action", pause, "Sec-Fetch-Site", "same-origin", "Origin", op.base); code != http.StatusSeeOther {
		t.Errorf("same-origin pause = %d, want 303", code)
	}
	if n, _ := rdb.Exists(t.Context(), keys.Paused("app")).Result(); n != 1 {
		t.Error("the same-origin pause set no pause key")
	}
}
