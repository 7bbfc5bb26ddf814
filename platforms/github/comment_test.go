package github

import (
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// An issue_comment "created" on an issue is EventComment with the first
// line of the comment and its author; an edit, a pull request's comment
// and a bot's comment are ignored.
func TestParseComment(t *testing.T) {
	body := func(action, login, typ, text string, pr bool) []byte {
		prField := ""
		if pr {
			prField = `,"pull_request":{"url":"x"}`
		}
		return []byte(`{"action":"` + action + `","repository":{"full_name":"acme/app"},"sender":{"login":"` + login + `","type":"` + typ + `"},` +
			`"issue":{"number":7,"state":"open","labels":[{"name":"agent-smith"}]` + prField + `},` +
			`"comment":{"body":` + quote(text) + `,"created_at":"2026-01-02T03:04:05Z","user":{"login":"` + login + `","type":"` + typ + `"}}}`)
	}
	ev, err := Webhooks{}.Parse(delivery("issue_comment"), body("created", "octocat", "User", "\r\n/agent-smith retry\nplease", false))
	if err != nil || ev.Kind != platforms.EventComment || ev.Comment != "/agent-smith retry" || ev.Actor != "octocat" ||
		ev.Ticket == nil || ev.Ticket.Ref.ID != "acme/app#7" || ev.Locator != "acme/app" || ev.At.IsZero() {
		t.Fatalf("comment: %+v, %v", ev, err)
	}
	long, err := Webhooks{}.Parse(delivery("issue_comment"), body("created", "octocat", "User", strings.Repeat("é", 300), false))
	if err != nil || len(long.Comment) > platforms.MaxCommentLine {
		t.Errorf("long comment: %d bytes, %v", len(long.Comment), err)
	}
	for name, b := range map[string][]byte{
		"edited":       body("edited", "octocat", "User", "/agent-smith retry", false),
		"pull request": body("created", "octocat", "User", "/agent-smith retry", true),
		"bot":          body("created", "agent-smith[bot]", "Bot", "/agent-smith retry", false),
	} {
		if ev, err := (Webhooks{}).Parse(delivery("issue_comment"), b); err != nil || ev.Kind != platforms.EventIgnored {
			t.Errorf("%s: %+v, %v; want ignored", name, ev, err)
		}
	}
}

func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}
