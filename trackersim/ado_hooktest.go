package trackersim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Azure DevOps service hook test notifications, the test deliveries
// `agentsmithd check --webhook` asks for: Notifications - Create,
// POST {org}/_apis/hooks/testNotifications
// (https://learn.microsoft.com/rest/api/azure/devops/hooks/notifications/create,
// "Sends a test notification. This is useful for verifying the
// configuration of an updated or new service hooks subscription";
// servicehooks.CreateTestNotification in azure-devops-go-api, location
// 1139462c-7e27-4524-a997-31b9b73551fe). The body is a Notification whose
// subscriptionId names an existing subscription and whose details carry
// its event type, publisher and consumer; the answer is the Notification
// queued, its result pending: the delivery happens afterwards, as for an
// event. Without useRealData the service sends the event type's sample
// payload, the one documented for each event
// (https://learn.microsoft.com/azure/devops/service-hooks/events#workitem.updated):
// work item 5 of the FabrikamCloud project, which no configured project
// names. Subscriptions never return their basic-auth password; the test of
// an existing subscription sends the one it stores, as the sim does with
// the hook's secret.

const adoTestNotificationsLocation = "1139462c-7e27-4524-a997-31b9b73551fe"

func (s *Sim) adoHookTestRoutes(mux *http.ServeMux) {
	s.adoRoute(mux, "POST", adoPrefix+"{org}/_apis/hooks/testNotifications", false, s.adoTestNotification)
}

// adoTestNotification needs the rights of the subscription list (project
// administrators: 403 below).
func (s *Sim) adoTestNotification(w http.ResponseWriter, r *http.Request, c *adoCall) {
	if !atLeast(s.requestAccess(r).Role, RoleAdmin) {
		adoError(w, http.StatusForbidden, "UnauthorizedRequestException", "TF400813: The user is not authorized to access this resource.")
		return
	}
	var n struct {
		SubscriptionID string `json:"subscriptionId"`
		Details        struct {
			EventType      string            `json:"eventType"`
			ConsumerInputs map[string]string `json:"consumerInputs"`
		} `json:"details"`
	}
	if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
		adoError(w, http.StatusBadRequest, "InvalidNotificationException", "The notification is not valid JSON.")
		return
	}
	var hookID int64
	var idx int64
	if _, err := fmt.Sscanf(n.SubscriptionID, "%08x-0000-0000-0000-%012x", &hookID, &idx); err != nil {
		adoError(w, http.StatusNotFound, "SubscriptionNotFoundException", "Subscription "+n.SubscriptionID+" does not exist.")
		return
	}
	q, ok := s.hookByID(hookID, "ado")
	if !ok || (q.hook.Repo != "" && !strings.EqualFold(strings.SplitN(q.hook.Repo, "/", 2)[0], c.org)) {
		adoError(w, http.StatusNotFound, "SubscriptionNotFoundException", "Subscription "+n.SubscriptionID+" does not exist.")
		return
	}
	eventType := n.Details.EventType
	if eventType == "" {
		eventType = "workitem.updated"
	}
	seq := s.reqSeq.Add(1)
	s.sendTest(q, s.adoSampleEvent(q, n.SubscriptionID, eventType, seq))
	writeJSON(w, http.StatusOK, map[string]any{"id": seq, "subscriptionId": n.SubscriptionID,
		"eventId": glUUID(fmt.Sprintf("ado-test|%p|%d", s, seq)), "status": "queued", "result": "pending",
		"createdDate": adoTime(s.clock()), "modifiedDate": adoTime(s.clock()),
		"details": map[string]any{"eventType": eventType, "publisherId": "tfs", "consumerId": "webHooks",
			"consumerActionId": "httpRequest", "consumerInputs": map[string]string{"url": q.hook.URL}}})
}

// adoSampleEvent is the documented sample of workitem.updated (any other
// event type gets the same resource under its own name), sent with the
// subscription's basic-auth credentials.
func (s *Sim) adoSampleEvent(q *hookQueue, subscriptionID, eventType string, seq int64) outgoing {
	const base = "https://dev.azure.com/fabrikam"
	what := "Bug #5 (Some great new idea!) updated by Jamal Hartnett."
	ev := adoServiceHookEvent{
		SubscriptionID: subscriptionID, NotificationID: seq,
		ID:          glUUID(fmt.Sprintf("ado-test-event|%p|%d", s, seq)),
		EventType:   eventType,
		PublisherID: "tfs", Message: adoMessage{Text: what, HTML: what, Markdown: what}, ResourceVersion: "1.0",
		Resource: map[string]any{"id": 2, "workItemId": 5, "rev": 2,
			"fields": map[string]any{"System.Rev": map[string]int{"oldValue": 1, "newValue": 2},
				"System.State": map[string]string{"oldValue": "New", "newValue": "Approved"}},
			"revision": map[string]any{"id": 5, "rev": 2, "url": base + "/_apis/wit/workItems/5/revisions/2",
				"fields": map[string]any{"System.AreaPath": "FabrikamCloud", "System.TeamProject": "FabrikamCloud",
					"System.IterationPath": "FabrikamCloud", "System.WorkItemType": "Bug", "System.State": "Approved",
					"System.Reason": "Approved by the Product Owner", "System.Title": "Some great new idea!",
					"System.Tags": ""}},
			"url": base + "/_apis/wit/workItems/5/updates/2"},
		ResourceContainers: map[string]adoContainer{
			"collection": {ID: "c12d0eb8-e382-443b-9f9c-c52cba5014c2"},
			"account":    {ID: "f844ec47-a9db-4511-8281-8b63f4eaf94e"},
			"project":    {ID: "be9b3917-87e6-42a4-a549-2bc06a7a878f"},
		},
		CreatedDate: adoTime(s.clock()),
	}
	ev.DetailedMessage = ev.Message
	body, _ := json.Marshal(ev)
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	if q.hook.Secret != "" {
		hdr.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(adoBasicUser+":"+q.hook.Secret)))
	}
	return outgoing{event: eventType, guid: ev.ID, body: body, header: hdr}
}
