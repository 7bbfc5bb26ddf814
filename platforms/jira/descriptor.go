package jira

import (
	"context"
	"errors"

	"github.com/agentsmithd/agentsmithd/pkg/trackerhttp"
	"github.com/agentsmithd/agentsmithd/platforms"
)

func init() {
	platforms.Register(platforms.Descriptor{
		Name: Platform,
		// No DefaultBaseURL: every Jira site has its own URL.
		CheckRepo:  checkRepo,
		CheckScope: CheckScope,
		RateLimits: trackerhttp.JiraRateLimits,
		New:        build,
		List:       list,
		// The tracker writes comments as wiki markup or ADF (adf.go).
		CommentMarkup: platforms.MarkupJiraWiki,
		NoWebhookTest: noWebhookTest,
		// A label is at most 255 characters (the figure issue 41 records;
		// not measured against a Jira here) and one word (SpacelessLabels).
		LabelLimit:   255,
		Capabilities: platforms.Capabilities{Teams: true, OwnerlessPatterns: true, SpacelessLabels: true, JiraSection: true},
	})
}

// noWebhookTest says why a Jira project's webhook cannot be proven:
// Jira's webhook REST resources register, list, refresh and delete
// webhooks, and report failed ones for apps, but none sends a test
// delivery (https://developer.atlassian.com/cloud/jira/platform/webhooks/,
// https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-webhooks/).
const noWebhookTest = "Jira has no API that sends a test delivery: the URL and secret are not proven now"

// checkRepo validates a project's repo: its key ("PROJ"), in the shape
// CheckProjectKey owns, with the message config shows.
func checkRepo(repo string) error {
	if CheckProjectKey(repo) != nil {
		return errors.New(`expected a Jira project key such as "PROJ"`)
	}
	return nil
}

func build(opts platforms.TrackerOptions) (platforms.Tracker, platforms.WebhookDecoder, string, error) {
	tr, err := New(Options{BaseURL: opts.BaseURL, Repo: opts.Repo, JQL: opts.Scope, Project: opts.Project, Token: opts.Token,
		Email: opts.Email, Deployment: opts.Deployment, Logger: opts.Logger, Writer: opts.Writer,
		Locker: opts.Locker, HTTPClient: opts.HTTPClient, LabelPrefix: opts.LabelPrefix,
		Lifecycle: opts.Lifecycle})
	if err != nil {
		return nil, nil, "", err
	}
	return tr, Webhooks{}, tr.Locator(), nil
}

// list lists the site's project keys; owner is unused (a Jira pattern has
// no owner).
func list(ctx context.Context, opts platforms.TrackerOptions, _ string) ([]platforms.ListedRepo, error) {
	keys, err := ListProjects(ctx, Options{BaseURL: opts.BaseURL, Token: opts.Token,
		Email: opts.Email, Deployment: opts.Deployment, HTTPClient: opts.HTTPClient})
	if err != nil {
		return nil, err
	}
	var out []platforms.ListedRepo
	for _, k := range keys {
		out = append(out, platforms.ListedRepo{Path: k})
	}
	return out, nil
}
