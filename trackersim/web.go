package trackersim

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// Each platform's web UI shows an issue at a URL of its own shape; the sim
// answers those URLs with a redirect to the issue's entry on its page, so a
// link built the platform's way (platforms' WebURL) works against the sim:
//
//	GitHub       {web}/{owner}/{repo}/issues/{n}      (github.com, or a GHES host)
//	GitLab       {web}/{group/path}/-/issues/{iid}    (https://docs.gitlab.com/ee/user/project/issues/)
//	Azure DevOps {org}/{project}/_workitems/edit/{id}
//	Jira         {site}/browse/{KEY-n}
var webPaths = []struct {
	re *regexp.Regexp
	// repo turns the submatches into the store's repo and number.
	repo func(m []string) (string, string)
}{
	{regexp.MustCompile(`^/github/([^/]+/[^/]+)/issues/([0-9]+)$`), func(m []string) (string, string) { return m[1], m[2] }},
	{regexp.MustCompile(`^/gitlab/(.+)/-/issues/([0-9]+)$`), func(m []string) (string, string) { return m[1], m[2] }},
	{regexp.MustCompile(`^/ado/([^/]+)/([^/]+)/_workitems/edit/([0-9]+)$`), func(m []string) (string, string) {
		return strings.ToLower(m[1] + "/" + m[2]), m[3]
	}},
	{regexp.MustCompile(`^/jira/browse/([A-Z][A-Z0-9_]*)-([0-9]+)$`), func(m []string) (string, string) { return m[1], m[2] }},
}

// redirectWeb answers a GET of an issue's web URL with a redirect to the
// page; false when r is no such request.
func (s *Sim) redirectWeb(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	for _, p := range webPaths {
		m := p.re.FindStringSubmatch(r.URL.Path)
		if m == nil {
			continue
		}
		repo, num := p.repo(m)
		n, err := strconv.Atoi(num)
		if err != nil {
			return false
		}
		http.Redirect(w, r, "/#"+issueAnchor(repo, n), http.StatusFound)
		return true
	}
	return false
}
