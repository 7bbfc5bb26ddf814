package config

import (
	"strings"
	"testing"
	"time"
)

// projects[].workspace.git: shorthand token, defaults from the pipeline's
// timeout, print-config names the token's source and never its value.
func TestWorkspaceGit(t *testing.T) {
	t.Parallel()
	yml := oneProject + "    token_env: T\n" + `    workspace:
      git: {url: "https://github.com/o/r.git", token_env: GIT_TOKEN}
`
	c, err := Parse([]byte(yml), env(map[string]string{"T": "t", "GIT_TOKEN": "ghp_git_value"}))
	if err != nil {
		t.Fatal(err)
	}
	g := c.Projects[0].Workspace.Git
	if g.Base != "main" || g.Branch != "agent-smith/{ticket}" || g.Timeout != DefaultPipelineTimeout || g.Token.Value() != "ghp_git_value" {
		t.Fatalf("workspace.git = %+v", g)
	}
	if r, err := g.Repo(nil, nil); err != nil || r == nil {
		t.Fatalf("Repo: %v", err)
	}
	out, err := Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "ghp_git_value") || !strings.Contains(string(out), "GIT_TOKEN") {
		t.Errorf("print-config:\n%s", out)
	}
	base := `{url: "https://github.com/o/r.git", token_env: GIT_TOKEN}`
	for bad, want := range map[string]string{
		`{url: "https://x:ghp_inline@github.com/o/r.git"}`:                        "workspace.git.url: gitws: url: must not carry a password",
		`{url: "https://h/r.git", branch: "agent-smith/../{ticket}"}`:             "workspace.git.branch:",
		`{url: "https://h/r.git", base: "ma in"}`:                                 "workspace.git.base:",
		`{url: "https://h/r.git", token_env: GIT_TOKEN, ssh_key_file: /k}`:        "not both",
		`{token_env: GIT_TOKEN}`:                                                  "workspace.git.url: required",
		`{url: "https://h/r.git", token: {env: GIT_TOKEN}, token_env: GIT_TOKEN}`: "set only one of",
	} {
		got := parseErrs(t, strings.Replace(yml, base, bad, 1), map[string]string{"T": "t", "GIT_TOKEN": "v"})
		if len(got) != 1 || !strings.Contains(got[0], want) || strings.Contains(got[0], "ghp_inline") {
			t.Errorf("%s: %q, want %q", bad, got, want)
		}
	}
	c, err = Parse([]byte(strings.Replace(yml, base, `{url: "git@github.com:o/r.git", ssh_key_file: /k, timeout: 90s}`, 1)), env(map[string]string{"T": "t"}))
	if err != nil || c.Projects[0].Workspace.Git.Timeout != 90*time.Second {
		t.Fatalf("ssh form: %v", err)
	}
}
