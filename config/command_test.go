package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// A relative command resolves against the config file's directory, not the
// per-ticket work dir, and CheckCommands names where it looked.
func TestRelativeCommandsResolveAgainstTheConfigDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CMD_TEST_TOKEN", "x")
	cfgFile := filepath.Join(dir, "conf", "agentsmithd.yaml")
	writeFile(t, cfgFile, `projects:
  - name: a
    platform: github
    repo: acme/a
    token_env: CMD_TEST_TOKEN
    polling: {enabled: true}
    pipeline:
      command: ["./pipelines/implement.sh", "--verbose"]
      persist_command: [scripts/save.sh]
  - name: b
    platform: github
    repo: acme/b
    token_env: CMD_TEST_TOKEN
    polling: {enabled: true}
    pipeline: {command: [no-such-command-4711], env: {PATH: /nonexistent-bin}}
  - name: c
    platform: github
    repo: acme/c
    token_env: CMD_TEST_TOKEN
    polling: {enabled: true}
    pipeline: {command: [sh, -c, "true"]}
`, 0o644)
	c, err := Load(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	confDir := filepath.Join(dir, "conf")
	a := c.Projects[0].Pipeline
	if want := filepath.Join(confDir, "pipelines", "implement.sh"); a.Command[0] != want || a.Command[1] != "--verbose" {
		t.Errorf("command = %q, want %s first", a.Command, want)
	}
	if want := filepath.Join(confDir, "scripts", "save.sh"); a.PersistCommand[0] != want {
		t.Errorf("persist_command = %q, want %s", a.PersistCommand, want)
	}
	if a.CommandDir() != confDir {
		t.Errorf("CommandDir = %q", a.CommandDir())
	}
	if got := c.Projects[2].Pipeline.Command[0]; got != "sh" {
		t.Errorf("a bare name must stay for PATH, got %q", got)
	}

	err = c.CheckCommands()
	msgs := err.Error()
	for _, want := range []string{
		"projects[0].pipeline.command[0]: " + filepath.Join(confDir, "pipelines", "implement.sh") + " does not exist (relative commands resolve against the config file's directory " + confDir + ")",
		"projects[0].pipeline.persist_command[0]: " + filepath.Join(confDir, "scripts", "save.sh") + " does not exist",
		"projects[1].pipeline.command[0]: no-such-command-4711: no executable of that name in the pipeline's PATH (/nonexistent-bin)",
	} {
		if !strings.Contains(msgs, want) {
			t.Errorf("CheckCommands lacks %q:\n%s", want, msgs)
		}
	}
	if strings.Contains(msgs, "projects[2]") {
		t.Errorf("sh is on PATH, yet: %s", msgs)
	}

	// Present but not executable, then executable.
	writeFile(t, filepath.Join(confDir, "pipelines", "implement.sh"), "#!/bin/sh\n", 0o644)
	writeFile(t, filepath.Join(confDir, "scripts", "save.sh"), "#!/bin/sh\n", 0o755)
	if err := c.CheckCommands(); err == nil || !strings.Contains(err.Error(), "implement.sh is not executable (chmod +x)") {
		t.Errorf("want not executable, got %v", err)
	}
	if err := os.Chmod(filepath.Join(confDir, "pipelines", "implement.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	c.Projects[1].Pipeline.Env["PATH"] = "/bin:/usr/bin"
	c.Projects[1].Pipeline.Command[0] = "sh"
	if err := c.CheckCommands(); err != nil {
		t.Errorf("every command present: %v", err)
	}
	if got := a.Where(a.Command); !strings.Contains(got, confDir) {
		t.Errorf("Where = %q, want the config dir named", got)
	}
}
