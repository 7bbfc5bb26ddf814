package trackersim

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"
)

// getJSON GETs path on srv and decodes the answer into out (if 200).
func getJSON(t *testing.T, base, path string, out any) int {
	t.Helper()
	resp, err := testClient.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return resp.StatusCode
}

// GitHub's team membership: 200 state active for a member (slug and org
// compared case-insensitively), 404 for anyone else and for a team that
// does not exist.
func TestGitHubTeamMembership(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.SetTeamMembers("acme/reviewers", "alice")
	var m struct{ State, Role string }
	if code := getJSON(t, srv.URL, "/github/orgs/acme/teams/Reviewers/memberships/alice", &m); code != 200 || m.State != "active" || m.Role != "member" {
		t.Errorf("member: %d %+v", code, m)
	}
	for _, p := range []string{"/github/orgs/acme/teams/reviewers/memberships/bob", "/github/orgs/acme/teams/nobody/memberships/alice",
		"/github/orgs/other/teams/reviewers/memberships/alice"} {
		if code := getJSON(t, srv.URL, p, nil); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
}

// GitLab's group member read takes the group's URL-encoded full path and
// a user id: 200 for a member, 404 otherwise (distinct messages for no
// group and no member).
func TestGitLabGroupMember(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.SetTeamMembers("acme/reviewers", "alice")
	path := func(group, login string) string {
		return glAPI + "/groups/" + url.PathEscape(group) + "/members/all/" + strconv.FormatInt(userID(login), 10)
	}
	var m struct {
		Username    string `json:"username"`
		AccessLevel int    `json:"access_level"`
		State       string `json:"state"`
	}
	if code := getJSON(t, srv.URL, path("acme/reviewers", "alice"), &m); code != 200 || m.Username != "alice" || m.AccessLevel == 0 || m.State != "active" {
		t.Errorf("member: %d %+v", code, m)
	}
	s.SetUserRole("bob", RoleWrite) // a project member is not a group member
	for _, p := range []string{path("acme/reviewers", "bob"), path("acme/others", "alice"), glAPI + "/groups/acme%2Freviewers/members/all/x"} {
		if code := getJSON(t, srv.URL, p, nil); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, code)
		}
	}
}

// Azure DevOps: a named group of the project is found by "[project]\name",
// and the user's expanded membership lists its descriptor.
func TestADOGroupMembershipByIdentities(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.SetTeamMembers("Reviewers", "alice")
	read := func(name, membership string) []map[string]any {
		var out struct {
			Value []map[string]any `json:"value"`
		}
		q := url.Values{"searchFilter": {"General"}, "filterValue": {name}, "queryMembership": {membership}, "api-version": {"7.1"}}
		if code := getJSON(t, srv.URL, adoPrefix+"org/_apis/identities?"+q.Encode(), &out); code != 200 {
			t.Fatalf("%s: %d", name, code)
		}
		return out.Value
	}
	g := read(`[webapp]\reviewers`, "None")
	if len(g) != 1 {
		t.Fatalf("group: %v", g)
	}
	memberOf := func(login string) []any {
		u := read(login+adoUniqueSuffix, "Expanded")
		if len(u) != 1 {
			t.Fatalf("user %s: %v", login, u)
		}
		m, _ := u[0]["memberOf"].([]any)
		return m
	}
	if !slices.Contains(memberOf("alice"), g[0]["descriptor"]) {
		t.Errorf("alice's groups %v lack %v", memberOf("alice"), g[0]["descriptor"])
	}
	if slices.Contains(memberOf("bob"), g[0]["descriptor"]) {
		t.Error("bob is in the group")
	}
	if got := read(`[webapp]\Nobody`, "None"); len(got) != 0 {
		t.Errorf("unknown group found: %v", got)
	}
}

// Jira's user groups: by accountId on Cloud, by username on Data Center;
// 404 for an unknown account, 400 without the parameter.
func TestJiraUserGroups(t *testing.T) {
	t.Parallel()
	s, _, srv := start(t, Options{})
	s.SetTeamMembers("jira-reviewers", "alice")
	names := func(path string) []string {
		var gs []struct{ Name string }
		if code := getJSON(t, srv.URL, path, &gs); code != 200 {
			t.Fatalf("%s: %d", path, code)
		}
		var out []string
		for _, g := range gs {
			out = append(out, g.Name)
		}
		return out
	}
	id := strconv.FormatInt(userID("alice"), 10)
	if got := names("/jira/rest/api/3/user/groups?accountId=" + id); !slices.Equal(got, []string{"jira-reviewers"}) {
		t.Errorf("cloud: %q", got)
	}
	s.SetUserRole("bob", RoleWrite)
	if got := names("/jira/rest/api/3/user/groups?accountId=" + strconv.FormatInt(userID("bob"), 10)); len(got) != 0 {
		t.Errorf("bob: %q", got)
	}
	if code := getJSON(t, srv.URL, "/jira/rest/api/3/user/groups?accountId=1", nil); code != http.StatusNotFound {
		t.Errorf("unknown account: %d, want 404", code)
	}
	if code := getJSON(t, srv.URL, "/jira/rest/api/3/user/groups", nil); code != http.StatusBadRequest {
		t.Errorf("no accountId: %d, want 400", code)
	}
	s.SetJiraDeployment("datacenter")
	if code := getJSON(t, srv.URL, "/jira/rest/api/2/user/groups?username=alice", nil); code != http.StatusNotFound {
		t.Errorf("data center user/groups: %d, want 404 (Cloud only)", code)
	}
	var dc struct {
		Groups struct {
			Items []struct{ Name string } `json:"items"`
		} `json:"groups"`
	}
	if code := getJSON(t, srv.URL, "/jira/rest/api/2/user?username=alice&expand=groups", &dc); code != http.StatusOK ||
		len(dc.Groups.Items) != 1 || dc.Groups.Items[0].Name != "jira-reviewers" {
		t.Errorf("data center user?expand=groups: %d %+v", code, dc)
	}
}
