package gitlab

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
		CheckRepo:      CheckProject,
		RateLimits:     trackerhttp.GitLabRateLimits,
		New:            build,
		List:           list,
		CommentMarkup:  platforms.MarkupMarkdown,
		MachineAccount: machineAccount,
		// A label's title is at most 255 characters (the figure issue 41
		// records; not measured against a GitLab here).
		LabelLimit:   255,
		Capabilities: platforms.Capabilities{Reactions: true, Teams: true, FoldLocator: true, Groups: true},
	})
}

// botUser matches the username GitLab gives the bot user of a project or
// group access token (project_<id>_bot_<random>; before GitLab 16,
// project_<id>_bot or project_<id>_bot<n>).
var botUser = regexp.MustCompile(`^(project|group)_\d+_bot\d*(_[0-9a-z]+)?$`)

// machineAccount: an access token's bot user is only ever that token.
func machineAccount(user string) string {
	if botUser.MatchString(strings.ToLower(strings.TrimSpace(user))) {
		return "a GitLab access token's bot user"
	}
	return ""
}

// CheckProject validates a GitLab project path: "group/project" or
// "group/subgroup/…/project", every segment non-empty, without spaces at its
// ends, "#", "?" or "%" (the path is used verbatim and URL-encoded by the
// client; a numeric project id is not accepted, as webhooks carry the path).
func CheckProject(repo string) error {
	parts := strings.Split(repo, "/")
	if len(parts) < 2 {
		return errors.New(`expected "group/project" or "group/subgroup/project"`)
	}
	for _, p := range parts {
		if p == "" || strings.TrimSpace(p) != p || strings.ContainsAny(p, "#?%") {
			return errors.New(`expected "group/project" or "group/subgroup/project"`)
		}
	}
	return nil
}

func build(opts platforms.TrackerOptions) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	tr, err := New(Options{BaseURL: opts.BaseURL, Repo: opts.Repo, Project: opts.Project, Token: opts.Token,
		Logger: opts.Logger, Writer: opts.Writer, LabelPrefix: opts.LabelPrefix, HTTPClient: opts.HTTPClient,
		Lifecycle: opts.Lifecycle})
	if err != nil {
		return nil, nil, "", err
	}
	return tr, Webhooks{}, tr.Locator(), nil
}

// list lists the projects of the group owner, subgroups included.
func list(ctx context.Context, opts platforms.TrackerOptions, owner string) ([]platforms.ListedRepo, error) {
	ps, err := ListGroupProjects(ctx, Options{BaseURL: opts.BaseURL, Token: opts.Token, HTTPClient: opts.HTTPClient}, owner)
	if err != nil {
		return nil, err
	}
	var out []platforms.ListedRepo
	for _, p := range ps {
		out = append(out, platforms.ListedRepo{Path: p.Path, Archived: p.Archived})
	}
	return out, nil
}
