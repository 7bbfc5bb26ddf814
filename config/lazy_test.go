package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// LoadFor resolves the groups asked for and leaves every other secret
// unread: a missing webhook, status or pipeline secret is no error, a
// missing tracker token is, named by its field and variable.
func TestLoadForResolvesOnlyWhatIsNeeded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentsmithd.yaml")
	yml := `redis: {addr: "127.0.0.1:6379", password_env: LF_REDIS}
status: {token_env: LF_STATUS}
projects:
  - name: app
    platform: github
    repo: acme/app
    token_env: LF_TOKEN
    webhook: {secret_env: LF_WEBHOOK}
    pipeline: {command: ["true"], secrets: [{name: DEPLOY_KEY, from: {env: LF_PIPE}}]}
`
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"LF_STATUS", "LF_WEBHOOK", "LF_PIPE"} {
		t.Setenv(e, "x") // restored at cleanup
		os.Unsetenv(e)
	}
	t.Setenv("LF_REDIS", "redis-pass")
	t.Setenv("LF_TOKEN", "tracker-token")
	c, err := LoadFor(path, RedisSecrets|TrackerSecrets)
	if err != nil {
		t.Fatalf("LoadFor without the webhook, status and pipeline secrets: %v", err)
	}
	p := c.Projects[0]
	if c.Redis.Password.Value() != "redis-pass" || p.Token.Value() != "tracker-token" {
		t.Errorf("redis password %q, token %q: want both resolved", c.Redis.Password.Value(), p.Token.Value())
	}
	if w := p.Webhook.Secrets; len(w) != 1 || w[0].Env != "LF_WEBHOOK" || w[0].Value() != "" {
		t.Errorf("webhook secrets = %v, want the source kept and no value", w)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "projects[0].webhook.secret_env: LF_WEBHOOK is not set") {
		t.Errorf("Load resolves every secret: err = %v", err)
	}
	os.Unsetenv("LF_TOKEN")
	if _, err := LoadFor(path, RedisSecrets|TrackerSecrets); err == nil || !strings.Contains(err.Error(), "projects[0].token_env: LF_TOKEN is not set") {
		t.Errorf("LoadFor without the tracker token: err = %v, want it named", err)
	}
}
