package trackersim

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/agentsmithd/agentsmithd/platforms/jira"
)

// TestJiraSearchLag: search/jql serves each issue as it was
// DefaultJiraSearchLag ago unless the search reconciles its id; issue reads
// and Data Center's search are current.
func TestJiraSearchLag(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)}
	s := New(Options{Tokens: []string{jiraToken}, Clock: clock.Now})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	api := srv.URL + "/jira/rest/api/"
	jql := jira.ListQuery("OPS", "agent-smith:pending")
	type found struct {
		key    string
		labels []string
	}
	search := func(method string, reconcile ...int64) []found {
		t.Helper()
		var a jiraAnswer
		if method == "GET" {
			q := url.Values{"jql": {jql}, "fields": {"labels"}}
			for _, id := range reconcile {
				q.Add("reconcileIssues", strconv.FormatInt(id, 10))
			}
			a = jiraDo(t, "GET", api+"3/search/jql?"+q.Encode(), "", nil)
		} else {
			a = jiraDo(t, "POST", api+"3/search/jql", "", map[string]any{"jql": jql, "fields": []string{"labels"}, "reconcileIssues": reconcile})
		}
		if a.code != 200 {
			t.Fatalf("search: %d %s", a.code, a.body)
		}
		var res struct {
			Issues []struct {
				Key    string `json:"key"`
				Fields struct {
					Labels []string `json:"labels"`
				} `json:"fields"`
			} `json:"issues"`
		}
		if err := json.Unmarshal(a.body, &res); err != nil {
			t.Fatal(err)
		}
		var out []found
		for _, is := range res.Issues {
			out = append(out, found{is.Key, is.Fields.Labels})
		}
		return out
	}
	idOf := func(n int) int64 {
		sn, err := s.store.get("OPS", n)
		if err != nil {
			t.Fatal(err)
		}
		return sn.id
	}

	n := s.CreateIssue("OPS", "new", "", "agent-smith:pending")
	if got := search("GET"); len(got) != 0 {
		t.Fatalf("a new issue is in the index at once: %v", got)
	}
	if got := search("POST", idOf(n)); len(got) != 1 || got[0].key != "OPS-1" {
		t.Fatalf("POST reconcileIssues: %v, want OPS-1", got)
	}
	if got := search("GET", idOf(n)); len(got) != 1 {
		t.Fatalf("GET reconcileIssues: %v, want OPS-1", got)
	}
	// Data Center's search is consistent.
	if a := jiraDo(t, "GET", api+"2/search?"+url.Values{"jql": {jql}}.Encode(), "", nil); a.code != 200 ||
		!bytes.Contains(a.body, []byte(`"key":"OPS-1"`)) {
		t.Fatalf("v2 search: %d %s", a.code, a.body)
	}
	clock.Add(DefaultJiraSearchLag)
	if got := search("GET"); len(got) != 1 {
		t.Fatalf("after the lag: %v, want OPS-1", got)
	}
	// A change is stale for the lag: the issue still matches, with its old
	// labels, although its labels no longer do.
	if err := s.RemoveLabel("OPS", n, "agent-smith:pending"); err != nil {
		t.Fatal(err)
	}
	clock.Add(DefaultJiraSearchLag / 2)
	if got := search("GET"); len(got) != 1 || !slices.Equal(got[0].labels, []string{"agent-smith:pending"}) {
		t.Fatalf("stale hit: %v, want OPS-1 with its old labels", got)
	}
	if got := search("POST", idOf(n)); len(got) != 0 {
		t.Fatalf("reconciled: %v, want no match", got)
	}
	clock.Add(DefaultJiraSearchLag)
	if got := search("GET"); len(got) != 0 {
		t.Fatalf("after the lag: %v, want no match", got)
	}
	ids := make([]int64, 51)
	if a := jiraDo(t, "POST", api+"3/search/jql", "", map[string]any{"jql": jql, "reconcileIssues": ids}); a.code != 400 {
		t.Fatalf("51 ids: %d %s, want 400", a.code, a.body)
	}
}
