package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentsmithd/agentsmithd/examples/pipelines"
)

// demoPRRepo is the demo repository whose pipeline opens a pull request:
// examples/pipelines/offline/run.sh, the shipped example, pushes a branch
// to a local bare git repository and opens the pull request on trackersim.
const demoPRRepo = "demo/webshop"

// demoPR is the pull-request pipeline's setup: the bare repository it pushes
// to and the installed script. Zero when git or curl is missing: the demo
// then runs the plain pipeline on every project and says so.
type demoPR struct {
	bare   string
	script string
}

// setupDemoPR makes the bare repository (one commit on main) and installs
// the offline pipeline under dir.
func setupDemoPR(dir string) (demoPR, error) {
	for _, tool := range []string{"git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return demoPR{}, fmt.Errorf("%s not found: the pull-request pipeline is skipped", tool)
		}
	}
	bare := filepath.Join(dir, "git", demoPRRepo+".git")
	seed := filepath.Join(dir, "git", "seed")
	steps := [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"init", "-q", "-b", "main", seed},
		{"-C", seed, "commit", "-q", "--allow-empty", "-m", "initial"},
		{"-C", seed, "push", "-q", bare, "HEAD:main"},
	}
	for _, args := range steps {
		cmd := exec.Command("git", args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=demo", "GIT_AUTHOR_EMAIL=demo@localhost",
			"GIT_COMMITTER_NAME=demo", "GIT_COMMITTER_EMAIL=demo@localhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			return demoPR{}, fmt.Errorf("git %v: %v: %s", args, err, out)
		}
	}
	script, err := pipelines.InstallOffline(filepath.Join(dir, "pipelines"))
	if err != nil {
		return demoPR{}, err
	}
	return demoPR{bare: bare, script: script}, nil
}

// branchExists is the sim's Options.Branches for the demo: a pull request
// may name only branches the bare repository has, as on GitHub.
func (p demoPR) branchExists(repo, branch string) bool {
	if p.bare == "" || repo != demoPRRepo {
		return true
	}
	return exec.Command("git", "--git-dir", p.bare, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Run() == nil
}

// pipeline is the YAML of the pull-request project's pipeline: the flaky
// ticket still fails like the demo's other pipeline, every other ticket
// runs the offline example. The sim's token reaches it as a pipeline
// secret, never through the daemon's own environment.
func (p demoPR) pipeline(simURL string) string {
	wrapper := `case "$AGENTSMITH_TITLE" in *flaky*) echo "FAIL: TestCheckout (0.42s)"; echo "expected 200, got 500" >&2; exit 3;; esac; exec "$0"`
	return fmt.Sprintf(`{command: ["sh", "-c", %q, %q], timeout: 30s, max_attempts: 2,
      env: {GIT_REMOTE: %q, GITHUB_API_URL: %q},
      secrets: [{name: GITHUB_TOKEN, from: {env: DEMO_TOKEN}}]}`, wrapper, p.script, p.bare, simURL+"/github/")
}
