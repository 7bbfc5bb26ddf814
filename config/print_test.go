package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The printed config names where each secret comes from and never holds a
// value, whether the value came from the environment or a file; and it is a
// config Parse accepts again, to the same effective settings.
func TestMarshalRedactsSecretsAndRoundTrips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "gitlab-token")
	if err := os.WriteFile(tokenFile, []byte("glpat-from-file-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GH_TOKEN": "ghp_from_env_4567", "GH_HOOK": "hook-secret-89ab", "REDIS_PW": "redis-pw-cdef"}
	yml := `
redis: {addr: "redis:6379", password_env: REDIS_PW}
listen: ":8081"
instance_id: r1
housekeeping: {fast_interval: 2s}
projects:
  - name: webshop
    platform: github
    repo: acme/webshop
    token_env: GH_TOKEN
    webhook: {secret_env: GH_HOOK}
    pipeline: {command: ["./run.sh", "--fast"], env: {STAGE: prod}}
  - name: api
    platform: gitlab
    repo: acme/api
    token_file: ` + tokenFile + `
    polling: {enabled: true, interval: 30s}
    pipeline: {command: [./api.sh]}
`
	c := mustParse(t, yml, vars)
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, secret := range []string{"ghp_from_env_4567", "hook-secret-89ab", "redis-pw-cdef", "glpat-from-file-0123"} {
		if strings.Contains(text, secret) {
			t.Errorf("printed config contains a secret value:\n%s", text)
		}
	}
	for _, want := range []string{"env: GH_TOKEN", "file: " + tokenFile, "env: REDIS_PW", "env: GH_HOOK",
		"claim_lock_ttl: 30s", "fast_interval: 2s", "slow_interval: 1m0s", "max_attempts: 3", "trigger_label: agent-smith",
		"base_url: https://api.github.com/"} {
		if !strings.Contains(text, want) {
			t.Errorf("printed config lacks %q:\n%s", want, text)
		}
	}
	again, err := Parse(out, env(vars))
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, text)
	}
	// The same settings (the printed form covers every field a file can
	// set) and the same secrets, resolved from the same sources.
	if out2, _ := Marshal(again); string(out2) != text {
		t.Errorf("round trip changed the config:\nbefore\n%s\nafter\n%s", text, out2)
	}
	for i := range c.Projects {
		if again.Projects[i].Token.Value() != c.Projects[i].Token.Value() {
			t.Errorf("projects[%d].token resolves differently after the round trip", i)
		}
	}
	if again.Projects[0].Webhook.Secrets[0].Value() != vars["GH_HOOK"] || again.Redis.Password.Value() != vars["REDIS_PW"] {
		t.Error("webhook secret or Redis password resolves differently after the round trip")
	}
}

// yaml.Marshal of a Secret (or anything holding one) shows only its source.
func TestSecretYAMLShowsSource(t *testing.T) {
	t.Parallel()
	s := NewSecret("TOKEN", "", "value-must-not-print")
	out, err := yaml.Marshal(struct{ Token Secret }{s})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "value-must-not-print") || !strings.Contains(string(out), "env: TOKEN") {
		t.Errorf("yaml.Marshal(Secret) = %q", out)
	}
}

// Values only the newer sections have (floats, int maps, a bool pointer set
// to false) print and parse back unchanged.
func TestMarshalNewerSections(t *testing.T) {
	t.Parallel()
	in := `redis: {addr: "127.0.0.1:6379"}
audit: {enabled: false}
projects:
  - name: app
    platform: github
    repo: acme/app
    token: {env: GH}
    polling: {enabled: true}
    priority: {labels: {"priority:high": 1}, default: 5}
    pipeline:
      command: [make]
      retry: {exit_codes: [75], backoff: {multiplier: 1.5}}
`
	env := func(string) (string, bool) { return "x", true }
	c, err := Parse([]byte(in), env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(out, env)
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, out)
	}
	if back.Audit.On() || back.Projects[0].Pipeline.Retry.Backoff.Multiplier != 1.5 || back.Projects[0].Priority.Labels["priority:high"] != 1 {
		t.Errorf("round trip lost a value:\n%s", out)
	}
}

// print-config shows every setting the daemon runs with: booleans that are
// on by default (audit.enabled), zero values (reactions: false,
// concurrency: 0), and floats as plain numbers, not "!!float 2".
func TestMarshalPrintsEveryField(t *testing.T) {
	t.Parallel()
	in := `redis: {addr: "127.0.0.1:6379"}
projects:
  - name: app
    platform: github
    repo: acme/app
    token: {env: GH}
    polling: {enabled: true}
    pipeline: {command: [make]}
`
	env := func(string) (string, bool) { return "x", true }
	c, err := Parse([]byte(in), env)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, want := range []string{"    enabled: true\n", "reactions: false\n", "        concurrency: 0\n", "multiplier: 2\n",
		"jitter: 0\n", "require_no_open_blockers: false\n", "insecure_skip_verify: false\n", "token_concurrency: 0\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("print lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "!!") {
		t.Errorf("print has a YAML tag:\n%s", s)
	}
	back, err := Parse(out, env)
	if err != nil {
		t.Fatalf("printed config does not parse: %v\n%s", err, out)
	}
	if again, _ := Marshal(back); string(again) != s {
		t.Errorf("print is not stable across a round trip:\n%s\n---\n%s", s, again)
	}
}
