package discovery_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/discovery"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

const token = "ghp_discovery_test_token"

func world(t *testing.T) (*trackersim.Sim, string) {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{token}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return s, srv.URL + "/github/"
}

func parse(t *testing.T, yml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yml), func(k string) (string, bool) { return token, k == "GH_TOKEN" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// An organisation of 120 repositories (two pages of 100) expands to one
// project per repository the patterns take: excluded and archived ones are
// left out and counted, another owner's are not listed, a user account is
// listed through /users/{login}/repos after /orgs answers 404, and the
// explicit project beside them keeps its place.
func TestExpandListsTheOrganisation(t *testing.T) {
	s, base := world(t)
	var want []string
	for i := range 117 {
		name := fmt.Sprintf("acme/svc-%03d", i)
		s.CreateRepo(name)
		want = append(want, name)
	}
	s.CreateRepo("acme/legacy-one")
	s.CreateRepo("acme/legacy-two")
	s.CreateRepo("acme/svc-archived")
	s.ArchiveRepo("acme/svc-archived")
	s.CreateRepo("rival/svc-000")
	s.CreateRepo("Jo/dotfiles")
	s.CreateRepo("jo/tools")
	s.SetUserAccount("jo")
	want = append(want, "jo/tools")

	cfg := parse(t, fmt.Sprintf(`
projects:
  - name: solo
    platform: github
    base_url: %[1]s
    repo: rival/svc-000
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
  - name: acme
    platform: github
    base_url: %[1]s
    repos: ["acme/*", "!acme/legacy-*", "jo/tools"]
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
`, base))
	found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Project != "acme" || found[0].Archived != 1 || found[0].Excluded != 2 {
		t.Fatalf("found %+v", found)
	}
	if !slices.Equal(found[0].Repos, want) {
		t.Fatalf("repositories: %d, want %d (first %q)", len(found[0].Repos), len(want), found[0].Repos[:3])
	}
	if len(cfg.Projects) != 1+len(want) || cfg.Projects[0].Name != "solo" {
		t.Fatalf("%d projects, first %q", len(cfg.Projects), cfg.Projects[0].Name)
	}
	for _, p := range cfg.Projects[1:] {
		if p.Discovered() || p.Name != "acme."+strings.ToLower(strings.SplitN(p.Repo, "/", 2)[1]) {
			t.Fatalf("expanded project %q repo %q", p.Name, p.Repo)
		}
	}
	calls := s.Stats().Calls
	if calls["GET /orgs/{org}/repos"] != 3 || calls["GET /users/{username}/repos"] != 1 {
		t.Fatalf("listing calls: orgs %d (want 2 pages of acme + jo's 404), users %d", calls["GET /orgs/{org}/repos"], calls["GET /users/{username}/repos"])
	}
}

// A listing that fails (an owner nobody has, a bad token) fails the
// expansion: a daemon must not start watching part of an organisation.
func TestExpandFailsOnAFailedListing(t *testing.T) {
	s, base := world(t)
	s.CreateRepo("acme/a")
	for owner, tok := range map[string]string{"nobody": "GH_TOKEN", "acme": "BAD_TOKEN"} {
		yml := fmt.Sprintf(`
projects:
  - name: acme
    platform: github
    base_url: %s
    repos: ["%s/*"]
    token_env: %s
    polling: {enabled: true}
    pipeline: {command: [run]}
`, base, owner, tok)
		cfg, err := config.Parse([]byte(yml), func(k string) (string, bool) {
			if k == "BAD_TOKEN" {
				return "ghp_wrong", true
			}
			return token, k == "GH_TOKEN"
		})
		if err != nil {
			t.Fatal(err)
		}
		_, err = discovery.Expand(context.Background(), cfg, discovery.Options{})
		if err == nil || !strings.Contains(err.Error(), "list repositories of "+owner) {
			t.Errorf("%s with %s: %v", owner, tok, err)
		}
		if err != nil && strings.Contains(err.Error(), "ghp_wrong") {
			t.Errorf("the token reached the error: %v", err)
		}
		if !cfg.Projects[0].Discovered() {
			t.Errorf("a failed expansion changed the config")
		}
	}
}

// Expanded names must stay unique: a discovered repository named like an
// explicit project is refused, not silently merged.
func TestExpandRefusesAClash(t *testing.T) {
	s, base := world(t)
	s.CreateRepo("acme/web")
	cfg := parse(t, fmt.Sprintf(`
projects:
  - name: acme.web
    platform: github
    base_url: %[1]s
    repo: acme/web
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
  - name: acme
    platform: github
    base_url: %[1]s
    repos: ["acme/*"]
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
`, base))
	if _, err := discovery.Expand(context.Background(), cfg, discovery.Options{}); err == nil || !strings.Contains(err.Error(), `"acme.web" appears twice`) {
		t.Fatalf("clash: %v", err)
	}
}

// A GitLab group expands to every project below it, subgroups included,
// except archived ones, excluded ones, projects beside the group and those
// of another group; 130 projects take two pages of 100.
func TestExpandListsTheGitLabGroup(t *testing.T) {
	s, base := world(t)
	var want []string
	for i := range 120 {
		p := fmt.Sprintf("acme/platform/svc-%03d", i)
		s.CreateRepo(p)
		want = append(want, p)
	}
	for i := range 8 {
		p := fmt.Sprintf("acme/platform/deep/sub/x-%d", i)
		s.CreateRepo(p)
		want = append(want, p)
	}
	s.CreateRepo("acme/platform/legacy/old-1")
	s.CreateRepo("acme/platform/gone")
	s.ArchiveRepo("acme/platform/gone")
	s.CreateRepo("acme/other/svc")
	s.CreateRepo("acme/platformer")
	cfg := parse(t, fmt.Sprintf(`
projects:
  - name: plat
    platform: gitlab
    base_url: %s/gitlab/api/v4/
    group: acme/platform
    repos: ["!acme/platform/legacy/*"]
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
`, strings.TrimSuffix(base, "/github/")))
	found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got := slices.Clone(found[0].Repos)
	slices.Sort(got)
	if !slices.Equal(got, want) || found[0].Archived != 1 || found[0].Excluded != 1 {
		t.Fatalf("found %d repositories (want %d), archived %d, excluded %d", len(got), len(want), found[0].Archived, found[0].Excluded)
	}
	if p, ok := cfg.Project("plat.deep.sub.x-3"); !ok || p.Repo != "acme/platform/deep/sub/x-3" || p.Platform != "gitlab" {
		t.Fatalf("a subgroup's project: %+v %v", p, ok)
	}
	if n := s.Stats().Calls["GET /gitlab/api/v4/groups/{id}/projects"]; n != 2 {
		t.Fatalf("group listing calls: %d, want 2 pages", n)
	}
}

// An Azure DevOps organisation's projects (250, three pages of 100 by
// continuation token) expand to one project each, names with spaces made
// name-safe, excluded ones left out.
func TestExpandListsTheAzureDevOpsOrganisation(t *testing.T) {
	s, base := world(t)
	var want []string
	for i := range 250 {
		p := fmt.Sprintf("acmeorg/Team %03d", i)
		s.CreateRepo(p)
		want = append(want, p)
	}
	s.CreateRepo("acmeorg/Sandbox")
	s.CreateRepo("otherorg/Team 000")
	cfg := parse(t, fmt.Sprintf(`
projects:
  - name: ado
    platform: azuredevops
    base_url: %s/ado/
    repos: ["acmeorg/*", "!acmeorg/sandbox"]
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
`, strings.TrimSuffix(base, "/github/")))
	found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := slices.Clone(found[0].Repos)
	slices.Sort(got)
	if !slices.Equal(got, want) || found[0].Excluded != 1 {
		t.Fatalf("found %d projects (want %d), excluded %d", len(got), len(want), found[0].Excluded)
	}
	if p, ok := cfg.Project("ado.team-007"); !ok || p.Repo != "acmeorg/Team 007" || p.Platform != "azuredevops" {
		t.Fatalf("a project with a space: %+v %v", p, ok)
	}
	if n := s.Stats().Calls["GET /ado/{org}/_apis/projects"]; n != 3 {
		t.Fatalf("listing calls: %d, want 3 pages", n)
	}
}

// A Jira site's projects (120, three pages of 50 on Cloud; one array on
// Data Center) expand to one project per key the patterns take; archived
// projects and other dialects' repositories are not listed.
func TestExpandListsTheJiraSite(t *testing.T) {
	for _, deployment := range []string{"cloud", "datacenter"} {
		t.Run(deployment, func(t *testing.T) {
			s, base := world(t)
			s.SetJiraDeployment(deployment)
			var want []string
			for i := range 120 {
				k := fmt.Sprintf("APP%03d", i)
				s.CreateRepo(k)
				want = append(want, k)
			}
			s.CreateRepo("LEGACY")
			s.CreateRepo("OLD")
			s.ArchiveRepo("OLD")
			s.CreateRepo("acme/app") // another dialect's repository
			cfg := parse(t, fmt.Sprintf(`
projects:
  - name: jira
    platform: jira
    base_url: %s/jira/
    repos: ["*", "!LEGACY"]
    token_env: GH_TOKEN
    jira: {email: bot@acme.example, deployment: %s}
    polling: {enabled: true}
    pipeline: {command: [run]}
`, strings.TrimSuffix(base, "/github/"), deployment))
			found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(found[0].Repos, want) || found[0].Excluded != 1 {
				t.Fatalf("found %d projects (want %d), excluded %d", len(found[0].Repos), len(want), found[0].Excluded)
			}
			if p, ok := cfg.Project("jira.app007"); !ok || p.Repo != "APP007" || p.Platform != "jira" {
				t.Fatalf("expanded: %+v %v", p, ok)
			}
			calls := s.Stats().Calls
			if deployment == "cloud" && calls["GET /jira/rest/api/{v}/project/search"] != 3 {
				t.Fatalf("cloud listing calls: %v", calls["GET /jira/rest/api/{v}/project/search"])
			}
			if deployment == "datacenter" && calls["GET /jira/rest/api/{v}/project"] != 1 {
				t.Fatalf("data center listing calls: %v", calls["GET /jira/rest/api/{v}/project"])
			}
		})
	}
}

// installation: all serves every repository a GitHub App installation can
// access, across owners: "all" (every repository here) for one
// installation, the granted ones for a "selected" installation, "!"
// patterns and archived repositories left out; a PAT cannot list an
// installation's repositories.
func TestExpandListsTheAppInstallation(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	s := trackersim.New(trackersim.Options{Tokens: []string{token}, Apps: []trackersim.App{{ID: 901, PublicKey: &key.PublicKey,
		Installations: []int64{55, 56}, Selected: map[int64][]string{56: {"acme/one", "jo/two"}}}}})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	var all []string
	for i := range 130 {
		r := fmt.Sprintf("acme/r%03d", i)
		s.CreateRepo(r)
		all = append(all, r)
	}
	for _, r := range []string{"acme/one", "jo/two", "acme/legacy-x", "acme/gone"} {
		s.CreateRepo(r)
	}
	s.ArchiveRepo("acme/gone")
	s.CreateRepo("acme/sub/gitlab-project") // another dialect's: not a GitHub repository
	s.CreateRepo("JIRAKEY")
	all = append(all, "acme/one", "jo/two")
	slices.Sort(all)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	lookup := func(k string) (string, bool) {
		switch k {
		case "APP_KEY":
			return string(pemKey), true
		case "GH_TOKEN":
			return token, true
		}
		return "", false
	}
	expand := func(auth string) ([]discovery.Found, *config.Config, error) {
		cfg, err := config.Parse([]byte(fmt.Sprintf(`
projects:
  - name: org
    platform: github
    base_url: %s/github/
    installation: all
    repos: ["!acme/legacy-*"]
    %s
    polling: {enabled: true}
    pipeline: {command: [run]}
`, srv.URL, auth)), lookup)
		if err != nil {
			return nil, nil, err
		}
		found, err := discovery.Expand(context.Background(), cfg, discovery.Options{})
		return found, cfg, err
	}
	found, cfg, err := expand("github_app: {app_id: 901, installation_id: 55, private_key_env: APP_KEY}")
	if err != nil {
		t.Fatal(err)
	}
	if got := found[0].Repos; !slices.Equal(got, all) || found[0].Archived != 1 || found[0].Excluded != 1 {
		t.Fatalf("installation 55: %d repositories (want %d), archived %d, excluded %d", len(got), len(all), found[0].Archived, found[0].Excluded)
	}
	if p, ok := cfg.Project("org.two"); !ok || p.Repo != "jo/two" || !p.GitHubApp.IsSet() {
		t.Fatalf("another owner's repository: %+v %v", p, ok)
	}
	if n := s.Stats().Calls["GET /installation/repositories"]; n != 2 {
		t.Fatalf("listing calls: %d, want 2 pages", n)
	}
	found, _, err = expand("github_app: {app_id: 901, installation_id: 56, private_key_env: APP_KEY}")
	if err != nil || !slices.Equal(found[0].Repos, []string{"acme/one", "jo/two"}) {
		t.Fatalf("selected installation: %v %v", found, err)
	}
	if _, _, err := expand("token_env: GH_TOKEN"); err == nil || !strings.Contains(err.Error(), "installation: only for a github project authenticated with github_app") {
		t.Fatalf("installation with a token: %v", err)
	}
}

// The Refresher lists each configured project through one client it keeps,
// so a relisting of an unchanged organisation revalidates every page with
// its ETag: two 304s for 150 repositories, which GitHub's rate limit does
// not count. A changed page is a 200 and the change is seen; the page
// before it stays a 304.
func TestRefresherRevalidatesUnchangedListings(t *testing.T) {
	s, base := world(t)
	for i := range 150 {
		s.CreateRepo(fmt.Sprintf("acme/svc-%03d", i))
	}
	cfg := parse(t, fmt.Sprintf(`
projects:
  - name: acme
    platform: github
    base_url: %s
    repos: ["acme/*"]
    token_env: GH_TOKEN
    polling: {enabled: true}
    pipeline: {command: [run]}
`, base))
	var got [][]config.Project
	r := discovery.NewRefresher(discovery.RefresherConfig{RDB: redistest.Start(t).Client(t), Projects: cfg.Projects,
		Apply: func(_ context.Context, ps []config.Project) error { got = append(got, ps); return nil }})
	for range 2 {
		if err := r.Refresh(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	const listing = "GET /orgs/{org}/repos"
	if st := s.Stats(); st.Calls[listing] != 4 || st.NotModified != 2 || len(got[1]) != 150 {
		t.Fatalf("two listings: %d page calls, %d answered 304, %d projects; want 4, 2 (the second listing's pages), 150",
			st.Calls[listing], st.NotModified, len(got[1]))
	}
	s.CreateRepo("acme/svc-new")
	if err := r.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); len(got[2]) != 151 || st.NotModified != 3 {
		t.Errorf("after a new repository: %d projects, %d answered 304 in all; want 151, 3 (the first page unchanged, the second not)", len(got[2]), st.NotModified)
	}
}

// The core quota an idle fleet spends following an unchanged organisation
// of 1,000 repositories (10 pages of 100) for two simulated hours of six
// 10-minute relistings each, one replica. GitHub's ETags belong to the
// token (eclipse-csi/otterdog#201) and only a 304 is free of the core
// limit (docs.github.com, "Use conditional requests if appropriate"). A
// PAT pays the first listing and then nothing. A GitHub App does the same
// because the Refresher keeps one installation transport per project:
// one token is minted and every relisting revalidates with it. The
// simulated hours run in well under the token's real hour, which
// ghinstallation measures on the real clock, so no renewal happens here;
// after a renewal the first listing is charged in full again (10 calls
// for this organisation), which this test does not exercise.
func TestRefresherCoreQuotaPerHourPATvsApp(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	const (
		repos           = 1000
		hours           = 2
		listingsPerHour = 6 // discovery.interval 10 min
		listing         = "GET /orgs/{org}/repos"
		tokens          = "POST /app/installations/{installation_id}/access_tokens"
	)
	for _, tc := range []struct {
		name, auth string
		want       []int // charged listing calls per hour
		minted     int   // installation tokens over the run
	}{
		{"pat", "token_env: GH_TOKEN", []int{10, 0}, 0},
		{"app", "github_app: {app_id: 901, installation_id: 55, private_key_env: APP_KEY}", []int{10, 0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := trackersim.New(trackersim.Options{Tokens: []string{token}, Apps: []trackersim.App{{ID: 901, PublicKey: &key.PublicKey,
				Installations: []int64{55}}}})
			t.Cleanup(s.Close)
			srv := httptest.NewServer(s.Handler())
			t.Cleanup(srv.Close)
			for i := range repos {
				s.CreateRepo(fmt.Sprintf("acme/svc-%04d", i))
			}
			cfg, err := config.Parse([]byte(fmt.Sprintf(`
projects:
  - name: acme
    platform: github
    base_url: %s/github/
    repos: ["acme/*"]
    %s
    polling: {enabled: true}
    pipeline: {command: [run]}
`, srv.URL, tc.auth)), func(k string) (string, bool) {
				switch k {
				case "APP_KEY":
					return string(pemKey), true
				case "GH_TOKEN":
					return token, true
				}
				return "", false
			})
			if err != nil {
				t.Fatal(err)
			}
			r := discovery.NewRefresher(discovery.RefresherConfig{RDB: redistest.Start(t).Client(t), Projects: cfg.Projects,
				Apply: func(context.Context, []config.Project) error { return nil }})
			var charged []int
			var prev trackersim.Stats
			for h := range hours {
				for range listingsPerHour {
					if err := r.Refresh(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				st := s.Stats()
				calls, free := st.Calls[listing]-prev.Calls[listing], st.NotModified-prev.NotModified
				charged = append(charged, calls-free)
				t.Logf("%s hour %d: %d listing calls, %d answered 304, %d charged to the core quota (%.1f %% of 5,000), %d installation tokens minted",
					tc.name, h+1, calls, free, calls-free, float64(calls-free)*100/5000, st.Calls[tokens]-prev.Calls[tokens])
				prev = st
			}
			if !slices.Equal(charged, tc.want) {
				t.Errorf("charged listing calls per hour = %v, want %v", charged, tc.want)
			}
			if got := s.Stats().Calls[tokens]; got != tc.minted {
				t.Errorf("%d installation tokens minted over %d listings, want %d", got, hours*listingsPerHour, tc.minted)
			}
		})
	}
}
