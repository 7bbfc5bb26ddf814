package trackersim

import (
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// GitHub's issue search (GET /search/issues), as the housekeeping lists
// lifecycle states across every repository of an owner in one call:
//
//   - Its own rate limit: "For authenticated requests, you can make up to 30
//     requests per minute for all search endpoints except for the Search
//     code endpoint" (https://docs.github.com/en/rest/search/search#rate-limit),
//     reported as X-RateLimit-Resource: search, apart from the core 5,000/h;
//     exceeding it answers like any primary limit, 403 or 429 with
//     x-ratelimit-remaining 0 and x-ratelimit-reset
//     (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api#exceeding-the-primary-rate-limit).
//   - "the GitHub REST API provides up to 1,000 results for each search"
//     (https://docs.github.com/en/rest/search/search#about-search): a page
//     past the thousandth result is 422.
//   - The index lags writes: a freshly labelled issue shows up after seconds
//     to minutes (guettli/agentloop#204 observed ~10–12 minutes for a fresh
//     label; behaviorbot/first-pr-merge#11 "the search index does not have
//     the PR that was just merged"). Issue reads are current. The sim serves
//     each issue as it was SetGitHubSearchLag ago (searchIndex, as Jira's).
//
// Qualifiers served: is:issue, is:open, is:closed, label:NAME (quoted when it
// has spaces or colons; several are ANDed), user:OWNER and org:OWNER
// (https://docs.github.com/en/search-github/searching-on-github/searching-issues-and-pull-requests#search-within-a-users-or-organizations-repositories),
// repo:OWNER/NAME. Any other term is refused with 422, so a client relying
// on more than the sim knows fails here rather than against GitHub.

const (
	docsSearch = "https://docs.github.com/rest/search/search#search-issues-and-pull-requests"
	// DefaultGitHubSearchRateLimit is GitHub's search limit per token and
	// minute for authenticated requests.
	DefaultGitHubSearchRateLimit = 30
	// DefaultGitHubSearchLag is how far the issue search lags behind writes
	// unless a test sets another with SetGitHubSearchLag: one second, so a
	// client that searches right after it wrote sees stale results, while
	// tests that wait with a deadline of seconds still finish quickly.
	DefaultGitHubSearchLag = time.Second
	// ghSearchMaxResults is the most results one search serves.
	ghSearchMaxResults = 1000
	// ghSearchMaxQuery bounds the query GitHub accepts ("more than 256
	// characters (not including operators or qualifiers)" is refused); the
	// sim counts qualifiers too, which only refuses more.
	ghSearchMaxQuery = 1024
)

// SetGitHubSearchLag sets how far GitHub's issue search lags behind writes
// (DefaultGitHubSearchLag by default); 0 makes it consistent.
func (s *Sim) SetGitHubSearchLag(d time.Duration) {
	s.ghIndex.mu.Lock()
	defer s.ghIndex.mu.Unlock()
	s.ghIndex.lag = max(d, 0)
}

func (s *Sim) githubSearchRoutes(mux *http.ServeMux) {
	const tmpl = "/search/issues"
	key := "GET " + tmpl
	mux.HandleFunc("GET /github"+tmpl, func(w http.ResponseWriter, r *http.Request) {
		s.count(func(st *Stats) { st.Calls[key]++ })
		s.serveGitHub(w, r, docsSearch, false, &s.searchRate, DefaultGitHubSearchRateLimit, s.ghSearchIssues)
	})
}

// ghQuery is a parsed search query.
type ghQuery struct {
	open, closed bool
	labels       []string
	owner, repo  string
}

// parseGHQuery splits q on spaces outside double quotes and reads the
// qualifiers the sim serves; ok is false for anything else.
func parseGHQuery(q string) (ghQuery, bool) {
	var out ghQuery
	if q == "" || len(q) > ghSearchMaxQuery || !utf8.ValidString(q) {
		return out, false
	}
	var terms []string
	var cur strings.Builder
	quoted := false
	for _, r := range q {
		switch {
		case r == '"':
			quoted = !quoted
		case r == ' ' && !quoted:
			if cur.Len() > 0 {
				terms = append(terms, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if quoted {
		return out, false
	}
	if cur.Len() > 0 {
		terms = append(terms, cur.String())
	}
	for _, t := range terms {
		k, v, found := strings.Cut(t, ":")
		if !found || v == "" {
			return out, false
		}
		switch k {
		case "is", "type":
			switch v {
			case "issue":
			case "open":
				out.open = true
			case "closed":
				out.closed = true
			default:
				return out, false
			}
		case "label":
			out.labels = append(out.labels, v)
		case "user", "org":
			out.owner = v
		case "repo":
			out.repo = v
		default:
			return out, false
		}
	}
	return out, true
}

// ghSearchIssues answers "Search issues and pull requests": total_count,
// incomplete_results (always false: the sim never times out) and the page
// of items, each an issue as the index has it.
func (s *Sim) ghSearchIssues(w http.ResponseWriter, r *http.Request, c *ghCall) {
	q, ok := parseGHQuery(r.URL.Query().Get("q"))
	if !ok {
		writeJSON(w, http.StatusUnprocessableEntity, ghError{Message: "Validation Failed", DocumentationURL: c.doc,
			Errors: []ghFieldError{{Resource: "Search", Field: "q", Code: "invalid"}}})
		return
	}
	now := s.clock()
	var hits []snapshot
	for _, cur := range s.store.all() {
		if q.repo != "" && cur.repo != q.repo {
			continue
		}
		if q.owner != "" && !strings.HasPrefix(cur.repo, q.owner+"/") {
			continue
		}
		sn, indexed := s.ghIndex.view(now, cur)
		if !indexed || (q.open && !sn.open) || (q.closed && sn.open) || !hasAll(sn, q.labels) {
			continue
		}
		hits = append(hits, sn)
	}
	// Best match is GitHub's default order; for a query of qualifiers only,
	// the sim takes newest first, as sort=created does.
	sortIssues(hits, r.URL.Query().Get("sort"), r.URL.Query().Get("order"))
	total := len(hits)
	hits = hits[:min(total, ghSearchMaxResults)]
	lo, hi := s.paginate(w, r, c, len(hits))
	if lo == len(hits) && lo > 0 && total > ghSearchMaxResults {
		writeGHError(w, http.StatusUnprocessableEntity, "Only the first 1000 search results are available", c.doc)
		return
	}
	items := make([]ghIssue, 0, hi-lo)
	for _, sn := range hits[lo:hi] {
		items = append(items, s.ghIssue(c.base, sn))
	}
	writeJSON(w, http.StatusOK, map[string]any{"total_count": total, "incomplete_results": false, "items": items})
}
