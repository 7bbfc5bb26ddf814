package trackersim

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// SetTeamMembers makes logins the members of team (replacing any), as
// every dialect's membership read reports it: team is named as the
// platform names it, compared case-insensitively: GitHub "org/slug",
// a GitLab group's full path, an Azure DevOps group name (of every
// project, as roles are), a Jira group name. No logins removes the team.
func (s *Sim) SetTeamMembers(team string, logins ...string) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	if s.check.teams == nil {
		s.check.teams = map[string][]string{}
	}
	key := strings.ToLower(team)
	if len(logins) == 0 {
		delete(s.check.teams, key)
		return
	}
	s.check.teams[key] = slices.Clone(logins)
	if s.check.roles == nil {
		s.check.roles = map[string]string{}
	}
	for _, l := range logins {
		// A member is a user the sim knows (knownLogin), with no role
		// unless a test gives one.
		if _, ok := s.check.roles[l]; !ok {
			s.check.roles[l] = ""
		}
	}
}

// team reports whether team exists and whether login is in it.
func (s *Sim) team(team, login string) (exists, member bool) {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	members, ok := s.check.teams[strings.ToLower(team)]
	return ok, ok && slices.Contains(members, login)
}

// teamsOf lists the teams login is in, as SetTeamMembers named them
// (lower-cased), sorted.
func (s *Sim) teamsOf(login string) []string {
	s.check.mu.Lock()
	defer s.check.mu.Unlock()
	var out []string
	for t, members := range s.check.teams {
		if slices.Contains(members, login) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// ghTeamMembershipDoc documents GET /orgs/{org}/teams/{team_slug}/memberships/{username}.
const ghTeamMembershipDoc = "https://docs.github.com/rest/teams/members#get-team-membership-for-a-user"

// ghTeamMembership answers "Get team membership for a user": 200 with
// state active (pending for an invitation, which the sim does not model)
// and role member, 404 for someone who is not a member or a team that does
// not exist (GitHub does not tell them apart).
func (s *Sim) ghTeamMembership(w http.ResponseWriter, r *http.Request, c *ghCall) {
	org, slug, login := r.PathValue("org"), r.PathValue("team_slug"), r.PathValue("username")
	if _, member := s.team(org+"/"+slug, login); !member {
		writeGHError(w, http.StatusNotFound, "Not Found", c.doc)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"state": "active", "role": "member",
		"url": c.base + "/github/organizations/" + org + "/team/" + slug + "/memberships/" + login})
}

// glGroupMember serves GET /groups/:id/members/all/:user_id
// (https://docs.gitlab.com/api/members/#get-a-member-of-a-group-or-project-including-inherited-and-invited-members):
// :id is the group's URL-encoded full path; 404 "404 Group Not Found" for
// a group that does not exist, "404 Not found" for a user who is no member.
// Members are Developers (30) in the sim.
func (s *Sim) glGroupMember(w http.ResponseWriter, r *http.Request) {
	s.countCall("GET " + glAPI + "/groups/{id}/members/all/{user_id}")
	if !s.glAuthenticate(r) {
		glMessage(w, http.StatusUnauthorized, "401 Unauthorized")
		return
	}
	group := r.PathValue("id")
	id, err := strconv.ParseInt(r.PathValue("user_id"), 10, 64)
	login, known := s.knownLogin(id)
	exists, member := s.team(group, login)
	switch {
	case !exists:
		glMessage(w, http.StatusNotFound, "404 Group Not Found")
	case err != nil || !known || !member:
		glMessage(w, http.StatusNotFound, "404 Not found")
	default:
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "username": login, "name": login, "state": "active",
			"access_level": 30, "web_url": s.requestBase(r) + "/" + login})
	}
}

// jiraUserGroups serves Jira Cloud's "Get user groups", GET
// /rest/api/{2|3}/user/groups?accountId=
// (https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-users/#api-rest-api-3-user-groups-get):
// 404 for a user Jira does not know, 400 without the parameter. The
// resource is Cloud's only (atlassian-python-api documents get_user_groups
// as "only available for Jira Cloud platform"); Data Center reads a user's
// groups with GET user?username=&expand=groups (jiraGetUser), so the sim
// answers 404 there.
func (s *Sim) jiraUserGroups(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	if s.jiraDataCenter() {
		jiraError(w, http.StatusNotFound, "null for uri: "+r.URL.Path)
		return
	}
	raw := r.URL.Query().Get("accountId")
	if raw == "" {
		jiraError(w, http.StatusBadRequest, "The 'accountId' query parameter is required.")
		return
	}
	login, found := "", false
	if id, err := strconv.ParseInt(raw, 10, 64); err == nil {
		login, found = s.knownLogin(id)
	}
	if !found {
		jiraError(w, http.StatusNotFound, "The user could not be found.")
		return
	}
	writeJSON(w, http.StatusOK, s.jiraGroupList(c, login))
}

// jiraGetUser serves Data Center's "Get user", GET
// /rest/api/2/user?username=NAME&expand=groups
// (https://docs.atlassian.com/software/jira/docs/api/REST/9.12.0/#api/2/user-getUser):
// the user with, when expanded, "groups": {"size", "items": [{"name"}]};
// 404 for a user Jira does not know.
func (s *Sim) jiraGetUser(w http.ResponseWriter, r *http.Request, c *jiraCall) {
	q := r.URL.Query()
	login := q.Get("username")
	if login == "" {
		jiraError(w, http.StatusBadRequest, "The 'username' query parameter is required.")
		return
	}
	out := map[string]any{"name": login, "key": login, "displayName": login, "active": true}
	if strings.Contains(q.Get("expand"), "groups") {
		items := s.jiraGroupList(c, login)
		out["groups"] = map[string]any{"size": len(items), "items": items}
	}
	writeJSON(w, http.StatusOK, out)
}

// jiraGroupList is the user's groups as Jira lists them.
func (s *Sim) jiraGroupList(c *jiraCall, login string) []map[string]string {
	out := []map[string]string{}
	for _, g := range s.teamsOf(login) {
		out = append(out, map[string]string{"name": g, "groupId": strconv.FormatInt(userID("group|"+g), 10),
			"self": c.base + "/jira/rest/api/" + c.version + "/group?groupname=" + g})
	}
	return out
}
