package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// check warns when a project's pipelines can read the daemon's secret
// files: with the sandbox off, as the daemon's own user always (the admin
// token's file and every token_file), as run_as when a file's mode lets
// that user in.
func TestCheckWarnsWhenPipelinesCanReadSecrets(t *testing.T) {
	w := newCheckWorld(t)
	w.sandboxOff(t)
	tokenFile := filepath.Join(w.dir, "tracker-token")
	if err := os.WriteFile(tokenFile, []byte(checkToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	project := strings.Replace(w.githubProject("app", "acme/app", "CHECK_TOKEN"), "token_env: CHECK_TOKEN", "token_file: "+tokenFile, 1)
	code, rep, out := w.run(t, project)
	if code != 0 || rep.status("app", "pipeline user") != string(platforms.CheckWarn) {
		t.Fatalf("no run_as: exit %d, pipeline user %q, want 0 and warn:\n%s", code, rep.status("app", "pipeline user"), out)
	}
	for _, want := range []string{tokenFile, filepath.Join(w.dir, "config.status-token"), "set pipeline.run_as"} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning does not name %s:\n%s", want, out)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("run_as needs root")
	}
	// The pipeline user is another: it reads what its mode lets it.
	if err := os.Chmod(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runAs := strings.Replace(project, `pipeline: {command: ["true"]}`, `pipeline: {command: ["true"], run_as: "65534:65534"}`, 1)
	if _, rep, out = w.run(t, runAs); rep.status("app", "pipeline user") != string(platforms.CheckOK) {
		t.Errorf("run_as with 0600 files: %q, want ok:\n%s", rep.status("app", "pipeline user"), out)
	}
	if err := os.Chmod(tokenFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, rep, out = w.run(t, runAs); rep.status("app", "pipeline user") != string(platforms.CheckWarn) || !strings.Contains(out, tokenFile) {
		t.Errorf("run_as with a 0644 token file: %q, want a warning naming it:\n%s", rep.status("app", "pipeline user"), out)
	}
}

// The sandbox row: a root daemon's runs get a uid each, the limits and the
// hosts they may reach are named; with the sandbox off, a warning that
// says what a pipeline reaches then.
func TestCheckSandboxRow(t *testing.T) {
	w := newCheckWorld(t)
	project := w.project("app", "github", "/github/", "acme/app", "CHECK_TOKEN",
		"    pipeline: {command: [\"true\"], sandbox: {network: {allow: [api.anthropic.com]}}}\n")
	project = strings.Replace(project, "    pipeline: {command: [\"true\"]}\n", "", 1)
	code, rep, out := w.run(t, project)
	switch st := rep.status("app", "sandbox"); {
	case strings.Contains(out, "no sandbox starts here"):
		t.Skipf("no sandbox on this host: %s", out)
	case code != 0 || st == string(platforms.CheckFail) || st == "":
		t.Fatalf("sandbox on: exit %d, sandbox row %q:\n%s", code, st, out)
	}
	for _, want := range []string{"limits memory 4GiB, 1024 processes, 2 cpus", "egress: api.anthropic.com"} {
		if !strings.Contains(out, want) {
			t.Errorf("the sandbox row does not say %q:\n%s", want, out)
		}
	}
	if os.Geteuid() == 0 && !strings.Contains(out, "a uid of its own per run from 1879048192") {
		t.Errorf("a root daemon's row does not name the uid range:\n%s", out)
	}
	w.sandboxOff(t)
	if _, rep, out = w.run(t, project); rep.status("app", "sandbox") != string(platforms.CheckWarn) || !strings.Contains(out, "sandbox.mode is off") {
		t.Errorf("sandbox off: row %q, want a warning:\n%s", rep.status("app", "sandbox"), out)
	}
}
