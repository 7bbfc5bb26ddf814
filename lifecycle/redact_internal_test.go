package lifecycle

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/pkg/procrun"
	"github.com/agentsmithd/agentsmithd/pkg/redact"
)

// commandLine is a line a tracker or a bot would read as a command.
var commandLine = regexp.MustCompile(`(?m)^[ \t]*/`)

// On every platform, the comments a run posts carry no command line and no
// mention from the pipeline, and no secret.
func TestRunCommentsCarryNoCommandMentionOrSecret(t *testing.T) {
	const secret = "hunter2-very-secret"
	red := redact.New(secret)
	hostile := "ok " + secret + "\n/close\n  /retitle pwned\n@dependabot merge\n[~accountid:123] hi"
	res := procrun.Result{ExitCode: 1, Tail: []byte(hostile)}
	for _, platform := range []string{"github", "gitlab", "azuredevops", "jira"} {
		result, _ := redactResult(red, Result{Summary: hostile, Links: []Link{{Title: "t " + secret, URL: "https://x.example/?k=" + secret}}})
		head := "**agent-smith**: pipeline failed\n\n" + renderResult(red, platform, result)
		bodies := map[string]string{
			"failure": outcomeComment(head, "i", res, nil, 65536),
			// Git's stderr on a failed Prepare and the save's error quote
			// what the pipeline named.
			"failure to start": outcomeComment(head, "i", procrun.Result{ExitCode: -1, Err: errors.New(hostile)}, []string{"not pushed (" + hostile + ")"}, 65536),
			"progress":         progressBody("agent-smith", 1, "i", hostile),
		}
		for name, b := range bodies {
			b = safeComment(red, b)
			if commandLine.MatchString(b) || strings.Contains(b, "@dependabot") || strings.Contains(b, secret) {
				t.Errorf("%s %s comment:\n%s", platform, name, b)
			}
		}
	}
}
