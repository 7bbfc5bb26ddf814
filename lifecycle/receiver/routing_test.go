package receiver_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// newOrgHookWorld has two GitHub projects, acme/app and acme/lib, whose
// deliveries come from one organisation webhook: both are configured with
// hostileSecret (lib also with a rotated one, listed first). Issue 1 of each
// repository carries the trigger label.
func newOrgHookWorld(t *testing.T) *hostileWorld {
	t.Helper()
	r := redistest.Start(t)
	rdb := r.Client(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	projects := lifecycle.Projects{}
	var prs []receiver.ProjectRoute
	for _, p := range []struct{ name, repo string }{{"app", "acme/app"}, {"lib", "acme/lib"}} {
		tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: p.repo, Project: p.name, Token: "t", Writer: "test"})
		if err != nil {
			t.Fatal(err)
		}
		projects[p.name] = &lifecycle.Project{Name: p.name, Platform: github.Platform, Tracker: tr,
			TriggerLabel: "agent-smith", Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1}}
		s.CreateIssue(p.repo, "triggered", "", "agent-smith")
		secrets := [][]byte{[]byte(hostileSecret)}
		if p.name == "lib" {
			secrets = [][]byte{[]byte("lib-rotated-secret"), []byte(hostileSecret)}
		}
		prs = append(prs, receiver.ProjectRoute{Name: p.name, Locator: p.repo, Secrets: secrets})
	}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{
		Instance: "test", Labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}})
	rc := receiver.New(rdb, claims, []receiver.Route{{Platform: github.Platform, Decoder: github.Webhooks{}, Projects: prs, FoldLocator: true}},
		receiver.Config{MaxBody: maxBody})
	return &hostileWorld{Sim: s, RDB: rdb, handler: rc.Handler()}
}

// Projects sharing an organisation's webhook secret each get their own
// deliveries (were only the first project whose secret matches tried, the
// second project's would be answered 401).
func TestSharedSecretRoutesToEveryProject(t *testing.T) {
	w := newOrgHookWorld(t)
	for _, repo := range []string{"acme/app", "acme/lib"} {
		status, ans := w.do(t, delivery{body: issuePayload("labeled", repo, 1, "agent-smith")})
		if status != http.StatusAccepted || ans["outcome"] != "claimed" {
			t.Errorf("%s: %d %v, want 202 claimed", repo, status, ans)
		}
	}
	// A secret of neither project still authenticates nothing.
	status, _ := w.do(t, delivery{body: issuePayload("labeled", "acme/app", 1, "agent-smith"),
		sign: github.SignatureHeader(issuePayload("labeled", "acme/app", 1, "agent-smith"), []byte(otherSecret))})
	if status != http.StatusUnauthorized {
		t.Errorf("unknown secret: %d, want 401", status)
	}
}

// GitHub names repositories case-insensitively: a payload spelling the
// repository "Acme/App" is the configured "acme/app", and its ticket gets the
// configured spelling (one Redis key per ticket).
func TestRepositoryNamesCompareAsGitHubDoes(t *testing.T) {
	w := newOrgHookWorld(t)
	status, ans := w.do(t, delivery{body: issuePayload("labeled", "Acme/App", 1, "agent-smith")})
	if status != http.StatusAccepted || ans["outcome"] != "claimed" || ans["project"] != "app" {
		t.Fatalf("Acme/App: %d %v, want 202 claimed for app", status, ans)
	}
	claim, _ := ans["claim"].(map[string]any)
	if claim["ticket"] != "github:acme/app#1" {
		t.Errorf("ticket %v, want github:acme/app#1", claim["ticket"])
	}
}
