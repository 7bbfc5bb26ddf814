package azuredevops

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

const fixtures = "../../testdata/azuredevops"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func basic(user, secret string) http.Header {
	return http.Header{"Authorization": {BasicAuth(user, secret)}}
}

func TestVerify(t *testing.T) {
	secrets := [][]byte{[]byte("new"), []byte("old")}
	cases := []struct {
		name string
		w    Webhooks
		h    http.Header
		want int
	}{
		{"password", Webhooks{}, basic("anyone", "old"), 1},
		{"wrong password", Webhooks{}, basic("anyone", "guess"), -1},
		{"empty password", Webhooks{}, basic("anyone", ""), -1},
		{"user name checked", Webhooks{Username: "hook"}, basic("hook", "new"), 0},
		{"user name wrong", Webhooks{Username: "hook"}, basic("other", "new"), -1},
		{"default header", Webhooks{}, http.Header{DefaultSecretHeader: {"new"}}, 0},
		{"custom header", Webhooks{Header: "X-Token"}, http.Header{"X-Token": {"old"}}, 1},
		{"custom header ignores the default one", Webhooks{Header: "X-Token"}, http.Header{DefaultSecretHeader: {"old"}}, -1},
		{"both good", Webhooks{}, http.Header{"Authorization": {BasicAuth("u", "old")}, DefaultSecretHeader: {"new"}}, 1},
		{"good password, forged header", Webhooks{}, http.Header{"Authorization": {BasicAuth("u", "old")}, DefaultSecretHeader: {"x"}}, -1},
		{"not basic", Webhooks{}, http.Header{"Authorization": {"Bearer new"}}, -1},
		{"nothing", Webhooks{}, http.Header{}, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.w.Verify(c.h, nil, secrets)
			if c.want < 0 {
				if !errors.Is(err, platforms.ErrUnauthenticated) {
					t.Fatalf("Verify = %d, %v; want ErrUnauthenticated", got, err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Verify = %d, %v; want %d", got, err, c.want)
			}
		})
	}
	// An empty configured secret never matches.
	if _, err := (Webhooks{}).Verify(http.Header{DefaultSecretHeader: {"x"}}, nil, [][]byte{nil, {}}); err == nil {
		t.Errorf("empty secrets accepted a delivery")
	}
}

func TestParseCreated(t *testing.T) {
	ev, err := Webhooks{}.Parse(nil, fixture(t, "workitem.created"))
	if err != nil {
		t.Fatal(err)
	}
	tk := ev.Ticket
	if ev.Kind != platforms.EventTicket || ev.Name != "workitem" || ev.Action != "created" ||
		ev.DeliveryID != "b1f0c2d4-6e8a-4c1b-9f3d-5a7e9c0b2d46" || ev.Locator != "contoso/shop front" {
		t.Fatalf("event %+v", ev)
	}
	if tk.Ref.ID != "contoso/shop front#42" || tk.Title != "Flaky login test" || !tk.Open || tk.Version != "1" ||
		!slices.Equal(tk.Labels, []string{"agent-smith", "frontend", "Qualität"}) ||
		tk.URL != "https://dev.azure.com/contoso/Shop%20Front/_workitems/edit/42" {
		t.Fatalf("ticket %+v", tk)
	}
}

func TestParseUpdated(t *testing.T) {
	ev, err := Webhooks{}.Parse(nil, fixture(t, "workitem.updated"))
	if err != nil || ev.Kind != platforms.EventTicket || ev.Ticket.Version != "3" || ev.Ticket.Ref.ID != "contoso/shop front#42" {
		t.Fatalf("Parse = %+v, %v", ev, err)
	}
	// Without baseUrl (older payloads) the organization comes from the REST
	// URL; the revision is the item after the update.
	ev, err = Webhooks{}.Parse(nil, fixture(t, "workitem.updated.state"))
	if err != nil || ev.Kind != platforms.EventTicket || ev.Locator != "contoso/shop front" ||
		!ev.Ticket.Open || !slices.Equal(ev.Ticket.Labels, []string{"frontend", "agent-smith:failed"}) {
		t.Fatalf("Parse = %+v, %v", ev, err)
	}
	ev, err = Webhooks{}.Parse(nil, fixture(t, "workitem.updated.assigned"))
	if err != nil || ev.Kind != platforms.EventIgnored {
		t.Fatalf("assignment-only update: %+v, %v", ev, err)
	}
}

func TestParseOrganization(t *testing.T) {
	body := func(url, baseURL string) []byte {
		return []byte(`{"id":"` + nilGUID + `","subscriptionId":"s","notificationId":9,"eventType":"workitem.created",
			"resource":{"id":3,"rev":2,"url":"` + url + `","fields":{"System.Title":"t","System.TeamProject":"P"}},
			"resourceContainers":{"project":{"id":"pid"},"collection":{"id":"c","baseUrl":"` + baseURL + `"}}}`)
	}
	cases := []struct{ url, baseURL, locator, edit string }{
		{"https://dev.azure.com/Org/_apis/wit/workItems/3", "", "org/p", "https://dev.azure.com/Org/P/_workitems/edit/3"},
		{"https://dev.azure.com/org/pid/_apis/wit/workItems/3", "", "org/p", "https://dev.azure.com/org/P/_workitems/edit/3"},
		{"https://tfs.example/tfs/Coll/P/_apis/wit/workItems/3", "", "coll/p", "https://tfs.example/tfs/Coll/P/_workitems/edit/3"},
		{"https://fabrikam.visualstudio.com/_apis/wit/workItems/3", "", "fabrikam/p", "https://fabrikam.visualstudio.com/P/_workitems/edit/3"},
		{"", "https://tfs.example/tfs/Coll/", "coll/p", "https://tfs.example/tfs/Coll/P/_workitems/edit/3"},
	}
	for _, c := range cases {
		ev, err := Webhooks{}.Parse(nil, body(c.url, c.baseURL))
		if err != nil || ev.Locator != c.locator || ev.Ticket.URL != c.edit || ev.DeliveryID != "s/9" {
			t.Errorf("url %q base %q: %+v, %v", c.url, c.baseURL, ev, err)
		}
	}
	if _, err := (Webhooks{}).Parse(nil, body("https://example.com/x", "")); !errors.Is(err, platforms.ErrMalformed) {
		t.Errorf("no organization: %v, want ErrMalformed", err)
	}
}

func TestParseMalformed(t *testing.T) {
	for _, b := range []string{
		``, `[]`, `null`, `{"eventType":"workitem.created","resource":[]}`,
		`{"eventType":"workitem.updated","resource":"x"}`,
		`{"eventType":"workitem.updated","resource":{"workItemId":1,"fields":{"System.Tags":{}},"revision":{"id":"x"}}}`,
		`{"eventType":"workitem.created","resource":{"id":1,"url":"https://dev.azure.com/o/_apis/x","fields":{"System.TeamProject":"p","System.Title":7}}}`,
	} {
		if _, err := (Webhooks{}).Parse(nil, []byte(b)); !errors.Is(err, platforms.ErrMalformed) {
			t.Errorf("Parse(%q) err = %v, want ErrMalformed", b, err)
		}
	}
	// Deliveries the daemon cannot act on are ignored, never refused: a
	// subscription whose resource details to send is Minimal or None, an
	// update without a revision, a body without an event type.
	for _, b := range []string{`{}`, `{"eventType":"workitem.created"}`,
		`{"eventType":"workitem.created","resource":{"id":5,"url":"https://dev.azure.com/o/_apis/wit/workItems/5"}}`,
		`{"eventType":"workitem.updated","resource":{"workItemId":1}}`,
		`{"eventType":"workitem.updated","resource":{"id":2,"workItemId":1,"rev":3,"fields":{"System.Tags":{"newValue":"agent-smith"}}}}`,
		`{"eventType":"workitem.updated","notificationId":"not a number","resource":{"workItemId":1}}`,
	} {
		ev, err := Webhooks{}.Parse(nil, []byte(b))
		if err != nil || ev.Kind != platforms.EventIgnored {
			t.Errorf("Parse(%s) = %+v, %v; want ignored", b, ev, err)
		}
	}
	ev, err := Webhooks{}.Parse(nil, []byte(`{"eventType":"build.complete","resource":{}}`))
	if err != nil || ev.Kind != platforms.EventIgnored || !strings.HasPrefix(ev.DeliveryID, "sha256:") {
		t.Errorf("unhandled event: %+v, %v", ev, err)
	}
}

func FuzzParse(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join(fixtures, "*.json"))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "null", "[]", "{", `{"eventType":null}`, `{"eventType":"workitem.updated","resource":{"revision":null}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := Webhooks{}.Parse(nil, body)
		if err != nil {
			if !errors.Is(err, platforms.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if ev.DeliveryID == "" {
			t.Fatalf("no delivery id: %+v", ev)
		}
		if len(ev.Comment) > platforms.MaxCommentLine || ev.Kind == platforms.EventComment && ev.Ticket == nil {
			t.Fatalf("comment event without its ticket, or an unbounded comment: %+v", ev)
		}
		if ev.Kind == platforms.EventTicket || ev.Kind == platforms.EventComment {
			if ev.Ticket == nil || ev.Locator == "" || ev.Ticket.Ref.Platform != Platform || ev.Ticket.Labels == nil {
				t.Fatalf("incomplete ticket event %+v", ev)
			}
			if repo, n, err := ParseID(ev.Ticket.Ref.ID); err != nil || repo != ev.Locator || n <= 0 {
				t.Fatalf("ticket id %q does not round-trip: %v", ev.Ticket.Ref.ID, err)
			}
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("Basic Om5ldw==", "", []byte("new"))
	f.Add("", "new", []byte("new"))
	f.Add("Basic !!!", "x", []byte(""))
	f.Fuzz(func(t *testing.T, auth, header string, secret []byte) {
		w := Webhooks{}
		if len(secret) > 0 {
			good := http.Header{"Authorization": {BasicAuth("u", string(secret))}}
			if i, err := w.Verify(good, nil, [][]byte{[]byte("other"), secret}); err != nil || (i != 1 && string(secret) != "other") {
				t.Fatalf("correct password: %d, %v", i, err)
			}
		}
		h := http.Header{"Authorization": {auth}, DefaultSecretHeader: {header}}
		i, err := w.Verify(h, nil, [][]byte{secret})
		if err != nil && !errors.Is(err, platforms.ErrUnauthenticated) {
			t.Fatalf("unexpected error %v", err)
		}
		if err == nil {
			_, pass, ok := (&http.Request{Header: h}).BasicAuth()
			if i != 0 || len(secret) == 0 || (ok && pass != "" && pass != string(secret)) || (header != "" && header != string(secret)) {
				t.Fatalf("auth %q header %q accepted as %d for secret %q", auth, header, i, secret)
			}
		}
	})
}

// A delivery's tags are read in the daemon's spelling, as the tracker
// reads them: the project keeps "AGENT-SMITH:FAILED", the daemon sees its
// failed tag.
func TestParseRespellsLifecycleTags(t *testing.T) {
	body := strings.ReplaceAll(string(fixture(t, "workitem.updated.state")), "agent-smith:failed", "AGENT-SMITH:FAILED")
	ev, err := Webhooks{Spellings: []string{"agent-smith:failed"}}.Parse(nil, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"frontend", "agent-smith:failed"}; !slices.Equal(ev.Ticket.Labels, want) {
		t.Errorf("tags %q, want %q", ev.Ticket.Labels, want)
	}
}
