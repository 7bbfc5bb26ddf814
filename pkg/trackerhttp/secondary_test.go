package trackerhttp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// githubStub answers as GitHub does: REST label writes refused by a
// secondary limit (403, quota left) or by the primary one (403, none
// left) as refuse says, GraphQL mutations 200, or 200 with the content
// creation limit's error when graphqlRefused; it counts what was sent.
type githubStub struct {
	mu             sync.Mutex
	sent           []string
	refuse         string // "", "secondary", "primary"
	graphqlRefused bool
}

func (g *githubStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.sent = append(g.sent, r.Method+" "+r.URL.Path)
	refuse, graphqlRefused := g.refuse, g.graphqlRefused
	g.mu.Unlock()
	w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Unix(1_700_000_000, 0).Add(time.Hour).Unix(), 10))
	if r.URL.Path == "/graphql" {
		w.Header().Set("X-RateLimit-Remaining", "4000")
		if graphqlRefused {
			_, _ = io.WriteString(w, `{"data":{"add":null},"errors":[{"type":"UNPROCESSABLE","path":["add"],"message":"was submitted too quickly"}]}`)
			return
		}
		_, _ = io.WriteString(w, `{"data":{"add":{"clientMutationId":null}}}`)
		return
	}
	switch refuse {
	case "secondary":
		w.Header().Set("X-RateLimit-Remaining", "4990")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`)
	case "primary":
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, `{"message":"API rate limit exceeded for user ID 1."}`)
	default:
		w.Header().Set("X-RateLimit-Remaining", "4990")
		w.WriteHeader(http.StatusOK)
	}
}

func (g *githubStub) sends() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.sent...)
}

func stubCall(c *http.Client, method, url string) (*http.Response, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(`{}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "token t")
	resp, err := c.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

// GitHub's secondary limits count a token's REST and GraphQL requests
// together (content creation "via the REST API and GraphQL API",
// concurrency "shared across the REST API and GraphQL API",
// https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#about-secondary-rate-limits):
// a REST secondary-limit refusal holds the token's GraphQL requests too,
// while a primary refusal (none remaining) holds only its own resource.
func TestGitHubSecondaryRefusalHoldsEveryResource(t *testing.T) {
	t.Parallel()
	for _, refuse := range []string{"secondary", "primary"} {
		t.Run(refuse, func(t *testing.T) {
			ft := newFakeTime()
			stub := &githubStub{refuse: refuse}
			srv := httptest.NewServer(stub)
			defer srv.Close()
			opts := ft.options()
			opts.RateLimits, opts.MaxWait, opts.CacheEntries = GitHubRateLimits, 10*time.Second, -1
			c := client(opts)
			if resp, err := stubCall(c, http.MethodPost, srv.URL+"/repos/o/r/issues/1/labels"); err != nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("refused write: %v %v", resp, err)
			}
			_, err := stubCall(c, http.MethodPost, srv.URL+"/graphql")
			graphqlSent := len(stub.sends()) == 2
			if refuse == "secondary" && (graphqlSent || !errors.Is(err, ErrRateLimited)) {
				t.Errorf("GraphQL after a REST secondary refusal: sent %v, err %v; want held (ErrRateLimited, not sent)", graphqlSent, err)
			}
			if refuse == "primary" && (!graphqlSent || err != nil) {
				t.Errorf("GraphQL after core's primary limit: sent %v, err %v; want sent (its own budget)", graphqlSent, err)
			}
		})
	}
}

// A GraphQL mutation over the content creation limit is answered 200 with
// "was submitted too quickly" (cli/cli#4801): the answer is returned as is,
// not retried, and holds the token's REST requests as a REST refusal
// would.
func TestGitHubGraphQLSecondaryAnswerHolds(t *testing.T) {
	t.Parallel()
	ft := newFakeTime()
	stub := &githubStub{graphqlRefused: true}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	opts := ft.options()
	opts.RateLimits, opts.MaxWait, opts.CacheEntries = GitHubRateLimits, 10*time.Second, -1
	c := client(opts)
	resp, err := stubCall(c, http.MethodPost, srv.URL+"/graphql")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("refused mutation: %v %v, want its 200 answer", resp, err)
	}
	_, err = stubCall(c, http.MethodPost, srv.URL+"/repos/o/r/issues/1/labels")
	if got := stub.sends(); len(got) != 1 || !errors.Is(err, ErrRateLimited) {
		t.Errorf("sent %q, REST write err %v; want only the GraphQL request sent and the REST write held (ErrRateLimited)", got, err)
	}
}
