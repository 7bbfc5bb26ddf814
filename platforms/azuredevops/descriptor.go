package azuredevops

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func init() {
	platforms.Register(platforms.Descriptor{
		Name:           Platform,
		DefaultBaseURL: DefaultBaseURL,
		CheckRepo:      CheckRepo,
		RateLimits:     trackerhttp.AzureDevOpsRateLimits,
		New:            build,
		List:           list,
		CommentMarkup:  platforms.MarkupMarkdown,
		// A work item tag is at most 400 characters (the figure issue 41
		// records; not measured against Azure DevOps here). ';' separates
		// tags, and tags.go refuses it at write time.
		LabelLimit:   400,
		Capabilities: platforms.Capabilities{Teams: true},
	})
}

// CheckRepo validates "organization/project" by Azure DevOps' naming rules
// (https://learn.microsoft.com/azure/devops/organizations/settings/naming-restrictions):
// an organization is letters, digits and hyphens, starting and ending with a
// letter or digit, at most 50 characters (on Azure DevOps Server it is the
// collection name); a project is at most 64 characters, none of
// \ / : * ? " ' < > | ; # $ { } , + = [ ] %, not starting with "_" or "."
// and not ending with ".".
func CheckRepo(repo string) error {
	bad := errors.New(`expected "organization/project"`)
	org, project, ok := strings.Cut(repo, "/")
	if !ok || org == "" || project == "" || len(org) > 50 {
		return bad
	}
	for i, r := range org {
		alnum := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		edge := i == 0 || i == len(org)-1
		if !alnum && (edge || r != '-') {
			return errors.New(`expected "organization/project"; the organization may hold letters, digits and inner hyphens only`)
		}
	}
	if utf8.RuneCountInString(project) > 64 || strings.ContainsAny(project, `\/:*?"'<>|;#${},+=[]%`) ||
		strings.HasPrefix(project, "_") || strings.HasPrefix(project, ".") || strings.HasSuffix(project, ".") ||
		strings.TrimSpace(project) != project {
		return errors.New(`expected "organization/project"; the project name breaks Azure DevOps naming rules`)
	}
	return nil
}

func build(opts platforms.TrackerOptions) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	tr, err := New(Options{BaseURL: opts.BaseURL, Repo: opts.Repo, Project: opts.Project, Token: opts.Token,
		Logger: opts.Logger, Writer: opts.Writer, HTTPClient: opts.HTTPClient, Spellings: opts.Spellings})
	if err != nil {
		return nil, nil, "", err
	}
	return tr, Webhooks{Spellings: opts.Lifecycle}, tr.Locator(), nil
}

// list lists the projects of the organization owner.
func list(ctx context.Context, opts platforms.TrackerOptions, owner string) ([]platforms.ListedRepo, error) {
	ps, err := ListProjects(ctx, Options{BaseURL: opts.BaseURL, Token: opts.Token, HTTPClient: opts.HTTPClient}, owner)
	if err != nil {
		return nil, err
	}
	var out []platforms.ListedRepo
	for _, p := range ps {
		// A project being created, deleted or renamed is not usable
		// yet; it is counted with the archived.
		out = append(out, platforms.ListedRepo{Path: owner + "/" + p.Name, Archived: p.State != "wellFormed"})
	}
	return out, nil
}
