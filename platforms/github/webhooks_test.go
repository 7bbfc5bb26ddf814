package github

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

const fixtures = "../../testdata/github"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func delivery(event string) http.Header {
	h := http.Header{}
	h.Set(HeaderEvent, event)
	h.Set(HeaderDelivery, "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	return h
}

func TestVerify(t *testing.T) {
	body := readFixture(t, "issues.opened.json")
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
	}
	for name, h := range bad {
		if _, err := (Webhooks{}).Verify(h, tampered, secrets); !errors.Is(err, platforms.ErrUnauthenticated) {
			t.Errorf("%s: err = %v, want ErrUnauthenticated", name, err)
		}
	}
}

func TestParseLabeled(t *testing.T) {
	ev, err := (Webhooks{}).Parse(delivery("issues"), readFixture(t, "issues.labeled.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platforms.EventTicket || ev.Name != "issues" || ev.Action != "labeled" ||
		ev.DeliveryID != "72d3162e-cc78-11e3-81ab-4c9367dc0958" || ev.Locator != "octo-org/agent-playground" {
		t.Fatalf("event %+v", ev)
	}
	tk := ev.Ticket
	want := platforms.Ref{Platform: Platform, ID: "octo-org/agent-playground#42"}
	if tk.Ref != want || tk.Title != "Flaky retry in uploader" || !tk.Open ||
		tk.URL != "https://github.com/octo-org/agent-playground/issues/42" ||
		!slices.Equal(tk.Labels, []string{"bug", "agent-smith:pending"}) || !strings.HasPrefix(tk.Body, "The uploader") {
		t.Fatalf("ticket %+v", tk)
	}
}

func TestParseKinds(t *testing.T) {
	for _, c := range []struct {
		event, file string
		want        platforms.EventKind
	}{
		{"ping", "ping.json", platforms.EventPing},
		{"issues", "issues.opened.json", platforms.EventTicket},
		{"issues", "issues.reopened.json", platforms.EventTicket},
		{"issues", "issues.closed.json", platforms.EventTicket},
		{"issues", "issues.unlabeled.json", platforms.EventTicket},
		{"pull_request", "pull_request.opened.json", platforms.EventIgnored},
		{"issue_comment", "issue_comment.created.json", platforms.EventComment},
		{"repository", "repository.archived.json", platforms.EventRepositories},
		{"installation_repositories", "installation_repositories.added.json", platforms.EventRepositories},
	} {
		ev, err := (Webhooks{}).Parse(delivery(c.event), readFixture(t, c.file))
		if err != nil || ev.Kind != c.want {
			t.Errorf("%s: kind %d err %v, want %d", c.file, ev.Kind, err, c.want)
		}
	}
}

func TestParseMalformed(t *testing.T) {
	for name, c := range map[string]struct {
		h    http.Header
		body string
	}{
		"no event header":  {http.Header{}, `{}`},
		"not json":         {delivery("issues"), `{"action":`},
		"ping not json":    {delivery("ping"), `zen`},
		"no repository":    {delivery("issues"), `{"action":"opened","issue":{"number":1}}`},
		"bad full_name":    {delivery("issues"), `{"action":"opened","repository":{"full_name":"nope"},"issue":{"number":1}}`},
		"no issue":         {delivery("issues"), `{"action":"opened","repository":{"full_name":"o/r"}}`},
		"no issue number":  {delivery("issues"), `{"action":"opened","repository":{"full_name":"o/r"},"issue":{"title":"x"}}`},
		"wrong field type": {delivery("issues"), `{"action":"opened","repository":{"full_name":"o/r"},"issue":{"number":"1"}}`},
	} {
		if _, err := (Webhooks{}).Parse(c.h, []byte(c.body)); !errors.Is(err, platforms.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	// A pull request reached through the issues event is not a ticket.
	ev, err := (Webhooks{}).Parse(delivery("issues"),
		[]byte(`{"action":"opened","repository":{"full_name":"o/r"},"issue":{"number":3,"pull_request":{"url":"u"}}}`))
	if err != nil || ev.Kind != platforms.EventIgnored {
		t.Errorf("pull request as issue: %+v, %v", ev, err)
	}
}

// FuzzParse holds Parse to its promise: any header and body give an event
// or an ErrMalformed, never a panic, and a ticket event is always complete.
func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		event, _, _ := strings.Cut(filepath.Base(p), ".")
		f.Add(event, b)
	}
	for _, s := range []string{"", "null", "[]", "{", `{"action":null}`, `{"issue":{"number":-1},"repository":{"full_name":"a/b"}}`} {
		f.Add("issues", []byte(s))
	}
	f.Fuzz(func(t *testing.T, event string, body []byte) {
		h := delivery(event)
		ev, err := (Webhooks{}).Parse(h, body)
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
			if ev.Ticket == nil || ev.Locator == "" || ev.Ticket.Ref.Platform != Platform {
				t.Fatalf("incomplete ticket event %+v", ev)
			}
			if repo, n, err := ParseID(ev.Ticket.Ref.ID); err != nil || repo != ev.Locator || n <= 0 {
				t.Fatalf("ticket id %q does not round-trip: %v", ev.Ticket.Ref.ID, err)
			}
		}
	})
}

// FuzzVerify: a body signed with a secret always verifies against it, and
// any header either matches a secret or is ErrUnauthenticated.
func FuzzVerify(f *testing.F) {
	f.Add("sha256=00", []byte("{}"), []byte("secret"))
	f.Add("", []byte(""), []byte(""))
	f.Add("sha256=", []byte("body"), []byte("k"))
	f.Fuzz(func(t *testing.T, header string, body, secret []byte) {
		w := Webhooks{}
		good := http.Header{HeaderSignature: {SignatureHeader(body, secret)}}
		if i, err := w.Verify(good, body, [][]byte{[]byte("other"), secret}); err != nil || (i != 1 && string(secret) != "other") {
			t.Fatalf("correct signature: %d, %v", i, err)
		}
		i, err := w.Verify(http.Header{HeaderSignature: {header}}, body, [][]byte{secret})
		if err != nil && !errors.Is(err, platforms.ErrUnauthenticated) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil && (i != 0 || header != SignatureHeader(body, secret) && !strings.EqualFold(header, SignatureHeader(body, secret))) {
			t.Fatalf("header %q accepted as %d", header, i)
		}
	})
}

// BenchmarkParse measures decoding one signed-off issues delivery, the
// receiver's hottest step after HMAC verification.
func BenchmarkParse(b *testing.B) {
	body, err := os.ReadFile("../../testdata/github/issues.labeled.json")
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderEvent, "issues")
	h.Set(HeaderDelivery, "d-1")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (Webhooks{}).Parse(h, body); err != nil {
			b.Fatal(err)
		}
	}
}

// Repository changes that alter what discovery finds ask for a listing;
// "edited" (descriptions, topics: the frequent action) and actions GitHub
// may add later are ignored, and the repository is named for the log only
// when the payload names a well-formed one.
func TestParseRepositoryEvents(t *testing.T) {
	for _, c := range []struct {
		event, body, locator string
		want                 platforms.EventKind
	}{
		{"repository", `{"action":"created","repository":{"full_name":"acme/new"}}`, "acme/new", platforms.EventRepositories},
		{"repository", `{"action":"renamed","repository":{"full_name":"acme/renamed"}}`, "acme/renamed", platforms.EventRepositories},
		{"repository", `{"action":"edited","repository":{"full_name":"acme/app"}}`, "", platforms.EventIgnored},
		{"repository", `{"action":"deleted","repository":{"full_name":"no-slash"}}`, "", platforms.EventRepositories},
		{"repository", `{"action":"deleted"}`, "", platforms.EventRepositories},
		{"installation_repositories", `{"action":"removed","repositories_removed":[{"full_name":"acme/a"}]}`, "", platforms.EventRepositories},
		{"installation_repositories", `{"action":"suspended"}`, "", platforms.EventIgnored},
	} {
		ev, err := (Webhooks{}).Parse(delivery(c.event), []byte(c.body))
		if err != nil || ev.Kind != c.want || ev.Locator != c.locator {
			t.Errorf("%s %s: kind %d locator %q err %v; want %d %q", c.event, c.body, ev.Kind, ev.Locator, err, c.want, c.locator)
		}
	}
}

// A delivery for an issue whose repository spells the lifecycle labels
// its own way reads them in the daemon's spelling, as the tracker does, so
// the receiver sees the ticket's state (in progress here) from the payload.
func TestParseRespellsLifecycleLabels(t *testing.T) {
	body := strings.Replace(string(readFixture(t, "issues.labeled.json")), `"agent-smith:pending"`, `"Agent-Smith:In-Progress"`, 1)
	if body == string(readFixture(t, "issues.labeled.json")) {
		t.Fatal("fixture lacks agent-smith:pending")
	}
	w := Webhooks{Spellings: []string{"agent-smith:pending", "agent-smith:in-progress"}}
	ev, err := w.Parse(delivery("issues"), []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bug", "agent-smith:in-progress"}; !slices.Equal(ev.Ticket.Labels, want) {
		t.Errorf("labels %q, want %q", ev.Ticket.Labels, want)
	}
}
