package trackersim

import (
	"net/http"
	"sort"
	"strings"
)

// Repository listings for discovery (internal/discovery): an
// organisation's repositories, a user's, and archived repositories that
// refuse writes.

const (
	docsListOrgRepos  = "https://docs.github.com/rest/repos/repos#list-organization-repositories"
	docsListUserRepos = "https://docs.github.com/rest/repos/repos#list-repositories-for-a-user"
)

func (s *Sim) githubRepoListRoutes(mux *http.ServeMux) {
	s.ghRoute(mux, "GET", "/orgs/{org}/repos", docsListOrgRepos, false, s.ghListOrgRepos)
	s.ghRoute(mux, "GET", "/users/{username}/repos", docsListUserRepos, false, s.ghListUserRepos)
	s.ghRoute(mux, "GET", "/installation/repositories", "https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation", false, s.ghListInstallationRepos)
}

// ArchiveRepo archives a repository: it stays listed, with "archived":
// true, and every write to it is a 403, as on GitHub. Webhooks get a
// repository "archived" delivery.
func (s *Sim) ArchiveRepo(repo string) { s.setArchived(repo, true) }

// UnarchiveRepo makes an archived repository writable again, with a
// repository "unarchived" delivery.
func (s *Sim) UnarchiveRepo(repo string) { s.setArchived(repo, false) }

func (s *Sim) setArchived(repo string, archived bool) {
	st := s.store
	st.mu.Lock()
	r := st.ensureRepo(repo)
	changed := r.archived != archived
	r.archived = archived
	st.mu.Unlock()
	switch {
	case !changed:
	case !strings.Contains(repo, "/"): // a Jira project key
		event := "project_archived"
		if !archived {
			event = "project_restored_archived"
		}
		s.jiraProjectEvent(event, repo)
	case archived:
		s.githubRepositoryEvent("archived", repo)
		s.gitlabSystemEvent("project_update", repo)
	default:
		s.githubRepositoryEvent("unarchived", repo)
		s.gitlabSystemEvent("project_update", repo)
	}
}

// ghRepositoryEvent is the repository webhook payload
// (https://docs.github.com/en/webhooks/webhook-events-and-payloads#repository):
// GitHub sends it to the organisation's webhooks and GitHub Apps, and for
// actions on an existing repository to that repository's webhooks too.
type ghRepositoryEvent struct {
	Action     string `json:"action"`
	Repository ghRepo `json:"repository"`
	Sender     ghUser `json:"sender"`
}

// githubRepositoryEvent queues a repository delivery to every GitHub hook
// that sees repo: the organisation-wide ones (Repo "") and, except for
// "created", the repository's own.
func (s *Sim) githubRepositoryEvent(action, repo string) {
	id, created, ok := s.store.repoInfo(repo)
	if !ok {
		return
	}
	var hooks []*hookQueue
	for _, q := range s.hooks.matching(repo) {
		if isGitHubHook(q.hook) && (q.hook.Repo == "" || action != "created") {
			hooks = append(hooks, q)
		}
	}
	if len(hooks) == 0 {
		return
	}
	base := s.base()
	r := s.ghRepo(base, repo, id, created)
	r.Archived = s.store.isArchived(repo)
	s.githubSend("repository", ghRepositoryEvent{Action: action, Repository: r, Sender: s.ghUser(base, humanActor.login)}, hooks)
}

// SetUserAccount makes login a user account rather than an organisation:
// GET /orgs/{login}/repos answers 404 for it, as GitHub does for a user.
func (s *Sim) SetUserAccount(login string) {
	st := s.store
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.users == nil {
		st.users = map[string]bool{}
	}
	st.users[strings.ToLower(login)] = true
}

func (st *store) isArchived(repo string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.repos[repo]
	return ok && r.archived
}

// ownerRepos returns owner's repositories sorted by full name
// (case-insensitive owner, as GitHub logins are), and whether owner is a
// user account.
func (st *store) ownerRepos(owner string) (repos []repository, user bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for name, r := range st.repos {
		if o, _, ok := strings.Cut(name, "/"); ok && strings.EqualFold(o, owner) {
			repos = append(repos, repository{id: r.id, fullName: r.fullName, createdAt: r.createdAt, archived: r.archived})
		}
	}
	sort.Slice(repos, func(i, j int) bool { return strings.ToLower(repos[i].fullName) < strings.ToLower(repos[j].fullName) })
	return repos, st.users[strings.ToLower(owner)]
}

// ghListOrgRepos is "List organization repositories": 404 for a login that
// is not an organisation (a user's, or none), archived repositories
// included and marked, per_page at most 100 with Link pagination. type,
// sort and direction are accepted; the sim lists by full name only (every
// repository here is one the token can see).
func (s *Sim) ghListOrgRepos(w http.ResponseWriter, r *http.Request, c *ghCall) {
	repos, user := s.store.ownerRepos(r.PathValue("org"))
	if user || len(repos) == 0 {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	s.writeRepoPage(w, r, c, repos)
}

// ghListUserRepos is "List repositories for a user": any account's public
// repositories (an organisation's too); 404 for a login with none here.
func (s *Sim) ghListUserRepos(w http.ResponseWriter, r *http.Request, c *ghCall) {
	repos, _ := s.store.ownerRepos(r.PathValue("username"))
	if len(repos) == 0 {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	s.writeRepoPage(w, r, c, repos)
}

func (s *Sim) writeRepoPage(w http.ResponseWriter, r *http.Request, c *ghCall, repos []repository) {
	lo, hi := s.paginate(w, r, c, len(repos))
	out := make([]ghRepo, 0, hi-lo)
	for _, rp := range repos[lo:hi] {
		j := s.ghRepo(c.base, rp.fullName, rp.id, rp.createdAt)
		j.Archived = rp.archived
		out = append(out, j)
	}
	s.writeCollection(w, r, out)
}
