package pipelines_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/config"
	"github.com/agentsmithd/agentsmithd/examples/pipelines"
	"github.com/agentsmithd/agentsmithd/internal/readme"
	"github.com/agentsmithd/agentsmithd/lifecycle/consumer"
	_ "github.com/agentsmithd/agentsmithd/platforms/all" // the configs name platforms
	"github.com/agentsmithd/agentsmithd/trackersim"
)

// hostileBody is a ticket body a shell would run if a script let it: the
// test checks it reaches the agent as text and runs nothing.
const hostileBody = "Fix it. $(touch PWNED) `touch PWNED` \"quoted\" 'single' \\n"

// fakeCLI is a stand-in for a real CLI on PATH: it records its arguments
// NUL-separated in $FAKE_LOG/<name>.args, then runs script.
func fakeCLI(t *testing.T, bin, name, script string) {
	t.Helper()
	src := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done > \"$FAKE_LOG/" + name + ".args\"\n" + script + "\n"
	if err := os.WriteFile(filepath.Join(bin, name), []byte(src), 0o755); err != nil {
		t.Fatal(err)
	}
}

func argsOf(t *testing.T, log, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(log, name+".args"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x",
		"HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// remote makes a bare repository with one commit on main, the one the
// pipelines push to.
func remote(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	root := t.TempDir()
	bare := filepath.Join(root, "remote.git")
	git(t, root, "init", "-q", "--bare", "-b", "main", bare)
	seed := filepath.Join(root, "seed")
	git(t, root, "clone", "-q", bare, seed)
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, seed, "add", ".")
	git(t, seed, "commit", "-q", "-m", "initial")
	git(t, seed, "push", "-q", "origin", "HEAD:main")
	return bare
}

type run struct {
	script  string
	workDir string
	stdout  bytes.Buffer
	err     error
}

// runPipeline runs script the way the daemon does: in the ticket's work
// dir, the ticket as AGENTSMITH_* and as JSON on stdin, PATH with the fakes
// first, HOME private so no user git config leaks in.
func runPipeline(t *testing.T, script, workDir, bin string, extra ...string) *run {
	t.Helper()
	r := &run{script: script, workDir: workDir}
	stdin, _ := json.Marshal(map[string]any{"id": "demo/app#1", "platform": "github", "project": "app",
		"title": "Fix login redirect", "body": hostileBody, "labels": []string{"agent-smith"},
		"url": "https://github.com/demo/app/issues/1", "attempt": 1})
	cmd := exec.Command(script)
	cmd.Dir = workDir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = &r.stdout
	cmd.Stderr = &r.stdout
	cmd.Env = append([]string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "GIT_CONFIG_NOSYSTEM=1",
		"AGENTSMITH_TICKET_ID=demo/app#1", "AGENTSMITH_PLATFORM=github", "AGENTSMITH_PROJECT=app",
		"AGENTSMITH_URL=https://github.com/demo/app/issues/1", "AGENTSMITH_TITLE=Fix login redirect",
		"AGENTSMITH_ATTEMPT=1", "AGENTSMITH_WORKDIR=" + workDir,
		"AGENTSMITH_RESULT_FILE=" + filepath.Join(workDir, ".agentsmith", "result.json")}, extra...)
	r.err = cmd.Run()
	return r
}

// inOrder: want is a subsequence of got, each flag next to its value.
func inOrder(got, want []string) bool {
	i := 0
	for j := 0; j < len(got) && i < len(want); j++ {
		if got[j] == want[i] {
			i++
		} else if i > 0 && strings.HasPrefix(want[i-1], "--") && !strings.HasPrefix(want[i], "--") {
			return false // a flag's value must follow it
		}
	}
	return i == len(want)
}

type result struct {
	Summary string `json:"summary"`
	Links   []struct {
		Title string `json:"title"`
		URL   string `json:"url"`
	} `json:"links"`
}

func readResult(t *testing.T, workDir string) result {
	t.Helper()
	var res result
	b, err := os.ReadFile(filepath.Join(workDir, ".agentsmith", "result.json"))
	if err != nil {
		t.Fatalf("result file: %v", err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("result file %q: %v", b, err)
	}
	return res
}

// Each agent pipeline, with fake agent and platform CLIs on PATH against a
// real git remote: the agent is called with its documented non-interactive
// flags and the ticket as text, its change is committed on the work branch
// and pushed (the daemon's logs never committed), the pull/merge request is
// opened from that branch with the platform's CLI, and the result file
// holds the link the CLI printed.
func TestAgentPipelines(t *testing.T) {
	cases := []struct {
		dir, agent, agentScript string
		agentFlags              []string
		cli, cliOut             string
		cliFlags                []string
		// daemonCheckout: the work dir is already a checkout on the work
		// branch (the daemon's workspace: git); else GIT_REMOTE is used.
		daemonCheckout bool
	}{
		{"claude-code", "claude", `echo fixed >> FIX.md; echo "Fixed the redirect loop."`,
			[]string{"-p", "--permission-mode", "acceptEdits"},
			"gh", "https://github.com/demo/app/pull/7", []string{"pr", "create", "--head", "agent-smith/demo-app-1", "--base", "main", "--title", "Fix login redirect"}, true},
		{"codex", "codex", `echo fixed >> FIX.md; while [ $# -gt 0 ]; do [ "$1" = --output-last-message ] && echo "codex: fixed" > "$2"; shift; done`,
			[]string{"exec", "--sandbox", "workspace-write", "--output-last-message"},
			"glab", "Creating merge request for agent-smith/demo-app-1 into main in demo/app\n\nhttps://gitlab.example/demo/app/-/merge_requests/3",
			[]string{"mr", "create", "--source-branch", "agent-smith/demo-app-1", "--target-branch", "main", "--title", "Fix login redirect", "--yes"}, false},
		{"aider", "aider", `echo fixed >> FIX.md`,
			[]string{"--message", "--yes-always", "--no-auto-commits"},
			"az", "https://dev.azure.com/org/proj/_git/app/pullrequest/5",
			[]string{"repos", "pr", "create", "--source-branch", "agent-smith/demo-app-1", "--target-branch", "main", "--title", "Fix login redirect"}, false},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, c.agent, c.agentScript)
			fakeCLI(t, bin, c.cli, "printf '%s\\n' '"+strings.ReplaceAll(c.cliOut, "\n", "\n")+"'")
			var extra []string
			if c.daemonCheckout {
				git(t, work, "clone", "-q", "-b", "main", bare, ".")
				git(t, work, "checkout", "-q", "-b", "agent-smith/demo-app-1")
			} else {
				extra = append(extra, "GIT_REMOTE="+bare)
			}
			// The daemon's attempt log lives in the work dir by default.
			if err := os.MkdirAll(filepath.Join(work, ".agentsmith", "logs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(work, ".agentsmith", "logs", "attempt-1.log"), []byte("log\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			script, _ := filepath.Abs(filepath.Join(c.dir, "run.sh"))
			r := runPipeline(t, script, work, bin, append(extra, "FAKE_LOG="+log, "PR_CLI="+c.cli)...)
			if r.err != nil {
				t.Fatalf("%s: %v\n%s", c.dir, r.err, r.stdout.String())
			}

			agentArgs := argsOf(t, log, c.agent)
			for _, f := range c.agentFlags {
				if !slices.Contains(agentArgs, f) {
					t.Errorf("%s args %q lack %q", c.agent, agentArgs, f)
				}
			}
			if !strings.Contains(strings.Join(agentArgs, " "), hostileBody) {
				t.Errorf("%s was not given the ticket body as text: %q", c.agent, agentArgs)
			}
			if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
				t.Error("the ticket body ran as shell")
			}
			if got := argsOf(t, log, c.cli); !inOrder(got, c.cliFlags) {
				t.Errorf("%s args %q, want %q in this order", c.cli, got, c.cliFlags)
			}

			tip := git(t, bare, "log", "-1", "--format=%s", "agent-smith/demo-app-1")
			files := git(t, bare, "ls-tree", "-r", "--name-only", "agent-smith/demo-app-1")
			if tip != "Fix login redirect" || !strings.Contains(files, "FIX.md") || strings.Contains(files, ".agentsmith") {
				t.Errorf("pushed branch: tip %q, files %q", tip, files)
			}
			res := readResult(t, work)
			wantURL := c.cliOut[strings.LastIndex(c.cliOut, "https://"):]
			if res.Summary == "" || len(res.Links) != 1 || res.Links[0].URL != wantURL {
				t.Errorf("result %+v, want the link %s", res, wantURL)
			}
		})
	}
}

// A pipeline whose agent changed nothing fails without opening a pull
// request, and one whose platform CLI fails fails too: exit 0 would mark
// the ticket Done with nothing to show.
func TestAgentPipelineFailures(t *testing.T) {
	for name, c := range map[string]struct{ agent, gh string }{
		"agent changed nothing": {"echo nothing to do", "echo https://github.com/demo/app/pull/1"},
		"gh fails":              {"echo fixed >> FIX.md", "echo 'pull request create failed: GraphQL: ...' >&2; exit 1"},
		"gh prints no URL":      {"echo fixed >> FIX.md", "echo done"},
	} {
		t.Run(name, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, "claude", c.agent)
			fakeCLI(t, bin, "gh", c.gh)
			script, _ := filepath.Abs("claude-code/run.sh")
			r := runPipeline(t, script, work, bin, "GIT_REMOTE="+bare, "FAKE_LOG="+log)
			if r.err == nil {
				t.Fatalf("exit 0, want a failure\n%s", r.stdout.String())
			}
			if name == "agent changed nothing" && argsOf(t, log, "gh") != nil {
				t.Error("a pull request was opened for no change")
			}
			if _, err := os.Stat(filepath.Join(work, ".agentsmith", "result.json")); err == nil {
				t.Error("a failed run wrote a result")
			}
		})
	}
}

// offlineSetup is the offline pipelines' world: a bare repository, a real
// trackersim whose branches are that repository's (it refuses a pull
// request whose head the repository lacks) holding the ticket, the
// pipelines installed as the demo installs them (the path of run.sh), and
// the environment that points them at both.
func offlineSetup(t *testing.T) (bare string, s *trackersim.Sim, run string, env []string) {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	bare = remote(t)
	s = trackersim.New(trackersim.Options{Tokens: []string{"pipeline-token"}, Branches: func(repo, branch string) bool {
		return repo == "demo/app" && exec.Command("git", "--git-dir", bare, "rev-parse", "-q", "--verify", "refs/heads/"+branch).Run() == nil
	}})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { srv.Close(); s.Close() })
	s.CreateIssue("demo/app", "Fix login redirect", hostileBody, "agent-smith")
	run, err := pipelines.InstallOffline(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bare, s, run, []string{"GIT_REMOTE=" + bare, "GITHUB_API_URL=" + srv.URL + "/github/", "GITHUB_TOKEN=pipeline-token"}
}

// The offline pipeline, installed as the demo installs it, against a real
// trackersim whose branches are the bare repository's: it pushes the work
// branch, opens a pull request the sim records (the sim refuses a head the
// repository lacks), and writes its html_url to the result file. A second
// attempt in the same work dir finds the same pull request.
func TestOfflinePipelineOpensAPullRequestOnTrackersim(t *testing.T) {
	bare, s, script, env := offlineSetup(t)
	work := t.TempDir()
	for attempt := 1; attempt <= 2; attempt++ {
		r := runPipeline(t, script, work, t.TempDir(), env...)
		if r.err != nil {
			t.Fatalf("attempt %d: %v\n%s", attempt, r.err, r.stdout.String())
		}
		prs := s.PullRequests("demo/app")
		if len(prs) != 1 || prs[0].Head != "agent-smith/demo-app-1" || prs[0].Base != "main" || prs[0].Title != "Fix login redirect" {
			t.Fatalf("attempt %d: pull requests %+v", attempt, prs)
		}
		if res := readResult(t, work); len(res.Links) != 1 || res.Links[0].URL != prs[0].HTMLURL {
			t.Fatalf("attempt %d: result %+v, want %s", attempt, res, prs[0].HTMLURL)
		}
		if !strings.Contains(r.stdout.String(), "pull request: "+prs[0].HTMLURL) {
			t.Errorf("attempt %d: output lacks the link:\n%s", attempt, r.stdout.String())
		}
	}
	if log := git(t, bare, "show", "agent-smith/demo-app-1:CHANGELOG.md"); strings.Count(log, "Fix login redirect (demo/app#1)") != 2 {
		t.Errorf("CHANGELOG.md on the branch: %q", log)
	}
}

// planText is what a fake agent answers in a plan stage: several lines, a
// quote and a backslash, all kept in the result's summary.
const planText = "1. Change login.go: stop the redirect loop.\n2. Add a test in login_test.go.\n3. \"go test ./...\" \\ done"

// review is a reviewer's note (the approval gate's /agent-smith reject
// <why>): hostile text like a ticket body.
const review = "Cover the logout path too. $(touch PWNED) <b>&amp;</b>"

// stageEnv is the environment the daemon gives a stage's run
// (AGENTSMITH_STAGE, AGENTSMITH_PREVIOUS_RESULT) with the reviewer's note.
func stageEnv(stage string, previous *consumer.Result, reviewNote string) []string {
	env := []string{"AGENTSMITH_STAGE=" + stage}
	if previous != nil {
		b, _ := json.Marshal(previous) // as the daemon keeps it: Go's encoding, <>& as \u escapes
		env = append(env, "AGENTSMITH_PREVIOUS_RESULT="+string(b))
	}
	if reviewNote != "" {
		env = append(env, "AGENTSMITH_REVIEW="+reviewNote)
	}
	return env
}

// stageResult reads the result file as the daemon does (consumer.ReadResult),
// failing on any warning.
func stageResult(t *testing.T, workDir string) consumer.Result {
	t.Helper()
	res, warn := consumer.ReadResult(filepath.Join(workDir, ".agentsmith", "result.json"), os.Geteuid())
	if len(warn) > 0 {
		t.Fatalf("result file: %v", warn)
	}
	return res
}

// agentStages are the agent CLIs' plan stages: the fake agent's answer and
// the flags that keep it from editing.
var agentStages = []struct {
	dir, agent, planScript string
	readOnly               []string
}{
	{"claude-code", "claude", `printf '%s' "$PLAN"`,
		[]string{"-p", "--permission-mode", "default", "--disallowedTools", "Edit Write NotebookEdit"}},
	{"codex", "codex", `while [ $# -gt 0 ]; do [ "$1" = --output-last-message ] && printf '%s' "$PLAN" > "$2"; shift; done`,
		[]string{"exec", "--sandbox", "read-only", "--output-last-message"}},
	{"aider", "aider", `printf '%s' "$PLAN"`,
		[]string{"--message", "--chat-mode", "ask", "--no-auto-commits", "--no-gitignore"}},
}

// Each agent CLI's plan stage: the agent runs with its read-only flags on
// the ticket and, after a rejection, the reviewer's note and the plan it
// rejected; nothing is committed, pushed or opened, and the plan, lines
// kept, is the result's summary without links: what the reviewer reads.
func TestAgentPlanStages(t *testing.T) {
	for _, c := range agentStages {
		t.Run(c.dir, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, c.agent, c.planScript)
			fakeCLI(t, bin, "gh", "echo https://github.com/demo/app/pull/1")
			script, _ := filepath.Abs(filepath.Join(c.dir, "plan.sh"))
			env := []string{"GIT_REMOTE=" + bare, "FAKE_LOG=" + log, "PLAN=" + planText}

			r := runPipeline(t, script, work, bin, append(env, stageEnv("plan", nil, "")...)...)
			if r.err != nil {
				t.Fatalf("plan: %v\n%s", r.err, r.stdout.String())
			}
			args := argsOf(t, log, c.agent)
			if !inOrder(args, c.readOnly) {
				t.Errorf("%s args %q, want the read-only flags %q", c.agent, args, c.readOnly)
			}
			if joined := strings.Join(args, " "); !strings.Contains(joined, hostileBody) || !strings.Contains(joined, "change no file") {
				t.Errorf("%s was not asked for a plan on the ticket: %q", c.agent, args)
			}
			if res := stageResult(t, work); res.Summary != planText || len(res.Links) != 0 {
				t.Errorf("plan result %+v, want the plan %q and no link", res, planText)
			}
			if out := git(t, bare, "branch", "--list", "agent-smith/*"); out != "" || argsOf(t, log, "gh") != nil {
				t.Errorf("a plan stage pushed (%q) or opened a pull request", out)
			}

			// Rejected: the plan stage runs again with the reviewer's note.
			r = runPipeline(t, script, work, bin, append(env, stageEnv("plan", nil, review)...)...)
			if r.err != nil {
				t.Fatalf("plan after a rejection: %v\n%s", r.err, r.stdout.String())
			}
			joined := strings.Join(argsOf(t, log, c.agent), " ")
			if !strings.Contains(joined, review) || !strings.Contains(joined, "rejected:\n----- begin -----\n"+planText) {
				t.Errorf("%s was not given the review and the rejected plan: %q", c.agent, joined)
			}
			if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
				t.Error("the ticket or the review ran as shell")
			}
		})
	}
}

// A plan stage whose agent edits a file fails, writes no result and leaves
// the work dir as it found it, so a retry starts clean; one whose agent
// answers nothing fails too: a blank plan is nothing to review.
func TestPlanStageRefusesAChangeAndABlankPlan(t *testing.T) {
	for name, agent := range map[string]string{
		"edits a tracked file": `echo broken >> README.md; printf '%s' "$PLAN"`,
		"adds a file":          `echo new > NEW.md; printf '%s' "$PLAN"`,
		"answers nothing":      `printf '  \n'`,
	} {
		t.Run(name, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, "claude", agent)
			script, _ := filepath.Abs("claude-code/plan.sh")
			r := runPipeline(t, script, work, bin, "GIT_REMOTE="+bare, "FAKE_LOG="+log, "PLAN="+planText, "AGENTSMITH_STAGE=plan")
			if r.err == nil {
				t.Fatalf("exit 0, want a failure\n%s", r.stdout.String())
			}
			if _, err := os.Stat(filepath.Join(work, ".agentsmith", "result.json")); err == nil {
				t.Error("a failed plan stage wrote a result")
			}
			if st := git(t, work, "status", "--porcelain"); st != "" {
				t.Errorf("work dir left changed: %q", st)
			}
		})
	}
}

// Each agent CLI's implement stage (implement.sh, which is run.sh): the
// agent is given the plan from $AGENTSMITH_PREVIOUS_RESULT and the
// reviewer's note as text, bounded; the commit carries the plan; the pull
// request is opened as in one-stage runs.
func TestAgentImplementStagesFollowThePlan(t *testing.T) {
	hostilePlan := planText + "\n4. $(touch PWNED) `touch PWNED` <script>"
	for _, c := range agentStages {
		t.Run(c.dir, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, c.agent, `echo fixed >> FIX.md; for a in "$@"; do [ "$a" = --output-last-message ] && echo done > .agentsmith/agent.out; done; true`)
			fakeCLI(t, bin, "gh", "echo https://github.com/demo/app/pull/7")
			script, _ := filepath.Abs(filepath.Join(c.dir, "implement.sh"))
			prev := &consumer.Result{Summary: hostilePlan}
			r := runPipeline(t, script, work, bin, append([]string{"GIT_REMOTE=" + bare, "FAKE_LOG=" + log, "PR_CLI=gh"},
				stageEnv("implement", prev, review)...)...)
			if r.err != nil {
				t.Fatalf("implement: %v\n%s", r.err, r.stdout.String())
			}
			joined := strings.Join(argsOf(t, log, c.agent), " ")
			for _, want := range []string{hostileBody, "Follow this plan", hostilePlan, review} {
				if !strings.Contains(joined, want) {
					t.Errorf("%s was not given %q: %q", c.agent, want, joined)
				}
			}
			if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
				t.Error("the plan or the review ran as shell")
			}
			if msg := git(t, bare, "log", "-1", "--format=%B", "agent-smith/demo-app-1"); !strings.Contains(msg, "Plan:\n"+hostilePlan) {
				t.Errorf("the commit does not carry the plan: %q", msg)
			}
			if res := stageResult(t, work); len(res.Links) != 1 || res.Links[0].URL != "https://github.com/demo/app/pull/7" {
				t.Errorf("result %+v, want the pull request", res)
			}
		})
	}
}

// A handed-over plan or note larger than HANDOFF_MAX_BYTES reaches the
// agent cut to that size, control characters dropped; a previous result
// that is not JSON hands over nothing.
func TestImplementStageBoundsWhatItIsHanded(t *testing.T) {
	for name, c := range map[string]struct {
		previous, note string
		want, notWant  string
		maxArg         int
	}{
		"a huge plan":        {`{"summary": "` + strings.Repeat("p", 100_000) + `"}`, "", strings.Repeat("p", 8000), strings.Repeat("p", 8001), 10_000},
		"a huge note":        {"", strings.Repeat("n", 100_000), strings.Repeat("n", 8000), strings.Repeat("n", 8001), 10_000},
		"control characters": {`{"summary": "step\u001b[31m one\u0007"}`, "", "step[31m one", "\x1b", 2000},
		// 7,999 bytes and a 2-byte é across the 8,000-byte bound: the cut
		// drops the whole character, not its second byte.
		"a character across the bound": {`{"summary": "` + strings.Repeat("p", 7999) + `é"}`, "", strings.Repeat("p", 7999) + "\n", "\xc3", 10_000},
		"not JSON":                     {`$(touch PWNED)`, "", "Resolve this ticket", "Follow this plan", 2000},
		"a summary not a text":         {`{"summary": 42}`, "", "Resolve this ticket", "Follow this plan", 2000},
	} {
		t.Run(name, func(t *testing.T) {
			bare := remote(t)
			bin, log, work := t.TempDir(), t.TempDir(), t.TempDir()
			fakeCLI(t, bin, "claude", "echo fixed >> FIX.md")
			fakeCLI(t, bin, "gh", "echo https://github.com/demo/app/pull/7")
			script, _ := filepath.Abs("claude-code/implement.sh")
			env := []string{"GIT_REMOTE=" + bare, "FAKE_LOG=" + log, "AGENTSMITH_STAGE=implement",
				"AGENTSMITH_PREVIOUS_RESULT=" + c.previous, "AGENTSMITH_REVIEW=" + c.note}
			if r := runPipeline(t, script, work, bin, env...); r.err != nil {
				t.Fatalf("implement: %v\n%s", r.err, r.stdout.String())
			}
			args := argsOf(t, log, "claude")
			prompt := args[slices.Index(args, "-p")+1]
			if !strings.Contains(prompt, c.want) || strings.Contains(prompt, c.notWant) || len(prompt) > c.maxArg {
				t.Errorf("prompt (%d bytes) lacks %q or holds %q:\n%.600s", len(prompt), c.want, c.notWant, prompt)
			}
			if !utf8.ValidString(prompt) {
				t.Errorf("prompt is not UTF-8: %q", prompt[max(0, len(prompt)-200):])
			}
			if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
				t.Error("the previous result ran as shell")
			}
		})
	}
}

// The offline pair end to end, as a staged project runs it: plan.sh in the
// ticket's work dir writes the plan (the reviewer's note quoted) and
// changes nothing; its result, kept as the daemon keeps it, reaches
// implement.sh in the same work dir, which commits the change with the
// plan in its message, pushes, opens the pull request on a real trackersim
// and writes its link.
func TestOfflinePlanThenImplement(t *testing.T) {
	bare, s, run, env := offlineSetup(t)
	dir := filepath.Dir(run)
	work := t.TempDir()

	r := runPipeline(t, filepath.Join(dir, "plan.sh"), work, t.TempDir(), append(env, stageEnv("plan", nil, review)...)...)
	if r.err != nil {
		t.Fatalf("plan: %v\n%s", r.err, r.stdout.String())
	}
	plan := stageResult(t, work)
	for _, want := range []string{"Plan for demo/app#1: Fix login redirect\n", `Append the line "- Fix login redirect (demo/app#1)"`, review} {
		if !strings.Contains(plan.Summary, want) {
			t.Errorf("plan %q lacks %q", plan.Summary, want)
		}
	}
	if len(plan.Links) != 0 || len(s.PullRequests("demo/app")) != 0 || git(t, bare, "branch", "--list", "agent-smith/*") != "" {
		t.Errorf("the plan stage did more than plan: links %v, pull requests %v", plan.Links, s.PullRequests("demo/app"))
	}

	r = runPipeline(t, filepath.Join(dir, "implement.sh"), work, t.TempDir(), append(env, stageEnv("implement", &plan, "")...)...)
	if r.err != nil {
		t.Fatalf("implement: %v\n%s", r.err, r.stdout.String())
	}
	prs := s.PullRequests("demo/app")
	if len(prs) != 1 || prs[0].Head != "agent-smith/demo-app-1" {
		t.Fatalf("pull requests %+v", prs)
	}
	if res := stageResult(t, work); len(res.Links) != 1 || res.Links[0].URL != prs[0].HTMLURL || !strings.Contains(res.Summary, "Carried out the plan") {
		t.Errorf("implement result %+v, want the plan carried out and %s", res, prs[0].HTMLURL)
	}
	if msg := git(t, bare, "log", "-1", "--format=%B", "agent-smith/demo-app-1"); !strings.Contains(msg, "Plan:\n"+plan.Summary) {
		t.Errorf("the commit does not carry the plan: %q", msg)
	}
	if log := git(t, bare, "show", "agent-smith/demo-app-1:CHANGELOG.md"); log != "- Fix login redirect (demo/app#1)" {
		t.Errorf("CHANGELOG.md on the branch: %q", log)
	}
	if _, err := os.Stat(filepath.Join(work, "PWNED")); err == nil {
		t.Error("the review ran as shell")
	}
}

// Every yaml block of this directory's README is a config agentsmithd
// loads, the staged one with its three stages; an example that needs a
// key the daemon does not have yet (the approval gate) is a text block.
func TestReadmeConfigsLoad(t *testing.T) {
	md, err := readme.LoadDoc("examples/pipelines/README.md")
	if err != nil {
		t.Fatal(err)
	}
	var staged []string
	gated := false // the staged example's implement waits for an approval
	n := 0
	for _, b := range readme.Blocks(md) {
		if b.Lang != "yaml" {
			continue
		}
		n++
		cfg, err := config.Parse([]byte(b.Text), func(string) (string, bool) { return "set-in-the-test", true })
		if err != nil {
			t.Errorf("README.md line %d does not load: %v\n%s", b.Line, err, b.Text)
			continue
		}
		if pl := cfg.Projects[0].Pipeline; pl.StageNames() != nil {
			staged = pl.StageNames()
			gated = pl.Stages[1].Gate != nil && pl.Stages[1].Gate.Approval != nil
		}
	}
	if n < 2 || !slices.Equal(staged, []string{"plan", "implement", "test"}) || !gated {
		t.Errorf("%d yaml blocks, stages %q, implement gated %t: want the one-stage and the staged example, implement after an approval", n, staged, gated)
	}
}

// text_head cuts on a character boundary where iconv takes -c, and where
// the only iconv refuses -c (some minimal images) it still hands on the
// bytes as cut rather than nothing.
func TestTextHeadCutsOnACharacter(t *testing.T) {
	noC := t.TempDir()
	if err := os.WriteFile(filepath.Join(noC, "iconv"), []byte("#!/bin/sh\necho 'iconv: invalid option -- c' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"iconv with -c":    {os.Getenv("PATH"), "h"},
		"iconv without -c": {noC + string(os.PathListSeparator) + os.Getenv("PATH"), "h\xc3"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := exec.LookPath("iconv"); err != nil && c.want == "h" {
				t.Skip("no iconv on this machine")
			}
			cmd := exec.Command("sh", "-c", `. ./lib/workspace.sh; printf 'h\303\251llo' | text_head 2`)
			cmd.Env = append(os.Environ(), "PATH="+c.path)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("text_head: %v", err)
			}
			if string(out) != c.want {
				t.Errorf("text_head 2 of %q = %q, want %q", "héllo", out, c.want)
			}
		})
	}
}
