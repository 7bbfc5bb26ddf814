package receiver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/lifecycle"
	"github.com/agentsmithd/agentsmithd/lifecycle/claim"
	"github.com/agentsmithd/agentsmithd/lifecycle/lifecycletest"
	"github.com/agentsmithd/agentsmithd/lifecycle/receiver"
	"github.com/agentsmithd/agentsmithd/pkg/keys"
	"github.com/agentsmithd/agentsmithd/pkg/queue"
	"github.com/agentsmithd/agentsmithd/platforms/github"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// newReplayWorld is the receiver for one GitHub project with a recorder on
// its claims (what the audit stream would get) and a clock the test sets.
func newReplayWorld(t *testing.T, now *time.Time) (*hostileWorld, *lifecycletest.Recorder) {
	t.Helper()
	r := redistest.Start(t)
	rdb := r.Client(t)
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	tr, err := github.New(github.Options{BaseURL: srv.URL + "/github/", Repo: lifecycletest.Repo, Project: lifecycletest.Project, Token: "t", Writer: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &lifecycletest.Recorder{}
	projects := lifecycle.Projects{lifecycletest.Project: {Name: lifecycletest.Project, Platform: github.Platform, Tracker: tr,
		TriggerLabel: "agent-smith", Pipeline: lifecycle.Pipeline{Command: []string{"true"}, MaxAttempts: 1}}}
	claims := claim.NewService(rdb, queue.New(rdb, keys.Queue()), projects, claim.Config{
		Instance: "test", Labels: lifecycle.Labels{Prefix: lifecycle.DefaultLabelPrefix}, Observer: rec})
	s.CreateIssue(lifecycletest.Repo, "triggered", "", "agent-smith")
	rc := receiver.New(rdb, claims, []receiver.Route{{Platform: github.Platform, Decoder: github.Webhooks{},
		Projects: []receiver.ProjectRoute{{Name: lifecycletest.Project, Locator: lifecycletest.Repo, Secrets: [][]byte{[]byte(hostileSecret)}}}}},
		receiver.Config{MaxBody: maxBody, Clock: func() time.Time { return *now }})
	return &hostileWorld{Sim: s, RDB: rdb, handler: rc.Handler()}, rec
}

func payloadAt(updated time.Time) []byte {
	b, _ := json.Marshal(map[string]any{
		"action": "labeled", "label": map[string]string{"name": "agent-smith"},
		"repository": map[string]string{"full_name": lifecycletest.Repo},
		"issue": map[string]any{"number": 1, "title": "t", "state": "open", "labels": []map[string]string{{"name": "agent-smith"}},
			"updated_at": updated.UTC().Format(time.RFC3339)},
	})
	return b
}

// The attack: one captured signed body replayed with fresh, 63 KB
// delivery ids would fill Redis (a key per id, kept 24 h) and write an
// audit entry per replay. Long or odd ids are refused before Redis sees
// them, and replays under fresh valid ids are duplicates that write nothing.
func TestReplaysUnderFreshIdsCostNothing(t *testing.T) {
	now := time.Now()
	w, rec := newReplayWorld(t, &now)
	body := payloadAt(now.Add(-time.Minute))
	if status, ans := w.do(t, delivery{body: body, id: "first"}); status != http.StatusAccepted || ans["outcome"] != "claimed" {
		t.Fatalf("first delivery: %d %v", status, ans)
	}
	events := len(rec.Events())
	before := w.state(t)
	for i := range 50 {
		if status, ans := w.do(t, delivery{body: body, id: strings.Repeat("a", 63<<10) + fmt.Sprint(i)}); status != http.StatusBadRequest {
			t.Fatalf("63 KB id: %d %v, want 400", status, ans)
		}
		if status, ans := w.do(t, delivery{body: body, id: fmt.Sprintf("fresh-%d", i)}); status != http.StatusOK || ans["outcome"] != "duplicate" {
			t.Fatalf("fresh id: %d %v, want 200 duplicate", status, ans)
		}
	}
	after := w.state(t)
	if after.deliv > before.deliv+50 || len(after.keys) != len(before.keys) {
		t.Errorf("replays left keys: de-dup records %d → %d, others %d → %d", before.deliv, after.deliv, len(before.keys), len(after.keys))
	}
	if got := len(rec.Events()); got != events {
		t.Errorf("replays emitted %d events (audit entries), want none", got-events)
	}
	for id, want := range map[string]int{strings.Repeat("b", 128): http.StatusOK, strings.Repeat("b", 129): http.StatusBadRequest,
		"d e": http.StatusBadRequest, "x\x1b[2J": http.StatusBadRequest, "uuid-2f1c/17:sha256=+": http.StatusOK} {
		if status, _ := w.do(t, delivery{body: body, id: id}); status != want {
			t.Errorf("id %.20q…: %d, want %d", id, status, want)
		}
	}
}

// A captured delivery replayed after its de-dup records expired is ignored
// when the ticket change it reports is older than the de-dup window.
func TestDeliveryOlderThanTheWindowIsIgnored(t *testing.T) {
	now := time.Now()
	w, rec := newReplayWorld(t, &now)
	status, ans := w.do(t, delivery{body: payloadAt(now.Add(-keys.DeliveryTTL - time.Minute))})
	if status != http.StatusOK || ans["outcome"] != receiver.OutcomeStale {
		t.Fatalf("old delivery: %d %v, want 200 stale", status, ans)
	}
	if len(rec.Events()) != 0 || len(w.Sim.Writes()) != 0 {
		t.Errorf("old delivery acted: %d events, %d writes", len(rec.Events()), len(w.Sim.Writes()))
	}
	if status, ans := w.do(t, delivery{body: payloadAt(now.Add(-time.Hour))}); status != http.StatusAccepted || ans["outcome"] != "claimed" {
		t.Errorf("recent delivery: %d %v, want 202 claimed", status, ans)
	}
}
