package deploy_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/config"
)

// unit is a systemd unit file: section → key → values in order.
type unit map[string]map[string][]string

func parseUnit(t *testing.T, path string) unit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u, section := unit{}, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.HasSuffix(line, "\\") {
				t.Fatalf("%s:%d: not a key=value in a section: %q", path, n, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

// one returns the single value of key, failing when it is missing or set
// more than once.
func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u[section][key]
	if len(vs) != 1 {
		t.Errorf("[%s] %s: %d values %q, want one", section, key, len(vs), vs)
		return ""
	}
	return vs[0]
}

const credDir = "/run/credentials/agentsmithd.service/"

// filesIn matches the paths of files in dir; the submatch is the name.
func filesIn(dir string) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(dir) + `([A-Za-z0-9][A-Za-z0-9_.-]*)`)
}

// parseWithSecrets parses a deployment's config with the files it names
// under dir (which exist only where it is deployed) moved into a temporary
// directory and filled with a test value: the config must then be valid,
// with every default filled in.
func parseWithSecrets(t *testing.T, text, dir string) *config.Config {
	t.Helper()
	tmp := t.TempDir() + "/"
	for _, m := range filesIn(dir).FindAllStringSubmatch(text, -1) {
		if err := os.WriteFile(tmp+m[1], []byte("test-value\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(text, dir, tmp)), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("config with the files of %s: %v", dir, err)
	}
	return cfg
}

// The systemd unit stops the daemon the way it shuts down (SIGTERM to it
// alone, then SIGKILL for whatever is left in the cgroup), gives it longer
// than its own shutdown takes, runs it as a dedicated user with no way to
// gain privileges, and hands it every secret its config names as a
// credential, never in the environment.
func TestSystemdUnit(t *testing.T) {
	u := parseUnit(t, "systemd/agentsmithd.service")
	s := "Service"
	if got := u.one(t, s, "KillMode"); got != "mixed" {
		t.Errorf("KillMode=%s: want mixed (control-group would SIGTERM the pipelines with the daemon, leaving shutdown_grace no pipeline to wait for)", got)
	}
	for key, want := range map[string]string{"Restart": "on-failure", "NoNewPrivileges": "yes", "KillSignal": "SIGTERM",
		"User": "agentsmith", "ProtectSystem": "strict", "PrivateTmp": "yes", "StateDirectory": "agentsmithd"} {
		if got := u.one(t, s, key); got != want {
			t.Errorf("%s=%s, want %s", key, got, want)
		}
	}
	if got := u.one(t, s, "ExecStart"); got != "/usr/local/bin/agentsmithd serve -c /etc/agentsmithd/config.yaml" {
		t.Errorf("ExecStart=%s", got)
	}
	for _, k := range []string{"Environment", "EnvironmentFile", "PassEnvironment"} {
		if len(u[s][k]) != 0 {
			t.Errorf("%s=%q: secrets come from LoadCredential", k, u[s][k])
		}
	}

	cfgText, err := os.ReadFile("systemd/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := parseWithSecrets(t, string(cfgText), credDir)
	stop, err := time.ParseDuration(u.one(t, s, "TimeoutStopSec"))
	if err != nil {
		t.Fatalf("TimeoutStopSec: %v", err)
	}
	if need := cfg.Consumer.ShutdownGrace + cfg.Consumer.KillGrace; stop <= need {
		t.Errorf("TimeoutStopSec=%s, not above shutdown_grace + kill_grace = %s", stop, need)
	}
	if !strings.HasPrefix(cfg.Consumer.WorkDir, "/var/lib/"+u.one(t, s, "StateDirectory")+"/") {
		t.Errorf("consumer.work_dir %s is outside the StateDirectory, read-only under ProtectSystem=strict", cfg.Consumer.WorkDir)
	}

	// Every credential file the config reads is one the unit loads, from a
	// root-only directory.
	loaded := map[string]bool{}
	for _, v := range u[s]["LoadCredential"] {
		name, src, ok := strings.Cut(v, ":")
		if !ok || !strings.HasPrefix(src, "/etc/agentsmithd/credentials/") {
			t.Errorf("LoadCredential=%s: want NAME:/etc/agentsmithd/credentials/FILE", v)
		}
		loaded[name] = true
	}
	named := filesIn(credDir).FindAllStringSubmatch(string(cfgText), -1)
	if len(named) < 3 {
		t.Fatalf("systemd/config.yaml names %d credentials", len(named))
	}
	for _, m := range named {
		if !loaded[m[1]] {
			t.Errorf("config reads %s%s but the unit loads no credential %q", credDir, m[1], m[1])
		}
	}
}

// systemd itself accepts the unit: systemd-analyze verify reports nothing
// (an unknown key or a bad value is only a warning to it, so any output
// fails). The ExecStart binary is pointed at an executable that exists
// here; nothing else is changed.
func TestSystemdAnalyzeVerify(t *testing.T) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze not found; .ci/run installs the systemd package")
		}
		t.Skip("systemd-analyze not found (apt-get install systemd)")
	}
	check := func(unitText string) (string, error) {
		dir := t.TempDir()
		p := filepath.Join(dir, "agentsmithd.service")
		if err := os.WriteFile(p, []byte(unitText), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "verify", p).CombinedOutput()
		return string(out), err
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile("systemd/agentsmithd.service")
	if err != nil {
		t.Fatal(err)
	}
	unitText := strings.ReplaceAll(string(text), "/usr/local/bin/agentsmithd", self)
	if out, err := check(unitText); err != nil || strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// The check sees a mistake.
	if out, _ := check(strings.Replace(unitText, "\nKillMode=mixed\n", "\nKillMode=mixd\n", 1)); !strings.Contains(out, "kill mode") {
		t.Errorf("systemd-analyze verify missed a bad KillMode: %q", out)
	}
}
