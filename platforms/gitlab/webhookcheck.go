package gitlab

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.WebhookTester = (*Tracker)(nil)

// TestWebhook tests every active hook of the project, and of the groups
// above it, that points at the receiver (sdk.testHook). GitLab sends the
// test while the API call waits, and answers with the outcome: 201 when
// the receiver answered 2xx, 422 with the receiver's answer or the
// connection error otherwise (gitlab-org/gitlab!150066), which the result
// quotes as the tracker's own account. Testing needs the rights that list
// the hooks (Maintainer; Owner for a group's), and GitLab allows 5 tests a
// minute per user for one project or group
// (https://docs.gitlab.com/administration/settings/rate-limit-on-webhook-operations/):
// a 429 is reported, not retried.
func (t *Tracker) TestWebhook(ctx context.Context, opts platforms.CheckOptions) (platforms.WebhookTest, platforms.CheckResult) {
	const name = "webhook delivery"
	var test platforms.WebhookTest
	hooks, hidden, err := t.api.hooksWithIDs(ctx, t.repo)
	if err != nil {
		return test, platforms.HTTPFailure(name, statusOf(err), err, platforms.Fixes{})
	}
	var answers []string
	for _, h := range hooks {
		if !h.active || !platforms.HookTarget(h.url, Platform, opts.ReceiverURL) {
			continue
		}
		kind := "project"
		if h.group != "" {
			kind = "group " + h.group
		}
		test.Sent = append(test.Sent, fmt.Sprintf("%s hook %d → %s", kind, h.id, h.url))
		test.URLs = append(test.URLs, h.url)
		err := t.api.testHook(ctx, t.repo, h)
		switch c := statusOf(err); {
		case err == nil:
			test.Answered = true
			answers = append(answers, fmt.Sprintf("hook %d: the receiver answered 2xx", h.id))
		case c == http.StatusUnprocessableEntity:
			msg := errorMessage(err)
			test.Answered = test.Answered || !strings.HasPrefix(msg, "Hook execution failed")
			answers = append(answers, fmt.Sprintf("hook %d: the delivery failed (%s)", h.id, shortMessage(errorMessage(err))))
		case c == http.StatusTooManyRequests:
			return test, platforms.Warn(name, "GitLab's webhook test rate limit (5 a minute per user and project) was hit: nothing sent",
				"run check --webhook again in a minute")
		default:
			return test, platforms.HTTPFailure(name, c, err, platforms.Fixes{
				Forbidden: "testing a hook needs the Maintainer role (Owner for a group hook): run check --webhook with such a token"})
		}
	}
	if len(test.Sent) == 0 {
		if hidden > 0 && len(hooks) == 0 {
			return test, platforms.Fail(name, "this token may not list or test hooks: nothing sent",
				"run check --webhook with a Maintainer's token (Owner for a group hook)")
		}
		return test, platforms.Fail(name, "no active hook points at …"+platforms.ReceiverPath(Platform)+": nothing sent",
			"add a webhook to this receiver in "+hooksWhere+" (see the webhook row)")
	}
	test.Answer = "GitLab: " + strings.Join(answers, "; ")
	return test, platforms.OK(name, "test sent")
}

// shortMessage is the first line of a receiver's answer as GitLab quotes
// it, at most 160 bytes.
func shortMessage(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}
