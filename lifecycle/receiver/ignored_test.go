package receiver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

const ignoredSecret = "ignored-test-secret"

// platformSender signs a fixture the way its platform does and names its
// event where the platform puts the event in a header.
type platformSender struct {
	decoder platforms.WebhookDecoder
	headers func(event string, body []byte) http.Header
}

var senders = map[string]platformSender{
	github.Platform: {github.Webhooks{}, func(event string, body []byte) http.Header {
		h := http.Header{}
		h.Set(github.HeaderEvent, event)
		h.Set(github.HeaderSignature, github.SignatureHeader(body, []byte(ignoredSecret)))
		return h
	}},
	gitlab.Platform: {gitlab.Webhooks{}, func(event string, _ []byte) http.Header {
		h := http.Header{}
		// "confidential_issue" → "Confidential Issue Hook".
		words := strings.Split(event, "_")
		for i, w := range words {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
		h.Set(gitlab.HeaderEvent, strings.Join(words, " ")+" Hook")
		h.Set(gitlab.HeaderToken, ignoredSecret)
		return h
	}},
	azuredevops.Platform: {azuredevops.Webhooks{}, func(string, []byte) http.Header {
		h := http.Header{}
		h.Set("Authorization", azuredevops.BasicAuth("agentsmith", ignoredSecret))
		return h
	}},
	jira.Platform: {jira.Webhooks{}, func(_ string, body []byte) http.Header {
		h := http.Header{}
		h.Set(jira.HeaderSignature, jira.SignatureHeader(body, []byte(ignoredSecret)))
		return h
	}},
}

// ignoredReceiver is a receiver with one project per platform, each at
// locator, over a real Redis. No tracker is reachable: a delivery that got
// as far as a claim would answer 502, so a 2xx here was decided from the
// delivery alone.
func ignoredReceiver(t *testing.T, locator func(platform string) string) (http.Handler, func() []string) {
	t.Helper()
	rdb := redistest.Start(t).Client(t)
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), lifecycle.Projects{}, claim.Config{
		Instance: "test", Labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}})
	var routes []receiver.Route
	for platform, s := range senders {
		routes = append(routes, receiver.Route{Platform: platform, Decoder: s.decoder, Projects: []receiver.ProjectRoute{
			{Name: platform + "-project", Locator: locator(platform), Secrets: [][]byte{[]byte(ignoredSecret)}}}})
	}
	keysLeft := func() []string {
		ks, err := rdb.Keys(context.Background(), "*").Result()
		if err != nil {
			t.Fatal(err)
		}
		// Each authenticated delivery is recorded for check --webhook
		// (authrecord.go); nothing else may be written.
		return slices.DeleteFunc(ks, func(k string) bool {
			for platform := range senders {
				if strings.HasPrefix(k, keys.WebhookAuth(platform, "")) {
					return true
				}
			}
			return false
		})
	}
	return receiver.New(rdb, claims, routes, receiver.Config{}).Handler(), keysLeft
}

func post(t *testing.T, h http.Handler, platform, event string, body []byte) (int, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(http.MethodPost, "/webhooks/"+platform, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range senders[platform].headers(event, body) {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var ans map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil {
		t.Fatalf("answer %d is not JSON: %q", rec.Code, rec.Body.String())
	}
	return rec.Code, ans
}

// TestAuthenticatedDeliveriesNeverFail sends every fixture of every
// platform, authenticated, to a receiver that serves none of the projects
// they name (a group or organisation hook sends every project's events):
// each is answered 2xx, ignored (or pong), never a 4xx a tracker would
// count towards disabling the hook (gitlab-org/gitlab!166329). GitHub's
// repository deliveries, Jira's project events and a GitLab system hook's
// project events are answered 202 discovery: they bump the discovery
// counter, the only key they leave.
func TestAuthenticatedDeliveriesNeverFail(t *testing.T) {
	h, keysLeft := ignoredReceiver(t, func(string) string { return "elsewhere/unrelated" })
	n, discoveries := 0, 0
	for platform := range senders {
		paths, err := filepath.Glob(filepath.Join("..", "..", "testdata", platform, "*.json"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("%s: no fixtures (%v)", platform, err)
		}
		for _, p := range paths {
			body, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			base := strings.TrimSuffix(filepath.Base(p), ".json")
			event, _, _ := strings.Cut(base, ".")
			status, ans := post(t, h, platform, event, body)
			if event == "repository" || event == "installation_repositories" || event == "project_created" || (platform == gitlab.Platform && event == "system") {
				// Not about a project: every replica lists its
				// discovered repositories again.
				if status != http.StatusAccepted || ans["outcome"] != receiver.OutcomeDiscovery {
					t.Errorf("%s/%s: %d %v, want 202 discovery", platform, base, status, ans)
				}
				discoveries++
			} else if status/100 != 2 || (ans["outcome"] != receiver.OutcomeIgnored && ans["outcome"] != "pong") {
				t.Errorf("%s/%s: %d %v, want 2xx ignored", platform, base, status, ans)
			}
			n++
		}
	}
	want := []string{}
	if discoveries > 0 {
		want = append(want, keys.Discovery())
	}
	if ks := keysLeft(); !slices.Equal(ks, want) {
		t.Errorf("ignored deliveries left Redis keys %v, want %v", ks, want)
	}
	t.Logf("%d fixtures, every one answered 2xx", n)
}

// TestGitLabWorkItemsIgnored: a task and an epic (Issue Hook, object_kind
// work_item, gitlab-org/gitlab#535890) for the configured project, the
// task carrying the trigger label, are answered 202 ignored; the same
// secret with a wrong token is still 401, and a body that is not JSON 400.
func TestGitLabWorkItemsIgnored(t *testing.T) {
	h, keysLeft := ignoredReceiver(t, func(p string) string {
		if p == gitlab.Platform {
			return "acme/platform/payments-api"
		}
		return "elsewhere/unrelated"
	})
	for _, name := range []string{"issue.work_item.task.open", "issue.work_item.epic.update"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gitlab", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(body, []byte(`"agent-smith"`)) {
			t.Fatalf("%s: fixture should carry the trigger label", name)
		}
		if status, ans := post(t, h, gitlab.Platform, "issue", body); status != http.StatusAccepted || ans["outcome"] != receiver.OutcomeIgnored {
			t.Errorf("%s: %d %v, want 202 ignored", name, status, ans)
		}
	}
	if ks := keysLeft(); len(ks) != 0 {
		t.Errorf("ignored work items left Redis keys %v", ks)
	}
	r := httptest.NewRequest(http.MethodPost, "/webhooks/gitlab", strings.NewReader(`{}`))
	r.Header.Set(gitlab.HeaderEvent, gitlab.EventIssueHook)
	r.Header.Set(gitlab.HeaderToken, "wrong")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusUnauthorized {
		t.Errorf("wrong token: %d, want 401", rec.Code)
	}
	if status, _ := post(t, h, gitlab.Platform, "issue", []byte(`{"object_kind":`)); status != http.StatusBadRequest {
		t.Errorf("truncated body: %d, want 400", status)
	}
}

// TestGitLabNeverDisablesOurHook is the end-to-end form of the rule: the
// sim's GitLab dialect, which disables a hook after four consecutive
// failures as GitLab does (gitlab-org/gitlab!166329), delivers more tasks
// and epics than that to the real receiver, authenticated; every delivery is
// answered 202 and the hook stays enabled with no failure counted.
func TestGitLabNeverDisablesOurHook(t *testing.T) {
	const repo = "acme/platform/payments-api"
	h, _ := ignoredReceiver(t, func(p string) string {
		if p == gitlab.Platform {
			return repo
		}
		return "elsewhere/unrelated"
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	s.AddHook(trackersim.Hook{Repo: repo, URL: srv.URL + "/webhooks/gitlab", Secret: ignoredSecret, Dialect: "gitlab"})
	for i := range 3 {
		s.SendGitLabWorkItem(repo, "Task", fmt.Sprintf("task %d", i), "agent-smith")
		s.SendGitLabWorkItem(repo, "Epic", fmt.Sprintf("epic %d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	st := s.HookStates()
	if len(st) != 1 || st[0].Failures != 0 || st[0].Disabled || !st[0].DisabledUntil.IsZero() || st[0].LastStatus != http.StatusAccepted {
		t.Fatalf("hook state %+v; want enabled, no failures, last answer 202", st)
	}
	if got := s.Stats().Deliveries; got != 6 {
		t.Fatalf("deliveries = %d, want 6", got)
	}
}
