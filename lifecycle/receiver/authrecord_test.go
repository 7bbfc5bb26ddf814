package receiver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// authCounts is a DeliveryObserver that also counts ObserveAuth calls.
type authCounts struct {
	mu sync.Mutex
	n  map[string]int // "platform/project/result"
}

func (a *authCounts) ObserveDelivery(string, int) {}

func (a *authCounts) ObserveAuth(platform, project, result string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n[platform+"/"+project+"/"+result]++
}

func (a *authCounts) get(k string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[k]
}

// authWorld is the receiver with two GitHub projects (app: acme/app with
// GH_APP_SECRET, lib: acme/lib with GH_LIB_SECRET) and one GitLab project,
// its log observed.
type authWorld struct {
	hostileWorld
	logs   *observer.ObservedLogs
	counts *authCounts
}

func newAuthWorld(t *testing.T) *authWorld {
	t.Helper()
	r := redistest.Start(t)
	rdb := r.Client(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	projects := lifecycle.Projects{}
	for _, p := range []struct{ name, repo string }{{"app", "acme/app"}, {"lib", "acme/lib"}} {
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: p.repo, Project: p.name, Token: "t", Writer: "test"})
		if err != nil {
			t.Fatal(err)
		}
		projects[p.name] = &lifecycle.Project{Name: p.name, Platform: github.Platform, Tracker: tr,
			TriggerLabel: "agent-smith", Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1}}
	}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{
		Instance: "test", Labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}})
	core, logs := observer.New(zapcore.InfoLevel)
	counts := &authCounts{n: map[string]int{}}
	routes := []receiver.Route{
		{Platform: github.Platform, Decoder: github.Webhooks{}, FoldLocator: true, Projects: []receiver.ProjectRoute{
			{Name: "app", Locator: "acme/app", Secrets: [][]byte{[]byte(hostileSecret)}, Sources: []string{"env:GH_APP_SECRET"}},
			{Name: "lib", Locator: "acme/lib", Secrets: [][]byte{[]byte(otherSecret)}, Sources: []string{"env:GH_LIB_SECRET"}},
		}},
		{Platform: gitlab.Platform, Decoder: gitlab.Webhooks{}, Projects: []receiver.ProjectRoute{
			{Name: "gl", Locator: "grp/app", Secrets: [][]byte{[]byte("gitlab-token")}, Sources: []string{"env:GL_HOOK_TOKEN"}},
		}},
	}
	rc := receiver.New(rdb, claims, routes, receiver.Config{MaxBody: maxBody, Logger: zap.New(core), Deliveries: counts})
	return &authWorld{hostileWorld: hostileWorld{Sim: s, RDB: rdb, handler: rc.Handler()}, logs: logs, counts: counts}
}

func (w *authWorld) record(t *testing.T, platform, project string) receiver.AuthRecord {
	t.Helper()
	rec, err := receiver.ReadAuthRecord(context.Background(), w.RDB, platform, project)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// rejections are the "authentication failed" log lines, by field.
func (w *authWorld) rejections() []map[string]any {
	var out []map[string]any
	for _, e := range w.logs.FilterMessage("webhook rejected: authentication failed").All() {
		out = append(out, e.ContextMap())
	}
	return out
}

// The right secret is recorded as authenticated for the project it
// belongs to; a wrong one as rejected with its reason, and the log line
// names the project, the reason and where the secret comes from (never the
// secret).
func TestDeliveriesAreRecordedByProjectAndReason(t *testing.T) {
	w := newAuthWorld(t)
	ping := []byte(`{"zen":"Design for failure.","hook_id":7,"repository":{"full_name":"acme/app"}}`)
	if status, ans := w.do(t, delivery{event: "ping", body: ping}); status != http.StatusOK || ans["outcome"] != "pong" {
		t.Fatalf("signed ping: %d %v, want 200 pong", status, ans)
	}
	app := w.record(t, github.Platform, "app")
	if app.Authenticated != 1 || app.AuthenticatedEvent != "ping" || app.AuthenticatedAt.IsZero() || app.Rejected != 0 {
		t.Errorf("app after a signed ping: %+v, want 1 authenticated ping", app)
	}
	if lib := w.record(t, github.Platform, "lib"); lib.Authenticated != 0 {
		t.Errorf("lib got app's delivery: %+v", lib)
	}

	// A wrong secret on a delivery naming acme/lib: lib's, with its secret's variable.
	body := issuePayload("labeled", "acme/lib", 1, "agent-smith")
	status, _ := w.do(t, delivery{body: body, sign: github.SignatureHeader(body, []byte("stale-secret"))})
	if status != http.StatusUnauthorized {
		t.Fatalf("wrong secret: %d, want 401", status)
	}
	lib := w.record(t, github.Platform, "lib")
	if lib.Rejected != 1 || lib.RejectedReason != receiver.ReasonWrongSecret || lib.Reasons[receiver.ReasonWrongSecret] != 1 || lib.RejectedAt.IsZero() {
		t.Errorf("lib after a wrong secret: %+v, want 1 rejected wrong_secret", lib)
	}
	// No signature at all: the hook has no secret set.
	w.do(t, delivery{body: issuePayload("opened", "acme/app", 2), sign: "none"})
	if app := w.record(t, github.Platform, "app"); app.RejectedReason != receiver.ReasonNoSignature || app.Authenticated != 1 {
		t.Errorf("app after an unsigned delivery: %+v, want rejected no_signature", app)
	}
	// lib's secret on a delivery naming acme/app: app's record, another project's secret.
	body = issuePayload("labeled", "acme/app", 1, "agent-smith")
	if status, _ := w.do(t, delivery{body: body, sign: github.SignatureHeader(body, []byte(otherSecret))}); status != http.StatusUnauthorized {
		t.Fatalf("another project's secret: %d, want 401", status)
	}
	if app := w.record(t, github.Platform, "app"); app.RejectedReason != receiver.ReasonOtherProjectSecret || app.Rejected != 2 {
		t.Errorf("app after lib's secret: %+v, want 2 rejected, last other_project_secret", app)
	}
	if lib := w.record(t, github.Platform, "lib"); lib.Authenticated != 0 {
		t.Errorf("lib's secret on app's delivery counted as lib authenticated: %+v", lib)
	}
	// A wrong secret on a ping naming no repository: not attributable.
	w.do(t, delivery{event: "ping", body: []byte(`{"zen":"x","hook_id":8}`), sign: github.SignatureHeader([]byte(`{"zen":"x","hook_id":8}`), []byte("guess"))})
	if none := w.record(t, github.Platform, ""); none.Rejected != 1 || none.RejectedReason != receiver.ReasonWrongSecret {
		t.Errorf("unattributed record: %+v, want 1 wrong_secret", none)
	}

	lines := w.rejections()
	if len(lines) != 4 {
		t.Fatalf("%d rejection lines, want 4: %v", len(lines), lines)
	}
	want := []struct{ project, reason, source string }{
		{"lib", receiver.ReasonWrongSecret, "env:GH_LIB_SECRET"},
		{"app", receiver.ReasonNoSignature, "env:GH_APP_SECRET"},
		{"app", receiver.ReasonOtherProjectSecret, "env:GH_APP_SECRET"},
		{"", receiver.ReasonWrongSecret, ""},
	}
	for i, l := range lines {
		wl := want[i]
		if l["project"] != wl.project || l["reason"] != wl.reason || l["platform"] != github.Platform {
			t.Errorf("line %d: %v, want project %q reason %q", i, l, wl.project, wl.reason)
		}
		if wl.source != "" {
			if src, _ := l["secretFrom"].([]any); !slices.Contains(src, any(wl.source)) {
				t.Errorf("line %d: secretFrom %v, want %s", i, l["secretFrom"], wl.source)
			}
			if fix, _ := l["fix"].(string); !strings.Contains(fix, wl.source) {
				t.Errorf("line %d: fix %q does not name %s", i, fix, wl.source)
			}
			if l["setting"] != "projects["+wl.project+"].webhook" {
				t.Errorf("line %d: setting %v", i, l["setting"])
			}
		}
		for k, v := range l {
			if s, ok := v.(string); ok && (strings.Contains(s, hostileSecret) || strings.Contains(s, otherSecret)) {
				t.Errorf("line %d: field %s carries a secret: %q", i, k, s)
			}
		}
	}
	if got := w.counts.get("github/lib/" + receiver.ReasonWrongSecret); got != 1 {
		t.Errorf("metric github/lib/wrong_secret = %d, want 1", got)
	}
	if got := w.counts.get("github/app/" + receiver.OutcomeAuthenticated); got != 1 {
		t.Errorf("metric github/app/authenticated = %d, want 1", got)
	}
	ttl, err := w.RDB.TTL(context.Background(), keys.WebhookAuth(github.Platform, "app")).Result()
	if err != nil || ttl <= 0 || ttl > keys.WebhookAuthTTL {
		t.Errorf("record TTL %v (%v), want (0, %v]", ttl, err, keys.WebhookAuthTTL)
	}
}

// GitLab sends its token verbatim: a missing one is no_signature, a wrong
// one wrong_secret, on the route's only project whatever the payload says.
func TestGitLabTokenRejectionsNameTheProject(t *testing.T) {
	w := newAuthWorld(t)
	send := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "/webhooks/gitlab", strings.NewReader(`{"object_kind":"push"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(gitlab.HeaderEvent, "Push Hook")
		if token != "" {
			req.Header.Set(gitlab.HeaderToken, token)
		}
		rec := httptest.NewRecorder()
		w.handler.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := send(""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d", code)
	}
	if rec := w.record(t, gitlab.Platform, "gl"); rec.RejectedReason != receiver.ReasonNoSignature {
		t.Errorf("no token: %+v, want no_signature", rec)
	}
	if code := send("wrong"); code != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", code)
	}
	if code := send("gitlab-token"); code/100 != 2 {
		t.Fatalf("right token: %d", code)
	}
	rec := w.record(t, gitlab.Platform, "gl")
	if rec.Reasons[receiver.ReasonWrongSecret] != 1 || rec.Authenticated != 1 || rec.AuthenticatedEvent != "Push Hook" {
		t.Errorf("after wrong then right token: %+v", rec)
	}
	lines := w.rejections()
	if len(lines) != 2 || lines[1]["project"] != "gl" || lines[1]["reason"] != receiver.ReasonWrongSecret {
		t.Errorf("rejection lines %v", lines)
	}
}

// A flood of bad-signature deliveries, each naming another repository and
// delivery id, changes neither what the last authenticated delivery
// recorded nor the set of record keys: the keys are per configured
// project, and the rejections since the last authenticated delivery are
// counted apart, so check can tell them from the tracker's own delivery.
func TestRejectFloodKeepsAuthenticatedRecord(t *testing.T) {
	w := newAuthWorld(t)
	ping := []byte(`{"zen":"Design for failure.","hook_id":7,"repository":{"full_name":"acme/app"}}`)
	if status, _ := w.do(t, delivery{event: "ping", body: ping}); status != http.StatusOK {
		t.Fatalf("signed ping: %d, want 200", status)
	}
	good := w.record(t, github.Platform, "app")
	const flood = 50
	for i := range flood {
		body := issuePayload("labeled", fmt.Sprintf("evil/repo-%d", i), 1, "agent-smith")
		w.do(t, delivery{event: fmt.Sprintf("evt-%d", i), id: fmt.Sprintf("id-%d", i), body: body, sign: github.SignatureHeader(body, []byte("guess"))})
		body = issuePayload("labeled", "acme/app", 1, "agent-smith")
		w.do(t, delivery{id: fmt.Sprintf("app-%d", i), body: body, sign: github.SignatureHeader(body, []byte("guess"))})
	}
	app := w.record(t, github.Platform, "app")
	if app.Authenticated != 1 || !app.AuthenticatedAt.Equal(good.AuthenticatedAt) || app.AuthenticatedEvent != "ping" {
		t.Errorf("app after the flood: %+v, want the ping's authenticated record unchanged %+v", app, good)
	}
	if app.Rejected != flood || app.RejectedSinceAuthenticated != flood {
		t.Errorf("app after the flood: %d rejected, %d since authenticated, want %d each", app.Rejected, app.RejectedSinceAuthenticated, flood)
	}
	keysNow, err := w.RDB.Keys(context.Background(), keys.WebhookAuth("*", "*")).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keysNow)
	want := []string{keys.WebhookAuth(github.Platform, ""), keys.WebhookAuth(github.Platform, "app")}
	if !slices.Equal(keysNow, want) {
		t.Errorf("record keys after the flood: %v, want %v", keysNow, want)
	}
	if status, _ := w.do(t, delivery{event: "ping", id: "again", body: []byte(`{"zen":"Again.","hook_id":7,"repository":{"full_name":"acme/app"}}`)}); status != http.StatusOK {
		t.Fatalf("second signed ping: %d, want 200", status)
	}
	if app := w.record(t, github.Platform, "app"); app.Authenticated != 2 || app.RejectedSinceAuthenticated != 0 || app.Rejected != flood {
		t.Errorf("app after an authenticated delivery: %+v, want 2 authenticated, 0 rejected since, %d rejected", app, flood)
	}
}
