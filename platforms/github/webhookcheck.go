package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v60/github"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.WebhookTester = (*Tracker)(nil)

// TestWebhook pings every active hook of the repository, and of its
// organisation, that points at the receiver: "Ping a repository webhook"
// (Repositories.PingHook, POST /repos/{owner}/{repo}/hooks/{hook_id}/pings,
// https://docs.github.com/rest/repos/webhooks#ping-a-repository-webhook)
// and "Ping an organization webhook" (Organizations.PingHook,
// https://docs.github.com/rest/orgs/webhooks#ping-an-organization-webhook).
// GitHub answers 204 and sends the ping event afterwards, signed with the
// hook's secret. Both need the rights that list the hooks (repository
// admin, organisation owner; a classic token needs admin:org_hook for the
// organisation's): without them GitHub answers 404.
func (t *Tracker) TestWebhook(ctx context.Context, opts platforms.CheckOptions) (platforms.WebhookTest, platforms.CheckResult) {
	const name = "webhook delivery"
	var test platforms.WebhookTest
	type target struct {
		id  int64
		url string
		org bool
	}
	var targets []target
	hidden := 0
	for _, org := range []bool{false, true} {
		hooks, err := t.listHooksWithIDs(ctx, org)
		if c := statusOf(err); err != nil && (c == 404 || c == 403) {
			hidden++
			continue
		} else if err != nil {
			return test, platforms.HTTPFailure(name, c, err, platforms.Fixes{})
		}
		for _, h := range hooks {
			if h.GetActive() && platforms.HookTarget(h.Config.GetURL(), Platform, opts.ReceiverURL) {
				targets = append(targets, target{id: h.GetID(), url: h.Config.GetURL(), org: org})
			}
		}
	}
	if len(targets) == 0 {
		if hidden == 2 {
			return test, platforms.Fail(name, "this token may not list or ping hooks: nothing sent",
				"run check --webhook with a token of a repository admin (organisation owner for an organisation hook)")
		}
		return test, platforms.Fail(name, "no active hook points at …"+platforms.ReceiverPath(Platform)+": nothing sent",
			"add a webhook to this receiver in "+hooksWhere+" (see the webhook row)")
	}
	for _, tg := range targets {
		var err error
		kind := "repository"
		if tg.org {
			kind = "organisation"
			_, err = t.client.Organizations.PingHook(ctx, t.owner, tg.id)
		} else {
			_, err = t.client.Repositories.PingHook(ctx, t.owner, t.name, tg.id)
		}
		if err != nil {
			return test, platforms.HTTPFailure(name, statusOf(err), err, platforms.Fixes{
				NotFound: "this token may not ping " + kind + " hook " + fmt.Sprint(tg.id) + ": use a token of a repository admin or organisation owner"})
		}
		test.Sent = append(test.Sent, fmt.Sprintf("%s hook %d → %s", kind, tg.id, tg.url))
		test.URLs = append(test.URLs, tg.url)
	}
	return test, platforms.OK(name, "ping sent")
}

// listHooksWithIDs lists the repository's hooks, or its organisation's.
func (t *Tracker) listHooksWithIDs(ctx context.Context, org bool) ([]*gh.Hook, error) {
	var all []*gh.Hook
	lo := &gh.ListOptions{PerPage: perPage}
	for {
		var hooks []*gh.Hook
		var resp *gh.Response
		var err error
		if org {
			hooks, resp, err = t.client.Organizations.ListHooks(ctx, t.owner, lo)
		} else {
			hooks, resp, err = t.client.Repositories.ListHooks(ctx, t.owner, t.name, lo)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, hooks...)
		if resp.NextPage == 0 {
			return all, nil
		}
		lo.Page = resp.NextPage
	}
}
