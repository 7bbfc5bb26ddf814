package gitlab

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

func header(event, token string) http.Header {
	h := http.Header{}
	if event != "" {
		h.Set(HeaderEvent, event)
	}
	if token != "" {
		h.Set(HeaderToken, token)
	}
	return h
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "gitlab", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVerify(t *testing.T) {
	secrets := [][]byte{[]byte("new"), []byte(""), []byte("old")}
	for _, c := range []struct {
		token string
		want  int
	}{{"new", 0}, {"old", 2}, {"", -1}, {"ne", -1}, {"newer", -1}, {"NEW", -1}} {
		got, err := Webhooks{}.Verify(header(EventIssueHook, c.token), nil, secrets)
		if c.want < 0 {
			if !errors.Is(err, platforms.ErrUnauthenticated) {
				t.Errorf("token %q: %d, %v; want ErrUnauthenticated", c.token, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("token %q: %d, %v; want %d", c.token, got, err, c.want)
		}
	}
	// An empty configured secret never matches, not even an empty token.
	if _, err := (Webhooks{}).Verify(http.Header{HeaderToken: {""}}, nil, [][]byte{{}}); !errors.Is(err, platforms.ErrUnauthenticated) {
		t.Fatalf("empty secret accepted: %v", err)
	}
}

func TestParseIssueHook(t *testing.T) {
	h := header(EventIssueHook, "s")
	h.Set(HeaderIdempotencyKey, "idem-1")
	h.Set(HeaderEventUUID, "event-1")
	ev, err := Webhooks{}.Parse(h, fixture(t, "issue.update"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platforms.EventTicket || ev.DeliveryID != "idem-1" || ev.Name != EventIssueHook ||
		ev.Action != "update" || ev.Locator != "acme/platform/payments-api" {
		t.Fatalf("event = %+v", ev)
	}
	tk := ev.Ticket
	if tk.Ref != (platforms.Ref{Platform: Platform, ID: "acme/platform/payments-api#57"}) || !tk.Open ||
		tk.Title != "Retry webhook on 502 from the ledger" ||
		tk.URL != "https://gitlab.example.com/acme/platform/payments-api/-/issues/57" ||
		!slices.Equal(tk.Labels, []string{"agent-smith", "agent-smith:pending", "bug"}) {
		t.Fatalf("ticket = %+v", tk)
	}
	// Without Idempotency-Key (GitLab < 17.4) the event UUID de-duplicates.
	h.Del(HeaderIdempotencyKey)
	if ev, _ := (Webhooks{}).Parse(h, fixture(t, "issue.update")); ev.DeliveryID != "event-1" {
		t.Fatalf("DeliveryID = %q, want the event UUID", ev.DeliveryID)
	}
}

func TestParseIgnoredAndMalformed(t *testing.T) {
	for _, c := range []struct {
		event, fixture string
	}{
		{"Confidential Issue Hook", "confidential_issue.open"},
		{"Merge Request Hook", "merge_request.open"},
		{"Push Hook", "push"},
		{EventIssueHook, "issue.work_item.task.open"},
		{EventIssueHook, "issue.work_item.epic.update"},
	} {
		ev, err := Webhooks{}.Parse(header(c.event, ""), fixture(t, c.fixture))
		if err != nil || ev.Kind != platforms.EventIgnored {
			t.Errorf("%s: %+v, %v; want ignored", c.fixture, ev, err)
		}
	}
	for name, body := range map[string]string{
		"not json":       "{",
		"array":          "[1]",
		"no project":     `{"object_kind":"issue","object_attributes":{"iid":1,"action":"open"}}`,
		"bad project":    `{"object_kind":"issue","project":{"path_with_namespace":"nogroup"},"object_attributes":{"iid":1,"action":"open"}}`,
		"no attributes":  `{"object_kind":"issue","project":{"path_with_namespace":"a/b"}}`,
		"iid zero":       `{"object_kind":"issue","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":0,"action":"open"}}`,
		"labels as text": `{"object_kind":"issue","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":1,"labels":"x"}}`,
	} {
		if _, err := (Webhooks{}).Parse(header(EventIssueHook, ""), []byte(body)); !errors.Is(err, platforms.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	// Object kinds and work item types the daemon does not act on are
	// ignored even when the rest of the payload is not an issue's: a 4xx
	// would count towards GitLab disabling the hook.
	for name, body := range map[string]string{
		"unknown kind":          `{"object_kind":"note","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":1,"action":"open"}}`,
		"task":                  `{"object_kind":"work_item","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":1,"action":"open","type":"Task","labels":[{"title":"agent-smith"}]}}`,
		"epic without project":  `{"object_kind":"work_item","event_type":"work_item","project":null,"object_attributes":{"iid":3,"action":"update"}}`,
		"incident":              `{"object_kind":"work_item","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":2,"action":"open","type":"Incident"}}`,
		"issue kind, task type": `{"object_kind":"issue","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":2,"action":"open","type":"Task"}}`,
		"no object_kind":        `{"project":{"path_with_namespace":"a/b"}}`,
		"non-issue iid as text": `{"object_kind":"work_item","object_attributes":{"iid":"x","type":"Epic"}}`,
	} {
		ev, err := Webhooks{}.Parse(header(EventIssueHook, ""), []byte(body))
		if err != nil || ev.Kind != platforms.EventIgnored {
			t.Errorf("%s: %+v, %v; want ignored", name, ev, err)
		}
	}
	if _, err := (Webhooks{}).Parse(header("Note Hook", ""), []byte("[1]")); !errors.Is(err, platforms.ErrMalformed) {
		t.Errorf("Note Hook with an array body: err = %v, want ErrMalformed", err)
	}
	if _, err := (Webhooks{}).Parse(http.Header{}, fixture(t, "issue.open")); !errors.Is(err, platforms.ErrMalformed) {
		t.Errorf("no event header: err = %v, want ErrMalformed", err)
	}
}

func TestParseTopLevelLabelsFallback(t *testing.T) {
	body := `{"object_kind":"issue","project":{"path_with_namespace":"a/b"},"object_attributes":{"iid":4,"title":"t","state":"opened","action":"open","url":"u"},"labels":[{"title":"agent-smith"}]}`
	ev, err := Webhooks{}.Parse(header(EventIssueHook, ""), []byte(body))
	if err != nil || ev.Kind != platforms.EventTicket || !slices.Equal(ev.Ticket.Labels, []string{"agent-smith"}) {
		t.Fatalf("%+v %v", ev, err)
	}
}

// A self-managed instance's system hook reports projects created,
// destroyed, renamed, transferred and updated: EventRepositories, so the
// replicas list their groups again. Its other events are ignored.
func TestParseSystemHook(t *testing.T) {
	ev, err := Webhooks{}.Parse(header(EventSystemHook, ""), fixture(t, "system.project_create"))
	if err != nil || ev.Kind != platforms.EventRepositories || ev.Locator != "acme/platform/billing" || ev.Action != "project_create" {
		t.Fatalf("project_create: %+v, %v", ev, err)
	}
	for _, name := range []string{"project_destroy", "project_rename", "project_transfer", "project_update"} {
		if ev, err := (Webhooks{}).Parse(header(EventSystemHook, ""), []byte(`{"event_name":"`+name+`","path_with_namespace":"a/b"}`)); err != nil || ev.Kind != platforms.EventRepositories {
			t.Errorf("%s: %+v, %v", name, ev, err)
		}
	}
	for _, body := range []string{`{"event_name":"user_create"}`, `{"object_kind":"push","event_name":"push"}`, `{}`,
		`{"event_name":"project_create","path_with_namespace":"no namespace"}`} {
		ev, err := Webhooks{}.Parse(header(EventSystemHook, ""), []byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if want := platforms.EventIgnored; body != `{"event_name":"project_create","path_with_namespace":"no namespace"}` && ev.Kind != want {
			t.Errorf("%s: kind %v, want ignored", body, ev.Kind)
		}
		if ev.Locator != "" {
			t.Errorf("%s: locator %q from an invalid or absent path", body, ev.Locator)
		}
	}
	if _, err := (Webhooks{}).Parse(header(EventSystemHook, ""), []byte(`[1]`)); !errors.Is(err, platforms.ErrMalformed) {
		t.Errorf("a body that is no object: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"issue.open", "issue.update", "issue.reopen", "issue.close", "issue.close.enqueued", "issue.update.untriggered", "note.create", "push"} {
		f.Add(EventIssueHook, fixture(f, name))
	}
	f.Add("Note Hook", []byte(`{"object_kind":"note"}`))
	f.Add(EventSystemHook, fixture(f, "system.project_create"))
	f.Add(EventIssueHook, []byte(`{"object_kind":"issue","project":null,"object_attributes":null}`))
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		ev, err := Webhooks{}.Parse(header(event, ""), body)
		if err != nil {
			if !errors.Is(err, platforms.ErrMalformed) {
				t.Fatalf("error not ErrMalformed: %v", err)
			}
			return
		}
		if len(ev.Comment) > platforms.MaxCommentLine {
			t.Fatalf("unbounded comment: %+v", ev)
		}
		if (ev.Kind == platforms.EventTicket || ev.Kind == platforms.EventComment) && (ev.Ticket == nil || ev.Locator == "" || ev.Ticket.Labels == nil) {
			t.Fatalf("ticket event without ticket, locator or labels: %+v", ev)
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("s3cret", "s3cret", "old")
	f.Add("", "", "")
	f.Add("old", "new", "old")
	f.Fuzz(func(t *testing.T, token, s1, s2 string) {
		i, err := Webhooks{}.Verify(header(EventIssueHook, token), nil, [][]byte{[]byte(s1), []byte(s2)})
		want := -1
		switch {
		case token == "":
		case token == s1:
			want = 0
		case token == s2:
			want = 1
		}
		if want < 0 {
			if !errors.Is(err, platforms.ErrUnauthenticated) {
				t.Fatalf("Verify(%q, %q, %q) = %d, %v", token, s1, s2, i, err)
			}
			return
		}
		if err != nil || i != want {
			t.Fatalf("Verify(%q, %q, %q) = %d, %v; want %d", token, s1, s2, i, err, want)
		}
	})
}
