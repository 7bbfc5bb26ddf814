package config

import (
	"os"
	"slices"
	"strings"
	"testing"
)

func TestAuditAndStatus(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(testdata + "minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GITHUB_TOKEN": "ghp_minimal", "STATUS_TOKEN": "status-secret"}
	c := mustParse(t, string(data), vars)
	if !c.Audit.On() || c.Audit.MaxLen != DefaultAuditMaxLen || c.Status.Token.IsSet() {
		t.Errorf("defaults: audit on=%v max_len=%d, status token set=%v", c.Audit.On(), c.Audit.MaxLen, c.Status.Token.IsSet())
	}

	c = mustParse(t, string(data)+"audit: {enabled: false, max_len: 5000}\nstatus: {token_env: STATUS_TOKEN}\n", vars)
	if c.Audit.On() || c.Audit.MaxLen != 5000 || c.Status.Token.Value() != "status-secret" {
		t.Errorf("set: audit on=%v max_len=%d status token=%q", c.Audit.On(), c.Audit.MaxLen, c.Status.Token.Value())
	}
	c = mustParse(t, string(data)+"audit: {enabled: true}\n", vars)
	if !c.Audit.On() {
		t.Error("audit.enabled: true is off")
	}

	got := parseErrs(t, string(data)+"audit: {enabled: maybe, max_len: 10}\nstatus: {token_env: MISSING}\n", vars)
	for _, want := range []string{
		"audit.enabled: expected true or false (line 10)",
		"audit.max_len: must be at least 100",
		"status.token_env: MISSING is not set",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("errors %q lack %q", got, want)
		}
	}
	c = mustParse(t, string(data)+"status: {hosts: [agentsmithd-a, Status.Example.COM]}\n", vars)
	if !slices.Equal(c.Status.Hosts, []string{"agentsmithd-a", "Status.Example.COM"}) {
		t.Errorf("status.hosts = %q", c.Status.Hosts)
	}
	got = parseErrs(t, string(data)+"status: {hosts: [\"status.example.com:9090\", \"127.0.0.1\", \"*.example.com\", \"\", \"http://x\", \"a..b\"]}\n", vars)
	if len(got) != 6 || !strings.Contains(got[0], "status.hosts[0]: expected a host name") || got[1] != "status.hosts[1]: an IP is always allowed; list names only" {
		t.Errorf("bad status.hosts: %q", got)
	}
	got = parseErrs(t, string(data)+"status: {token: hunter2}\n", vars)
	if len(got) != 1 || got[0] != "status.token: expected {env: NAME} or {file: PATH}; the secret itself does not belong in the config (line 10)" {
		t.Errorf("pasted status token: %q", got)
	}
}
