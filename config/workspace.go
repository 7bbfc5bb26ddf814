package config

import (
	"fmt"
	"syscall"
	"time"

	"github.com/agentsmithd/agentsmithd/pkg/gitws"
)

// Workspace defaults (pkg/gitws owns them).
const (
	DefaultWorkspaceBase   = gitws.DefaultBase
	DefaultWorkspaceBranch = gitws.DefaultBranch
)

// Workspace is where a project's tickets keep their work between attempts
// (seed: Branch Persistence).
type Workspace struct {
	Git GitWorkspace `yaml:"git"`
}

// GitWorkspace is the work branch: before every attempt the ticket's work
// dir is fetched from URL and checked out at Branch (from Base when the
// branch does not exist yet); after every attempt, whatever its outcome,
// everything is committed and pushed. The credential is the token (HTTPS)
// or an ssh key file; the URL itself must carry none.
type GitWorkspace struct {
	URL    string `yaml:"url"`
	Base   string `yaml:"base"`
	Branch string `yaml:"branch"` // "{ticket}" is the ticket's id, made safe for a ref
	// Token authenticates over HTTPS as TokenUser (default
	// "x-access-token", which GitHub expects; GitLab takes "oauth2").
	Token      Secret `yaml:"token"`
	TokenUser  string `yaml:"token_user"`
	SSHKeyFile string `yaml:"ssh_key_file"`
	// Timeout bounds each git step (prepare, save); default: the
	// pipeline's timeout.
	Timeout time.Duration `yaml:"timeout"`

	tokenEnv, tokenFile Secret
}

func (g *GitWorkspace) shorthand(key string) *Secret {
	switch key {
	case "token_env":
		return &g.tokenEnv
	case "token_file":
		return &g.tokenFile
	}
	return nil
}

// On reports whether the project has a work branch.
func (g GitWorkspace) On() bool { return g.URL != "" }

func (g *GitWorkspace) applyDefaults(pipelineTimeout time.Duration) {
	if !g.On() {
		return
	}
	setDefault(&g.Base, DefaultWorkspaceBase)
	setDefault(&g.Branch, DefaultWorkspaceBranch)
	setDefault(&g.Timeout, pipelineTimeout)
}

// validate folds the shorthand secrets in and checks the rest; the token is
// resolved by the caller with every other secret. Messages never repeat
// the URL (it might carry a credential, which is the complaint).
func (g *GitWorkspace) validate(errs *Errors, path string) {
	oneOf(&g.Token, path+".token", errs, g.Token, g.tokenEnv, g.tokenFile)
	if !g.On() {
		if g.Token.IsSet() || g.SSHKeyFile != "" || g.Base != "" || g.Branch != "" {
			errs.add(path+".url", "required when the work branch is configured")
		}
		return
	}
	if err := gitws.CheckURL(g.URL); err != nil {
		errs.add(path+".url", err.Error())
	}
	if err := gitws.CheckRefFormat(g.Base); err != nil {
		errs.add(path+".base", err.Error())
	}
	if _, err := gitws.BranchName(g.Branch, "1"); err != nil {
		errs.add(path+".branch", err.Error())
	}
	if g.Token.IsSet() && g.SSHKeyFile != "" {
		errs.add(path+".ssh_key_file", "set either a token or an ssh key, not both")
	}
	positive(errs, path+".timeout", g.Timeout)
}

// Repo is the work branch as pkg/gitws runs it; nil when there is none.
// owner is the pipeline's run_as user, given the working tree; secrets are
// the project's secret values (Project.SecretValues), which no commit the
// daemon pushes may hold (gitws.Config.Secrets).
func (g GitWorkspace) Repo(owner *syscall.Credential, secrets []string) (*gitws.Repo, error) {
	if !g.On() {
		return nil, nil
	}
	r, err := gitws.New(gitws.Config{URL: g.URL, Base: g.Base, Branch: g.Branch, Token: g.Token.Value(),
		TokenUser: g.TokenUser, SSHKeyFile: g.SSHKeyFile, Timeout: g.Timeout, Owner: owner, Secrets: secrets})
	if err != nil {
		return nil, fmt.Errorf("workspace.git: %w", err)
	}
	return r, nil
}
