package github

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func init() {
	platforms.Register(platforms.Descriptor{
		Name:           Platform,
		DefaultBaseURL: DefaultBaseURL,
		CheckRepo:      CheckRepo,
		RateLimits:     trackerhttp.GitHubRateLimits,
		New:            build,
		List:           list,
		CommentMarkup:  platforms.MarkupMarkdown,
		MachineAccount: machineAccount,
		// The variables gh and the GitHub libraries read a token from.
		TokenVars: []string{"GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"},
		// GitHub refuses longer label names with 422 "name is too long
		// (maximum is 50 characters)" (github/docs#32156,
		// semantic-release/github#518; trackersim answers the same).
		LabelLimit:   50,
		Capabilities: platforms.Capabilities{Reactions: true, Teams: true, FoldLocator: true, GitHubApp: true, GitHubAPI: true},
	})
}

// machineAccount: a GitHub App acts as <slug>[bot], a name no person's
// account can have.
func machineAccount(user string) string {
	if strings.HasSuffix(strings.ToLower(strings.TrimSpace(user)), "[bot]") {
		return "a GitHub App's bot account"
	}
	return ""
}

// repoName is what GitHub accepts as an owner's or a repository's name.
var repoName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// CheckRepo validates a project's "owner/repo".
func CheckRepo(repo string) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || !repoName.MatchString(owner) || !repoName.MatchString(name) {
		return errors.New(`expected "owner/repo"`)
	}
	return nil
}

// options are opts as this package's Options, the App's credentials
// included when the project has them.
func options(opts platforms.TrackerOptions) Options {
	o := Options{BaseURL: opts.BaseURL, Repo: opts.Repo, Project: opts.Project, Spellings: opts.Spellings,
		Token: opts.Token, Logger: opts.Logger, Writer: opts.Writer, LabelPrefix: opts.LabelPrefix, HTTPClient: opts.HTTPClient,
		API: opts.API, Lifecycle: opts.Lifecycle}
	if a := opts.App; a != nil {
		o.App = &App{AppID: a.AppID, InstallationID: a.InstallationID, PrivateKey: a.PrivateKey}
	}
	return o
}

func build(opts platforms.TrackerOptions) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	tr, err := New(options(opts))
	if err != nil {
		return nil, nil, "", err
	}
	return tr, Webhooks{Spellings: opts.Lifecycle}, tr.Locator(), nil
}

// list lists owner's repositories, or with opts.Installation every one of
// the App installation's, through a client that keeps to GitHub's rate
// limits.
func list(ctx context.Context, opts platforms.TrackerOptions, owner string) ([]platforms.ListedRepo, error) {
	o := options(platforms.TrackerOptions{BaseURL: opts.BaseURL, Token: opts.Token, App: opts.App,
		HTTPClient: trackerhttp.ClientOr(opts.HTTPClient, nil, trackerhttp.GitHubRateLimits)})
	var rs []Repository
	var err error
	if opts.Installation {
		rs, err = ListInstallationRepositories(ctx, o)
	} else {
		rs, err = ListRepositories(ctx, o, owner)
	}
	if err != nil {
		return nil, err
	}
	var out []platforms.ListedRepo
	for _, r := range rs {
		out = append(out, platforms.ListedRepo{Path: r.Owner + "/" + r.Name, Archived: r.Archived || r.Disabled})
	}
	return out, nil
}
