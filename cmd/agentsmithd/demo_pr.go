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

// demoStorefrontRepo is the demo repository of the staged project: the offline
// pair examples/pipelines/offline/plan.sh and implement.sh as the stages
// plan and implement, the pull request opened as demoPRRepo's.
const demoStorefrontRepo = "demo/storefront"

// demoPR is the pull-request pipelines' setup: the bare repository each
// repository pushes to and the installed run.sh (plan.sh and implement.sh
// beside it). Zero when git or curl is missing: the demo then runs the
// plain pipeline on every project and says so.
type demoPR struct {
	bare      map[string]string // repository → its bare git repository
	script    string
	gitconfig string // the pipelines' global git config (demoGitConfig)
}

// setupDemoPR makes a bare repository (one commit on main) for each of
// demoPRRepo and demoStorefrontRepo and installs the offline pipelines under
// dir.
func setupDemoPR(dir string) (demoPR, error) {
	for _, tool := range []string{"git", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return demoPR{}, fmt.Errorf("%s not found: the pull-request pipeline is skipped", tool)
		}
	}
	bares := map[string]string{}
	for _, repo := range []string{demoPRRepo, demoStorefrontRepo} {
		bare := filepath.Join(dir, "git", repo+".git")
		seed := filepath.Join(dir, "git", "seed", repo)
		steps := [][]string{
			// Shared: each sandboxed run pushes as a uid of its own.
			{"init", "-q", "--bare", "--shared=0777", "-b", "main", bare},
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
		bares[repo] = bare
	}
	script, err := pipelines.InstallOffline(filepath.Join(dir, "pipelines"))
	if err != nil {
		return demoPR{}, err
	}
	gitconfig := filepath.Join(dir, "pipelines", "gitconfig")
	if err := os.WriteFile(gitconfig, []byte(demoGitConfig), 0o644); err != nil {
		return demoPR{}, err
	}
	return demoPR{bare: bares, script: script, gitconfig: gitconfig}, nil
}

// demoGitConfig is the global git config of the demo's pipelines: a
// sandboxed pipeline pushes to the demo's bare repositories, which the
// demo (another uid) owns, and git refuses a repository of another owner
// unless safe.directory in a protected config says otherwise. The
// command line's and the environment's (GIT_CONFIG_COUNT) do not reach
// the receive-pack of a push to a local path; the global file does.
const demoGitConfig = "[safe]\n\tdirectory = *\n"

// branchExists is the sim's Options.Branches for the demo: a pull request
// may name only branches the repository's bare repository has, as on
// GitHub.
func (p demoPR) branchExists(repo, branch string) bool {
	bare, ok := p.bare[repo]
	if !ok {
		return true
	}
	return exec.Command("git", "--git-dir", bare, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Run() == nil
}

// pipeline is the YAML of the pull-request project's pipeline: the flaky
// ticket still fails like the demo's other pipeline, every other ticket
// runs the offline example. Its own sim token (demoPipelineToken, not the
// daemon's) reaches it as a pipeline secret, never through the daemon's
// own environment.
func (p demoPR) pipeline(simURL string) string {
	wrapper := `case "$AGENTSMITH_TITLE" in *flaky*) echo "FAIL: TestCheckout (0.42s)"; echo "expected 200, got 500" >&2; exit 3;; esac; exec "$0"`
	return fmt.Sprintf(`{command: ["sh", "-c", %q, %q], timeout: 30s, max_attempts: 2,
      env: {GIT_REMOTE: %q, GITHUB_API_URL: %q, GIT_CONFIG_GLOBAL: %q},
      secrets: [{name: GITHUB_TOKEN, from: {env: DEMO_PIPELINE_TOKEN}}]}`, wrapper, p.script, p.bare[demoPRRepo], simURL+"/github/", p.gitconfig)
}

// stagedPipeline is the YAML of the staged project's pipeline
// (pipeline.stages): plan.sh writes the plan, changing nothing, the plan is
// posted for review and the ticket parked until an approver approves the
// implement stage (gate: approval; the demo's reviewer comments
// "/agent-smith approve"), then implement.sh carries it out and opens the
// pull request.
func (p demoPR) stagedPipeline(simURL string) string {
	dir := filepath.Dir(p.script)
	return fmt.Sprintf(`{command: [%q], timeout: 30s, max_attempts: 2,
      env: {GIT_REMOTE: %q, GITHUB_API_URL: %q, GIT_CONFIG_GLOBAL: %q},
      secrets: [{name: GITHUB_TOKEN, from: {env: DEMO_PIPELINE_TOKEN}}],
      stages: [{name: plan, command: [%q]}, {name: implement, command: [%q], gate: approval}]}`,
		p.script, p.bare[demoStorefrontRepo], simURL+"/github/", p.gitconfig, filepath.Join(dir, "plan.sh"), filepath.Join(dir, "implement.sh"))
}
