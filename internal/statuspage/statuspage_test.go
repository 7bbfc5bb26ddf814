package statuspage

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func get(t *testing.T, h http.Handler, target, auth string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestTokenAndDocument(t *testing.T) {
	r := redistest.Start(t)
	rdb := r.Client(t)
	ctx := t.Context()
	rdb.Set(ctx, keys.Instance("replica-b"), "replica-b", time.Minute)
	rdb.Set(ctx, keys.Leader("housekeeping"), "replica-b/term", time.Minute)
	req := lifecycle.PipelineRequest{ID: "r1", Ref: refFor("acme/app#4"), Attempt: 1, EnqueuedAt: time.Now().Add(-90 * time.Second)}
	rdb.RPush(ctx, keys.Queue(), req.Encode())
	rdb.ZAdd(ctx, keys.Delayed(), redisZ("x"))

	h := New(Config{RDB: rdb, Queue: testQueue(rdb), Instance: "replica-a", Token: "s3cret"})
	for _, c := range []struct {
		target, auth string
		code         int
	}{
		{"/status", "", 401}, {"/status.json", "", 401}, {"/status.json", "Bearer wrong", 401},
		{"/status.json?access_token=wrong", "", 401}, {"/status.json", "Basic s3cret", 401},
		{"/status?access_token=s3cret", "", 401}, // never in a URL
		{"/status", "Bearer s3cret", 200}, {"/status.json", "Bearer s3cret", 200},
	} {
		rec := get(t, h, c.target, c.auth)
		if rec.Code != c.code {
			t.Errorf("GET %s (%q) = %d, want %d", c.target, c.auth, rec.Code, c.code)
		}
		if rec.Code == 401 && (rec.Header().Get("WWW-Authenticate") == "" || strings.Contains(rec.Body.String(), "s3cret")) {
			t.Errorf("401 for %s: header %q body %q", c.target, rec.Header().Get("WWW-Authenticate"), rec.Body.String())
		}
	}
	page := get(t, h, "/status", "Bearer s3cret")
	// Rendered on the server: the queued ticket is in the HTML itself.
	if !strings.Contains(page.Header().Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(page.Body.String(), "github:acme/app#4") || strings.Contains(page.Body.String(), "http://") {
		t.Errorf("page: CSP %q; it must show the queued ticket and load nothing from elsewhere:\n%s", page.Header().Get("Content-Security-Policy"), page.Body)
	}
	var st Status
	if err := json.Unmarshal(get(t, h, "/status.json", "Bearer s3cret").Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	if st.ServedBy != "replica-a" || st.Queue.Depth != 1 || st.Queue.Delayed != 1 || st.Queue.OldestAgeMS < 89_000 ||
		st.Queue.Oldest != "github:acme/app#4" || len(st.Instances) != 1 || st.Instances[0].ID != "replica-b" {
		t.Errorf("status = %+v", st)
	}
	if st.Leases[1].Role != "housekeeping" || st.Leases[1].Holder != "replica-b" || st.Leases[0].Holder != "" {
		t.Errorf("leases = %+v", st.Leases)
	}

	r.Kill()
	if rec := get(t, h, "/status.json", "Bearer s3cret"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("Redis down: %d, want 503", rec.Code)
	}
}

// With no token nothing gets in: not a request without credentials (a
// pipeline's curl on the same host), not an empty bearer token, not an
// empty login.
func TestNoTokenLetsNobodyIn(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	h := New(Config{RDB: rdb, Queue: testQueue(rdb)})
	for _, c := range []struct{ target, auth string }{
		{"/status", ""}, {"/status.json", ""}, {"/status/logs?ticket=github:acme/app%231&attempt=1", ""},
		{"/status/ticket?ticket=github:acme/app%231", ""}, {"/status.json", "Bearer "}, {"/status.json", "Bearer"},
	} {
		if rec := get(t, h, c.target, c.auth); rec.Code != http.StatusUnauthorized {
			t.Errorf("GET %s (%q) without a token configured: %d, want 401", c.target, c.auth, rec.Code)
		}
	}
	b := &browserSim{t: t, h: h, cookies: map[string]*http.Cookie{}}
	if rec := b.do("POST", "/status/login", url.Values{"token": {""}}, map[string]string{"Origin": "http://example.com"}); rec.Code != http.StatusUnauthorized || len(b.cookies) != 0 {
		t.Errorf("empty login without a token configured: %d, cookies %v; want 401 and none", rec.Code, b.cookies)
	}
	if rec := b.do("POST", "/status/action", url.Values{"action": {"pause"}, "project": {"app"}}, map[string]string{"Origin": "http://example.com"}); rec.Code != http.StatusForbidden {
		t.Errorf("action without a session: %d, want 403", rec.Code)
	}
	if rec := get(t, RequireToken("", http.NotFoundHandler()), "/metrics", "Bearer "); rec.Code != http.StatusUnauthorized {
		t.Errorf("RequireToken with no token: %d, want 401", rec.Code)
	}
}

func refFor(id string) platforms.Ref {
	return platforms.Ref{Platform: "github", Project: "app", ID: id}
}

func redisZ(member string) redis.Z { return redis.Z{Score: 1, Member: member} }
