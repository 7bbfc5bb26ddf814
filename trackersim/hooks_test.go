package trackersim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

type delivered struct {
	event, guid, hookID string
	body                []byte
	sigErr              error
}

// receiver is a webhook endpoint that checks signatures and hands every
// delivery to the test in arrival order.
func receiver(t *testing.T, secret string) (*httptest.Server, chan delivered) {
	t.Helper()
	ch := make(chan delivered, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivered{event: r.Header.Get("X-GitHub-Event"), guid: r.Header.Get("X-GitHub-Delivery"),
			hookID: r.Header.Get("X-GitHub-Hook-ID"), body: body,
			sigErr: github.ValidateSignature(r.Header.Get("X-Hub-Signature-256"), body, []byte(secret))}
		if r.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.Header.Get("User-Agent"), "GitHub-Hookshot/") {
			t.Errorf("delivery headers: %v", r.Header)
		}
		if err := github.ValidateSignature(r.Header.Get("X-Hub-Signature"), body, []byte(secret)); err != nil {
			t.Errorf("sha1 signature: %v", err)
		}
		ch <- d
	}))
	t.Cleanup(srv.Close)
	return srv, ch
}

func next(t *testing.T, ch chan delivered) delivered {
	t.Helper()
	select {
	case d := <-ch:
		if d.sigErr != nil {
			t.Fatalf("signature of %s delivery: %v", d.event, d.sigErr)
		}
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivery within 10s")
		return delivered{}
	}
}

func issuesEvent(t *testing.T, d delivered) *github.IssuesEvent {
	t.Helper()
	if d.event != "issues" {
		t.Fatalf("event %q, want issues", d.event)
	}
	ev, err := github.ParseWebHook(d.event, d.body)
	if err != nil {
		t.Fatal(err)
	}
	return ev.(*github.IssuesEvent)
}

func TestWebhookDelivery(t *testing.T) {
	t.Parallel()
	s, c, _ := start(t, Options{})
	rcv, ch := receiver(t, "hook-secret")
	s.AddHook(Hook{Repo: "demo/app", URL: rcv.URL, Secret: "hook-secret"})

	ping := next(t, ch)
	if ping.event != "ping" || ping.hookID != "1" || ping.guid == "" {
		t.Fatalf("ping = %+v", ping)
	}
	var p struct {
		Zen    string `json:"zen"`
		HookID int64  `json:"hook_id"`
	}
	if err := json.Unmarshal(ping.body, &p); err != nil || p.Zen == "" || p.HookID != 1 {
		t.Fatalf("ping body %s: %v", ping.body, err)
	}

	n := s.CreateIssue("demo/app", "hooked", "", "agent-smith")
	s.CreateIssue("other/repo", "not for this hook", "", "agent-smith")
	ev := issuesEvent(t, next(t, ch))
	if ev.GetAction() != "opened" || ev.GetIssue().GetNumber() != n || ev.GetRepo().GetFullName() != "demo/app" ||
		ev.GetRepo().GetOwner().GetLogin() != "demo" || ev.GetSender().GetLogin() != "human" {
		t.Fatalf("opened event = %+v", ev)
	}
	ev = issuesEvent(t, next(t, ch))
	if ev.GetAction() != "labeled" || ev.GetLabel().GetName() != "agent-smith" {
		t.Fatalf("labeled event = %+v", ev)
	}

	// A REST write by the daemon fires events too, sent by the token owner,
	// in the order of the change: unlabeled before labeled.
	_, _, err := c.Issues.Edit(context.Background(), "demo", "app", n,
		&github.IssueRequest{Labels: &[]string{"agent-smith:enqueued"}, Title: github.String("renamed")})
	if err != nil {
		t.Fatal(err)
	}
	wantActions := []string{"edited", "unlabeled", "labeled"}
	for _, want := range wantActions {
		ev = issuesEvent(t, next(t, ch))
		if ev.GetAction() != want || ev.GetSender().GetLogin() != botLogin {
			t.Fatalf("event %s by %s, want %s", ev.GetAction(), ev.GetSender().GetLogin(), want)
		}
		if want == "edited" && ev.GetChanges().GetTitle().GetFrom() != "hooked" {
			t.Fatalf("edited changes = %+v", ev.GetChanges())
		}
		if want == "labeled" {
			got := ev.GetIssue().Labels
			if ev.GetLabel().GetName() != "agent-smith:enqueued" || len(got) != 1 || got[0].GetName() != "agent-smith:enqueued" {
				t.Fatalf("labeled = %+v", ev)
			}
		}
	}
	if err := s.SetOpen("demo/app", n, false); err != nil {
		t.Fatal(err)
	}
	if ev = issuesEvent(t, next(t, ch)); ev.GetAction() != "closed" || ev.GetIssue().GetState() != "closed" {
		t.Fatalf("closed = %+v", ev)
	}
	if err := s.SetOpen("demo/app", n, true); err != nil {
		t.Fatal(err)
	}
	if ev = issuesEvent(t, next(t, ch)); ev.GetAction() != "reopened" {
		t.Fatalf("reopened = %+v", ev)
	}
	if err := s.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(ch) != 0 {
		t.Fatalf("unexpected extra delivery: %+v", <-ch)
	}
	if st := s.Stats(); st.Deliveries != 8 || st.DeliveryFailures != 0 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestDeliveryFaults(t *testing.T) {
	t.Parallel()
	s, _, _ := start(t, Options{})
	rcv, ch := receiver(t, "k")
	s.AddHook(Hook{URL: rcv.URL, Secret: "k"}) // every repository
	next(t, ch)                                // ping
	n := s.CreateIssue("any/repo", "x", "")
	next(t, ch) // opened

	s.SetFaults(Faults{Duplicate: 2})
	if err := s.AddLabels("any/repo", n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	a, b, c := next(t, ch), next(t, ch), next(t, ch)
	if a.guid == "" || a.guid != b.guid || b.guid != c.guid || string(a.body) != string(c.body) {
		t.Fatalf("duplicates differ: %s %s %s", a.guid, b.guid, c.guid)
	}

	s.SetFaults(Faults{DropRate: 1})
	if err := s.RemoveLabel("any/repo", n, "agent-smith"); err != nil {
		t.Fatal(err)
	}
	s.SetFaults(Faults{})
	if err := s.AddLabels("any/repo", n, "after-drop"); err != nil {
		t.Fatal(err)
	}
	ev := issuesEvent(t, next(t, ch))
	if ev.GetAction() != "labeled" || ev.GetLabel().GetName() != "after-drop" {
		t.Fatalf("after drop got %s %s, the dropped unlabeled was sent", ev.GetAction(), ev.GetLabel().GetName())
	}
	if err := s.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Dropped != 1 || st.Deliveries != 6 {
		t.Fatalf("stats = %+v", st)
	}

	// A receiver that fails is counted, and later deliveries still go out.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer bad.Close()
	s.AddHook(Hook{URL: bad.URL})
	if err := s.WaitIdle(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.DeliveryFailures != 1 {
		t.Fatalf("stats = %+v", st)
	}
}
