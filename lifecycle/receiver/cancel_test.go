package receiver_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/azuredevops"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

const cancelSecret = "cancel-secret"

// cancelFixture is a sample payload of a close or unlabel event of a ticket
// the daemon is working on, with the headers its platform sends.
type cancelFixture struct {
	platform, file string
	decoder        platforms.WebhookDecoder
	header         func(body []byte) http.Header
	want           string // cause requested; "" for none
}

func fixtureBody(t *testing.T, platform, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", platform, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var cancelFixtures = []cancelFixture{
	{platform: "github", file: "issues.closed.in-progress.json", decoder: github.Webhooks{}, header: githubHeader, want: lifecycle.CauseClosed},
	{platform: "github", file: "issues.unlabeled.trigger-while-enqueued.json", decoder: github.Webhooks{}, header: githubHeader, want: lifecycle.CauseUntriggered},
	{platform: "github", file: "issues.closed.json", decoder: github.Webhooks{}, header: githubHeader, want: ""},
	{platform: "gitlab", file: "issue.close.enqueued.json", decoder: gitlab.Webhooks{}, header: gitlabHeader, want: lifecycle.CauseClosed},
	{platform: "gitlab", file: "issue.update.untriggered.json", decoder: gitlab.Webhooks{}, header: gitlabHeader, want: lifecycle.CauseUntriggered},
	{platform: "azuredevops", file: "workitem.updated.closed.json", decoder: azuredevops.Webhooks{}, header: adoHeader, want: lifecycle.CauseClosed},
	{platform: "jira", file: "issue_updated.closed-in-progress.json", decoder: jira.Webhooks{}, header: jiraHeader, want: lifecycle.CauseClosed},
	{platform: "jira", file: "issue_updated.untriggered-enqueued.json", decoder: jira.Webhooks{}, header: jiraHeader, want: lifecycle.CauseUntriggered},
}

var deliverySeq int

func githubHeader(body []byte) http.Header {
	deliverySeq++
	h := http.Header{}
	h.Set(github.HeaderEvent, "issues")
	h.Set(github.HeaderDelivery, fmt.Sprintf("cancel-%d", deliverySeq))
	h.Set(github.HeaderSignature, github.SignatureHeader(body, []byte(cancelSecret)))
	return h
}

func gitlabHeader([]byte) http.Header {
	deliverySeq++
	h := http.Header{}
	h.Set(gitlab.HeaderEvent, gitlab.EventIssueHook)
	h.Set(gitlab.HeaderToken, cancelSecret)
	h.Set("X-Gitlab-Event-UUID", fmt.Sprintf("cancel-%d", deliverySeq))
	return h
}

func adoHeader([]byte) http.Header {
	h := http.Header{}
	h.Set("Authorization", azuredevops.BasicAuth("agentsmith", cancelSecret))
	return h
}

func jiraHeader(body []byte) http.Header {
	deliverySeq++
	h := http.Header{}
	h.Set(jira.HeaderSignature, jira.SignatureHeader(body, []byte(cancelSecret)))
	h.Set(jira.HeaderDelivery, fmt.Sprintf("cancel-%d", deliverySeq))
	return h
}

// Close and unlabel deliveries of Enqueued or InProgress tickets, on each
// platform, ask for the cancellation with the cause the payload shows,
// without a tracker call (the projects here have no tracker at all).
func TestCloseAndUnlabelDeliveriesRequestCancellation(t *testing.T) {
	rdb := redistest.Start(t).Client(t)
	projects := lifecycle.Projects{}
	routes := map[string]*receiver.Route{}
	for i, f := range cancelFixtures {
		body := fixtureBody(t, f.platform, f.file)
		ev, err := f.decoder.Parse(f.header(body), body)
		if err != nil || ev.Kind != platforms.EventTicket {
			t.Fatalf("%s: %+v, %v; want a ticket event", f.file, ev, err)
		}
		name := fmt.Sprintf("p%d", i)
		projects[name] = &lifecycle.Project{Name: name, Platform: f.platform, TriggerLabel: "agent-smith"}
		r := routes[f.platform]
		if r == nil {
			r = &receiver.Route{Platform: f.platform, Decoder: f.decoder}
			routes[f.platform] = r
		}
		known := false
		for _, pr := range r.Projects {
			known = known || pr.Locator == ev.Locator
		}
		if !known {
			r.Projects = append(r.Projects, receiver.ProjectRoute{Name: name, Locator: ev.Locator, Secrets: [][]byte{[]byte(cancelSecret)}})
		}
	}
	var rs []receiver.Route
	for _, r := range routes {
		rs = append(rs, *r)
	}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{Instance: "test"})
	// The payloads are recorded deliveries, months old: a clock at the
	// epoch keeps them inside the de-duplication window.
	rc := receiver.New(rdb, claims, rs, receiver.Config{Logger: zaptest.NewLogger(t), Clock: func() time.Time { return time.Time{} }})
	h := rc.Handler()
	for _, f := range cancelFixtures {
		t.Run(f.file, func(t *testing.T) {
			body := fixtureBody(t, f.platform, f.file)
			hdr := f.header(body)
			ev, _ := f.decoder.Parse(hdr, body)
			// Fixtures share ticket ids: start each from no request.
			if err := rdb.Del(t.Context(), keys.Cancel(ev.Ticket.Ref.Key())).Err(); err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodPost, "/webhooks/"+f.platform, bytes.NewReader(body))
			req.Header = hdr
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			var ans struct {
				Outcome, Cancel string
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || rec.Code != http.StatusAccepted {
				t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
			}
			got, err := rdb.Get(t.Context(), keys.Cancel(ev.Ticket.Ref.Key())).Result()
			if f.want == "" {
				if ans.Outcome == receiver.OutcomeCancelRequested || err == nil {
					t.Fatalf("answer %+v, cancel key %q: want no cancellation", ans, got)
				}
				return
			}
			if ans.Outcome != receiver.OutcomeCancelRequested || ans.Cancel != f.want || got != f.want {
				t.Fatalf("answer %+v, cancel key %q (%v); want %q", ans, got, err, f.want)
			}
			if ttl := rdb.TTL(t.Context(), keys.Cancel(ev.Ticket.Ref.Key())).Val(); ttl <= 0 || ttl > keys.CancelTTL {
				t.Fatalf("cancel key TTL %s, want (0, %s]", ttl, keys.CancelTTL)
			}
		})
	}
	rc.Wait()
}

// A delivery refused because another replica holds the claim lock names the
// holder in its JSON body.
func TestHeldClaimLockIsNamedInTheResponse(t *testing.T) {
	w := newHostileWorld(t)
	since := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond).UTC()
	token := fmt.Sprintf("replica-b|poll|%d|random", since.UnixMilli())
	ref := lifecycletest.Ref(1)
	if err := w.RDB.Set(t.Context(), keys.ClaimLock(ref.Platform, ref.ID), token, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	w.handler.ServeHTTP(rec, delivery{body: issuePayload("labeled", lifecycletest.Repo, 1, "agent-smith")}.request())
	var ans struct {
		Outcome string       `json:"outcome"`
		Claim   claim.Result `json:"claim"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || rec.Code != http.StatusAccepted {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
	hd := ans.Claim.Holder
	if ans.Outcome != string(lifecycle.AlreadyClaimed) || hd == nil || hd.Instance != "replica-b" || hd.Source != "poll" || !hd.Since.Equal(since) {
		t.Fatalf("answer %s: want already_claimed naming replica-b, poll, %s", rec.Body, since)
	}
}

// A close delivery of a blocker claims, at once, the tickets it was the
// last open blocker of (no sweeper runs here).
func TestCloseDeliveryClaimsTheTicketsItBlocked(t *testing.T) {
	w := lifecycletest.New(t, 3)
	w.Projects[lifecycletest.Project].RequireNoOpenBlockers = true
	blocker := w.Sim.CreateIssue(lifecycletest.Repo, "blocker", "")
	blocked := w.Sim.CreateIssue(lifecycletest.Repo, "blocked", "", "agent-smith")
	if err := w.Sim.AddBlocker(lifecycletest.Repo, blocked, blocker); err != nil {
		t.Fatal(err)
	}
	if res, err := w.Claims.Claim(t.Context(), lifecycletest.Ref(blocked), lifecycle.SourceWebhook, 1); err != nil || !claim.IsBlockedReason(res.Reason) {
		t.Fatalf("claim = %+v, %v; want blocked", res, err)
	}
	if err := w.Sim.SetOpen(lifecycletest.Repo, blocker, false); err != nil {
		t.Fatal(err)
	}
	rc := receiver.New(w.RDB, w.Claims, []receiver.Route{{Platform: github.Platform, Decoder: github.Webhooks{},
		Projects: []receiver.ProjectRoute{{Name: lifecycletest.Project, Locator: lifecycletest.Repo, Secrets: [][]byte{[]byte(cancelSecret)}}}}},
		receiver.Config{Logger: zaptest.NewLogger(t)})
	body, _ := json.Marshal(map[string]any{"action": "closed", "repository": map[string]string{"full_name": lifecycletest.Repo},
		"issue": map[string]any{"number": blocker, "title": "blocker", "state": "closed", "labels": []any{}}})
	req := httptest.NewRequest(http.MethodPost, "/webhooks/github", bytes.NewReader(body))
	req.Header = githubHeader(body)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	rc.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	rc.Wait() // the background re-claim
	if s := w.State(t, blocked); s != lifecycle.Enqueued {
		t.Fatalf("blocked ticket is %s after its blocker's close delivery, want enqueued", s)
	}
}
