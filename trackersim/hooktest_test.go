package trackersim_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/eventually"
	"github.com/agentsmithd/agentsmithd/pkg/webhooksig"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// received is one delivery a test receiver got.
type received struct {
	header http.Header
	body   map[string]any
}

// hookSink is a receiver answering every delivery with status and keeping
// what it got.
type hookSink struct {
	mu     sync.Mutex
	got    []received
	status int
	srv    *httptest.Server
}

func newHookSink(t *testing.T) *hookSink {
	k := &hookSink{status: http.StatusOK}
	k.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		k.mu.Lock()
		k.got = append(k.got, received{header: r.Header.Clone(), body: m})
		status := k.status
		k.mu.Unlock()
		if sig := r.Header.Get("X-Hub-Signature-256"); sig != "" {
			if _, err := webhooksig.VerifyHMAC(sig, b, [][]byte{[]byte("hook-secret")}); err != nil {
				status = http.StatusUnauthorized
			}
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"outcome":"x"}`))
	}))
	t.Cleanup(k.srv.Close)
	return k
}

func (k *hookSink) deliveries() []received {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]received(nil), k.got...)
}

// waitFor waits until the sink holds n deliveries and returns the last.
func (k *hookSink) waitFor(t *testing.T, n int) received {
	t.Helper()
	eventually.Wait(t, 5*time.Second, fmt.Sprintf("delivery %d", n), func() bool { return len(k.deliveries()) >= n })
	d := k.deliveries()
	return d[n-1]
}

func simWithHooks(t *testing.T, clock func() time.Time) (*trackersim.Sim, string) {
	t.Helper()
	s := trackersim.New(trackersim.Options{Clock: clock})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	s.SetAccess("admin-token", trackersim.Access{Login: "owner", Role: trackersim.RoleAdmin})
	s.SetAccess("writer-token", trackersim.Access{Login: "dev", Role: trackersim.RoleWrite})
	return s, srv.URL
}

func post(t *testing.T, url, token, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("PRIVATE-TOKEN", token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := hookClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A repository hook's admin pings it (204) and the hook gets a signed ping
// naming the repository; an organisation hook's ping names the
// organisation; anyone else gets 404, as GitHub hides hooks.
func TestGitHubPingsHooks(t *testing.T) {
	t.Parallel()
	s, base := simWithHooks(t, nil)
	sink := newHookSink(t)
	s.AddHook(trackersim.Hook{Repo: "acme/app", URL: sink.srv.URL, Secret: "hook-secret"})
	sink.waitFor(t, 1) // the ping of a new hook
	s.AddHook(trackersim.Hook{URL: sink.srv.URL, Secret: "hook-secret"})
	sink.waitFor(t, 2)
	hooks := s.HookStates()

	if code, _ := post(t, base+"/github/repos/acme/app/hooks/1/pings", "writer-token", ""); code != http.StatusNotFound {
		t.Errorf("a writer's ping: %d, want 404", code)
	}
	if code, _ := post(t, base+"/github/repos/acme/app/hooks/1/pings", "admin-token", ""); code != http.StatusNoContent {
		t.Fatalf("admin's ping: %d, want 204", code)
	}
	d := sink.waitFor(t, 3)
	repo, _ := d.body["repository"].(map[string]any)
	if d.header.Get("X-GitHub-Event") != "ping" || d.body["hook_id"] != float64(hooks[0].ID) || repo["full_name"] != "acme/app" {
		t.Errorf("repository ping: %v %v", d.header.Get("X-GitHub-Event"), d.body)
	}
	if code, _ := post(t, base+"/github/repos/acme/app/hooks/2/pings", "admin-token", ""); code != http.StatusNotFound {
		t.Errorf("the organisation's hook pinged through the repository: %d, want 404", code)
	}
	if code, _ := post(t, base+"/github/orgs/acme/hooks/2/pings", "admin-token", ""); code != http.StatusNoContent {
		t.Fatalf("organisation ping: %d, want 204", code)
	}
	d = sink.waitFor(t, 4)
	org, _ := d.body["organization"].(map[string]any)
	hook, _ := d.body["hook"].(map[string]any)
	if org["login"] != "acme" || hook["type"] != "Organization" || d.body["repository"] != nil {
		t.Errorf("organisation ping: %v", d.body)
	}
	if got := s.Stats().TestDeliveries; got != 2 {
		t.Errorf("TestDeliveries = %d, want 2", got)
	}
	for _, st := range s.HookStates() {
		if st.LastStatus != http.StatusOK {
			t.Errorf("hook %d: last status %d: the signature did not verify", st.ID, st.LastStatus)
		}
	}
}

// GitLab's test waits for the receiver: 201 when it answered 2xx, 422 with
// its answer otherwise; the sixth test in a minute of one user on one
// project is 429.
func TestGitLabTestsHooks(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, base := simWithHooks(t, clock)
	sink := newHookSink(t)
	s.AddHook(trackersim.Hook{Repo: "grp/app", URL: sink.srv.URL, Secret: "gl-token", Dialect: "gitlab"})
	id := s.HookStates()[0].ID
	url := base + "/gitlab/api/v4/projects/grp%2Fapp/hooks/" + jsonInt(id) + "/test/push_events"

	if code, _ := post(t, url, "writer-token", ""); code != http.StatusForbidden {
		t.Errorf("a Developer's test: %d, want 403", code)
	}
	code, body := post(t, url, "admin-token", "")
	if code != http.StatusCreated || !strings.Contains(body, "201 Created") {
		t.Fatalf("test: %d %s, want 201", code, body)
	}
	got := sink.deliveries()
	last := got[len(got)-1]
	project, _ := last.body["project"].(map[string]any)
	if last.header.Get("X-Gitlab-Event") != "Push Hook" || last.header.Get("X-Gitlab-Token") != "gl-token" || project["path_with_namespace"] != "grp/app" {
		t.Errorf("test delivery: %v %v", last.header, last.body)
	}
	sink.mu.Lock()
	sink.status = http.StatusUnauthorized
	sink.mu.Unlock()
	if code, body := post(t, url, "admin-token", ""); code != http.StatusUnprocessableEntity || !strings.Contains(body, "outcome") {
		t.Errorf("test answered 401: %d %s, want 422 with the receiver's answer", code, body)
	}
	if code, _ := post(t, strings.Replace(url, "push_events", "deployment_events", 1), "admin-token", ""); code != http.StatusBadRequest {
		t.Errorf("unsupported trigger: %d, want 400", code)
	}
	for range 3 {
		post(t, url, "admin-token", "")
	}
	if code, _ := post(t, url, "admin-token", ""); code != http.StatusTooManyRequests {
		t.Errorf("sixth test in a minute: %d, want 429", code)
	}
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if code, _ := post(t, url, "admin-token", ""); code != http.StatusUnprocessableEntity {
		t.Errorf("a minute later: %d, want 422 (allowed, receiver still 401)", code)
	}
}

// Azure DevOps queues a test notification of an existing subscription and
// sends the sample payload with the subscription's basic-auth password.
func TestAzureDevOpsSendsTestNotifications(t *testing.T) {
	t.Parallel()
	s, base := simWithHooks(t, nil)
	sink := newHookSink(t)
	s.AddHook(trackersim.Hook{Repo: "org/proj", URL: sink.srv.URL, Secret: "ado-secret", Dialect: "ado"})
	sub := subscriptionID(s.HookStates()[0].ID)
	body := `{"subscriptionId":"` + sub + `","details":{"eventType":"workitem.updated","publisherId":"tfs","consumerId":"webHooks"}}`
	code, ans := post(t, base+"/ado/org/_apis/hooks/testnotifications?api-version=7.1-preview.1", "admin-token", body, adoAuth("admin-token")...)
	if code != http.StatusOK || !strings.Contains(ans, `"status":"queued"`) {
		t.Fatalf("test notification: %d %s", code, ans)
	}
	d := sink.waitFor(t, 1)
	if d.body["eventType"] != "workitem.updated" || d.body["subscriptionId"] != sub ||
		d.header.Get("Authorization") != "Basic "+basicB64("agentsmith:ado-secret") {
		t.Errorf("test delivery: %v %v", d.header, d.body)
	}
	if code, _ := post(t, base+"/ado/org/_apis/hooks/testnotifications?api-version=7.1-preview.1", "writer-token", body, adoAuth("writer-token")...); code != http.StatusForbidden {
		t.Errorf("a non-administrator's test: %d, want 403", code)
	}
	if code, _ := post(t, base+"/ado/org/_apis/hooks/testnotifications?api-version=7.1-preview.1", "admin-token", `{"subscriptionId":"nope"}`, adoAuth("admin-token")...); code != http.StatusNotFound {
		t.Errorf("unknown subscription: %d, want 404", code)
	}
}

func jsonInt(n int64) string { return fmt.Sprint(n) }

// subscriptionID is the id the sim's subscription list gives a hook's
// first event type.
func subscriptionID(hookID int64) string { return fmt.Sprintf("%08x-0000-0000-0000-%012x", hookID, 0) }

func basicB64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// adoAuth is a PAT's basic-auth header.
func adoAuth(token string) []string { return []string{"Authorization", "Basic " + basicB64(":"+token)} }

// hookClient has a transport of its own: httptest.Server.Close closes
// http.DefaultTransport's idle connections, which breaks a request another
// parallel test is making on it ("CloseIdleConnections called").
var hookClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
