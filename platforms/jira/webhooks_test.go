package jira

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/platforms"
)

const fixtures = "../../testdata/jira"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func delivery() http.Header {
	h := http.Header{}
	h.Set(HeaderDelivery, "b1f5e2c0-7a4d-4f8e-9d3b-2c6a1e0f9a77")
	return h
}

func TestVerify(t *testing.T) {
	body := readFixture(t, "issue_created.json")
	signed := func(b []byte, secret string) http.Header {
		h := http.Header{}
		h.Set(HeaderSignature, SignatureHeader(b, []byte(secret)))
		return h
	}
	secrets := [][]byte{[]byte("new"), []byte("old")}
	if i, err := (Webhooks{}).Verify(signed(body, "old"), body, secrets); err != nil || i != 1 {
		t.Fatalf("rotated secret: %d, %v", i, err)
	}
	tampered := append(slices.Clone(body), ' ')
	bad := map[string]http.Header{
		"tampered body": signed(body, "new"),
		"sha1 prefix":   {HeaderSignature: {strings.Replace(SignatureHeader(tampered, []byte("new")), "sha256=", "sha1=", 1)}},
		"not hex":       {HeaderSignature: {"sha256=zz"}},
		"short digest":  {HeaderSignature: {"sha256=abcd"}},
		"missing":       {},
		"wrong secret":  signed(tampered, "guess"),
		// GitHub's header name is not Jira's.
		"github header": {"X-Hub-Signature-256": {SignatureHeader(tampered, []byte("new"))}},
	}
	for name, h := range bad {
		if _, err := (Webhooks{}).Verify(h, tampered, secrets); !errors.Is(err, platforms.ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}

func TestParseCreated(t *testing.T) {
	ev, err := (Webhooks{}).Parse(delivery(), readFixture(t, "issue_created.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platforms.EventTicket || ev.Name != EventIssueCreated || ev.Action != "issue_created" ||
		ev.DeliveryID != "b1f5e2c0-7a4d-4f8e-9d3b-2c6a1e0f9a77" || ev.Locator != "OPS" {
		t.Fatalf("event %+v", ev)
	}
	tk := ev.Ticket
	if tk.Ref != (platforms.Ref{Platform: Platform, ID: "OPS-42"}) || tk.Title != "Rotate the staging TLS certificates" ||
		!tk.Open || tk.URL != "https://acme-demo.atlassian.net/browse/OPS-42" ||
		!slices.Equal(tk.Labels, []string{"infra", "agent-smith"}) || !strings.HasPrefix(tk.Body, "The staging certificates") {
		t.Fatalf("ticket %+v", tk)
	}
}

func TestParseUpdated(t *testing.T) {
	for _, c := range []struct {
		file string
		want platforms.EventKind
	}{
		{"issue_updated.labeled.json", platforms.EventTicket},
		{"issue_updated.unlabeled.json", platforms.EventTicket},
		{"issue_updated.transitioned.json", platforms.EventTicket},
		{"issue_updated.edited.json", platforms.EventIgnored},
		{"issue_deleted.json", platforms.EventIgnored},
		{"comment_created.json", platforms.EventComment},
	} {
		ev, err := (Webhooks{}).Parse(delivery(), readFixture(t, c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if ev.Kind != c.want {
			t.Errorf("%s: kind %d, want %d", c.file, ev.Kind, c.want)
		}
		if ev.DeliveryID == "" || ev.Name == "" {
			t.Errorf("%s: event %+v lacks name or delivery id", c.file, ev)
		}
	}
	ev, _ := (Webhooks{}).Parse(delivery(), readFixture(t, "issue_updated.labeled.json"))
	if ev.Ticket.Open != true || ev.Ticket.Body != "" || ev.Locator != "OPS" {
		t.Errorf("labeled ticket %+v locator %q", ev.Ticket, ev.Locator)
	}
	ev, _ = (Webhooks{}).Parse(delivery(), readFixture(t, "issue_updated.transitioned.json"))
	if ev.Locator != "OPS" || ev.Ticket == nil || ev.Ticket.Open {
		t.Errorf("transition to Done: %+v", ev)
	}
}

func TestParseEdgeCases(t *testing.T) {
	for _, c := range []struct {
		name, body string
		kind       platforms.EventKind
		malformed  bool
		locator    string
	}{
		{"no webhookEvent", `{"issue":{"key":"OPS-1"}}`, platforms.EventIgnored, false, ""},
		{"issue missing", `{"webhookEvent":"jira:issue_created"}`, platforms.EventIgnored, false, ""},
		{"issue null", `{"webhookEvent":"jira:issue_updated","issue":null,"changelog":{"items":[{"field":"status","fromString":"a","toString":"b"}]}}`, platforms.EventIgnored, false, ""},
		{"not an object", `["jira:issue_created"]`, 0, true, ""},
		{"update with odd fields, nothing we act on", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1","fields":{"labels":"x"}},"changelog":{"items":[{"field":"assignee","fromString":"a","toString":"b"}]}}`, platforms.EventIgnored, false, ""},
		{"comment with an unexpected issue shape", `{"webhookEvent":"comment_created","issue":{"key":7,"fields":[]},"comment":{}}`, platforms.EventIgnored, false, ""},
		{"bad key", `{"webhookEvent":"jira:issue_created","issue":{"key":"not a key"}}`, 0, true, ""},
		{"fields of the wrong type", `{"webhookEvent":"jira:issue_created","issue":{"key":"OPS-1","fields":{"labels":"x"}}}`, 0, true, ""},
		{"project from the key", `{"webhookEvent":"jira:issue_created","issue":{"key":"OPS-1","fields":{"summary":"s"}}}`, platforms.EventTicket, false, "OPS"},
		{"label set grows", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"labels","fromString":"x","toString":"x agent-smith"}]}}`, platforms.EventTicket, false, "A"},
		{"label set from nothing", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"labels","fromString":null,"toString":"agent-smith"}]}}`, platforms.EventTicket, false, "A"},
		{"label set reordered", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"labels","fromString":"a b","toString":"b a"}]}}`, platforms.EventIgnored, false, ""},
		{"label removed", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"labels","fromString":"x agent-smith","toString":"x"}]}}`, platforms.EventTicket, false, "A"},
		{"status changed", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"status","fromString":"To Do","toString":"Done"}]}}`, platforms.EventTicket, false, "A"},
		{"assignee changed", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"assignee","fromString":"a","toString":"b"}]}}`, platforms.EventIgnored, false, ""},
		{"no changelog", `{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"}}`, platforms.EventIgnored, false, ""},
		{"other event", `{"webhookEvent":"sprint_started","sprint":{}}`, platforms.EventIgnored, false, ""},
	} {
		ev, err := (Webhooks{}).Parse(delivery(), []byte(c.body))
		if c.malformed {
			if !errors.Is(err, platforms.ErrMalformed) {
				t.Errorf("%s: err = %v, want ErrMalformed", c.name, err)
			}
			continue
		}
		if err != nil || ev.Kind != c.kind || ev.Locator != c.locator {
			t.Errorf("%s: %+v, %v; want kind %d locator %q", c.name, ev, err, c.kind, c.locator)
		}
	}
}

// TestParseADFDescription: a webhook (or a v3 read) may carry the
// description as an ADF document; the ticket body is its text.
func TestDeliveryIDFallback(t *testing.T) {
	body := readFixture(t, "issue_created.json")
	a, err := (Webhooks{}).Parse(http.Header{}, body)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := (Webhooks{}).Parse(http.Header{}, body)
	c, _ := (Webhooks{}).Parse(http.Header{}, append(slices.Clone(body), ' '))
	if a.DeliveryID == "" || a.DeliveryID != b.DeliveryID || a.DeliveryID == c.DeliveryID {
		t.Fatalf("delivery ids %q %q %q", a.DeliveryID, b.DeliveryID, c.DeliveryID)
	}
}

func TestParseADFDescription(t *testing.T) {
	body := `{"webhookEvent":"jira:issue_created","issue":{"key":"OPS-7","self":"https://x.atlassian.net/rest/api/3/issue/1",
		"fields":{"summary":"s","labels":[],"description":{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"Fix it"}]}]}}}}`
	ev, err := (Webhooks{}).Parse(delivery(), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Ticket.Body != "Fix it" || ev.Ticket.URL != "https://x.atlassian.net/browse/OPS-7" || ev.Ticket.Labels == nil {
		t.Fatalf("ticket %+v", ev.Ticket)
	}
}

func fuzzSeeds(f *testing.F) [][]byte {
	paths, err := filepath.Glob(filepath.Join(fixtures, "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out, []byte(`{"webhookEvent":"jira:issue_updated","issue":{"key":"A-1"},"changelog":{"items":[{"field":"labels","toString":"x"}]}}`), []byte("[1,2]"), nil)
}

// FuzzParse: Parse never panics, and an EventTicket always has a ticket
// with a valid key and a locator.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := (Webhooks{}).Parse(delivery(), body)
		if err != nil {
			if !errors.Is(err, platforms.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if len(ev.Comment) > platforms.MaxCommentLine || ev.Kind == platforms.EventComment && ev.Ticket == nil {
			t.Fatalf("comment event without its ticket, or an unbounded comment: %+v", ev)
		}
		if ev.Kind == platforms.EventTicket || ev.Kind == platforms.EventComment {
			if ev.Ticket == nil || ev.Locator == "" || ev.Ticket.Labels == nil {
				t.Fatalf("ticket event %+v incomplete", ev)
			}
			if _, _, err := ParseID(ev.Ticket.Ref.ID); err != nil {
				t.Fatalf("ticket id: %v", err)
			}
		}
	})
}

// FuzzVerify: only the true signature of the body under the secret
// verifies.
func FuzzVerify(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, "secret", SignatureHeader(s, []byte("secret")))
		f.Add(s, "secret", "sha256=00")
	}
	f.Fuzz(func(t *testing.T, body []byte, secret, sig string) {
		h := http.Header{}
		h.Set(HeaderSignature, sig)
		i, err := (Webhooks{}).Verify(h, body, [][]byte{[]byte(secret)})
		// hex digits may come in either case; the prefix is exact.
		valid := strings.HasPrefix(sig, "sha256=") && strings.EqualFold(sig, SignatureHeader(body, []byte(secret)))
		switch {
		case err == nil && (i != 0 || !valid):
			t.Fatalf("Verify accepted signature %q (index %d)", sig, i)
		case err != nil && valid:
			t.Fatalf("Verify refused the true signature: %v", err)
		case err != nil && !errors.Is(err, platforms.ErrUnauthenticated):
			t.Fatalf("error %v does not wrap ErrUnauthenticated", err)
		}
	})
}

// Project events that change what a site's discovery finds ask for a
// listing; project_updated and unknown project events do not, and the key
// names the project in the log only when it is a valid one.
func TestParseProjectEvents(t *testing.T) {
	for _, c := range []struct {
		body, locator string
		want          platforms.EventKind
	}{
		{`{"webhookEvent":"project_created","project":{"key":"OPS"}}`, "OPS", platforms.EventRepositories},
		{`{"webhookEvent":"project_archived","project":{"key":"OLD"}}`, "OLD", platforms.EventRepositories},
		{`{"webhookEvent":"project_restored_deleted","project":{"key":"a b"}}`, "", platforms.EventRepositories},
		{`{"webhookEvent":"project_deleted"}`, "", platforms.EventRepositories},
		{`{"webhookEvent":"project_updated","project":{"key":"OPS"}}`, "", platforms.EventIgnored},
	} {
		ev, err := (Webhooks{}).Parse(http.Header{}, []byte(c.body))
		if err != nil || ev.Kind != c.want || ev.Locator != c.locator {
			t.Errorf("%s: kind %d locator %q err %v; want %d %q", c.body, ev.Kind, ev.Locator, err, c.want, c.locator)
		}
	}
}
