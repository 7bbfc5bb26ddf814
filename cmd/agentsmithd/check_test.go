package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/internal/redistest"
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// checkWorld is a trackersim with one repository per platform, each with
// the trigger label and a webhook to the receiver, and a real Redis.
type checkWorld struct {
	sim   *trackersim.Sim
	url   string
	redis *redistest.Server
	dir   string
	// top is YAML put before the projects (daemon-wide settings).
	top string
	// redisExtra is put in the redis mapping after its address.
	redisExtra string
}

// sandboxOff turns the world's sandbox off, which needs a Redis that
// asks for a password: a Redis of its own that does.
func (w *checkWorld) sandboxOff(t *testing.T) {
	t.Helper()
	const pw = "check-redis-pw"
	w.redis = redistest.StartSpec(t, redistest.Spec{Args: []string{"--requirepass", pw}, Password: pw})
	t.Setenv("CHECK_REDIS_PASSWORD", pw)
	w.redisExtra = ", password_env: CHECK_REDIS_PASSWORD"
	w.top += "sandbox: {mode: off}\n"
}

const (
	checkToken = "tok-check-2718"
	// aliceToken is a token of alice, a person (checkPipelineSecrets).
	aliceToken  = "tok-alice-1618"
	checkSecret = "hook-secret-3141"
	checkRecv   = "https://agentsmith.example.com"
)

func newCheckWorld(t *testing.T) *checkWorld {
	t.Helper()
	w := newBareCheckWorld(t)
	s := w.sim
	// Deliveries go nowhere reachable; check only reads the hook list.
	s.AddHook(trackersim.Hook{Repo: "acme/app", URL: checkRecv + "/webhooks/github", Secret: checkSecret})
	s.CreateIssue("acme/app", "first", "", "agent-smith")
	s.AddHook(trackersim.Hook{Repo: "grp/app", URL: checkRecv + "/webhooks/gitlab", Secret: checkSecret, Dialect: "gitlab"})
	s.CreateIssue("grp/app", "first", "", "agent-smith")
	s.AddHook(trackersim.Hook{Repo: "PROJ", URL: checkRecv + "/webhooks/jira", Secret: checkSecret, Dialect: "jira"})
	s.CreateIssue("PROJ", "first", "", "agent-smith")
	s.AddHook(trackersim.Hook{Repo: "org1/proj", URL: checkRecv + "/webhooks/azuredevops", Secret: checkSecret, Dialect: "ado"})
	s.CreateIssue("org1/proj", "first", "", "agent-smith")
	return w
}

// newBareCheckWorld is a checkWorld without repositories or hooks.
func newBareCheckWorld(t *testing.T) *checkWorld {
	t.Helper()
	s := trackersim.New(trackersim.Options{Tokens: []string{checkToken, aliceToken}, BaseURL: "http://sim.invalid"})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	w := &checkWorld{sim: s, url: srv.URL, redis: redistest.Start(t), dir: t.TempDir()}
	t.Setenv("CHECK_TOKEN", checkToken)
	t.Setenv("CHECK_SECRET", checkSecret)
	t.Setenv("CHECK_BAD_TOKEN", "not-a-token")
	t.Setenv("ALICE_TOKEN", aliceToken)
	s.SetAccess(aliceToken, trackersim.Access{Login: "alice"})
	return w
}

// githubProject is one YAML project entry.
func (w *checkWorld) githubProject(name, repo, tokenEnv string) string {
	return w.project(name, "github", "/github/", repo, tokenEnv, "")
}

// project is one YAML project entry on the sim; extra is YAML appended
// under the project (indented by four spaces).
func (w *checkWorld) project(name, platform, apiPath, repo, tokenEnv, extra string) string {
	return fmt.Sprintf(`  - name: %s
    platform: %s
    base_url: %s%s
    repo: %s
    token_env: %s
    webhook: {secret_env: CHECK_SECRET}
    pipeline: {command: ["true"]}
%s`, name, platform, w.url, apiPath, repo, tokenEnv, extra)
}

// run writes a config with projects and runs check; it returns the exit
// code and the JSON report.
func (w *checkWorld) run(t *testing.T, projects ...string) (int, checkReport, string) {
	t.Helper()
	cfg := fmt.Sprintf("redis: {addr: %q%s}\n%sprojects:\n%s", w.redis.Addr(), w.redisExtra, w.top, strings.Join(projects, ""))
	path := filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := run([]string{"check", "-c", path, "-o", "json", "--timeout", "10s", "--receiver-url", checkRecv}, &out, &errOut)
	var rep checkReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("check printed no JSON (exit %d): %v\n%s\n%s", code, err, out.String(), errOut.String())
	}
	all := out.String() + errOut.String()
	for _, secret := range []string{checkToken, checkSecret} {
		if strings.Contains(all, secret) {
			t.Errorf("check printed a secret:\n%s", all)
		}
	}
	return code, rep, all
}

// status returns the named check's status in project p, "" if absent.
func (r checkReport) status(p, check string) string {
	for _, pr := range r.Projects {
		if pr.Name != p {
			continue
		}
		for _, c := range pr.Checks {
			if c.Name == check {
				return string(c.Status)
			}
		}
	}
	return ""
}

func wantStatuses(t *testing.T, rep checkReport, project string, want map[string]string) {
	t.Helper()
	for name, st := range want {
		if got := rep.status(project, name); got != st {
			t.Errorf("%s %s: status %q, want %q\n%+v", project, name, got, st, rep)
		}
	}
}

func TestCheckGitHub(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
	w.sim.CreateRepo("acme/nolabel")
	// A hook to the receiver without the Issues event is no use.
	w.sim.AddHook(trackersim.Hook{Repo: "acme/push", URL: checkRecv + "/webhooks/github", Events: []string{"push"}})
	w.sim.CreateIssue("acme/push", "first", "", "agent-smith")

	code, rep, out := w.run(t,
		w.githubProject("ok", "acme/app", "CHECK_TOKEN"),
		w.githubProject("badtoken", "acme/app", "CHECK_BAD_TOKEN"),
		w.githubProject("missing", "acme/gone", "CHECK_TOKEN"),
		w.githubProject("nohook", "acme/nolabel", "CHECK_TOKEN"),
		w.githubProject("pushonly", "acme/push", "CHECK_TOKEN"),
	)
	if code != 1 {
		t.Errorf("exit %d, want 1 (some projects fail)\n%s", code, out)
	}
	wantStatuses(t, rep, "ok", map[string]string{"redis": "ok", "auth": "ok", "repository": "ok",
		"permissions": "ok", "trigger label": "ok", "webhook": "ok"})
	wantStatuses(t, rep, "badtoken", map[string]string{"redis": "ok", "auth": "fail"})
	wantStatuses(t, rep, "missing", map[string]string{"auth": "ok", "repository": "fail"})
	wantStatuses(t, rep, "nohook", map[string]string{"trigger label": "fail", "webhook": "fail"})
	wantStatuses(t, rep, "pushonly", map[string]string{"trigger label": "ok", "webhook": "fail"})
	if !strings.Contains(out, "lacks issues") {
		t.Errorf("the webhook failure does not name the missing event:\n%s", out)
	}
	if !strings.Contains(out, "agentsmith-bot") {
		t.Errorf("auth does not name the user:\n%s", out)
	}
}

// A trigger label configured in another case than the repository spells
// it is the same label on GitHub: check finds it, rather than ask for a
// label GitHub would refuse to create.
func TestCheckGitHubTriggerLabelInAnotherCase(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
	_, rep, out := w.run(t, w.project("othercase", "github", "/github/", "acme/app", "CHECK_TOKEN", "    trigger_label: Agent-Smith\n"))
	wantStatuses(t, rep, "othercase", map[string]string{"trigger label": "ok"})
	if !strings.Contains(out, `as \"agent-smith\"`) {
		t.Errorf("check does not name the repository's spelling:\n%s", out)
	}
}

func TestCheckGitHubReadOnlyAndHiddenHooks(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Login: "reader", Role: trackersim.RoleRead})
	code, rep, out := w.run(t, w.githubProject("ro", "acme/app", "CHECK_TOKEN"))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	// A reader may not set labels; it may not list hooks either (GitHub
	// answers 404), which is a warning, not a failure.
	wantStatuses(t, rep, "ro", map[string]string{"auth": "ok", "permissions": "fail", "webhook": "warn"})

	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleWrite})
	code, rep, out = w.run(t, w.githubProject("rw", "acme/app", "CHECK_TOKEN"))
	if code != 0 {
		t.Errorf("exit %d, want 0 (a warning is not a failure)\n%s", code, out)
	}
	wantStatuses(t, rep, "rw", map[string]string{"permissions": "ok", "webhook": "warn"})
}

func TestCheckRedisDown(t *testing.T) {
	w := newCheckWorld(t)
	w.redis.Kill()
	code, rep, out := w.run(t, w.githubProject("ok", "acme/app", "CHECK_TOKEN"))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	// Redis down fails every project, and the tracker checks still run.
	wantStatuses(t, rep, "ok", map[string]string{"redis": "fail", "auth": "ok", "trigger label": "ok"})
}

// The table is what a user reads: one per project, a fix on each failure.
func TestCheckTable(t *testing.T) {
	w := newCheckWorld(t)
	cfg := fmt.Sprintf("redis: {addr: %q}\nprojects:\n%s", w.redis.Addr(), w.githubProject("ok", "acme/app", "CHECK_BAD_TOKEN"))
	path := filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"check", "-c", path}, &out, &errOut); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	s := out.String()
	for _, want := range []string{"ok (github acme/app)", "CHECK", "STATUS", "auth", "fail", "token_env/token_file", "FAILED"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func (w *checkWorld) gitlabProject(name, repo string) string {
	return w.project(name, "gitlab", "/gitlab/api/v4/", repo, "CHECK_TOKEN", "")
}

func TestCheckGitLab(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin})
	w.sim.CreateRepo("grp/bare")
	code, rep, out := w.run(t, w.gitlabProject("ok", "grp/app"), w.gitlabProject("missing", "grp/gone"),
		w.gitlabProject("bare", "grp/bare"),
		w.project("badtoken", "gitlab", "/gitlab/api/v4/", "grp/app", "CHECK_BAD_TOKEN", ""))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	wantStatuses(t, rep, "ok", map[string]string{"auth": "ok", "repository": "ok", "permissions": "ok",
		"trigger label": "ok", "webhook": "ok"})
	wantStatuses(t, rep, "missing", map[string]string{"auth": "ok", "repository": "fail"})
	wantStatuses(t, rep, "bare", map[string]string{"trigger label": "fail", "webhook": "fail"})
	wantStatuses(t, rep, "badtoken", map[string]string{"auth": "fail"})

	// A Guest may comment but not label: fail. It cannot list hooks
	// (Maintainer only, 403): warn.
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleRead})
	_, rep, _ = w.run(t, w.gitlabProject("guest", "grp/app"))
	wantStatuses(t, rep, "guest", map[string]string{"permissions": "fail", "webhook": "warn"})
	// A Reporter may label.
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleTriage})
	code, rep, out = w.run(t, w.gitlabProject("reporter", "grp/app"))
	wantStatuses(t, rep, "reporter", map[string]string{"permissions": "ok", "webhook": "warn"})
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
}

func (w *checkWorld) jiraProject(name, key, deployment string) string {
	extra := "    jira: {email: bot@example.com}\n"
	if deployment == "datacenter" {
		extra = "    jira: {deployment: datacenter}\n"
	}
	return w.project(name, "jira", "/jira/", key, "CHECK_TOKEN", extra)
}

func TestCheckJira(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin})
	code, rep, out := w.run(t, w.jiraProject("ok", "PROJ", "cloud"), w.jiraProject("missing", "GONE", "cloud"),
		w.jiraProject("dc", "PROJ", "datacenter"),
		w.project("badtoken", "jira", "/jira/", "PROJ", "CHECK_BAD_TOKEN", "    jira: {email: bot@example.com}\n"))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	wantStatuses(t, rep, "ok", map[string]string{"auth": "ok", "deployment": "ok", "repository": "ok",
		"permissions": "ok", "webhook": "ok"})
	wantStatuses(t, rep, "missing", map[string]string{"auth": "ok", "repository": "fail"})
	wantStatuses(t, rep, "dc", map[string]string{"deployment": "fail"})
	wantStatuses(t, rep, "badtoken", map[string]string{"auth": "fail"})

	// A Data Center site checked as Data Center; a commenter who may not
	// edit fails; a non-administrator cannot list webhooks: warn.
	w.sim.SetJiraDeployment("datacenter")
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleTriage})
	_, rep, out = w.run(t, w.jiraProject("dc", "PROJ", "datacenter"))
	wantStatuses(t, rep, "dc", map[string]string{"deployment": "ok", "permissions": "fail", "webhook": "warn"})
	if !strings.Contains(out, "EDIT_ISSUES") {
		t.Errorf("the failure does not name the missing permission:\n%s", out)
	}

	// Data Center 10 lists webhooks at /rest/jira-webhook/1.0/webhooks and
	// answers the old path 404: an administrator's check still finds PROJ's.
	w.sim.SetJiraDeployment(trackersim.JiraDataCenter10)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin})
	code, rep, out = w.run(t, w.jiraProject("dc10", "PROJ", "datacenter"))
	wantStatuses(t, rep, "dc10", map[string]string{"deployment": "ok", "permissions": "ok", "webhook": "ok"})
	if code != 0 || !strings.Contains(out, "10.3") {
		t.Errorf("exit %d, want 0 and the version named\n%s", code, out)
	}
}

// The "edit screen" row reads the editmeta of the newest open issue of
// each issue type: it passes on a default project, whose Edit screen
// carries Labels, fails with the fix when the screen lacks Labels or the
// status forbids edits, and warns when no open issue is there to read.
func TestCheckJiraEditScreen(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin})
	// The world's issues exist before check runs; a real project's are
	// older than Cloud's search lag.
	w.sim.SetJiraSearchLag(0)
	ok, dc := w.jiraProject("ok", "PROJ", "cloud"), w.jiraProject("dc", "PROJ", "datacenter")
	code, rep, out := w.run(t, ok)
	wantStatuses(t, rep, "ok", map[string]string{"edit screen": "ok"})
	if code != 0 || !strings.Contains(out, "labels editable on Task (PROJ-1)") {
		t.Errorf("exit %d, want 0 and the row naming Task (PROJ-1):\n%s", code, out)
	}

	w.sim.SetJiraLabelsOnEditScreen("PROJ", "Task", false)
	code, rep, out = w.run(t, ok)
	wantStatuses(t, rep, "ok", map[string]string{"auth": "ok", "permissions": "ok", "edit screen": "fail"})
	for _, want := range []string{"Task (PROJ-1): Labels is not on its Edit screen", "put the Labels field on the Edit screen",
		"Project settings → Screens", "jira.issue.editable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the row does not say %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	w.sim.SetJiraLabelsOnEditScreen("PROJ", "Task", true)

	// On Data Center (its own search) the status forbids every edit.
	w.sim.SetJiraDeployment("datacenter")
	w.sim.SetJiraStatusEditable("PROJ", "To Do", false)
	_, rep, out = w.run(t, dc)
	wantStatuses(t, rep, "dc", map[string]string{"deployment": "ok", "edit screen": "fail"})
	if !strings.Contains(out, "no field is editable (its status has jira.issue.editable=false)") {
		t.Errorf("the row does not blame the status:\n%s", out)
	}
	w.sim.SetJiraStatusEditable("PROJ", "To Do", true)
	w.sim.SetJiraDeployment("cloud")

	if err := w.sim.SetOpen("PROJ", 1, false); err != nil {
		t.Fatal(err)
	}
	_, rep, out = w.run(t, ok)
	wantStatuses(t, rep, "ok", map[string]string{"edit screen": "warn"})
	if !strings.Contains(out, "no open issue in PROJ") {
		t.Errorf("the warning does not say why:\n%s", out)
	}
}

func TestCheckAzureDevOps(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Login: "ado-bot", Role: trackersim.RoleAdmin})
	w.sim.CreateRepo("org1/empty")
	ado := func(name, repo, tokenEnv string) string {
		return w.project(name, "azuredevops", "/ado/", repo, tokenEnv, "")
	}
	code, rep, out := w.run(t, ado("ok", "org1/proj", "CHECK_TOKEN"), ado("missing", "org1/gone", "CHECK_TOKEN"),
		ado("nohook", "org1/empty", "CHECK_TOKEN"), ado("badtoken", "org1/proj", "CHECK_BAD_TOKEN"))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	// Write permission is not readable without writing: always a warning.
	wantStatuses(t, rep, "ok", map[string]string{"auth": "ok", "repository": "ok", "permissions": "warn", "webhook": "ok"})
	wantStatuses(t, rep, "missing", map[string]string{"auth": "ok", "repository": "fail"})
	wantStatuses(t, rep, "nohook", map[string]string{"repository": "ok", "webhook": "fail"})
	wantStatuses(t, rep, "badtoken", map[string]string{"auth": "fail"})
	// The service answers a wrong PAT's GET with 203 and a sign-in page:
	// check reports the refused token and its fix, not a retry.
	if !strings.Contains(out, "401 Unauthorized: the token was refused") || !strings.Contains(out, "not valid for this organization") {
		t.Errorf("auth with a wrong PAT does not name the PAT:\n%s", out)
	}
	if !strings.Contains(out, "ado-bot") {
		t.Errorf("auth does not name the user:\n%s", out)
	}
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleWrite})
	code, rep, out = w.run(t, ado("ok", "org1/proj", "CHECK_TOKEN"))
	wantStatuses(t, rep, "ok", map[string]string{"webhook": "warn"})
	if code != 0 {
		t.Errorf("exit %d, want 0\n%s", code, out)
	}
}

// An Azure DevOps identity that may not create tags (Stakeholder access,
// or no Create tag definition) fails the lifecycle tags row while the
// project lacks any of the five, naming them under the configured prefix
// and how to pre-create them; it passes once they exist. An identity that
// may create tags passes with them missing.
func TestCheckAzureDevOpsLifecycleTags(t *testing.T) {
	w := newCheckWorld(t)
	w.top = "label_prefix: bot\n"
	ado := w.project("ado", "azuredevops", "/ado/", "org1/proj", "CHECK_TOKEN", "")
	w.sim.SetAccess(checkToken, trackersim.Access{Login: "stakeholder-bot", Role: trackersim.RoleAdmin, CannotCreateTags: true})
	if err := w.sim.DefineTags("org1/proj", "bot:done", "BOT:FAILED"); err != nil {
		t.Fatal(err)
	}
	code, rep, out := w.run(t, ado)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out)
	}
	wantStatuses(t, rep, "ado", map[string]string{"auth": "ok", "lifecycle tags": "fail", "webhook": "ok"})
	for _, want := range []string{"bot:pending, bot:enqueued, bot:in-progress;", "Create tag definition: not allowed",
		"pre-create the tags", "Basic access", "close that work item"} {
		if !strings.Contains(out, want) {
			t.Errorf("check does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bot:done,") || strings.Contains(out, "bot:failed") {
		t.Errorf("check names a tag the project defines:\n%s", out)
	}

	if err := w.sim.DefineTags("org1/proj", "bot:pending", "bot:enqueued", "bot:in-progress"); err != nil {
		t.Fatal(err)
	}
	code, rep, out = w.run(t, ado)
	wantStatuses(t, rep, "ado", map[string]string{"lifecycle tags": "ok"})
	if code != 0 || !strings.Contains(out, "all 5 defined") {
		t.Errorf("exit %d, want 0 with all 5 defined\n%s", code, out)
	}
	// A timer gate parks no ticket: its project needs no awaiting-approval tag.
	timed := strings.Replace(ado, `pipeline: {command: ["true"]}`, `pipeline: {command: ["true"], stages: [{name: plan}, {name: implement, gate: {after: 1h}}]}`, 1)
	code, rep, out = w.run(t, timed)
	wantStatuses(t, rep, "ado", map[string]string{"lifecycle tags": "ok"})
	if code != 0 || !strings.Contains(out, "all 5 defined") {
		t.Errorf("a project with a timer gate: exit %d, want 0 with all 5 defined\n%s", code, out)
	}

	// An identity that may create tags needs none of them beforehand.
	w.sim.SetAccess(checkToken, trackersim.Access{Login: "basic-bot", Role: trackersim.RoleAdmin})
	w.sim.CreateRepo("org1/fresh")
	code, rep, out = w.run(t, w.project("fresh", "azuredevops", "/ado/", "org1/fresh", "CHECK_TOKEN", ""))
	wantStatuses(t, rep, "fresh", map[string]string{"lifecycle tags": "ok"})
	if !strings.Contains(out, "5 not defined yet") || !strings.Contains(out, "Create tag definition: allowed") {
		t.Errorf("the lifecycle tags row does not say why it passes:\n%s", out)
	}
	_ = code // org1/fresh has no webhook: its exit code is not this test's
}

// check expands a project with repos patterns as the daemon does and
// checks each repository found under its own name; the organisation
// webhook serving them, listed by GitHub under the organisation and not
// the repository, passes the webhook row.
func TestCheckDiscoveredRepositories(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo", "admin:org_hook"}})
	w.sim.CreateIssue("acme/api", "first", "", "agent-smith")
	w.sim.AddHook(trackersim.Hook{URL: checkRecv + "/webhooks/github", Secret: checkSecret}) // every repository: an organisation webhook
	w.sim.CreateRepo("acme/legacy-x")
	p := strings.Replace(w.githubProject("org", "acme/api", "CHECK_TOKEN"), "repo: acme/api", `repos: ["acme/*", "!acme/legacy-*"]`, 1)
	_, rep, out := w.run(t, p)
	var got []string
	for _, pr := range rep.Projects {
		got = append(got, pr.Name+"="+pr.Repo)
	}
	if !slices.Equal(got, []string{"org.api=acme/api", "org.app=acme/app"}) { // acme/app is the world's
		t.Fatalf("checked %q, want org.api and org.app\n%s", got, out)
	}
	wantStatuses(t, rep, "org.api", map[string]string{"auth": "ok", "repository": "ok", "trigger label": "ok", "webhook": "ok"})
}

// A GitLab group's projects checked one by one pass the webhook row through
// the group's hook, which GitLab lists under the group (Owner only), not
// under each project.
func TestCheckDiscoveredGitLabGroup(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin})
	w.sim.CreateIssue("plat/sub/api", "first", "", "agent-smith")
	w.sim.AddHook(trackersim.Hook{URL: checkRecv + "/webhooks/gitlab", Secret: checkSecret, Dialect: "gitlab"}) // a group webhook
	p := strings.Replace(w.gitlabProject("plat", "plat/sub/api"), "repo: plat/sub/api", "group: plat", 1)
	_, rep, out := w.run(t, p)
	if len(rep.Projects) != 1 || rep.Projects[0].Name != "plat.sub.api" {
		t.Fatalf("checked %+v\n%s", rep.Projects, out)
	}
	wantStatuses(t, rep, "plat.sub.api", map[string]string{"auth": "ok", "repository": "ok", "webhook": "ok"})
}

// With Redis down the table says so in its redis row and nothing else is
// printed: go-redis's default logger writes each failed dial straight to
// file descriptor 2 ("redis: … pool.go:…"), which the test captures.
func TestCheckRedisDownPrintsNoRawRedisLines(t *testing.T) {
	w := newCheckWorld(t)
	w.sim.SetAccess(checkToken, trackersim.Access{Role: trackersim.RoleAdmin, Scopes: []string{"repo", "admin:repo_hook"}})
	w.redis.Kill()
	cfg := fmt.Sprintf("redis: {addr: %q}\nprojects:\n%s", w.redis.Addr(), w.githubProject("ok", "acme/app", "CHECK_TOKEN"))
	path := filepath.Join(w.dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	var code int
	raw := captureFD2(t, func() {
		code = run([]string{"check", "-c", path, "--timeout", "10s", "--receiver-url", checkRecv}, &out, &errOut)
	})
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, out.String())
	}
	if raw != "" || errOut.Len() > 0 {
		t.Errorf("check printed besides its table:\n%s%s", raw, errOut.String())
	}
	var redisRows []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "redis ") {
			redisRows = append(redisRows, line)
		}
	}
	if len(redisRows) != 1 || !strings.Contains(redisRows[0], "fail") || !strings.Contains(redisRows[0], w.redis.Addr()) {
		t.Errorf("want one failed redis row naming %s, got %q\n%s", w.redis.Addr(), redisRows, out.String())
	}
}

// captureFD2 runs f with file descriptor 2 pointed at a pipe and returns
// what was written to it.
func captureFD2(t *testing.T, f func()) string {
	t.Helper()
	saved, err := syscall.Dup(2)
	if err != nil {
		t.Fatal(err)
	}
	r, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup2(int(wr.Fd()), 2); err != nil {
		t.Fatal(err)
	}
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	f()
	_ = syscall.Dup2(saved, 2)
	_ = syscall.Close(saved)
	_ = wr.Close()
	return <-done
}

// detail returns the named check's detail and fix in project p.
func (r checkReport) detail(p, check string) string {
	for _, pr := range r.Projects {
		for _, c := range pr.Checks {
			if pr.Name == p && c.Name == check {
				return c.Detail + " | fix: " + c.Fix
			}
		}
	}
	return ""
}

// Comment commands (on by default) and the approve/reject of an approval
// gate arrive by the platform's comment event only: on each platform, a
// hook to the receiver that sends issue events but not the comment event
// fails the webhook row naming the event and commands.enabled; a project
// with commands disabled does not need it; a hook with it passes; a token
// that may not list hooks warns naming it.
func TestCheckWebhookCommentEvent(t *testing.T) {
	for _, c := range []struct {
		platform, apiPath, repo, extra, comment string
		issueEvents                             []string
		dialect, hidden                         string
	}{
		{"github", "/github/", "acme/cmt", "", "issue_comment", []string{"issues"}, "", trackersim.RoleWrite},
		{"gitlab", "/gitlab/api/v4/", "grp/cmt", "", "note_events", []string{"issues_events"}, "gitlab", trackersim.RoleTriage},
		{"azuredevops", "/ado/", "org1/cmt", "", "workitem.commented", []string{"workitem.created", "workitem.updated"}, "ado", trackersim.RoleWrite},
		{"jira", "/jira/", "CMT", "    jira: {email: bot@example.com}\n", "comment_created", []string{"jira:issue_created", "jira:issue_updated"}, "jira", trackersim.RoleTriage},
	} {
		t.Run(c.platform, func(t *testing.T) {
			w := newBareCheckWorld(t)
			w.sim.SetAccess(checkToken, trackersim.Access{Login: "bot", Role: trackersim.RoleAdmin, Scopes: []string{"repo"}})
			url := checkRecv + "/webhooks/" + c.platform
			w.sim.AddHook(trackersim.Hook{Repo: c.repo, URL: url, Secret: checkSecret, Dialect: c.dialect, Events: c.issueEvents})
			w.sim.CreateIssue(c.repo, "first", "", "agent-smith")
			on := w.project("on", c.platform, c.apiPath, c.repo, "CHECK_TOKEN", c.extra)
			off := w.project("off", c.platform, c.apiPath, c.repo, "CHECK_TOKEN", c.extra+"    commands: {enabled: false}\n")

			_, rep, out := w.run(t, on, off)
			wantStatuses(t, rep, "on", map[string]string{"webhook": "fail"})
			wantStatuses(t, rep, "off", map[string]string{"webhook": "ok"})
			d := rep.detail("on", "webhook")
			for _, want := range []string{"lacks " + c.comment, "which commands.enabled", "select " + strings.Join(append(slices.Clip(c.issueEvents), c.comment), ", ")} {
				if !strings.Contains(d, want) {
					t.Errorf("the webhook row does not say %q: %s\n%s", want, d, out)
				}
			}

			// A hook that also sends the comment event serves the project.
			w.sim.AddHook(trackersim.Hook{Repo: c.repo, URL: url, Secret: checkSecret, Dialect: c.dialect,
				Events: append(slices.Clip(c.issueEvents), c.comment)})
			_, rep, out = w.run(t, on)
			wantStatuses(t, rep, "on", map[string]string{"webhook": "ok"})
			if !strings.Contains(rep.detail("on", "webhook"), c.comment) {
				t.Errorf("the webhook row does not name %s:\n%s", c.comment, out)
			}

			// A token that may not list hooks cannot tell: warn, naming the event.
			w.sim.SetAccess(checkToken, trackersim.Access{Login: "bot", Role: c.hidden, Scopes: []string{"repo"}})
			_, rep, out = w.run(t, on)
			wantStatuses(t, rep, "on", map[string]string{"webhook": "warn"})
			if d := rep.detail("on", "webhook"); !strings.Contains(d, c.comment) || !strings.Contains(d, "commands.enabled") {
				t.Errorf("the hidden-hooks warning does not name %s and commands.enabled: %s\n%s", c.comment, d, out)
			}
		})
	}
}

// commentsFor names commands.enabled, and the approval gates answered by
// comment; nothing when commands are disabled, gate or not (a gate is then
// answered by its labels only).
func TestCheckCommentsFor(t *testing.T) {
	on, off := true, false
	gate := config.Stage{Name: "implement", Gate: &config.Gate{Approval: &config.Approval{}}}
	p := &config.Project{Commands: config.Commands{Enabled: &on, Prefix: "/agent-smith"}}
	if got := commentsFor(p); !strings.Contains(got, "commands.enabled") || strings.Contains(got, "gate") {
		t.Errorf("commands on, no gate: %q", got)
	}
	p.Pipeline.Stages = []config.Stage{{Name: "plan"}, gate}
	if got := commentsFor(p); !strings.Contains(got, "approval gate of stage implement") {
		t.Errorf("commands on, gated: %q", got)
	}
	p.Commands.Enabled = &off
	if got := commentsFor(p); got != "" {
		t.Errorf("commands off, gated: %q, want none", got)
	}
}
