package statuspage

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
)

// page is a browser's view of the handler: its cookies, kept between
// requests as a browser keeps them.
type browserSim struct {
	t       *testing.T
	h       http.Handler
	cookies map[string]*http.Cookie
}

func (b *browserSim) do(method, target string, form url.Values, header map[string]string) *httptest.ResponseRecorder {
	b.t.Helper()
	var req *http.Request
	if form != nil {
		req = httptest.NewRequest(method, target, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(method, target, nil)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	for _, c := range b.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return rec
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func TestLoginCSRFAndActions(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	projects := lifecycle.Projects{"app": {Name: "app", Platform: "github"}}
	q := queue.NewWith(rdb, keys.Queue(), queue.Options{DelayedKey: keys.Delayed()})
	// A hostile ticket id waits in the queue: the page must show it as text.
	hostile := `acme/app#4"><script>alert(1)</script>`
	rdb.RPush(ctx, keys.Queue(), lifecycle.PipelineRequest{ID: "r1", Ref: refFor(hostile), Attempt: 1, EnqueuedAt: now}.Encode())
	h := New(Config{RDB: rdb, Projects: projects, Instance: "replica-a", Token: "s3cret", Queue: q, Clock: clock})
	b := &browserSim{t: t, h: h, cookies: map[string]*http.Cookie{}}

	// Not logged in: the login form, 401; a wrong token, 401 again.
	if rec := b.do("GET", "/status", nil, nil); rec.Code != 401 || !strings.Contains(rec.Body.String(), `action="/status/login"`) {
		t.Fatalf("GET /status logged out: %d\n%s", rec.Code, rec.Body)
	}
	if rec := b.do("POST", "/status/login", url.Values{"token": {"wrong"}}, nil); rec.Code != 401 || len(b.cookies) != 0 {
		t.Fatalf("wrong token: %d, cookies %v", rec.Code, b.cookies)
	}
	// A login posted from another site is refused before the token is read.
	if rec := b.do("POST", "/status/login", url.Values{"token": {"s3cret"}}, map[string]string{"Sec-Fetch-Site": "cross-site"}); rec.Code != 403 || len(b.cookies) != 0 {
		t.Fatalf("cross-site login: %d", rec.Code)
	}
	rec := b.do("POST", "/status/login", url.Values{"token": {"s3cret"}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/status" {
		t.Fatalf("login: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	sc := b.cookies[sessionCookie]
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || sc.Secure || strings.Contains(sc.Value, "s3cret") {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, not Secure without TLS, token-free", sc)
	}

	// Logged in: the page, rendered on the server, with the hostile id escaped.
	rec = b.do("GET", "/status", nil, nil)
	body := rec.Body.String()
	if rec.Code != 200 || strings.Contains(body, "<script>alert") || !strings.Contains(body, html.EscapeString(`#4"><script>alert(1)</script>`)) {
		t.Fatalf("page: %d, hostile id not escaped or missing:\n%s", rec.Code, body)
	}
	if rec.Header().Get("X-Frame-Options") != "DENY" || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Error("the page may be framed")
	}
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF field in the page")
	}
	token := html.UnescapeString(m[1])
	same := map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"}
	pause := url.Values{"csrf": {token}, "action": {"pause"}, "project": {"app"}}

	// CSRF: without the token, with a wrong one, cross-site, from another
	// origin, without a session: 403, and nothing paused.
	for name, c := range map[string]struct {
		form   url.Values
		header map[string]string
		noSess bool
	}{
		"no csrf":      {url.Values{"action": {"pause"}, "project": {"app"}}, same, false},
		"wrong csrf":   {url.Values{"csrf": {"x" + token}, "action": {"pause"}, "project": {"app"}}, same, false},
		"cross-site":   {pause, map[string]string{"Sec-Fetch-Site": "cross-site"}, false},
		"other origin": {pause, map[string]string{"Origin": "http://evil.example"}, false},
		"same-site":    {pause, map[string]string{"Sec-Fetch-Site": "same-site"}, false},
		// A tool's POST (curl: neither header) with a stolen session and
		// its CSRF token is no button press; tools act through
		// agentsmithctl.
		"no origin":   {pause, nil, false},
		"sfs none":    {pause, map[string]string{"Sec-Fetch-Site": "none"}, false},
		"null origin": {pause, map[string]string{"Origin": "null"}, false},
		"no session":  {pause, same, true},
	} {
		saved := b.cookies
		if c.noSess {
			b.cookies = map[string]*http.Cookie{}
		}
		if rec := b.do("POST", "/status/action", c.form, c.header); rec.Code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403", name, rec.Code)
		}
		b.cookies = saved
		if n, _ := rdb.Exists(ctx, keys.Paused("app")).Result(); n != 0 {
			t.Fatalf("%s paused the project", name)
		}
	}
	// A CSRF token of another session is worthless in this one.
	other := &browserSim{t: t, h: h, cookies: map[string]*http.Cookie{}}
	other.do("POST", "/status/login", url.Values{"token": {"s3cret"}}, same)
	om := csrfField.FindStringSubmatch(other.do("GET", "/status", nil, nil).Body.String())
	if om == nil || html.UnescapeString(om[1]) == token {
		t.Fatal("two sessions share a CSRF token")
	}
	if rec := b.do("POST", "/status/action", url.Values{"csrf": {html.UnescapeString(om[1])}, "action": {"pause"}, "project": {"app"}}, same); rec.Code != 403 {
		t.Errorf("another session's CSRF token: %d, want 403", rec.Code)
	}
	// GET never acts.
	if rec := b.do("GET", "/status/action?"+pause.Encode(), nil, nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET /status/action: %d, want 405", rec.Code)
	}
	// Bounded form, known project and action.
	big := url.Values{"csrf": {token}, "action": {"pause"}, "project": {"app"}, "pad": {strings.Repeat("x", maxFormBytes)}}
	if rec := b.do("POST", "/status/action", big, same); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("oversized form: %d, want 413", rec.Code)
	}
	for _, f := range []url.Values{
		{"csrf": {token}, "action": {"pause"}, "project": {"nope"}},
		{"csrf": {token}, "action": {"explode"}, "project": {"app"}, "ticket": {"github:acme/app#1"}},
		{"csrf": {token}, "action": {"cancel"}, "project": {"app"}, "ticket": {"jira:OPS-1"}},
		{"csrf": {token}, "action": {"cancel"}, "project": {"app"}, "ticket": {"github:acme/app#1\r\nx"}},
	} {
		if rec := b.do("POST", "/status/action", f, same); rec.Code != http.StatusBadRequest {
			t.Errorf("%v: %d, want 400", f, rec.Code)
		}
	}

	// The real thing: pause → 303 back, flash, key set; shown on the page.
	rec = b.do("POST", "/status/action", pause, same)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/status" {
		t.Fatalf("pause: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if ps, _ := lifecycle.PausedProjects(ctx, rdb); len(ps) != 1 || ps[0].By != Actor {
		t.Fatalf("paused %+v", ps)
	}
	body = b.do("GET", "/status", nil, nil).Body.String()
	if !strings.Contains(body, "paused app: no new runs start until resume") || !strings.Contains(body, "paused by status page") {
		t.Errorf("page after pause lacks the flash or the pause:\n%s", body)
	}
	if strings.Contains(b.do("GET", "/status", nil, nil).Body.String(), `id="flash"`) {
		t.Error("the flash is shown twice")
	}
	// cancel sets the cancel key with the page's cause.
	if rec := b.do("POST", "/status/action", url.Values{"csrf": {token}, "action": {"cancel"}, "project": {"app"}, "ticket": {"github:acme/app#7"}}, same); rec.Code != 303 {
		t.Fatalf("cancel: %d %s", rec.Code, rec.Body)
	}
	if v, _ := rdb.Get(ctx, keys.Cancel("github:acme/app#7")).Result(); v != CancelCause {
		t.Errorf("cancel key = %q", v)
	}
	// resume, with one request put aside while paused.
	aside := lifecycle.PipelineRequest{ID: "aside", Ref: platforms.Ref{Platform: "github", Project: "app", ID: "acme/app#8"},
		Attempt: 1, PausedAside: true}.Encode()
	rdb.ZAdd(ctx, keys.Delayed(), redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: aside})
	b.do("POST", "/status/action", url.Values{"csrf": {token}, "action": {"resume"}, "project": {"app"}}, same)
	if n, _ := rdb.Exists(ctx, keys.Paused("app")).Result(); n != 0 {
		t.Error("resume left the pause")
	}
	if body := b.do("GET", "/status", nil, nil).Body.String(); !strings.Contains(body, "resumed app: 1 waiting request made due") {
		t.Errorf("page after resume lacks the flash in the singular:\n%s", body)
	}
	// Logging out drops the session; an expired session is refused.
	b.do("POST", "/status/logout", url.Values{}, same)
	if rec := b.do("GET", "/status.json", nil, nil); rec.Code != 401 {
		t.Errorf("after logout: %d", rec.Code)
	}
	now = now.Add(DefaultSessionTTL)
	if rec := other.do("GET", "/status.json", nil, nil); rec.Code != 401 {
		t.Errorf("expired session: %d", rec.Code)
	}
}
