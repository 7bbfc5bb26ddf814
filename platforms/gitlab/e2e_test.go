package gitlab_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms"
	"github.com/agentsmithd/agentsmithd/platforms/gitlab"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// TestSimWebhooksDecode closes the loop: the emulator's GitLab deliveries,
// caused by a human and by the tracker, authenticate and parse with the
// decoder the receiver uses.
func TestSimWebhooksDecode(t *testing.T) {
	const project = "acme/platform/payments-api"
	s := trackersim.New(trackersim.Options{})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)

	var mu sync.Mutex
	var events []platforms.WebhookEvent
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if i, err := (gitlab.Webhooks{}).Verify(r.Header, body, [][]byte{[]byte("old"), []byte("hook-secret")}); err != nil || i != 1 {
			t.Errorf("Verify = %d, %v", i, err)
		}
		ev, err := gitlab.Webhooks{}.Parse(r.Header, body)
		if err != nil {
			t.Errorf("Parse: %v", err)
		}
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	s.AddHook(trackersim.Hook{Repo: project, URL: recv.URL, Secret: "hook-secret", Dialect: "gitlab"})

	n := s.CreateIssue(project, "Hook me", "", "agent-smith")
	tr, err := gitlab.New(gitlab.Options{BaseURL: srv.URL + "/gitlab/api/v4/", Repo: project, Project: "p", Writer: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ref := platforms.Ref{Platform: gitlab.Platform, ID: gitlab.FormatID(project, n)}
	tk, err := tr.Get(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Relabel(ctx, tk, nil, "agent-smith:enqueued"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetOpen(project, n, false); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 3 {
		t.Fatalf("got %d events, want 3", len(events))
	}
	kinds := []platforms.EventKind{platforms.EventTicket, platforms.EventTicket, platforms.EventTicket}
	actions := []string{"open", "update", "close"}
	ids := map[string]bool{}
	for i, ev := range events {
		if ev.Kind != kinds[i] || ev.Action != actions[i] || ev.Locator != project || ev.DeliveryID == "" || ids[ev.DeliveryID] {
			t.Fatalf("event %d = %+v", i, ev)
		}
		ids[ev.DeliveryID] = true
	}
	if got := events[1].Ticket; got.Ref.ID != ref.ID || !slices.Equal(got.Labels, []string{"agent-smith", "agent-smith:enqueued"}) {
		t.Fatalf("update ticket = %+v", got)
	}
	if ws := s.Writes(); len(ws) != 1 || ws[0].Writer != "e2e" {
		t.Fatalf("writes = %+v", ws)
	}
}
