package azuredevops

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/uuid"
	"github.com/microsoft/azure-devops-go-api/azuredevops/v7/servicehooks"

	"github.com/agentsmithd/agentsmithd/platforms"
)

var _ platforms.WebhookTester = (*Tracker)(nil)

// TestWebhook sends one test notification per Web Hooks URL of this
// project that points at the receiver: Notifications - Create
// (servicehooks.CreateTestNotification, POST {org}/_apis/hooks/testNotifications,
// https://learn.microsoft.com/rest/api/azure/devops/hooks/notifications/create,
// "Sends a test notification. This is useful for verifying the
// configuration of an updated or new service hooks subscription"), naming
// the subscription and its event, publisher and consumer as the
// subscription list returns them. The service queues it and sends the
// event type's sample payload
// (https://learn.microsoft.com/azure/devops/service-hooks/events), with the
// subscription's own basic-auth password and headers: the list never
// returns them, the test of an existing subscription uses what it stores
// (as the portal's Test button does; the REST reference does not say). The
// sample names a work item of a project no configuration has, so the
// daemon answers it 202 ignored once its secret verifies.
func (t *Tracker) TestWebhook(ctx context.Context, opts platforms.CheckOptions) (platforms.WebhookTest, platforms.CheckResult) {
	const name = "webhook delivery"
	var test platforms.WebhookTest
	var proj struct {
		ID string `json:"id"`
	}
	if code, err := t.getJSON(ctx, "_apis/projects/"+url.PathEscape(t.project)+"?api-version=7.1", &proj); err != nil {
		return test, platforms.HTTPFailure(name, code, err, platforms.Fixes{})
	}
	subs, code, err := t.subscriptions(ctx)
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return test, platforms.Fail(name, "this PAT may not list or test service hook subscriptions: nothing sent",
			"run check --webhook with a PAT of a project administrator")
	case err != nil:
		return test, platforms.HTTPFailure(name, code, err, platforms.Fixes{})
	}
	tested := map[string]bool{}
	hooks := t.sdk.serviceHooks()
	for _, s := range subs {
		u := s.ConsumerInputs["url"]
		if s.ConsumerID != "webHooks" || (s.Status != "enabled" && s.Status != "onProbation") || tested[u] ||
			(s.PublisherInputs["projectId"] != "" && s.PublisherInputs["projectId"] != proj.ID) ||
			!platforms.HookTarget(u, Platform, opts.ReceiverURL) {
			continue
		}
		id, err := uuid.Parse(s.ID)
		if err != nil {
			continue
		}
		tested[u] = true
		inputs := s.ConsumerInputs
		n, err := hooks.CreateTestNotification(ctx, servicehooks.CreateTestNotificationArgs{TestNotification: &servicehooks.Notification{
			SubscriptionId: &id,
			Details: &servicehooks.NotificationDetails{EventType: &s.EventType, PublisherId: &s.PublisherID,
				ConsumerId: &s.ConsumerID, ConsumerActionId: &s.ConsumerActionID, ConsumerInputs: &inputs},
		}})
		if err != nil {
			return test, platforms.HTTPFailure(name, statusOf(err), err, platforms.Fixes{
				Forbidden: "testing a subscription needs the rights that edit it: run check --webhook with a PAT of a project administrator"})
		}
		sent := fmt.Sprintf("subscription %s (%s) → %s", s.ID, s.EventType, u)
		if n != nil && n.Id != nil {
			sent += fmt.Sprintf(", test notification %d", *n.Id)
		}
		test.Sent = append(test.Sent, sent)
		test.URLs = append(test.URLs, u)
	}
	if len(test.Sent) == 0 {
		return test, platforms.Fail(name, "no enabled Web Hooks subscription of this project points at …"+platforms.ReceiverPath(Platform)+": nothing sent",
			"add one in "+hooksWhere+" (see the webhook row)")
	}
	return test, platforms.OK(name, "test notification sent")
}
