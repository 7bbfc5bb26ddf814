package daemon

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/projects"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
)

const policyConfig = `
redis: {addr: "127.0.0.1:1"}
projects:
  - {name: a, platform: github, repo: o/a, token_env: SHARED, polling: {enabled: true}, token_concurrency: 2,
     priority: {labels: {urgent: 1}}, pipeline: {command: [run], concurrency: 3, retry: {exit_codes: [75]}}}
  - {name: b, platform: github, repo: o/b, token_env: SHARED, polling: {enabled: true}, token_concurrency: 1,
     priority: {labels: {later: 9}, default: 7}, pipeline: {command: [run]}}
  - {name: c, platform: github, repo: o/c, token_env: OTHER, polling: {enabled: true}, token_concurrency: 1,
     pipeline: {command: [run]}}
`

// Projects sharing a token share its semaphore, named by a digest; the
// queue has a level for every priority a project can give.
func TestPoliciesFromConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(policyConfig), func(k string) (string, bool) {
		return map[string]string{"SHARED": "shared-secret-token", "OTHER": "other-secret-token"}[k], true
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := projects.Lifecycle(&cfg.Projects[0], nil), projects.Lifecycle(&cfg.Projects[1], nil), projects.Lifecycle(&cfg.Projects[2], nil)
	if a.Limits.TokenID == "" || a.Limits.TokenID != b.Limits.TokenID || a.Limits.TokenID == c.Limits.TokenID {
		t.Errorf("token ids a=%q b=%q c=%q: a and b share a token, c does not", a.Limits.TokenID, b.Limits.TokenID, c.Limits.TokenID)
	}
	if strings.Contains(keys.TokenSlots(a.Limits.TokenID), "shared-secret-token") {
		t.Error("the token itself is in a key")
	}
	if a.Limits.Concurrency != 3 || a.Limits.TokenConcurrency != 2 || !slices.Equal(a.Pipeline.Retry.ExitCodes, []int{75}) ||
		a.Pipeline.Retry.Backoff.Initial != config.DefaultBackoffInitial {
		t.Errorf("project a: %+v", a)
	}
	if b.Priority.Of([]string{"x"}) != 7 || b.Priority.Of([]string{"later"}) != 9 || a.Priority.Of(nil) != 5 {
		t.Errorf("priorities: b %+v a %+v", b.Priority, a.Priority)
	}
	q := projects.Queue(redistest.Start(t).Client(t), cfg)
	want := []string{keys.QueueLevel(1), keys.Queue(), keys.QueueLevel(7), keys.QueueLevel(9)}
	if got := q.Lists(); !slices.Equal(got, want) {
		t.Errorf("queue lists %q, want %q", got, want)
	}
}
