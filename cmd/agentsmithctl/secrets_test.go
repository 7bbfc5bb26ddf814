package main

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// Every secret the test config names, by the variable holding it.
const (
	envToken   = "CTL_TEST_TOKEN"          // both projects' tracker token
	envWebhook = "CTL_TEST_WEBHOOK_SECRET" // app's webhook secret
	envStatus  = "CTL_TEST_STATUS_TOKEN"   // status.token
	envPipe    = "CTL_TEST_PIPELINE"       // a pipeline secret of ops
	envGit     = "CTL_TEST_GIT_TOKEN"      // app's work branch token
)

var allEnvs = []string{envToken, envWebhook, envStatus, envPipe, envGit}

// newSecretsWorld is a world whose config names one secret of every group:
// the daemon needs them all, agentsmithctl only what a command uses.
func newSecretsWorld(t *testing.T) *world {
	t.Helper()
	for _, e := range allEnvs {
		t.Setenv(e, "value-of-"+e)
	}
	// The file gains them after newWorld loaded w.cfg, which runTicket
	// runs with: its pipeline has no work branch to fetch.
	w := newWorld(t)
	data, err := os.ReadFile(w.path)
	if err != nil {
		t.Fatal(err)
	}
	yml := strings.Replace(string(data), "    token_env: "+envToken+"\n", "    token_env: "+envToken+"\n"+
		"    webhook: {secret_env: "+envWebhook+"}\n"+
		"    workspace: {git: {url: \"https://git.example/acme/app.git\", token_env: "+envGit+"}}\n", 1)
	i := strings.LastIndex(yml, `pipeline: {command: ["true"]}`)
	yml = yml[:i] + `pipeline: {command: ["true"], secrets: [{name: DEPLOY_KEY, from: {env: ` + envPipe + `}}]}` + yml[i+len(`pipeline: {command: ["true"]}`):]
	yml += "status: {token_env: " + envStatus + "}\n"
	if err := os.WriteFile(w.path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// onlyEnv unsets every test secret but keep (t.Setenv restores them).
func onlyEnv(t *testing.T, keep []string) {
	t.Helper()
	for _, e := range allEnvs {
		t.Setenv(e, "value-of-"+e)
		if !slices.Contains(keep, e) {
			if err := os.Unsetenv(e); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Each command runs with only the variables its requirement set names
// (never a webhook secret, a pipeline secret or the work branch token), and
// without one it needs it fails naming the variable.
func TestEachCommandNeedsOnlyItsSecrets(t *testing.T) {
	w := newSecretsWorld(t)
	n := w.sim.CreateIssue(repo, "one", "", "agent-smith")
	w.runTicket(n)
	needEnv := map[need][]string{needRedis: nil, needTrackers: {envToken}, needStatusToken: {envStatus}}
	for _, tc := range []struct {
		argv []string
		need need
	}{
		{[]string{"status"}, needRedis},
		{[]string{"tickets", "--project", "app"}, needTrackers},
		{[]string{"history", "github:acme/app#1"}, needRedis},
		{[]string{"logs", "github:acme/app#1"}, needRedis},
		{[]string{"events", "-n", "5"}, needRedis},
		{[]string{"requeue", "github:acme/app#1"}, needTrackers},
		{[]string{"retry", "github:acme/app#1"}, needTrackers},
		{[]string{"release", "github:acme/app#1", "--yes"}, needRedis},
		{[]string{"cancel", "github:acme/app#1", "--reason", "test"}, needRedis},
		{[]string{"pause", "app"}, needRedis},
		{[]string{"resume", "app"}, needRedis},
		{[]string{"report", "--project", "app"}, needRedis},
		{[]string{"status-token"}, needStatusToken},
	} {
		if got := commandNeeds[tc.argv[0]]; got != tc.need {
			t.Errorf("commandNeeds[%s] = %q, want %q", tc.argv[0], got, tc.need)
		}
		keep := needEnv[tc.need]
		onlyEnv(t, keep)
		code, out, errOut := w.ctl(tc.argv...)
		if strings.Contains(errOut, "CTL_TEST_") || (code != 0 && code != exitNotFound) {
			t.Errorf("%v with only %v set: exit %d\n%s%s", tc.argv, keep, code, out, errOut)
		}
		for _, missing := range keep {
			onlyEnv(t, slices.DeleteFunc(slices.Clone(keep), func(e string) bool { return e == missing }))
			code, _, errOut := w.ctl(tc.argv...)
			if code != exitError || !strings.Contains(errOut, missing+" is not set") {
				t.Errorf("%v without %s: exit %d, want 1 naming it: %s", tc.argv, missing, code, errOut)
			}
		}
	}
	onlyEnv(t, nil)
	_, _, errOut := w.ctl("tickets", "--project", "app")
	if !strings.Contains(errOut, "calls the trackers and needs their tokens") || !strings.Contains(errOut, "projects[0].token_env: "+envToken) {
		t.Errorf("tickets without the token says %q, want the reason and the field naming %s", errOut, envToken)
	}
}

// Every command declares its requirement set, and docs/operations.md
// tells operators the same.
func TestCommandNeedsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(&app{out: os.Stdout, errOut: os.Stderr})
	for _, c := range root.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		n, ok := commandNeeds[c.Name()]
		if !ok {
			t.Errorf("command %s has no entry in commandNeeds", c.Name())
			continue
		}
		if row := "| `" + c.Name() + "` | " + string(n) + " |"; !strings.Contains(string(doc), row) {
			t.Errorf("docs/operations.md lacks the row %q", row)
		}
	}
}
