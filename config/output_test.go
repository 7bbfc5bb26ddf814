package config

import (
	"strings"
	"testing"
)

// The logs dir is next to the work dir by default and may never be in it
// (or hold it): a pipeline writes in its work dir, and a link it planted
// in place of a log would have the daemon write through it.
func TestLogsDirIsOutsideTheWorkDir(t *testing.T) {
	t.Parallel()
	const project = "projects: [{name: gh, platform: github, repo: acme/app, token: {env: T}, polling: {enabled: true}, pipeline: {command: [./run.sh]}}]\n"
	vars := map[string]string{"T": "token"}
	c := mustParse(t, "consumer: {work_dir: /srv/agentsmithd/work}\n"+project, vars)
	if got := c.Consumer.Output.LogsDir; got != "/srv/agentsmithd/work-logs" {
		t.Errorf("default logs dir = %s", got)
	}
	c = mustParse(t, "consumer: {work_dir: /srv/work, output: {logs_dir: /var/log/agentsmithd}}\n"+project, vars)
	if got := c.Consumer.Output.LogsDir; got != "/var/log/agentsmithd" {
		t.Errorf("configured logs dir = %s", got)
	}
	for _, logs := range []string{"/srv/work", "/srv/work/logs", "/srv/work/./x/../logs", "/srv"} {
		errs := parseErrs(t, "consumer: {work_dir: /srv/work, output: {logs_dir: "+logs+"}}\n"+project, vars)
		if len(errs) != 1 || !strings.Contains(errs[0], "consumer.output.logs_dir") {
			t.Errorf("logs_dir %s: %v", logs, errs)
		}
	}
}
