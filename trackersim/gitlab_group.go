package trackersim

import (
	"net/http"
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
// GitLab includes archived projects' issues (gitlab-org/gitlab#28352), and
// so does the sim.
func (s *Sim) glListGroupIssues(w http.ResponseWriter, r *http.Request, c *glCall) {
	q := r.URL.Query()
	keep, ok := glIssueFilter(w, q)
	if !ok {
		return
	}
	prefix := strings.ToLower(c.repo) + "/"
	var hits []snapshot
	for _, sn := range s.store.all() {
		if !strings.HasPrefix(strings.ToLower(sn.repo), prefix) || !keep(sn) {
			continue
		}
		hits = append(hits, sn)
	}
	s.glWriteIssues(w, r, c, hits)
}

// glListGroupProjects is "List a group's projects"
// (https://docs.gitlab.com/api/groups/#list-projects): the group's own
// projects, and its subgroups' with include_subgroups=true; archived=true
// or false filters on the flag, absent lists both; ordered by path with
// offset pagination. with_shared is accepted: the sim shares no project
// across namespaces.
func (s *Sim) glListGroupProjects(w http.ResponseWriter, r *http.Request, c *glCall) {
	q := r.URL.Query()
	subgroups := q.Get("include_subgroups") == "true"
	repos, _ := s.store.ownerRepos(strings.SplitN(c.repo, "/", 2)[0])
	prefix := strings.ToLower(c.repo) + "/"
	var hits []repository
	for _, rp := range repos {
		low := strings.ToLower(rp.fullName)
		if !strings.HasPrefix(low, prefix) || (!subgroups && strings.Contains(low[len(prefix):], "/")) {
			continue
		}
		if a := q.Get("archived"); (a == "true" && !rp.archived) || (a == "false" && rp.archived) {
			continue
		}
		hits = append(hits, rp)
	}
	lo, hi := glPaginate(w, r, c.base, len(hits))
	out := make([]map[string]any, 0, hi-lo)
	for _, rp := range hits[lo:hi] {
		ns, name := rp.fullName[:strings.LastIndexByte(rp.fullName, '/')], rp.fullName[strings.LastIndexByte(rp.fullName, '/')+1:]
		out = append(out, map[string]any{"id": rp.id, "name": name, "path": name, "path_with_namespace": rp.fullName,
			"archived": rp.archived, "web_url": c.base + "/?repo=" + rp.fullName, "issues_enabled": true,
			"namespace": map[string]any{"full_path": ns, "path": ns[strings.LastIndexByte(ns, '/')+1:], "kind": "group"}})
	}
	writeJSON(w, http.StatusOK, out)
}
