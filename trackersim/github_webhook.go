package trackersim

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // GitHub still sends the legacy SHA-1 signature header.
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"
)

// GitHub webhooks: the `issues` event payload and delivery headers
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issues and
// #delivery-headers), signed as GitHub signs them
// (https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries).

type ghIssuesEvent struct {
	Action     string                       `json:"action"`
	Issue      ghIssue                      `json:"issue"`
	Label      *ghLabel                     `json:"label,omitempty"`
	Changes    map[string]map[string]string `json:"changes,omitempty"`
	Repository ghRepo                       `json:"repository"`
	Sender     ghUser                       `json:"sender"`
}

// onEvent is the store's sink: it runs under the store's lock, in mutation
// order, with every event of one mutation. Hooks of other dialects get their
// dialect's deliveries (dialect.go); GitHub hooks get one delivery per event.
func (s *Sim) onEvent(evs []storeEvent) {
	all := s.hooks.matching(evs[0].issue.repo)
	if len(all) == 0 {
		return
	}
	s.dialectEvents(evs, all)
	var hooks []*hookQueue
	for _, q := range all {
		if isGitHubHook(q.hook) {
			hooks = append(hooks, q)
		}
	}
	if len(hooks) == 0 {
		return
	}
	for _, ev := range evs {
		s.githubEvent(ev, hooks)
	}
}

// githubEvent queues one issues delivery per GitHub hook. The
// X-GitHub-Delivery GUID identifies the event, so every hook gets the same one.
func (s *Sim) githubEvent(ev storeEvent, hooks []*hookQueue) {
	base := s.base()
	if ev.action == actionCommented {
		s.githubComment(base, ev, hooks)
		return
	}
	p := ghIssuesEvent{Action: ev.action, Issue: s.ghIssue(base, ev.issue),
		Repository: s.ghRepo(base, ev.issue.repo, ev.issue.repoID, time.Time{}),
		Sender:     s.ghUser(base, ev.sender)}
	if ev.action == "labeled" || ev.action == "unlabeled" {
		l := s.ghLabel(base, ev.issue.repo, ev.label)
		p.Label = &l
	}
	if len(ev.changes) > 0 {
		p.Changes = map[string]map[string]string{}
		for k, from := range ev.changes {
			p.Changes[k] = map[string]string{"from": from}
		}
	}
	s.githubSend("issues", p, hooks)
}

// githubPing is the `ping` event GitHub sends when a webhook is created.
func (s *Sim) githubPing(q *hookQueue) outgoing {
	base := s.base()
	hook := map[string]any{
		"type": "Repository", "id": q.id, "name": "web", "active": true, "events": []string{"issues"},
		"config":     map[string]string{"content_type": "json", "insecure_ssl": "0", "url": q.hook.URL},
		"created_at": ghTime(s.clock()), "updated_at": ghTime(s.clock()),
		"last_response": map[string]any{"code": nil, "status": "unused", "message": nil},
	}
	p := map[string]any{"zen": "Keep it logically awesome.", "hook_id": q.id, "hook": hook,
		"sender": s.ghUser(base, humanActor.login)}
	if q.hook.Repo != "" {
		if id, created, ok := s.store.repoInfo(q.hook.Repo); ok {
			p["repository"] = s.ghRepo(base, q.hook.Repo, id, created)
			hook["url"] = fmt.Sprintf("%s/hooks/%d", apiRepoURL(base, q.hook.Repo), q.id)
		}
	}
	body, _ := json.Marshal(p)
	return outgoing{event: "ping", guid: newGUID(), body: body}
}

// githubDeliveryHeaders sets the headers GitHub sends with a delivery. The
// signature headers are omitted when the hook has no secret, as on GitHub.
func githubDeliveryHeaders(h http.Header, q *hookQueue, d outgoing) {
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/sim")
	h.Set("X-GitHub-Event", d.event)
	h.Set("X-GitHub-Delivery", d.guid)
	h.Set("X-GitHub-Hook-ID", strconv.FormatInt(q.id, 10))
	h.Set("X-GitHub-Hook-Installation-Target-Type", "repository")
	if q.hook.Secret == "" {
		return
	}
	m256 := hmac.New(sha256.New, []byte(q.hook.Secret))
	m256.Write(d.body)
	h.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(m256.Sum(nil)))
	m1 := hmac.New(sha1.New, []byte(q.hook.Secret))
	m1.Write(d.body)
	h.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(m1.Sum(nil)))
}

// ghIssueCommentEvent is the issue_comment payload
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#issue_comment).
type ghIssueCommentEvent struct {
	Action     string    `json:"action"`
	Issue      ghIssue   `json:"issue"`
	Comment    ghComment `json:"comment"`
	Repository ghRepo    `json:"repository"`
	Sender     ghUser    `json:"sender"`
}

// githubComment queues the issue_comment "created" delivery of a new
// comment, the daemon's own included, as GitHub sends one for every comment.
func (s *Sim) githubComment(base string, ev storeEvent, hooks []*hookQueue) {
	p := ghIssueCommentEvent{Action: "created", Issue: s.ghIssue(base, ev.issue), Comment: s.ghComment(base, ev.issue, ev.comment),
		Repository: s.ghRepo(base, ev.issue.repo, ev.issue.repoID, time.Time{}), Sender: s.ghUser(base, ev.sender)}
	s.githubSend("issue_comment", p, hooks)
}

// githubSend queues one delivery of event with payload p to every hook. The
// X-GitHub-Delivery GUID identifies the event, so every hook gets the same one.
func (s *Sim) githubSend(event string, p any, hooks []*hookQueue) {
	body, err := json.Marshal(p)
	if err != nil {
		s.log.Error("marshal "+event+" event", zap.Error(err))
		return
	}
	d := outgoing{event: event, guid: newGUID(), body: body}
	for _, q := range hooks {
		drop, extra := s.faults.delivery()
		s.hooks.enqueue(q, d, drop, extra)
	}
}
