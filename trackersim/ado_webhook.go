package trackersim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Azure DevOps service hooks, "Web Hooks" consumer
// (https://learn.microsoft.com/azure/devops/service-hooks/services/webhooks):
// one POST per event and subscription, with the payloads of
// https://learn.microsoft.com/azure/devops/service-hooks/events:
// workitem.created carries the work item as resource; workitem.updated
// carries the update (changed fields as {oldValue, newValue}) with the
// whole work item after it under resource.revision. Nothing is signed: the
// subscription's basic-auth user name and password travel in
// Authorization, and the sim uses the hook's secret as the password. A
// retry repeats the payload, so its "id" de-duplicates.

// adoMessage is the message / detailedMessage object.
type adoMessage struct {
	Text     string `json:"text"`
	HTML     string `json:"html"`
	Markdown string `json:"markdown"`
}

type adoContainer struct {
	ID      string `json:"id"`
	BaseURL string `json:"baseUrl,omitempty"`
}

type adoServiceHookEvent struct {
	SubscriptionID     string                  `json:"subscriptionId"`
	NotificationID     int64                   `json:"notificationId"`
	ID                 string                  `json:"id"`
	EventType          string                  `json:"eventType"`
	PublisherID        string                  `json:"publisherId"`
	Message            adoMessage              `json:"message"`
	DetailedMessage    adoMessage              `json:"detailedMessage"`
	Resource           any                     `json:"resource"`
	ResourceVersion    string                  `json:"resourceVersion"`
	ResourceContainers map[string]adoContainer `json:"resourceContainers"`
	CreatedDate        string                  `json:"createdDate"`
}

type adoFieldChange struct {
	OldValue any `json:"oldValue,omitempty"`
	NewValue any `json:"newValue,omitempty"`
}

type adoWorkItemUpdate struct {
	ID          int                       `json:"id"`
	WorkItemID  int                       `json:"workItemId"`
	Rev         int                       `json:"rev"`
	RevisedBy   adoIdentity               `json:"revisedBy"`
	RevisedDate string                    `json:"revisedDate"`
	Fields      map[string]adoFieldChange `json:"fields"`
	Links       map[string]adoHref        `json:"_links"`
	URL         string                    `json:"url"`
	Revision    adoWorkItem               `json:"revision"`
}

// adoDeliveries builds the one delivery Azure DevOps sends hook h for a
// write: workitem.created for a new work item, workitem.updated otherwise.
func (s *Sim) adoDeliveries(evs []storeEvent, hookID int64, h Hook) []outgoing {
	rest, c := splitComment(evs)
	var out []outgoing
	if len(rest) > 0 {
		out = s.adoDelivery(rest, nil, hookID, h)
	}
	if c != nil {
		out = append(out, s.adoDelivery([]storeEvent{*c}, c, hookID, h)...)
	}
	return out
}

// adoDelivery builds one delivery: workitem.commented when c is a new
// comment (the resource is the work item, the comment's HTML in
// System.History and its author in System.ChangedBy,
// https://learn.microsoft.com/en-us/azure/devops/service-hooks/events#workitem.commented),
// workitem.created for a new work item, workitem.updated otherwise.
func (s *Sim) adoDelivery(evs []storeEvent, c *storeEvent, hookID int64, h Hook) []outgoing {
	sn := evs[0].issue
	org, _, _ := strings.Cut(sn.repo, "/")
	orgBase := s.base() + adoPrefix + url.PathEscape(org)
	sender := evs[0].sender
	wi := adoWorkItemJSON(orgBase, sn, nil, true)
	what := fmt.Sprintf("Issue #%d (%s)", sn.number, sn.title)
	ev := adoServiceHookEvent{
		SubscriptionID:  glUUID(fmt.Sprintf("ado-subscription|%s|%p|%d", glSalt, s, hookID)),
		NotificationID:  sn.version,
		ID:              glUUID(fmt.Sprintf("ado-event|%s|%p|%d|%d|%d", glSalt, s, sn.repoID, sn.id, sn.version)),
		PublisherID:     "tfs",
		ResourceVersion: "1.0",
		ResourceContainers: map[string]adoContainer{
			"collection": {ID: glUUID("ado-collection|" + org), BaseURL: orgBase + "/"},
			"account":    {ID: glUUID("ado-account|" + org), BaseURL: orgBase + "/"},
			"project":    {ID: glUUID("ado-project|" + sn.repo), BaseURL: orgBase + "/"},
		},
		CreatedDate: adoTime(sn.updatedAt),
	}
	switch {
	case c != nil:
		ev.EventType = "workitem.commented"
		ev.ID = glUUID(fmt.Sprintf("ado-comment|%s|%p|%d|%d", glSalt, s, sn.repoID, c.comment.id))
		ev.Message = adoMessage{Text: what + " commented on by " + sender, HTML: what + " commented on by " + sender, Markdown: what + " commented on by " + sender}
		wi.Fields["System.History"] = "<div>" + html.EscapeString(c.comment.body) + "</div>"
		// ChangedBy is what the revision recorded (a bypass-rules update
		// writing System.History may have set it); System.AuthorizedAs in
		// wi is the comment's author, who authenticated.
		wi.Fields["System.ChangedBy"] = adoIdentityOf(orStr(sn.changedBy, c.comment.author))
		ev.Resource = wi
	case slices.ContainsFunc(evs, func(e storeEvent) bool { return e.action == "opened" }):
		ev.EventType = "workitem.created"
		ev.Message = adoMessage{Text: what + " created by " + sender, HTML: what + " created by " + sender, Markdown: what + " created by " + sender}
		ev.Resource = wi
	default:
		ev.EventType = "workitem.updated"
		ev.Message = adoMessage{Text: what + " updated by " + sender, HTML: what + " updated by " + sender, Markdown: what + " updated by " + sender}
		ev.Resource = adoUpdateResource(orgBase, sn, evs, wi)
	}
	ev.DetailedMessage = ev.Message
	body, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("marshal ado service hook", zap.Error(err))
		return nil
	}
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json; charset=utf-8")
	if h.Secret != "" {
		hdr.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(adoBasicUser+":"+h.Secret)))
	}
	return []outgoing{{event: ev.EventType, guid: ev.ID, body: body, header: hdr}}
}

// adoUpdateResource is the resource of workitem.updated: the fields one
// write changed, old and new, reconstructed from the store's events.
func adoUpdateResource(orgBase string, sn snapshot, evs []storeEvent, wi adoWorkItem) adoWorkItemUpdate {
	fields := map[string]adoFieldChange{
		"System.Rev":         {OldValue: sn.rev - 1, NewValue: sn.rev},
		"System.ChangedDate": {NewValue: adoTime(sn.updatedAt)},
	}
	// ChangedBy and AuthorizedAs are listed when this revision changed
	// them, as every field is.
	if sn.changedBy != sn.prevChangedBy {
		fields["System.ChangedBy"] = adoIdentityChange(sn.prevChangedBy, sn.changedBy)
	}
	if sn.authorizedAs != sn.prevAuthorizedAs {
		fields["System.AuthorizedAs"] = adoIdentityChange(sn.prevAuthorizedAs, sn.authorizedAs)
	}
	var added, removed []string
	for _, e := range evs {
		switch e.action {
		case "labeled":
			added = append(added, e.label.name)
		case "unlabeled":
			removed = append(removed, e.label.name)
		case "closed":
			fields["System.State"] = adoFieldChange{OldValue: adoStateOpen, NewValue: adoStateClosed}
		case "reopened":
			fields["System.State"] = adoFieldChange{OldValue: adoStateClosed, NewValue: adoStateOpen}
		case "edited":
			if old, ok := e.changes["title"]; ok {
				fields["System.Title"] = adoFieldChange{OldValue: old, NewValue: sn.title}
			}
			if old, ok := e.changes["body"]; ok {
				fields["System.Description"] = adoFieldChange{OldValue: old, NewValue: sn.body}
			}
		}
	}
	if len(added) > 0 || len(removed) > 0 {
		var before []string
		for _, l := range sn.labelNames() {
			if !slices.Contains(added, l) {
				before = append(before, l)
			}
		}
		before = append(before, removed...)
		ch := adoFieldChange{}
		if len(before) > 0 {
			ch.OldValue = strings.Join(before, "; ")
		}
		if len(sn.labels) > 0 {
			ch.NewValue = strings.Join(sn.labelNames(), "; ")
		}
		fields["System.Tags"] = ch
	}
	self := adoWorkItemURL(orgBase, sn.number)
	rev := wi
	rev.URL = self + "/revisions/" + strconv.Itoa(sn.rev)
	rev.Links = nil
	return adoWorkItemUpdate{
		ID: sn.rev, WorkItemID: sn.number, Rev: sn.rev,
		// revisedBy is the revision's ChangedBy, forged or not.
		RevisedBy: adoIdentityOf(orStr(sn.changedBy, evs[0].sender)), RevisedDate: adoTime(sn.updatedAt),
		Fields: fields,
		Links: map[string]adoHref{
			"self":   {self + "/updates/" + strconv.Itoa(sn.rev)},
			"parent": {self},
			"html":   {adoEditURL(orgBase, sn.repo, sn.number)},
		},
		URL:      self + "/updates/" + strconv.Itoa(sn.rev),
		Revision: rev,
	}
}

// adoIdentityChange is the {oldValue, newValue} of an identity field; an
// empty login leaves its side out.
func adoIdentityChange(old, cur string) adoFieldChange {
	var ch adoFieldChange
	if old != "" {
		ch.OldValue = adoIdentityOf(old)
	}
	if cur != "" {
		ch.NewValue = adoIdentityOf(cur)
	}
	return ch
}
