package jira

import (
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

// comment_created is EventComment with the comment's first line and its
// author (accountId on Cloud, name on Data Center, ADF bodies read as
// text); an app's comment is ignored.
func TestParseCommentCreated(t *testing.T) {
	for name, c := range map[string]struct{ body, actor, line string }{
		"cloud":       {`{"webhookEvent":"comment_created","comment":{"body":"/agent-smith retry\nplease","author":{"accountId":"5b10ac8d"}},"issue":{"key":"OPS-4","fields":{}}}`, "5b10ac8d", "/agent-smith retry"},
		"data center": {`{"webhookEvent":"comment_created","comment":{"body":"/agent-smith cancel","author":{"name":"dana"}},"issue":{"key":"OPS-4","fields":{}}}`, "dana", "/agent-smith cancel"},
		"adf":         {`{"webhookEvent":"comment_created","comment":{"body":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"/agent-smith retry"}]}]},"author":{"accountId":"a1"}},"issue":{"key":"OPS-4"}}`, "a1", "/agent-smith retry"},
	} {
		ev, err := Webhooks{}.Parse(delivery(), []byte(c.body))
		if err != nil || ev.Kind != platforms.EventComment || ev.Actor != c.actor || ev.Comment != c.line || ev.Locator != "OPS" || ev.Ticket == nil {
			t.Errorf("%s: %+v, %v", name, ev, err)
		}
	}
	app := `{"webhookEvent":"comment_created","comment":{"body":"/agent-smith retry","author":{"accountId":"bot","accountType":"app"}},"issue":{"key":"OPS-4"}}`
	if ev, err := (Webhooks{}).Parse(delivery(), []byte(app)); err != nil || ev.Kind != platforms.EventIgnored {
		t.Errorf("app comment: %+v, %v; want ignored", ev, err)
	}
}
