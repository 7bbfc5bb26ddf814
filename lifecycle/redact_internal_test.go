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

// A secret that a part escaped for the markup before it was redacted
// ("ghp\_x", rendered as "ghp_x") is caught by safeComment's last pass: its
// line is withheld, and the rest of the comment is kept. (Jira's escape
// leaves the secret as it is, for the Redactor itself.)
func TestSafeCommentCatchesAnEscapedSecret(t *testing.T) {
	const secret = "ghp_S3cr3t-T0ken_leak9876"
	red := redact.New(secret)
	for _, platform := range []string{"github", "jira"} {
		body := "**agent-smith**: pipeline failed\n- note: " + escapeFor(nil, platform, "invalid path '"+secret+"/.GIT/x' @"+secret) + "\n- kept"
		got := safeComment(red, body)
		if strings.Contains(strings.NewReplacer(`\`, "", "\u200b", "").Replace(got), secret) {
			t.Errorf("%s: the comment renders the secret:\n%s", platform, got)
		}
		if !strings.Contains(got, "**agent-smith**: pipeline failed\n") || !strings.HasSuffix(got, "\n- kept") {
			t.Errorf("%s: more than the secret's line withheld:\n%s", platform, got)
		}
	}
}
