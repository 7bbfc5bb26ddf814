package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// glGroup resolves a group path (URL-decoded by the mux; case-insensitive
// like GitLab's routes) to its canonical form: a group exists here while a
// project lives at or below it. The sim has no numeric group ids.
func (s *Sim) glGroup(id string) (string, bool) {
	if id == "" || strings.HasSuffix(id, "/") {
		return "", false
	}
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	for name := range st.repos {
		if len(name) > len(id) && strings.EqualFold(name[:len(id)], id) && name[len(id)] == '/' {
			return name[:len(id)], true
		}
	}
	return "", false
}

// glListGroupIssues is "List group issues": the issues of every project of
// the group and of its subgroups, filtered and ordered like a project's
// list, with offset pagination (https://docs.gitlab.com/api/issues/#list-group-issues).
// GitLab includes archived projects' issues (gitlab-org/gitlab#28352); the
// sim has no archived projects.
func (s *Sim) glListGroupIssues(w http.ResponseWriter, r *http.Request, c *glCall) {
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "", "all", "opened", "closed":
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "state does not have a valid value"})
		return
	}
	want, _ := glLabelsParam(json.RawMessage(strconv.Quote(q.Get("labels"))))
	prefix := strings.ToLower(c.repo) + "/"
	var hits []snapshot
	for _, sn := range s.store.all() {
		if !strings.HasPrefix(strings.ToLower(sn.repo), prefix) ||
			(state == "opened" && !sn.open) || (state == "closed" && sn.open) || !glHasLabels(sn, want) {
			continue
		}
		hits = append(hits, sn)
	}
	glSortIssues(hits, q)
	lo, hi := glPaginate(w, r, c.base, len(hits))
	out := make([]glIssue, 0, hi-lo)
	for _, is := range hits[lo:hi] {
		out = append(out, glIssueJSON(c.base, is))
	}
	writeJSON(w, http.StatusOK, out)
}
