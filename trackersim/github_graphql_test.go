package trackersim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v60/github"
)

// gql posts one GraphQL request to the sim and decodes the answer.
func gql(t *testing.T, url, query string, vars map[string]any) (status int, out struct {
	Data   map[string]any `json:"data"`
	Errors []gqlError     `json:"errors"`
}, hdr http.Header) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	resp, err := testClient.Post(url+"/github/graphql", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out, resp.Header
}

// The GraphQL endpoint serves the issue's node id and labels, label node
// ids by name, and the two label mutations of one document in order, each
// a write of its own; its points come from GraphQL's budget, never REST's.
func TestGitHubGraphQLLabels(t *testing.T) {
	t.Parallel()
	s, c, srv := start(t, Options{})
	s.CreateRepo("demo/app")
	n := s.CreateIssue("demo/app", "gql", "", "agent-smith", "agent-smith:pending", "keep")
	if err := s.CreateLabel("demo/app", "agent-smith:enqueued"); err != nil {
		t.Fatal(err)
	}
	_, q, hdr := gql(t, srv.URL, `query Q($owner: String!, $name: String!, $number: Int!, $l0: String!) {
  repository(owner: $owner, name: $name) {
    issue(number: $number) { id labels(first: 100) { nodes { id name } pageInfo { hasNextPage } } }
    l0: label(name: $l0) { id name }
    missing: label(name: "nope") { id }
  }
  rateLimit { cost remaining used }
}`, map[string]any{"owner": "demo", "name": "app", "number": n, "l0": "Agent-Smith:Enqueued"})
	if len(q.Errors) > 0 {
		t.Fatalf("query errors: %+v", q.Errors)
	}
	repo := q.Data["repository"].(map[string]any)
	issue := repo["issue"].(map[string]any)
	issueID := issue["id"].(string)
	ids := map[string]string{}
	for _, l := range issue["labels"].(map[string]any)["nodes"].([]any) {
		ids[l.(map[string]any)["name"].(string)] = l.(map[string]any)["id"].(string)
	}
	enq := repo["l0"].(map[string]any)
	if enq["name"] != "agent-smith:enqueued" || repo["missing"] != nil {
		t.Errorf("label(name:) = %v, missing = %v; want agent-smith:enqueued and null", enq, repo["missing"])
	}
	if hdr.Get("X-RateLimit-Resource") != "graphql" || hdr.Get("X-RateLimit-Used") != "1" {
		t.Errorf("rate headers resource %q used %q, want graphql 1", hdr.Get("X-RateLimit-Resource"), hdr.Get("X-RateLimit-Used"))
	}

	// A person adds a label just before the second mutation: it runs after
	// the first, and both answers show the labels as each left them.
	s.BeforeAPIWrite("demo/app", n, 1, func() { _ = s.EditLabel("demo/app", n, "human", true) })
	_, m, _ := gql(t, srv.URL, `mutation M($issue: ID!, $add: [ID!]!, $remove: [ID!]!) {
  add: addLabelsToLabelable(input: {labelableId: $issue, labelIds: $add}) { labelable { labels(first: 100) { nodes { name } } } }
  remove: removeLabelsFromLabelable(input: {labelableId: $issue, labelIds: $remove}) { labelable { labels(first: 100) { nodes { name } } } }
}`, map[string]any{"issue": issueID, "add": []string{enq["id"].(string)}, "remove": []string{ids["agent-smith:pending"]}})
	if len(m.Errors) > 0 {
		t.Fatalf("mutation errors: %+v", m.Errors)
	}
	names := func(k string) []string {
		var out []string
		for _, l := range m.Data[k].(map[string]any)["labelable"].(map[string]any)["labels"].(map[string]any)["nodes"].([]any) {
			out = append(out, l.(map[string]any)["name"].(string))
		}
		return out
	}
	if got, want := names("add"), []string{"agent-smith", "agent-smith:pending", "keep", "agent-smith:enqueued"}; !slices.Equal(got, want) {
		t.Errorf("after add: %q, want %q", got, want)
	}
	if got, want := names("remove"), []string{"agent-smith", "keep", "agent-smith:enqueued", "human"}; !slices.Equal(got, want) {
		t.Errorf("after remove: %q, want %q", got, want)
	}
	if w := s.Writes(); len(w) != 3 {
		t.Errorf("writes = %d, want 3 (add, the person's, remove)", len(w))
	}

	// GraphQL's budget is its own: two requests spent 2 points of it and no
	// core request.
	rl, _, err := c.RateLimit.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rl.Core.Remaining != DefaultRateLimit || rl.GraphQL == nil || rl.GraphQL.Remaining != DefaultGraphQLRateLimit-2 {
		t.Errorf("core remaining %d, graphql %+v; want %d and %d", rl.Core.Remaining, rl.GraphQL, DefaultRateLimit, DefaultGraphQLRateLimit-2)
	}
}

// Errors come back as GitHub sends them: HTTP 200 with "errors"; an
// unknown node id is NOT_FOUND with its field null and later mutations
// still run; an unknown field fails the whole document; over the budget is
// RATE_LIMITED.
func TestGitHubGraphQLErrors(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.CreateRepo("demo/app")
	n := s.CreateIssue("demo/app", "gql", "", "a")
	sn, _ := s.store.get("demo/app", n)
	issueID := fmt.Sprintf("I_sim%d", sn.id)
	code, m, _ := gql(t, srv.URL, `mutation {
  a: addLabelsToLabelable(input: {labelableId: "I_sim999999", labelIds: []}) { clientMutationId }
  b: removeLabelsFromLabelable(input: {labelableId: "`+issueID+`", labelIds: ["LA_sim`+fmt.Sprint(sn.labels[0].id)+`"]}) { clientMutationId }
}`, nil)
	if code != http.StatusOK || len(m.Errors) != 1 || m.Errors[0].Type != "NOT_FOUND" ||
		m.Errors[0].Message != "Could not resolve to a node with the global id of 'I_sim999999'." || m.Data["a"] != nil {
		t.Errorf("unknown id: %d %+v", code, m)
	}
	if got := issueLabels(t, s, n); len(got) != 0 {
		t.Errorf("the second mutation did not run after the first failed: labels %q", got)
	}
	_, m, _ = gql(t, srv.URL, `mutation { createLabel(input: {repositoryId: "R", name: "x", color: "fff"}) { label { id } } }`, nil)
	if len(m.Errors) != 1 || m.Data != nil || !strings.Contains(m.Errors[0].Message, "Field 'createLabel' doesn't exist on type 'Mutation'") {
		t.Errorf("unknown field: %+v", m)
	}
	_, m, _ = gql(t, srv.URL, `query { repository(owner: "demo", name: "app") { issue(number: 999) { id } } }`, nil)
	if len(m.Errors) != 1 || m.Errors[0].Type != "NOT_FOUND" {
		t.Errorf("unknown issue number: %+v", m)
	}
	s.graphqlRate.mu.Lock()
	for _, b := range s.graphqlRate.buckets {
		b.used = DefaultGraphQLRateLimit
	}
	s.graphqlRate.mu.Unlock()
	code, m, hdr := gql(t, srv.URL, `query { rateLimit { remaining } }`, nil)
	if code != http.StatusOK || len(m.Errors) != 1 || m.Errors[0].Type != "RATE_LIMITED" || hdr.Get("X-RateLimit-Remaining") != "0" {
		t.Errorf("over budget: %d %+v remaining %q", code, m, hdr.Get("X-RateLimit-Remaining"))
	}
}

// With GitHubSecondaryLimits the dialect refuses the 81st content-creating
// request in a minute, REST's with the secondary-limit 403 and a GraphQL
// mutation with UNPROCESSABLE "was submitted too quickly" in a 200, and
// admits them again a minute later. By default a label write is no content
// creation: past the 80 comments it still goes through, REST's and
// GraphQL's; with GitHubLabelsAsContent it is refused.
func TestGitHubSecondaryContentLimit(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		t.Run(fmt.Sprintf("labels_as_content=%v", strict), func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1_700_000_000, 0)
			var mu sync.Mutex
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			s, c, srv := start(t, Options{GitHubSecondaryLimits: true, GitHubLabelsAsContent: strict, Clock: clock})
			s.CreateRepo("demo/app")
			n := s.CreateIssue("demo/app", "limits", "", "a")
			ctx := context.Background()
			for i := range ghContentPerMinute {
				if _, _, err := c.Issues.CreateComment(ctx, "demo", "app", n, &github.IssueComment{Body: github.String(fmt.Sprint(i))}); err != nil {
					t.Fatalf("comment %d: %v", i+1, err)
				}
			}
			var abuse *github.AbuseRateLimitError
			_, _, err := c.Issues.CreateComment(ctx, "demo", "app", n, &github.IssueComment{Body: github.String("one too many")})
			if !errors.As(err, &abuse) {
				t.Errorf("81st comment in a minute: %v, want the secondary limit", err)
			}
			_, _, err = c.Issues.AddLabelsToIssue(ctx, "demo", "app", n, []string{"b"})
			if refused := errors.As(err, &abuse); refused != strict || (err != nil && !refused) {
				t.Errorf("REST label write past 80 creations: %v, want refused %v", err, strict)
			}
			sn, _ := s.store.get("demo/app", n)
			mutation := fmt.Sprintf(`mutation { add: addLabelsToLabelable(input: {labelableId: "I_sim%d", labelIds: ["LA_sim%d"]}) { clientMutationId } }`, sn.id, sn.labels[0].id)
			code, m, _ := gql(t, srv.URL, mutation, nil)
			switch {
			case strict && (code != http.StatusOK || len(m.Errors) != 1 || m.Errors[0].Type != "UNPROCESSABLE" || m.Errors[0].Message != "was submitted too quickly"):
				t.Errorf("mutation over the content limit: %d %+v", code, m)
			case !strict && (code != http.StatusOK || len(m.Errors) != 0):
				t.Errorf("label mutation past 80 creations, labels not content: %d %+v", code, m)
			}
			mu.Lock()
			now = now.Add(time.Minute)
			mu.Unlock()
			if _, m, _ = gql(t, srv.URL, mutation, nil); len(m.Errors) != 0 {
				t.Errorf("a minute later: %+v", m.Errors)
			}
		})
	}
}

// A label mutation's payload selects the issue's state and text through an
// inline fragment on Issue, as GitHub's schema allows (the labelable is an
// Issue); a fragment on a type the labelable cannot be is refused.
func TestGitHubGraphQLMutationAnswersIssue(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.CreateRepo("demo/app")
	n := s.CreateIssue("demo/app", "the title", "the body", "keep")
	if err := s.SetOpen("demo/app", n, false); err != nil {
		t.Fatal(err)
	}
	is, _ := s.Issue("demo/app", n)
	_, q, _ := gql(t, srv.URL, `query { repository(owner: "demo", name: "app") { issue(number: 1) { id } l: label(name: "keep") { id } } }`, nil)
	repo := q.Data["repository"].(map[string]any)
	issueID := repo["issue"].(map[string]any)["id"]
	labelID := repo["l"].(map[string]any)["id"]
	_, m, _ := gql(t, srv.URL, `mutation($issue: ID!, $l: [ID!]!) {
  addLabelsToLabelable(input: {labelableId: $issue, labelIds: $l}) { labelable { labels(first: 100) { nodes { name } } ... on Issue { state title body url } } }
}`, map[string]any{"issue": issueID, "l": []any{labelID}})
	if len(m.Errors) > 0 {
		t.Fatalf("mutation errors: %+v", m.Errors)
	}
	got := m.Data["addLabelsToLabelable"].(map[string]any)["labelable"].(map[string]any)
	if got["state"] != "CLOSED" || got["title"] != "the title" || got["body"] != "the body" || got["url"] == "" || got["labels"] == nil {
		t.Errorf("labelable answer %v, want the closed issue's state, title, body, url and labels (%+v)", got, is)
	}
	_, bad, _ := gql(t, srv.URL, `mutation($issue: ID!, $l: [ID!]!) {
  addLabelsToLabelable(input: {labelableId: $issue, labelIds: $l}) { labelable { ... on Label { name } } }
}`, map[string]any{"issue": issueID, "l": []any{labelID}})
	if len(bad.Errors) == 0 || !strings.Contains(bad.Errors[0].Message, "can't be spread") {
		t.Errorf("fragment on Label inside Labelable: errors %+v, want a refusal", bad.Errors)
	}
}
