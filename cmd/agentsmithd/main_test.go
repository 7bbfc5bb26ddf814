package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's first command must keep working: the demo settles every
// ticket, shows a failure comment, and exits 0.
func TestDemoSettlesEveryTicket(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"demo", "-timeout", "60s"}, &out, &errOut); code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	// The table's columns are padded: compare lines with single spaces.
	lines := strings.Split(out.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	s := strings.Join(lines, "\n")
	want := []string{"in-progress → done", "in-progress → failed", "exit status 3", "every ticket settled", "tracker sandbox",
		// It ends with what to do next.
		"next:", "agentsmithd demo --keep", "Your first real project in five minutes"}
	if _, err := setupDemoPR(t.TempDir()); err == nil {
		// examples/pipelines/offline/run.sh pushed the work branch and
		// opened a pull request on the sim for the Done ticket.
		want = append(want, "pull request: http://", "/github/demo/webshop/pull/", "(agent-smith/demo-webshop-2 → main)",
			// demo/storefront#1 runs examples/pipelines/offline's plan.sh
			// and implement.sh as the stages plan and implement, with an
			// approval gate before implement: the plan is the first
			// stage's comment, posted for review, the ticket waits until
			// the demo's reviewer approves, the second stage opens the
			// pull request.
			"stage plan succeeded", "Plan for demo/storefront#", "Carried out the plan",
			"(agent-smith/demo-storefront-1 → main)")
		// In this order: parked with the plan posted, approved by an
		// allowed user's comment, moved on by the gate, implemented.
		inOrder(t, s,
			"github demo/storefront#1 in-progress → awaiting-approval demo-replica (stage implement)",
			`github demo/storefront#1 dana comments "/agent-smith approve"`,
			"github demo/storefront#1 awaiting-approval → enqueued demo-replica (stage implement)",
			"github demo/storefront#1 enqueued → in-progress demo-replica (stage implement)",
			"github demo/storefront#1 in-progress → done demo-replica (stage implement)",
			// The ticket's comments, as listed at the end.
			"stage implement awaits approval: comment `/agent-smith approve`",
			"comment: /agent-smith approve",
			"comment: **agent-smith**: approved by dana: stage implement queued.",
			"comment: **agent-smith**: stage implement succeeded")
	}
	for _, want := range want {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	// The section the demo points at exists.
	if readme, err := os.ReadFile("../../README.md"); err != nil || !strings.Contains(string(readme), "\n## Your first real project in five minutes\n") {
		t.Errorf("the demo points at a README section that is not there (%v)", err)
	}
	// demo/webshop#1 is the issue without the trigger label.
	if strings.Contains(s, "demo/webshop#1 ") {
		t.Error("the untriggered issue was written to")
	}
}

// inOrder fails t unless s holds each of parts, each after the one before.
func inOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	rest, after := s, "the start"
	for _, p := range parts {
		i := strings.Index(rest, p)
		if i < 0 {
			t.Errorf("demo output lacks %q after %q:\n%s", p, after, s)
			return
		}
		rest, after = rest[i+len(p):], p
	}
}

func TestValidateNamesEveryBadField(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"validate", "-c", "../../testdata/config/bad.yaml"}, &out, &errOut); code != 1 {
		t.Fatalf("validate bad.yaml exited %d, want 1", code)
	}
	for _, want := range []string{"projects[1].webhook.secret_env: GH_SECRET is not set", "projects[0].pipeline.command: required"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("validate output lacks %q:\n%s", want, errOut.String())
		}
	}
	out.Reset()
	errOut.Reset()
	t.Setenv("GITHUB_TOKEN", "x")
	t.Setenv("GH_WEBHOOK_SECRET", "y")
	if code := run([]string{"validate", "-c", "../../testdata/config/minimal.yaml"}, &out, &errOut); code != 0 {
		t.Errorf("validate minimal.yaml exited %d: %s", code, errOut.String())
	}
	if want := "ok (1 project, roles "; !strings.Contains(out.String(), want) {
		t.Errorf("validate of one project says %q, want %q", out.String(), want)
	}
}

// print-config and serve --print-config show the effective config with
// every secret named by its source: values read from the environment or a
// file never appear.
func TestPrintConfigHidesSecrets(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "hook-secret")
	if err := os.WriteFile(secretFile, []byte("hook-secret-from-file-5150\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte(`redis: {addr: "redis:6379", password_env: PC_REDIS_PW}
projects:
  - name: webshop
    platform: github
    repo: acme/webshop
    token_env: PC_GITHUB_TOKEN
    webhook: {secret_file: hook-secret}
    pipeline: {command: [./run.sh]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PC_GITHUB_TOKEN", "ghp_env_token_8086")
	t.Setenv("PC_REDIS_PW", "redis-password-6502")
	for _, args := range [][]string{{"print-config", "-c", cfgFile}, {"serve", "--print-config", "-c", cfgFile}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("%v exited %d: %s", args, code, errOut.String())
		}
		s := out.String()
		for _, secret := range []string{"ghp_env_token_8086", "redis-password-6502", "hook-secret-from-file-5150"} {
			if strings.Contains(s+errOut.String(), secret) {
				t.Errorf("%v printed a secret value:\n%s", args, s)
			}
		}
		for _, want := range []string{"env: PC_GITHUB_TOKEN", "env: PC_REDIS_PW", "{file: hook-secret}", "heartbeat_ttl: 2m0s", "listen: :8080"} {
			if !strings.Contains(s, want) {
				t.Errorf("%v output lacks %q:\n%s", args, want, s)
			}
		}
	}
}
